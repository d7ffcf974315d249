#!/usr/bin/env bash
# A/B of the gate's student look-up (GET, 64 connections, tokens + info logs)
# between two guidance-ingest binaries on one mock cluster, alternated ROUNDS
# times so both see the same machine: e.g. the release before the access log
# and this one. Each line: wrk's figures, then the CPU the ingest and the
# mock broker (same machine here, not in production) used per request.
#   bench/ab-lookup.sh OLD_INGEST NEW_INGEST [ROUNDS] [SECONDS]     (LOOKUP=0: registrations instead)
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 rounds=${3:-3} seconds=${4:-10}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
.build/release/guidance-dev --broker-only --bootstrap-file "$work/bootstrap" > "$work/broker.log" 2>&1 &
broker=$!
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, clock ticks
for _ in $(seq 100); do [ -s "$work/bootstrap" ] && break; sleep 0.1; done
bootstrap=$(cat "$work/bootstrap")
start() {  # binary port log
  KAFKA_BOOTSTRAP_SERVERS=$bootstrap ROSTER_DIR=examples/roster INGEST_PORT=$2 LOG_LEVEL=info "$1" > "$3" 2>&1 &
  echo $! > "$3.pid"
  for _ in $(seq 200); do curl -fs "http://127.0.0.1:$2/readyz" > /dev/null && return; sleep 0.1; done
  echo "ingest on $2 did not become ready" >&2; exit 1
}
start "$old" 18090 "$work/old.log"
start "$new" 18091 "$work/new.log"
for round in $(seq "$rounds"); do
  for side in old new; do
    port=$([ $side = old ] && echo 18090 || echo 18091)
    pid=$(cat "$work/$side.log.pid")
    before=$(ticks "$pid") broker_before=$(ticks "$broker")
    line=$(LOOKUP=${LOOKUP:-1} wrk -t2 -c64 -d"${seconds}s" -s bench/post.lua "http://127.0.0.1:$port" | grep '^requests/s')
    rps=$(echo "$line" | awk '{print $2}')
    hz=$(getconf CLK_TCK)
    cpu=$(awk -v t=$(( $(ticks "$pid") - before )) -v b=$(( $(ticks "$broker") - broker_before )) -v r="$rps" -v s="$seconds" -v hz="$hz" \
      'BEGIN { printf "ingest %.1f µs, broker %.1f µs per request", t / hz / (r * s) * 1e6, b / hz / (r * s) * 1e6 }')
    echo "round $round $side: $line  $cpu"
  done
done
