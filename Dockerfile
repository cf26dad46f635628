# syntax=docker/dockerfile:1
# Herald as one static binary; docker-compose.yml runs each role from this image.
#   docker build --build-arg VERSION=$(git describe --always --dirty) -t herald .

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOEXPERIMENT=jsonv2 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
    -o /out/herald ./cmd/herald

# static-debian12 carries CA certificates (HTTPS endpoints) and tzdata, and no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/herald /usr/local/bin/herald
USER nonroot:nonroot
# The api role listens on HERALD_HTTP_ADDR (:8080); /metrics on HERALD_METRICS_ADDR.
ENV HERALD_HTTP_ADDR=:8080 \
    HERALD_METRICS_ADDR=:9090
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["all"]
