#!/usr/bin/env bash
# test.sh runs every test with -race against real MariaDB and Redis (`make test`).
#
#   GO=go scripts/test.sh [go test flags...]
#
# The tests find the servers through HERALD_TEST_MYSQL_DSN (a DSN without a
# database; each test creates its own) and HERALD_TEST_REDIS_ADDR. Unless set, they
# are derived from HERALD_MYSQL_DSN / HERALD_REDIS_ADDR, or default to
# root@tcp(127.0.0.1:3306)/ and 127.0.0.1:6379.
#
# The suite runs several Heralds at once, each with its own pool, and wants about
# 1,000 MySQL connections. When the default server (127.0.0.1:3306, not one named
# by a DSN) allows fewer, the tests get a private mariadbd of their own: a fresh
# datadir under /tmp on a free loopback port, configured like the server `make
# services` installs, stopped by its PID and removed when the run ends. A server
# this script did not start is never reconfigured; a DSN given explicitly is used
# as it is.
set -euo pipefail

readonly WANT_CONNECTIONS=1000
GO=${GO:-go}

log() { printf 'test: %s\n' "$*"; }
die() { printf 'test: error: %s\n' "$*" >&2; exit 1; }

# find_binary NAME prints the path of NAME on PATH, /usr/sbin or /usr/bin.
find_binary() {
	command -v "$1" 2>/dev/null && return
	for d in /usr/sbin /usr/bin; do
		[ -x "$d/$1" ] && { echo "$d/$1"; return; }
	done
	return 1
}

# max_connections HOST PORT prints @@max_connections of the server (root, no
# password, as the default DSN), or nothing when it cannot be asked.
max_connections() {
	local client
	client=$(find_binary mariadb || find_binary mysql) || return 0
	"$client" --no-defaults --protocol=tcp --host="$1" --port="$2" --user=root \
		--batch --skip-column-names -e 'SELECT @@max_connections' 2>/dev/null || true
}

# free_port prints a loopback port nothing listens on.
free_port() {
	local p
	for p in $(seq 13306 13406); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	die "no free loopback port in 13306-13406 for the tests' MariaDB"
}

PRIVATE_DIR=
PRIVATE_PID=
stop_private() {
	if [ -n "$PRIVATE_PID" ] && kill -0 "$PRIVATE_PID" 2>/dev/null; then
		kill -TERM "$PRIVATE_PID"
		for _ in $(seq 1 200); do
			kill -0 "$PRIVATE_PID" 2>/dev/null || break
			sleep 0.1 # polling the PID: mariadbd gives no other signal that it has stopped
		done
		kill -KILL "$PRIVATE_PID" 2>/dev/null || true
	fi
	[ -n "$PRIVATE_DIR" ] && rm -rf "$PRIVATE_DIR"
	return 0
}

# start_private starts a mariadbd of the tests' own and sets HERALD_TEST_MYSQL_DSN to it.
start_private() {
	local install server port user
	install=$(find_binary mariadb-install-db) || die "mariadb-install-db is missing (make services installs MariaDB)"
	server=$(find_binary mariadbd) || die "mariadbd is missing (make services installs MariaDB)"
	PRIVATE_DIR=$(mktemp -d /tmp/herald-test-db.XXXXXX)
	trap stop_private EXIT
	user=$(id -un)
	"$install" --no-defaults --datadir="$PRIVATE_DIR/data" --auth-root-authentication-method=normal \
		--user="$user" --skip-test-db >"$PRIVATE_DIR/install.log" 2>&1 ||
		die "mariadb-install-db failed: $(tail -5 "$PRIVATE_DIR/install.log")"
	port=$(free_port)
	"$server" --no-defaults --datadir="$PRIVATE_DIR/data" --port="$port" --bind-address=127.0.0.1 \
		--socket="$PRIVATE_DIR/s" --pid-file="$PRIVATE_DIR/pid" --user="$user" --skip-log-bin \
		--max-connections="$WANT_CONNECTIONS" --innodb-buffer-pool-size=1G --innodb-log-file-size=512M \
		--max-allowed-packet=64M --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
		--tmpdir="$PRIVATE_DIR" --log-error="$PRIVATE_DIR/err.log" &
	PRIVATE_PID=$!
	for _ in $(seq 1 600); do
		[ "$(max_connections 127.0.0.1 "$port")" = "$WANT_CONNECTIONS" ] && break
		kill -0 "$PRIVATE_PID" 2>/dev/null || die "the tests' mariadbd exited: $(tail -5 "$PRIVATE_DIR/err.log")"
		sleep 0.1 # polling the port: mariadbd gives no other signal that it is up
	done
	[ "$(max_connections 127.0.0.1 "$port")" = "$WANT_CONNECTIONS" ] || die "the tests' mariadbd did not answer in 60 s"
	HERALD_TEST_MYSQL_DSN="root@tcp(127.0.0.1:$port)/"
	log "127.0.0.1:3306 allows $1 connections (the suite wants $WANT_CONNECTIONS); the tests use a private mariadbd on 127.0.0.1:$port (pid $PRIVATE_PID), removed when they end"
}

if [ -z "${HERALD_TEST_MYSQL_DSN:-}" ]; then
	if [ -n "${HERALD_MYSQL_DSN:-}" ]; then
		db=${HERALD_MYSQL_DSN##*/}
		params=""
		case "$db" in *\?*) params="?${db#*\?}" ;; esac
		HERALD_TEST_MYSQL_DSN="${HERALD_MYSQL_DSN%/*}/$params"
	else
		n=$(max_connections 127.0.0.1 3306)
		if [[ $n =~ ^[0-9]+$ ]] && [ "$n" -lt "$WANT_CONNECTIONS" ]; then
			start_private "$n"
		else
			HERALD_TEST_MYSQL_DSN='root@tcp(127.0.0.1:3306)/'
		fi
	fi
fi
export HERALD_TEST_MYSQL_DSN
export HERALD_TEST_REDIS_ADDR="${HERALD_TEST_REDIS_ADDR:-${HERALD_REDIS_ADDR:-127.0.0.1:6379}}"
log "$GO test -race -count=1 -timeout 30m ./... $* (MySQL $HERALD_TEST_MYSQL_DSN, Redis $HERALD_TEST_REDIS_ADDR)"
"$GO" test -race -count=1 -timeout 30m "$@" ./...
