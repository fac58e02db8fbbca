#!/usr/bin/env bash
# Runs the portable conformance suite against the real server: builds bin/caddy and
# bin/harnessctl, starts bin/caddy with examples/Caddyfile on a temporary data directory,
# waits for /healthz, runs `bin/harnessctl conformance`, stops Caddy with SIGTERM and exits
# with harnessctl's status.
#
# Environment: HARNESS_PORT (default 4310; the next free port is taken if it is busy),
# CONFORMANCE_PROVIDER (default mock), CONFORMANCE_TIMEOUT (default 10s), GO (default go).
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
source scripts/lib/example-server.sh

"$GO" build -o bin/caddy ./cmd/caddy
"$GO" build -o bin/harnessctl ./cmd/harnessctl

tmp=$(mktemp -d "${TMPDIR:-/tmp}/harness-conformance.XXXXXX")
caddy_pid=""
cleanup() {
	if [[ -n "$caddy_pid" ]] && kill -0 "$caddy_pid" 2>/dev/null; then
		kill -TERM "$caddy_pid" 2>/dev/null || true
		wait "$caddy_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

port=$(free_port "${HARNESS_PORT:-4310}")
base="http://127.0.0.1:$port"
start_example_server bin/caddy "$port"

status=0
bin/harnessctl conformance --base "$base" --provider "${CONFORMANCE_PROVIDER:-mock}" \
	--timeout "${CONFORMANCE_TIMEOUT:-10s}" || status=$?

stop_example_server || { [[ $status -ne 0 ]] || status=1; }
exit "$status"
