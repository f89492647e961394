#!/usr/bin/env bash
# Latchkey in high availability on one machine, for trying it and for the failover drill:
# a pg_auto_failover monitor, a PostgreSQL primary and its synchronous standby (each node kept by
# a pg_autoctl keeper that the monitor tells what to be), and two `latchkey serve` processes on
# one multi-host URL that always reaches the writable node. docs/operations.md, "High
# availability", explains the deployment; on real machines each node and each Latchkey process
# has its own host, and the same commands apply there with their host names.
#
#   deploy/ha/ha.sh up       start everything (prints the API URLs and the database URL)
#   deploy/ha/ha.sh state    the monitor's view of the nodes
#   deploy/ha/ha.sh drill    kill -9 the primary node (keeper and PostgreSQL), as a machine dies,
#                            and time how long until a write through each Latchkey succeeds
#   deploy/ha/ha.sh down     stop everything and remove the directory
#   deploy/ha/ha.sh primary  the primary node's name and port; kill-primary kills it and says which
#
# Needs Debian's postgresql-15, pg-auto-failover-cli and postgresql-15-auto-failover, and a latchkey
# binary (LATCHKEY, default: latchkey on PATH). Settings, from the environment:
#   HA_DIR (default /tmp/latchkey-ha), HA_PORT (default 6000: the monitor; the nodes are
#   HA_PORT+1 and HA_PORT+2), HA_API_PORT (default 8180: Latchkey A; B is HA_API_PORT+1).
# As root, PostgreSQL and pg_autoctl run as the postgres user (initdb refuses root).
set -euo pipefail

HA_DIR=${HA_DIR:-/tmp/latchkey-ha}
HA_PORT=${HA_PORT:-6000}
HA_API_PORT=${HA_API_PORT:-8180}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
LATCHKEY=${LATCHKEY:-latchkey}
MONITOR_PORT=$HA_PORT
NODE_PORTS=($((HA_PORT + 1)) $((HA_PORT + 2)))
API_PORTS=($HA_API_PORT $((HA_API_PORT + 1)))
MONITOR_URI="postgres://autoctl_node@127.0.0.1:$MONITOR_PORT/pg_auto_failover?sslmode=disable"
# Both nodes; libpq and pgx try them in order and keep the one that accepts writes. A connection
# attempt to a node that does not answer gives up after 3 s and tries the next.
DATABASE_URL="postgres://postgres@127.0.0.1:${NODE_PORTS[0]},127.0.0.1:${NODE_PORTS[1]}/latchkey?sslmode=disable&target_session_attrs=read-write&connect_timeout=3"

# AS_PG runs a command as the owner of the PostgreSQL directories, with pg_autoctl's own
# configuration and state kept under HA_DIR.
AS_PG=(env "PATH=$PG_BIN:$PATH" "XDG_CONFIG_HOME=$HA_DIR/xdg/config" "XDG_DATA_HOME=$HA_DIR/xdg/data"
  "XDG_RUNTIME_DIR=$HA_DIR/xdg/run" "PG_CONFIG=$PG_BIN/pg_config")
if [ "$(id -u)" = 0 ]; then AS_PG=(runuser -u postgres -- "${AS_PG[@]}"); fi
as_pg() { "${AS_PG[@]}" "$@"; }

# background starts a long-running command detached, its output in HA_DIR/NAME.log and its
# process id in HA_DIR/NAME.pid.
background() {
  local name=$1
  shift
  setsid "$@" >"$HA_DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$HA_DIR/$name.pid"
}

wait_until() {
  local what=$1 tries=$2
  shift 2
  for _ in $(seq 1 "$tries"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "ha.sh: timed out waiting for $what" >&2
  return 1
}

psql_at() { as_pg psql -h 127.0.0.1 -p "$1" -d "$2" -qAtX -c "$3"; }

state() { as_pg pg_autoctl show state --pgdata "$HA_DIR/monitor"; }

# The node name and port of the current primary, as the monitor sees it.
primary() {
  for i in 1 2; do
    if [ "$(psql_at "${NODE_PORTS[$((i - 1))]}" postgres 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; then
      echo "node$i ${NODE_PORTS[$((i - 1))]}"
      return 0
    fi
  done
  return 1
}

node_is() { state | grep -E "^ *node$1 .*\| *$2 *\| *$2 *$"; }

up() {
  if [ -e "$HA_DIR" ]; then
    echo "ha.sh: $HA_DIR exists: run ha.sh down first" >&2
    exit 1
  fi
  command -v pg_autoctl >/dev/null || { echo "ha.sh: pg_autoctl is not installed (pg-auto-failover-cli)" >&2; exit 1; }
  mkdir -p "$HA_DIR/xdg/config" "$HA_DIR/xdg/data" "$HA_DIR/xdg/run"
  chmod 700 "$HA_DIR/xdg/run"
  if [ "$(id -u)" = 0 ]; then chown -R postgres:postgres "$HA_DIR"; fi

  echo "== the monitor (port $MONITOR_PORT)"
  as_pg pg_autoctl create monitor --pgdata "$HA_DIR/monitor" --pgport "$MONITOR_PORT" --hostname 127.0.0.1 \
    --auth trust --no-ssl --pgctl "$PG_BIN/pg_ctl"
  background monitor "${AS_PG[@]}" pg_autoctl run --pgdata "$HA_DIR/monitor"
  wait_until "the monitor" 60 psql_at "$MONITOR_PORT" pg_auto_failover 'SELECT 1'
  # Tuned for seconds, not the defaults' half minute: a node is unhealthy after two missed checks
  # a second apart and 2 s of silence; the monitor waits 5 s for a lost primary to have stopped
  # (longer than the 3 s after which a keeper cut off from the monitor and its standby stops
  # its own PostgreSQL, so that two primaries never take writes at once).
  local setting
  for setting in health_check_period=1000 health_check_timeout=1000 health_check_max_retries=1 \
    health_check_retry_delay=500 node_considered_unhealthy_timeout=2000 primary_demote_timeout=5000; do
    psql_at "$MONITOR_PORT" pg_auto_failover "ALTER SYSTEM SET pgautofailover.${setting%=*} = ${setting#*=}"
  done
  psql_at "$MONITOR_PORT" pg_auto_failover 'SELECT pg_reload_conf()' >/dev/null

  for i in 1 2; do
    local port=${NODE_PORTS[$((i - 1))]}
    echo "== node$i (port $port)"
    as_pg pg_autoctl create postgres --pgdata "$HA_DIR/node$i" --pgport "$port" --hostname 127.0.0.1 \
      --name "node$i" --dbname latchkey --auth trust --no-ssl --monitor "$MONITOR_URI" --pgctl "$PG_BIN/pg_ctl"
    as_pg pg_autoctl config set --pgdata "$HA_DIR/node$i" timeout.network_partition_timeout 3 >/dev/null
    background "node$i" "${AS_PG[@]}" pg_autoctl run --pgdata "$HA_DIR/node$i"
    if [ "$i" = 1 ]; then
      wait_until "node1 to be the primary" 120 node_is 1 single
    fi
  done
  wait_until "node1 primary and node2 its secondary" 240 node_is 2 secondary
  wait_until "node1 primary" 60 node_is 1 primary
  # The standby is synchronous: a commit returns once node2 has it.
  psql_at "${NODE_PORTS[0]}" postgres 'SHOW synchronous_standby_names'

  echo "== Latchkey: the schema, an organization and two serve processes"
  head -c 32 /dev/urandom | od -An -tx1 -v | tr -d ' \n' >"$HA_DIR/master.key"
  echo >>"$HA_DIR/master.key"
  chmod 600 "$HA_DIR/master.key"
  "$LATCHKEY" keygen --name ops --key-dir "$HA_DIR/keys" --json >"$HA_DIR/ops-key.json"
  local pub
  pub=$(sed -n 's/.*"publicKey": *"\([0-9a-f]*\)".*/\1/p' "$HA_DIR/ops-key.json")
  "$LATCHKEY" init --database-url "$DATABASE_URL" --master-key-file "$HA_DIR/master.key" \
    --data-dir "$HA_DIR/latchkey-init" --org-name Acme --user-name ops --api-public-key "$pub" \
    >"$HA_DIR/organization.json"
  for i in 0 1; do
    local name
    name=latchkey-$(printf "\\x$(printf %x $((65 + i)))")
    background "$name" "$LATCHKEY" serve --database-url "$DATABASE_URL" --master-key-file "$HA_DIR/master.key" \
      --data-dir "$HA_DIR/$name" --api-addr "127.0.0.1:${API_PORTS[$i]}" --proxy-addr "" --dashboard-addr ""
  done
  for i in 0 1; do
    wait_until "Latchkey on port ${API_PORTS[$i]}" 60 curl -sf "http://127.0.0.1:${API_PORTS[$i]}/readyz"
  done
  echo "== up"
  state
  echo "database URL:   $DATABASE_URL"
  echo "Latchkey A, B:  http://127.0.0.1:${API_PORTS[0]}  http://127.0.0.1:${API_PORTS[1]}"
  echo "organization:   $(cat "$HA_DIR/organization.json")"
  echo "API key:        ops in $HA_DIR/keys (latchkey request --key-dir $HA_DIR/keys --key ops ...)"
}

# write sends one stamped write (a user tag of a unique name) through a Latchkey process.
write() {
  local org
  org=$(sed -n 's/.*"organizationId": *"\([^"]*\)".*/\1/p' "$HA_DIR/organization.json")
  "$LATCHKEY" request --key-dir "$HA_DIR/keys" --key ops --api-url "http://127.0.0.1:$1" --timeout 10s \
    --path /public/v1/submit/create_user_tag --organization-id "$org" \
    --body "{\"type\":\"ACTIVITY_TYPE_CREATE_USER_TAG\",\"parameters\":{\"userTagName\":\"drill $(date +%s%N)\",\"userIds\":[]}}"
}

now_ms() { date +%s%3N; }

# kill_primary kills -9 the primary node's keeper and PostgreSQL, every process at once, as when
# its machine dies, and prints the node's name and the time of the kill (unix milliseconds).
kill_primary() {
  local name port keeper pids
  read -r name port < <(primary)
  keeper=$(cat "$HA_DIR/$name.pid")
  pids="$(pgrep -s "$keeper" | tr '\n' ' ')"
  if [ -e "$HA_DIR/$name/postmaster.pid" ]; then
    # PostgreSQL's own processes, whatever session they are in.
    pids="$pids $(pgrep -P "$(head -n1 "$HA_DIR/$name/postmaster.pid")" | tr '\n' ' ')"
  fi
  local at
  at=$(now_ms)
  kill -9 $pids
  echo "$name $at"
}

drill() {
  local name port
  read -r name port < <(primary)
  echo "== the primary is $name (port $port); a write through each Latchkey first"
  for p in "${API_PORTS[@]}"; do write "$p" >/dev/null; done
  local t0
  read -r name t0 < <(kill_primary)
  echo "== killed $name at $(date -u -d "@${t0:0:10}.${t0:10}" +%T.%3N)"
  local done_a="" done_b=""
  while [ -z "$done_a" ] || [ -z "$done_b" ]; do
    if [ $(($(now_ms) - t0)) -gt 120000 ]; then
      echo "ha.sh: no write succeeded within 120 s of the kill" >&2
      state >&2 || true
      return 1
    fi
    if [ -z "$done_a" ] && write "${API_PORTS[0]}" >/dev/null 2>&1; then done_a=$(($(now_ms) - t0)); fi
    if [ -z "$done_b" ] && write "${API_PORTS[1]}" >/dev/null 2>&1; then done_b=$(($(now_ms) - t0)); fi
    sleep 0.1
  done
  echo "== a write succeeded through Latchkey A ${done_a} ms and through B ${done_b} ms after the kill"
  state
}

down() {
  for f in "$HA_DIR"/latchkey-*.pid "$HA_DIR"/node*.pid "$HA_DIR"/monitor.pid; do
    [ -e "$f" ] || continue
    local pid
    pid=$(cat "$f")
    # The whole session: pg_autoctl and the PostgreSQL it started.
    pkill -9 -s "$pid" 2>/dev/null || true
    kill -9 "$pid" 2>/dev/null || true
  done
  for d in "$HA_DIR"/node1 "$HA_DIR"/node2 "$HA_DIR"/monitor; do
    if [ -e "$d/postmaster.pid" ]; then
      kill -9 "$(head -n1 "$d/postmaster.pid")" 2>/dev/null || true
    fi
  done
  sleep 0.5
  rm -rf "$HA_DIR"
}

case "${1:-}" in
  up) up ;;
  state) state ;;
  drill) drill ;;
  kill-primary) kill_primary ;;
  primary) primary ;;
  down) down ;;
  *)
    echo "usage: $0 up|state|primary|drill|kill-primary|down" >&2
    exit 2
    ;;
esac
