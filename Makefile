# Herald's development loop (docs/design.md). `make` lists the targets; `make run` and
# `make test` work on a fresh Debian/Ubuntu machine as root.

.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

GO ?= go
# encoding/json's v2 engine decodes publish envelopes about twice as fast
# (docs/measurements/decode-jsonv2.md); Herald builds and tests the same without it.
GOEXPERIMENT ?= jsonv2
export GOEXPERIMENT
BIN := bin/herald
# VERSION is stamped into `herald version`; evaluated only when a recipe needs it.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
GOLANGCI_LINT_VERSION ?= v2.15.0
FIXTURES ?= testdata/github-webhooks

.PHONY: help build services migrate run test fuzz browser lint bench bench-ordered clean

help: ## list the targets
	@echo "usage: make <target>"
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z_-]+:.*## / { printf "  %-9s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

build: ## build bin/herald, stamped with git describe
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/herald

services: ## make sure MariaDB and Redis answer (as root: install and start them on loopback)
	scripts/services.sh

migrate: build services ## apply the database migrations
	$(BIN) migrate up

run: services build ## migrate, then run every role with the demo on 127.0.0.1:8080
	$(BIN) migrate up
	HERALD_HTTP_ADDR="$${HERALD_HTTP_ADDR:-127.0.0.1:8080}" exec $(BIN) all --demo

# The tests find the servers through HERALD_TEST_MYSQL_DSN (a DSN without a
# database; each test creates its own) and HERALD_TEST_REDIS_ADDR. Unless set,
# they are derived from HERALD_MYSQL_DSN / HERALD_REDIS_ADDR, or default to
# root@tcp(127.0.0.1:3306)/ and 127.0.0.1:6379; when that default server allows
# fewer than the 1,000 connections the suite wants, scripts/test.sh starts a
# private mariadbd for the run instead of reconfiguring a server it did not start.
test: services browser ## go vet, then every test with -race against the real MariaDB and Redis
	$(GO) vet ./...
	GO="$(GO)" scripts/test.sh
	$(MAKE) fuzz FUZZTIME=10s

# fuzz: each target runs FUZZTIME (make test: 10 s each, about 20 s in all); the
# corpus lives in api/testdata/fuzz and runs as plain tests in every go test.
FUZZTIME ?= 60s
fuzz: ## fuzz the publish parser and API-key authentication for FUZZTIME each
	$(GO) test -run '^$$' -fuzz '^FuzzPublishDecode$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzAPIKeyAuth$$' -fuzztime $(FUZZTIME) ./api/

browser: ## install Debian's chromium for the console's browser tests unless present
	@if [ -x /usr/bin/chromium ]; then \
		echo "chromium present"; \
	elif [ "$$(id -u)" -ne 0 ]; then \
		echo "chromium is missing and only root can install it: sudo apt-get install -y chromium" >&2; exit 1; \
	else \
		echo "installing chromium"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y chromium || \
			{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }; \
	fi

lint: ## golangci-lint (pinned, GOLANGCI_LINT_VERSION) with the import rules in .golangci.yml
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...

bench: services build ## run the load generator over the fixtures (FIXTURES=dir), then the ordered-group ceiling
	$(GO) run ./bench/cmd/heraldbench -fixtures "$(FIXTURES)"
	$(MAKE) bench-ordered

bench-ordered: services ## ordered group throughput by queue and by key (keys, batch, max_in_flight, latency), and the 40-key goal
	HERALD_TEST_MYSQL_DSN="$${HERALD_TEST_MYSQL_DSN:-root@tcp(127.0.0.1:3306)/}" HERALD_TEST_REDIS_ADDR="$${HERALD_TEST_REDIS_ADDR:-127.0.0.1:6379}" \
		$(GO) test -run '^$$' -bench 'BenchmarkOrderedCeiling|BenchmarkOrderedKeysFlaky' -benchtime 1x ./internal/e2e/

clean: ## remove build output
	rm -rf bin
