#!/usr/bin/env bash
# Makes the pictures under docs/ from a live cluster: `sm-node demo` (3 replicas on the
# simulated ft2:36 fabric, fabric-simd), then smctl draws the fabric (with the master SM
# marked) and, after a two-tenant policy (alpha, beta, sharing the storage partition
# "store"), the reachability matrix the audit reads back from the fabric.
#
# Usage: docs/make-pictures.sh   (from the repository root; builds the debug binaries)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p sm-node -p smctl --bins
BIN=target/debug
BASE=${BASE_PORT:-7640}
SERVER=127.0.0.1:$((BASE + 1))
WORK=$(mktemp -d /tmp/qsm-pictures.XXXXXX)
"$BIN/sm-node" demo --fabric ft2:36 --base-port "$BASE" --dir "$WORK" >"$WORK/demo.log" 2>&1 &
DEMO=$!
trap 'kill -TERM $DEMO 2>/dev/null || true; wait $DEMO 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 240); do
  grep -q "SUBNET UP" "$WORK/demo.log" 2>/dev/null && break
  kill -0 $DEMO 2>/dev/null || { cat "$WORK/demo.log"; exit 1; }
  sleep 0.5
done
grep -q "SUBNET UP" "$WORK/demo.log" || { echo "no SUBNET UP in 120 s" >&2; tail "$WORK/demo.log" >&2; exit 1; }
S=(--server "$SERVER")
"$BIN/smctl" "${S[@]}" draw fabric --format svg -o docs/fabric-ft2-36.svg
members() { for h in "$@"; do printf -- '--member-node\nhost %s HCA-1\n' "$h"; done; }
mapfile -t A < <(members 6 7 8 9 10 11)
mapfile -t B < <(members 18 19 20 21 22 23)
"$BIN/smctl" "${S[@]}" tenants set-storage store --pkey 0x0300 --storage-server-node "host 36 HCA-1" --storage-server-node "host 37 HCA-1"
"$BIN/smctl" "${S[@]}" tenants set alpha --pkey 0x0101 --storage store "${A[@]}"
"$BIN/smctl" "${S[@]}" tenants set beta --pkey 0x0102 --storage store "${B[@]}"
# The master programs the P_Key tables; the audit reads them back.
sleep 5
"$BIN/smctl" "${S[@]}" draw partitions --title "Two tenants and shared storage on ft2:36 (read back from the fabric)" -o docs/partitions-two-tenants.svg
"$BIN/smctl" "${S[@]}" draw partitions --format text
