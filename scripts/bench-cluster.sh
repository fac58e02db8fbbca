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
# The set-up (PostgreSQL, nodes, balancer) is scripts/lib/pg-cluster.sh's, shared with
# bench_streams.sh. Prints each run's command, its Markdown table and the machine load (uptime)
# before it. Writes nothing into the repository. Needs PostgreSQL 15's server binaries (apt-get
# install postgresql-15), curl and Go. Environment (optional): E2E_DURATION (default 15s),
# SUBSCRIBERS (default 200), TENANT_SUBSCRIBERS (20) and CONVERSATION_SUBSCRIBERS (100) for the
# streams phase (issue 46's restated two-node target: 100 conversation + 20 tenant subscribers;
# `make bench-streams` steps its execution rate), CLUSTER_KEEP=1 keeps the temporary directory
# (logs, database), CADDY (a binary to measure instead of building bin/caddy), ONLY (a regular
# expression: the measurements to run).
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
log() { printf 'bench-cluster: %s\n' "$*" >&2; }

source scripts/lib/pg-cluster.sh
cluster_find_postgres

log "building bin/caddy and bin/harness-load"
mkdir -p bin
CADDY=${CADDY:-bin/caddy}
[[ $CADDY != bin/caddy ]] || $GO build -o bin/caddy ./cmd/caddy
$GO build -o bin/harness-load ./cmd/harness-load

WORK=$(mktemp -d "${TMPDIR:-/tmp}/harness-cluster-bench.XXXXXX")
cleanup() {
	cluster_stop
	if [[ ${CLUSTER_KEEP:-0} == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
cluster_up lb || { CLUSTER_KEEP=1; exit 1; }

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
	-tenant-subscribers "${TENANT_SUBSCRIBERS:-20}" -conversation-subscribers "${CONVERSATION_SUBSCRIBERS:-100}" -streams-duration "$E2E" \
	-server-pid "$A_PID" -subscribe-server-pid "$B_PID"
echo
echo "- load after: $(uptime | sed 's/.*load average/load average/')"
