#!/usr/bin/env bash
# The SDK as a Go service meets it (issue 30): examples/sdk-consumer is copied out of the
# repository, a module of its own on `go 1.24` whose replace points at this clone's sdk/. Its
# `go mod tidy` must leave the go line and list exactly what the SDK promises (the SDK and its
# minimum requirements, nothing of the server's). It is built with the local toolchain and with
# Go 1.24.0 itself (GOTOOLCHAIN fetches that from the Go module proxy), the SDK is vetted with
# Go 1.24.0, and the program runs against bin/caddy serving examples/Caddyfile on a free port.
#
# Environment: GO (default go), HARNESS_PORT (first port tried, default 4330).
set -euo pipefail

cd "$(dirname "$0")/.."
repo=$(pwd)
GO=${GO:-go}
source scripts/lib/example-server.sh

# What a service gets with the SDK: these modules at these versions (sdk/go.mod's minimums),
# and nothing else. Adding one to the SDK is a promise broken for every user: change it here,
# in docs/releasing.md and in the CHANGELOG together.
expected_go=1.24
expected_requirements="github.com/apapsch/go-jsonmerge/v2 v2.0.0
github.com/go-logr/logr v1.4.2
github.com/go-logr/stdr v1.2.2
github.com/google/uuid v1.6.0
github.com/harness-edge/harness-edge/sdk v0.0.0-00010101000000-000000000000
github.com/hashicorp/go-cleanhttp v0.5.2
github.com/hashicorp/go-retryablehttp v0.7.7
github.com/oapi-codegen/runtime v1.3.1
github.com/tmaxmax/go-sse v0.10.0
go.opentelemetry.io/otel v1.28.0
go.opentelemetry.io/otel/metric v1.28.0
go.opentelemetry.io/otel/trace v1.28.0
go.yaml.in/yaml/v3 v3.0.2"
# The oldest Go the SDK's go.mod admits, as a toolchain that exists.
oldest_toolchain=go1.24.0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/harness-sdk-consumer.XXXXXX")
caddy_pid=""
cleanup() {
	if [[ -n "$caddy_pid" ]] && kill -0 "$caddy_pid" 2>/dev/null; then
		kill -TERM "$caddy_pid" 2>/dev/null || true
		wait "$caddy_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "sdk-consumer-check: $*" >&2
	exit 1
}

echo "== the example as a newcomer meets it: built in place from the clone, no tidy in between"
# go.work lists the example, so `go run .` works inside the clone; its committed go.mod and go.sum
# are complete, so GOWORK=off (the replace points at ../../sdk) builds it too.
(cd examples/sdk-consumer && "$GO" build -o "$tmp/in-workspace" . && GOWORK=off GOFLAGS=-mod=readonly "$GO" build -o "$tmp/in-place" .) ||
	fail "examples/sdk-consumer does not build where it is (commit a tidy go.mod and go.sum, keep it in go.work)"

echo "== the consumer module, outside the repository: go mod tidy"
mkdir "$tmp/consumer"
cp examples/sdk-consumer/main.go examples/sdk-consumer/go.mod "$tmp/consumer/"
(
	cd "$tmp/consumer"
	export GOWORK=off
	"$GO" mod edit -replace "github.com/harness-edge/harness-edge/sdk=$repo/sdk"
	"$GO" mod tidy
)
go_line=$(awk '$1 == "go" { print $2 }' "$tmp/consumer/go.mod")
[[ $go_line == "$expected_go" ]] || fail "go mod tidy changed the consumer's go line to $go_line (want $expected_go): the SDK needs a newer Go than it says"
requirements=$(awk '/^require \(/ { inblock = 1; next } inblock && /^\)/ { inblock = 0; next }
	inblock { print $1, $2 } /^require [^(]/ { print $2, $3 }' "$tmp/consumer/go.mod" | sort)
if [[ $requirements != "$expected_requirements" ]]; then
	diff <(echo "$expected_requirements") <(echo "$requirements") >&2 || true
	fail "the consumer's tidy go.mod requires other modules than the SDK promises (< promised, > found)"
fi
echo "go $go_line; $(echo "$requirements" | wc -l) requirements, as promised"

echo "== build with $("$GO" env GOVERSION) and with $oldest_toolchain; go vet the SDK with $oldest_toolchain"
(cd "$tmp/consumer" && GOWORK=off "$GO" build -o consumer . && GOWORK=off GOTOOLCHAIN=$oldest_toolchain "$GO" build -o consumer-oldest .)
(cd sdk && GOWORK=off GOTOOLCHAIN=$oldest_toolchain "$GO" vet ./...)

echo "== run it against bin/caddy (examples/Caddyfile)"
"$GO" build -o bin/caddy ./cmd/caddy
port=$(free_port "${HARNESS_PORT:-4330}")
start_example_server bin/caddy "$port"
out=$(HARNESS_URL="http://127.0.0.1:$port" "$tmp/consumer/consumer-oldest") || fail "the consumer failed: $out"
echo "$out"
[[ $out == *"succeeded Echo: hello from a service"* ]] || fail "the consumer did not see its execution succeed"
stop_example_server
echo "sdk-consumer-check: ok"
