#!/usr/bin/env bash
# Three sm-node replicas attached to ibsim at three different CAs (umad through umad2sim),
# Raft over loopback. Waits for a master (sminfo from a fourth CA), dumps every switch's
# LFT with ibroute, kill -9s the master, waits until sminfo names another master, dumps
# again and compares.
#
# usage: scripts/ibsim-failover.sh [NETFILE]   (default net.2sw2path4hca: Hca1..Hca3 run
#        replicas, Hca4 runs the diags; another file needs CAs named Hca1..Hca4)
#   env: SM_NODE (default target/release/sm-node), FO_KEEP=1 keeps the scratch directory.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM_NODE=${SM_NODE:-$ROOT/target/release/sm-node}
NET=${1:-/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca}
P=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
[ -x "$SM_NODE" ] || { echo "build first: cargo build --release -p sm-node" >&2; exit 2; }
. "$ROOT/scripts/tools.sh" # the tests' tool lookup: PATH, then /usr/sbin and /sbin
IBSIM=$(qsm_require_tool ibsim)
IBSWITCHES=$(qsm_require_tool ibswitches)
IBROUTE=$(qsm_require_tool ibroute)
SMINFO=$(qsm_require_tool sminfo)

WORK=$(mktemp -d /tmp/ibsim-failover.XXXXXX)
export IBSIM_SOCKNAME=fo-$$
PIDS=()
IBSIM_PID=
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    if [ -n "$IBSIM_PID" ]; then kill "$IBSIM_PID" 2>/dev/null || true; wait "$IBSIM_PID" 2>/dev/null || true; fi
    [ -n "${FO_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

"$IBSIM" -s -n "$NET" >"$WORK/ibsim.log" 2>&1 &
IBSIM_PID=$!
until grep -q "@$IBSIM_SOCKNAME:ctl" /proc/net/unix; do sleep 0.1; done

diag() { (cd "$WORK" && LD_PRELOAD=$P SIM_HOST=Hca4 "$@"); }
dump() { for l in $(diag "$IBSWITCHES" | sed 's/.* lid \([0-9]*\) .*/\1/'); do diag "$IBROUTE" "$l"; done; }
master_guid() { { diag "$SMINFO" 2>/dev/null || true; } | sed -n 's/.*sm guid \(0x[0-9a-f]*\),.*SMINFO_MASTER.*/\1/p'; }

PEERS=1=127.0.0.1:$((17200 + $$ % 500)),2=127.0.0.1:$((17700 + $$ % 500)),3=127.0.0.1:$((18200 + $$ % 500))
for i in 1 2 3; do
    mkdir -p "$WORK/r$i"
    (cd "$WORK/r$i" && LD_PRELOAD=$P SIM_HOST=Hca$i SM_INSECURE_LOOPBACK=1 exec "$SM_NODE" --id $i \
        --peers "$PEERS" --initial-cluster-state new --data-dir "$WORK/r$i/data" --fabric umad:/dev/infiniband/umad0 \
        --sweep-interval 1 >"$WORK/r$i/log" 2>&1) &
    PIDS[$i]=$!
done

for _ in $(seq 1 300); do g=$(master_guid); [ -n "$g" ] && break; sleep 0.1; done
[ -n "$g" ] || { echo "no master after 30 s" >&2; exit 1; }
# The replica whose log says it is master for the term sminfo reports.
m=
for i in 1 2 3; do grep -q "becomes MASTER" "$WORK/r$i/log" && m=$i; done
[ -n "$m" ] || { echo "no replica says MASTER" >&2; exit 1; }
# sminfo answers as soon as the replica is MASTER: wait for its sweep to complete.
for _ in $(seq 1 300); do grep -q "HEAVY SWEEP COMPLETE" "$WORK/r$m/log" && break; sleep 0.1; done
grep -q "HEAVY SWEEP COMPLETE" "$WORK/r$m/log" || { echo "replica $m completed no sweep in 30 s" >&2; exit 1; }
dump >"$WORK/before.txt"
echo "master: replica $m (sminfo: SM port GUID $g); $(grep -c 'valid lids' "$WORK/before.txt") switch tables dumped"

kill -9 "${PIDS[$m]}"
wait "${PIDS[$m]}" 2>/dev/null || true
unset "PIDS[$m]"
t0=$(date +%s.%N)
for _ in $(seq 1 600); do g2=$(master_guid); [ -n "$g2" ] && [ "$g2" != "$g" ] && break; sleep 0.05; done
t1=$(date +%s.%N)
[ -n "$g2" ] && [ "$g2" != "$g" ] || { echo "no new master after 30 s" >&2; exit 1; }
new=$(for i in 1 2 3; do [ "$i" = "$m" ] && continue; grep -q "becomes MASTER" "$WORK/r$i/log" && echo "$i"; done | head -1 || true)
[ -n "$new" ] || { echo "no surviving replica says MASTER" >&2; exit 1; }
for _ in $(seq 1 300); do grep -q "HEAVY SWEEP COMPLETE" "$WORK/r$new/log" && break; sleep 0.1; done
grep -q "HEAVY SWEEP COMPLETE" "$WORK/r$new/log" || { echo "replica $new completed no sweep in 30 s" >&2; exit 1; }
dump >"$WORK/after.txt"
printf 'kill -9 of replica %s: sminfo names %s (replica %s) after %.2f s\n' "$m" "$g2" "$new" "$(echo "$t1 - $t0" | bc)"
if cmp -s "$WORK/before.txt" "$WORK/after.txt"; then
    echo "ibroute dumps before and after: identical"
else
    echo "ibroute dumps before and after: DIFFER"; diff "$WORK/before.txt" "$WORK/after.txt" | head -20; exit 1
fi
