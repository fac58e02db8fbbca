# shellcheck shell=bash
# Sourced by the benchmark scripts that measure several nodes (bench-cluster.sh,
# bench_streams.sh): a throw-away PostgreSQL 15 (durable: fsync and synchronous commit on, as in
# production) and nodes from examples/cluster.Caddyfile, optionally the balancer from
# examples/cluster-lb.Caddyfile, all on free loopback ports of this machine.
#
# The caller sets WORK (a temporary directory), CADDY (the binary to run), defines log(), has
# built bin/harness-load (for free ports), and calls cluster_stop from its EXIT trap. Then:
#
#   cluster_find_postgres          sets PGBIN, or fails with how to install it
#   cluster_up [lb]                PostgreSQL, nodes a and b (and the balancer with "lb"); sets
#                                  A, B (and LB): their base URLs; A_PID, B_PID: the nodes' pids;
#                                  A_ADMIN, B_ADMIN: their admin URLs; PG_PORT
#   cluster_stop                   stops every process it started and PostgreSQL

CLUSTER_PIDS=()

cluster_find_postgres() {
	PGBIN=/usr/lib/postgresql/15/bin
	[[ -x $PGBIN/initdb ]] || PGBIN=$(pg_config --bindir 2>/dev/null || true)
	if [[ ! -x $PGBIN/initdb ]]; then
		log "PostgreSQL 15 server binaries not found: apt-get install postgresql-15"
		return 1
	fi
}

# PostgreSQL refuses to run as root: then it runs as nobody, owning its directory.
cluster_as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u nobody -- "$@"; else "$@"; fi; }

cluster_stop() {
	local pid
	for pid in "${CLUSTER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${CLUSTER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	CLUSTER_PIDS=()
	if [[ -n ${PGBIN:-} && -d $WORK/pg ]]; then
		cluster_as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -m fast stop >/dev/null 2>&1 || true
	fi
}

# cluster_start_node NAME CADDYFILE ENV…: one Caddy process in the background, its log in
# $WORK/NAME.log; its pid is the last of CLUSTER_PIDS.
cluster_start_node() {
	local name=$1 file=$2
	shift 2
	env "$@" "$CADDY" run --config "$file" --adapter caddyfile >"$WORK/$name.log" 2>&1 &
	CLUSTER_PIDS+=($!)
}

cluster_wait_healthy() { # PORT…
	local port
	for port in "$@"; do
		for _ in $(seq 1 300); do
			curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
			sleep 0.1
		done
		curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || {
			log "port $port did not answer; logs in $WORK"
			return 1
		}
	done
}

cluster_up() {
	local with_lb=${1:-}
	cluster_find_postgres || return 1
	local P
	mapfile -t P < <(bin/harness-load -free-ports 7)
	PG_PORT=${P[0]}
	local a_port=${P[1]} b_port=${P[2]} lb_port=${P[3]}
	A_ADMIN=http://127.0.0.1:${P[4]} B_ADMIN=http://127.0.0.1:${P[5]}
	mkdir "$WORK/pg"
	chmod 755 "$WORK"
	if [[ $(id -u) == 0 ]]; then chown nobody "$WORK/pg"; fi
	log "PostgreSQL on 127.0.0.1:$PG_PORT ($WORK/pg)"
	cluster_as_pg "$PGBIN/initdb" -D "$WORK/pg" -U harness --auth=trust >"$WORK/initdb.log"
	cluster_as_pg "$PGBIN/pg_ctl" -D "$WORK/pg" -w -l "$WORK/pg/server.log" \
		-o "-p $PG_PORT -k $WORK/pg -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
	cluster_as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U harness harness
	export HARNESS_DATABASE_URL="postgres://harness@127.0.0.1:$PG_PORT/harness?sslmode=disable"
	export XDG_DATA_HOME=$WORK/xdg-data XDG_CONFIG_HOME=$WORK/xdg-config

	ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
	cluster_start_node a examples/cluster.Caddyfile HARNESS_NODE=a HARNESS_PORT="$a_port" HARNESS_ADMIN="127.0.0.1:${P[4]}"
	A_PID=${CLUSTER_PIDS[-1]}
	cluster_start_node b examples/cluster.Caddyfile HARNESS_NODE=b HARNESS_PORT="$b_port" HARNESS_ADMIN="127.0.0.1:${P[5]}"
	B_PID=${CLUSTER_PIDS[-1]}
	local ports=("$a_port" "$b_port")
	if [[ $with_lb == lb ]]; then
		cluster_start_node lb examples/cluster-lb.Caddyfile HARNESS_PORT="$lb_port" HARNESS_ADMIN="127.0.0.1:${P[6]}" \
			HARNESS_NODE_A="127.0.0.1:$a_port" HARNESS_NODE_B="127.0.0.1:$b_port"
		ports+=("$lb_port")
		LB=http://127.0.0.1:$lb_port
	fi
	cluster_wait_healthy "${ports[@]}" || return 1
	A=http://127.0.0.1:$a_port B=http://127.0.0.1:$b_port
	log "nodes a=$A (pid $A_PID) b=$B (pid $B_PID)${LB:+, balancer $LB}"
}
