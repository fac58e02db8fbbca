# Sourced by the scripts that start a Caddy binary with examples/Caddyfile (conformance.sh,
# sdk-consumer-check.sh, xcaddy-check.sh): a free port, a health check in bash alone, start
# and stop. The caller sets `tmp` (a scratch directory it removes) before start_example_server.

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# healthz asks GET /healthz with bash alone (no curl needed) and wants {"status":"ok"}.
healthz() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$1" >&3
		grep -q '"status":"ok"' <&3
	) 2>/dev/null
}

# free_port prints the first free port from $1 on (50 tries).
free_port() {
	local port=$1
	for _ in $(seq 1 50); do
		port_in_use "$port" || break
		port=$((port + 1))
	done
	if port_in_use "$port"; then
		echo "no free port from $1 to $port" >&2
		return 1
	fi
	echo "$port"
}

# start_example_server BIN PORT starts BIN with examples/Caddyfile on PORT, a data directory in
# $tmp and no admin endpoint, sets caddy_pid, and waits (about 30 s at most) until it is healthy.
# examples/Caddyfile reads its port, admin address and data directory from the environment;
# XDG_* keep Caddy's own files (autosave, certificates) out of the user's home.
start_example_server() {
	local bin=$1 port=$2
	HARNESS_PORT=$port HARNESS_ADMIN=off HARNESS_DATA_DIR="$tmp/data" \
		XDG_DATA_HOME="$tmp/xdg-data" XDG_CONFIG_HOME="$tmp/xdg-config" \
		"$bin" run --config examples/Caddyfile --adapter caddyfile >"$tmp/caddy.log" 2>&1 &
	caddy_pid=$!
	for _ in $(seq 1 300); do
		if ! kill -0 "$caddy_pid" 2>/dev/null; then
			break
		fi
		if healthz "$port"; then
			return 0
		fi
		sleep 0.1
	done
	echo "$bin did not become healthy on http://127.0.0.1:$port; its log:" >&2
	cat "$tmp/caddy.log" >&2
	return 1
}

# stop_example_server stops the server start_example_server started (SIGTERM) and fails if it
# did not stop cleanly.
stop_example_server() {
	[[ -n "${caddy_pid:-}" ]] || return 0
	local pid=$caddy_pid
	caddy_pid=""
	kill -TERM "$pid" 2>/dev/null || true
	if ! wait "$pid"; then
		echo "the server did not stop cleanly; its log:" >&2
		tail -20 "$tmp/caddy.log" >&2
		return 1
	fi
}
