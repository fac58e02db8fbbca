#!/usr/bin/env bash
# The "Several nodes" figures of docs/performance-log.md: a throw-away PostgreSQL 15 (durable: fsync
# and synchronous commit on, as in production), two nodes from examples/cluster.Caddyfile and the
# balancer from examples/cluster-lb.Caddyfile, all on free loopback ports; then harness-load:
#
#   e2e on node a alone, e2e through the balancer (round robin over a and b), the fan-out phase
#   with the execution on node a and its subscribers on node a (same node) and on node b (the
#   cross-node lag: the owner's event time → receipt on the other node), and the streams phase
#   with e2e load on node a and the tenant and conversation streams held on node b.
#
# Prints each run's command, its Markdown table and the machine load (uptime) before it. Writes
# nothing into the repository. Needs PostgreSQL 15's server binaries (apt-get install
# postgresql-15), curl and Go. Environment (optional): E2E_DURATION (default 15s), SUBSCRIBERS
# (default 200), TENANT_SUBSCRIBERS (1000) and CONVERSATION_SUBSCRIBERS (200) for the streams
# phase, CLUSTER_KEEP=1 keeps the temporary directory (logs, database), CADDY (a binary to
# measure instead of building bin/caddy), ONLY (a regular expression: the measurements to run).
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
log() { printf 'bench-cluster: %s\n' "$*" >&2; }

PGBIN=/usr/lib/postgresql/15/bin
[[ -x $PGBIN/initdb ]] || PGBIN=$(pg_config --bindir 2>/dev/null || true)
if [[ ! -x $PGBIN/initdb ]]; then
	log "PostgreSQL 15 server binaries not found: apt-get install postgresql-15"
	exit 1
fi

log "building bin/caddy and bin/harness-load"
mkdir -p bin
CADDY=${CADDY:-bin/caddy}
[[ $CADDY != bin/caddy ]] || $GO build -o bin/caddy ./cmd/caddy
$GO build -o bin/harness-load ./cmd/harness-load

WORK=$(mktemp -d "${TMPDIR:-/tmp}/harness-cluster-bench.XXXXXX")
chmod 755 "$WORK"
PIDS=()
# PostgreSQL refuses to run as root: then it runs as nobody, owning its directory.
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u nobody -- "$@"; else "$@"; fi; }
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -m fast stop >/dev/null 2>&1 || true
	if [[ ${CLUSTER_KEEP:-0} == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

mapfile -t P < <(bin/harness-load -free-ports 7)
PG_PORT=${P[0]} A_PORT=${P[1]} B_PORT=${P[2]} LB_PORT=${P[3]}
mkdir "$WORK/pg"
if [[ $(id -u) == 0 ]]; then chown nobody "$WORK/pg"; fi
log "PostgreSQL on 127.0.0.1:$PG_PORT ($WORK/pg)"
as_pg "$PGBIN/initdb" -D "$WORK/pg" -U harness --auth=trust >"$WORK/initdb.log"
as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -w -l "$WORK/pg/server.log" \
	-o "-p $PG_PORT -k $WORK/pg -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U harness harness
export HARNESS_DATABASE_URL="postgres://harness@127.0.0.1:$PG_PORT/harness?sslmode=disable"
export XDG_DATA_HOME=$WORK/xdg-data XDG_CONFIG_HOME=$WORK/xdg-config

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
start() { # name, log, env…, then the Caddyfile
	local name=$1 file=$2
	shift 2
	env "$@" "$CADDY" run --config "$file" --adapter caddyfile >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
}
start a examples/cluster.Caddyfile HARNESS_NODE=a HARNESS_PORT="$A_PORT" HARNESS_ADMIN="127.0.0.1:${P[4]}"
start b examples/cluster.Caddyfile HARNESS_NODE=b HARNESS_PORT="$B_PORT" HARNESS_ADMIN="127.0.0.1:${P[5]}"
start lb examples/cluster-lb.Caddyfile HARNESS_PORT="$LB_PORT" HARNESS_ADMIN="127.0.0.1:${P[6]}" \
	HARNESS_NODE_A="127.0.0.1:$A_PORT" HARNESS_NODE_B="127.0.0.1:$B_PORT"
for port in "$A_PORT" "$B_PORT" "$LB_PORT"; do
	for _ in $(seq 1 300); do
		curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || { log "port $port did not answer; logs in $WORK"; CLUSTER_KEEP=1; exit 1; }
done
A=http://127.0.0.1:$A_PORT B=http://127.0.0.1:$B_PORT LB=http://127.0.0.1:$LB_PORT
log "nodes a=$A b=$B, balancer $LB"

measure() { # title, harness-load flags…
	local title=$1
	shift
	[[ $title =~ ${ONLY:-.} ]] || return 0
	echo
	echo "#### $title"
	echo
	echo "- load before: $(uptime | sed 's/.*load average/load average/')"
	echo "- command: \`bin/harness-load $*\`" | sed -E "s#$A#\$A#g; s#$B#\$B#g; s#$LB#\$LB#g"
	echo
	bin/harness-load "$@" -md - 2>"$WORK/load-$RANDOM.log"
}

E2E=${E2E_DURATION:-15s}
SUBS=${SUBSCRIBERS:-200}
measure "e2e, one node (a)" -url "$A" -phases e2e -e2e-duration "$E2E"
measure "e2e, two nodes behind the balancer" -url "$LB" -phases e2e -e2e-duration "$E2E"
measure "fan-out, subscribers on the owner (a)" -url "$A" -phases fanout -subscribers "$SUBS"
measure "fan-out, subscribers on the other node (b): cross-node lag" -url "$A" -subscribe-url "$B" -phases fanout -subscribers "$SUBS"
measure "tenant and conversation streams on the other node (b), executions on a: cross-node lag" -url "$A" -subscribe-url "$B" -phases streams \
	-tenant-subscribers "${TENANT_SUBSCRIBERS:-1000}" -conversation-subscribers "${CONVERSATION_SUBSCRIBERS:-200}" -streams-duration "$E2E"
echo
echo "- load after: $(uptime | sed 's/.*load average/load average/')"
