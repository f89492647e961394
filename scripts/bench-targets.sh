#!/usr/bin/env bash
# Runs the measurements behind issue 14's targets (docs/performance.md, "Against the targets (latest run)")
# and prints one line per run: durable sign_raw_payload and whoami at 32 clients on SQLite and
# PostgreSQL, one client, create_sub_organization, and (FULL=1) the same against a store of
# 100,000 organizations. Each run starts its own Latchkey in the bench process on a fresh
# SQLite directory or a fresh PostgreSQL database, and measures the crypto floor in the same
# run; the ratio printed is the measure of record. Nothing else should run on the machine.
#
#   scripts/bench-targets.sh                      (RUNS=3 per row, DURATION=10s)
#   PG=postgres://postgres@127.0.0.1:5432/test?sslmode=disable scripts/bench-targets.sh
#       (PostgreSQL rows: a database bench_targets_N is created beside the one named, and dropped)
#   BAO_ADDR=http://127.0.0.1:8200 BAO_KEY=bench LATCHKEY_BENCH_TRANSIT_TOKEN=... scripts/bench-targets.sh
#       (also OpenBao's transit signing with an ecdsa-p256 key, each run right after a Latchkey
#       signing run: docs/performance.md "Against OpenBao")
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
dur=${DURATION:-10s}
bin=$(mktemp -d)/latchkey
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/latchkey

row() { # label, then bench flags
  local label=$1
  shift
  for i in $(seq "$runs"); do
    printf '%-34s ' "$label"
    "$bin" bench --duration "$dur" "$@" 2>&1 | tr '\n' ' ' | sed 's/presigned=[0-9]* //; s/  */ /g'
    echo
  done
}

pgrow() { # label, then bench flags: each run on a fresh database
  local label=$1
  shift
  [ -n "${PG:-}" ] || return 0
  local base=${PG%%\?*} query=${PG#*\?}
  [ "$query" = "$PG" ] && query=
  for i in $(seq "$runs"); do
    local db=bench_targets_$$_$i
    PGOPTIONS="-c client_min_messages=warning" psql "$PG" -qc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
    printf '%-34s ' "$label"
    "$bin" bench --duration "$dur" --database-url "${base%/*}/$db${query:+?$query}" "$@" 2>&1 |
      tr '\n' ' ' | sed 's/presigned=[0-9]* //; s/  */ /g'
    echo
    psql "$PG" -qc "DROP DATABASE $db" >/dev/null
  done
}

if [ -n "${BAO_ADDR:-}" ]; then
  for i in $(seq "$runs"); do
    runs=1 row "sqlite sign_raw_payload c=32" --embedded --op sign_raw_payload --concurrency 32
    runs=1 row "openbao transit sign c=32" --api-url "$BAO_ADDR" --op transit_sign --transit-key "${BAO_KEY:-bench}" \
      --concurrency 32
  done
else
  row "sqlite sign_raw_payload c=32" --embedded --op sign_raw_payload --concurrency 32
fi
pgrow "postgres sign_raw_payload c=32" --op sign_raw_payload --concurrency 32
row "sqlite whoami c=32" --embedded --op whoami --concurrency 32
pgrow "postgres whoami c=32" --op whoami --concurrency 32
row "sqlite sign_raw_payload c=1" --embedded --op sign_raw_payload --concurrency 1
row "sqlite create_sub_organization" --embedded --op create_sub_organization --concurrency 32
if [ "${FULL:-0}" = 1 ]; then
  runs=1
  row "sqlite 100k orgs sign c=32" --embedded --seed 100000 --op sign_raw_payload --concurrency 32
  row "sqlite 100k orgs whoami c=32" --embedded --seed 100000 --op whoami --concurrency 32
fi
