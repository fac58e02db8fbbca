#!/usr/bin/env bash
# xcaddy builds a working Caddy with the harness module from this clone, with the command of
# docs/configuration.md (issue 30): caddymodule/ is a module of its own, so `--with …/caddymodule=./caddymodule`
# has a go.mod to point at. The binary must list http.handlers.harness and serve
# examples/Caddyfile (healthz, then one execution through bin/harnessctl).
#
# xcaddy builds Caddy from scratch in a temporary module (with -trimpath, so little of the
# build cache is shared with bin/caddy): minutes on a small machine; CI runs it once.
#
# Environment: GO (default go), XCADDY_VERSION (default v0.4.5), HARNESS_PORT (default 4340).
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
source scripts/lib/example-server.sh

caddy_version=$(awk '$1 == "github.com/caddyserver/caddy/v2" { print $2; exit }' caddymodule/go.mod)
[[ -n $caddy_version ]] || { echo "xcaddy-check: no Caddy requirement in caddymodule/go.mod" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/harness-xcaddy.XXXXXX")
caddy_pid=""
cleanup() {
	if [[ -n "$caddy_pid" ]] && kill -0 "$caddy_pid" 2>/dev/null; then
		kill -TERM "$caddy_pid" 2>/dev/null || true
		wait "$caddy_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "== xcaddy ${XCADDY_VERSION:-v0.4.5}"
GOBIN="$tmp/bin" "$GO" install "github.com/caddyserver/xcaddy/cmd/xcaddy@${XCADDY_VERSION:-v0.4.5}"

echo "== docs/configuration.md's command (Caddy $caddy_version)"
# Until the first release the modules of this repository have no versions: the zero
# pseudo-version that caddymodule/go.mod requires them at is replaced by this clone. Each
# --replace names it, so xcaddy neither skips nor looks up …/caddymodule (docs/releasing.md).
zero=v0.0.0-00010101000000-000000000000
start=$(date +%s)
"$tmp/bin/xcaddy" build "$caddy_version" --output "$tmp/caddy" \
	--with "github.com/harness-edge/harness-edge/caddymodule@$zero=./caddymodule" \
	--replace "github.com/harness-edge/harness-edge@$zero=." \
	--replace "github.com/harness-edge/harness-edge/sdk@$zero=./sdk"
echo "xcaddy build took $(($(date +%s) - start)) s"

echo "== list-modules"
"$tmp/caddy" list-modules | grep '^http.handlers.harness$' || {
	echo "xcaddy-check: the binary does not list http.handlers.harness" >&2
	exit 1
}

echo "== serve examples/Caddyfile and run one execution"
"$GO" build -o bin/harnessctl ./cmd/harnessctl
port=$(free_port "${HARNESS_PORT:-4340}")
start_example_server "$tmp/caddy" "$port"
bin/harnessctl --base "http://127.0.0.1:$port" run "hello from xcaddy" --provider mock
stop_example_server
echo "xcaddy-check: ok"
