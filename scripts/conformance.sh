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

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# healthz asks GET /healthz with bash alone (no curl needed) and wants {"status":"ok"}.
healthz() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$1" >&3
		grep -q '"status":"ok"' <&3
	) 2>/dev/null
}

port=${HARNESS_PORT:-4310}
for _ in $(seq 1 50); do
	port_in_use "$port" || break
	port=$((port + 1))
done
if port_in_use "$port"; then
	echo "conformance.sh: no free port from ${HARNESS_PORT:-4310} to $port" >&2
	exit 1
fi
base="http://127.0.0.1:$port"

# examples/Caddyfile reads its port, admin address and data directory from the environment;
# XDG_* keep Caddy's own files (autosave, certificates) out of the user's home.
HARNESS_PORT=$port HARNESS_ADMIN=off HARNESS_DATA_DIR="$tmp/data" \
	XDG_DATA_HOME="$tmp/xdg-data" XDG_CONFIG_HOME="$tmp/xdg-config" \
	bin/caddy run --config examples/Caddyfile --adapter caddyfile >"$tmp/caddy.log" 2>&1 &
caddy_pid=$!

healthy=""
for _ in $(seq 1 300); do # about 30 s
	if ! kill -0 "$caddy_pid" 2>/dev/null; then
		break
	fi
	if healthz "$port"; then
		healthy=yes
		break
	fi
	sleep 0.1
done
if [[ -z "$healthy" ]]; then
	echo "conformance.sh: bin/caddy did not become healthy on $base; its log:" >&2
	cat "$tmp/caddy.log" >&2
	exit 1
fi

status=0
bin/harnessctl conformance --base "$base" --provider "${CONFORMANCE_PROVIDER:-mock}" \
	--timeout "${CONFORMANCE_TIMEOUT:-10s}" || status=$?

kill -TERM "$caddy_pid"
if ! wait "$caddy_pid"; then
	echo "conformance.sh: bin/caddy did not stop cleanly; its log:" >&2
	tail -20 "$tmp/caddy.log" >&2
	[[ $status -ne 0 ]] || status=1
fi
caddy_pid=""
exit "$status"
