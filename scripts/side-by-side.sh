#!/usr/bin/env bash
# Side by side on ibsim: OpenSM (`opensm -o`, one sweep) and Quorum SM
# (`sm-node --fabric umad:/dev/infiniband/umad0 --exit-after-subnet-up`), each on a fresh
# ibsim instance of the same topology, each to SUBNET UP. Prints both times (first log line
# to the SUBNET UP line of each one's own log), their ratio, and SMP counts.
#
# Load: the 1-minute load average when each SM starts (the machine has 2 cores; other
# work on it slows both SMs, OpenSM's single-threaded routing more than our SMP exchange).
#
# SMP counts: ours from our summary; for both, the MADs ibsim answered during the run
# (delta of ibsim's write syscalls in /proc/PID/io: one write per response, trap or
# forwarded MAD, plus a few log lines); OpenSM prints no count of its own.
#
# Path ceiling: after our SM, on the same ibsim, `umad-probe` (one thread, no SM logic:
# NodeInfo Gets of the next hop with 64 and then 128 in flight, the better of the two) measures
# how many SMPs per second umad2sim and ibsim carry at best on this machine. Our SMP count at
# that rate is the fastest any client could send them ("floor"); OpenSM's time over that floor
# is the best ratio the path allows for our SMP count ("max ratio").
#
# usage: scripts/side-by-side.sh TOPOLOGY [TOPOLOGY...]
#   TOPOLOGY: an ibsim/ibnetdiscover file, or a generator spec (ft2:36, ft3:36, torus:6x6x6)
#   env: SM_NODE (default target/release/sm-node), SMCTL (default target/release/smctl),
#        UMAD_PROBE (default target/release/umad-probe; missing: no ceiling column),
#        SBS_KEEP=1 keeps the scratch directory, SM_ARGS extra sm-node flags,
#        OSM_ARGS extra opensm flags (e.g. "-R ftree").
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM_NODE=${SM_NODE:-$ROOT/target/release/sm-node}
SMCTL=${SMCTL:-$ROOT/target/release/smctl}
UMAD_PROBE=${UMAD_PROBE:-$ROOT/target/release/umad-probe}
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
OSM_CONF_DEFAULT=${OSM_CONF_DEFAULT:-/work/shared/reference/opensm.conf.default}

. "$ROOT/scripts/tools.sh" # the tests' tool lookup: PATH, then /usr/sbin and /sbin
IBSIM=$(qsm_require_tool ibsim)
OPENSM=$(qsm_require_tool opensm)
[ -f "$UMAD2SIM" ] || { echo "side-by-side: $UMAD2SIM missing" >&2; exit 2; }
[ -x "$SM_NODE" ] || { echo "side-by-side: build first: cargo build --release -p sm-node -p smctl -p umad" >&2; exit 2; }
[ $# -ge 1 ] || { sed -n '2,18p' "$0"; exit 2; }

WORK=$(mktemp -d /tmp/side-by-side.XXXXXX)
IBSIM_PID=
cleanup() {
    if [ -n "$IBSIM_PID" ]; then kill "$IBSIM_PID" 2>/dev/null || true; wait "$IBSIM_PID" 2>/dev/null || true; fi
    [ -n "${SBS_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

# Seconds (float) of an OpenSM log timestamp "Nov 29 17:21:34 291315".
osm_secs() { awk '{split($3,t,":"); printf "%.6f\n", t[1]*3600+t[2]*60+t[3]+$4/1e6}'; }
# Seconds of a tracing timestamp "2026-11-29T17:21:51.265971Z".
trc_secs() { sed 's/\x1b\[[0-9;]*m//g' | awk '{split($1,a,"T"); sub("Z","",a[2]); split(a[2],t,":"); printf "%.6f\n", t[1]*3600+t[2]*60+t[3]}'; }

# Starts ibsim on $1 with socket $2 and size flags for the file; sets IBSIM_PID.
start_ibsim() {
    local net=$1 sock=$2
    # Nodes, switches, ports (a switch counts nports+1) with headroom; ibsim's defaults
    # are 2048 / 256 / 13312.
    read -r n s p < <(awk '/^Switch/{s++; n++; p+=$2+1} /^(Ca|Hca)/{n++; p+=$2} END{print n+0, s+0, p+0}' "$net")
    local flags=(-N $((n > 2048 ? n + 16 : 2048)) -S $((s > 256 ? s + 16 : 256)) -P $((p > 13312 ? p + 64 : 13312)))
    IBSIM_SOCKNAME=$sock "$IBSIM" -s -n "${flags[@]}" "$net" >"$WORK/ibsim-$sock.log" 2>&1 &
    IBSIM_PID=$!
    local i
    for i in $(seq 1 600); do
        grep -q "@$sock:ctl" /proc/net/unix && return 0
        kill -0 "$IBSIM_PID" 2>/dev/null || { cat "$WORK/ibsim-$sock.log" >&2; return 1; }
        sleep 0.1
    done
    echo "ibsim did not come up" >&2; return 1
}
stop_ibsim() { kill "$IBSIM_PID" 2>/dev/null || true; wait "$IBSIM_PID" 2>/dev/null || true; IBSIM_PID=; }
ibsim_writes() { awk '/^syscw/{print $2}' "/proc/$IBSIM_PID/io"; }
peak_rss_mb() { awk '/^VmHWM/{printf "%.0f", $2/1024}' "/proc/$1/status" 2>/dev/null || echo "?"; }

rows=()
for topo in "$@"; do
    if [ -f "$topo" ]; then
        net=$(realpath "$topo")
        name=$(basename "$topo")
    else
        net=$WORK/$(echo "$topo" | tr ':=' '__').net
        "$SMCTL" topo gen spec "$topo" -o "$net" >&2
        name=$topo
    fi
    # The SM attaches at the first CA of the file.
    host=$(awk '/^(Ca|Hca)/{match($0, /"[^"]*"/); print substr($0, RSTART+1, RLENGTH-2); exit}' "$net")
    echo "== $name: SMs attach at $host" >&2

    # OpenSM, once.
    d=$WORK/opensm-$(echo "$name" | tr ':=/' '___')
    mkdir -p "$d"
    sed 's/^force_log_flush FALSE/force_log_flush TRUE/' "$OSM_CONF_DEFAULT" >"$d/opensm.conf"
    sock=sbs-osm-$$
    start_ibsim "$net" "$sock"
    osm_load=$(cut -d' ' -f1 /proc/loadavg)
    w0=$(ibsim_writes)
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    (cd "$d" && IBSIM_SOCKNAME=$sock SIM_HOST=$host OSM_TMP_DIR=$d OSM_CACHE_DIR=$d LD_PRELOAD=$UMAD2SIM \
        exec /usr/bin/time -f "%M" -o "$d/rss" "$OPENSM" -F "$d/opensm.conf" -e -f "$d/osm.log" -s 0 -o ${OSM_ARGS:-} \
        >"$d/stdout" 2>&1) || { echo "opensm failed" >&2; tail "$d/osm.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    osm_smps=$(( $(ibsim_writes) - w0 ))
    stop_ibsim
    grep -q "SUBNET UP" "$d/osm.log" || { echo "OpenSM did not reach SUBNET UP" >&2; tail "$d/osm.log" >&2; exit 1; }
    osm_start=$(head -1 "$d/osm.log" | osm_secs)
    osm_up=$(grep -m1 "SUBNET UP" "$d/osm.log" | osm_secs)
    osm_s=$(awk -v a="$osm_start" -v b="$osm_up" 'BEGIN{d=b-a; if (d<0) d+=86400; printf "%.3f", d}')
    osm_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
    osm_rss=$(awk '{printf "%.0f", $1/1024}' "$d/rss" 2>/dev/null || echo "?")

    # Quorum SM.
    q=$WORK/quorum-$(echo "$name" | tr ':=/' '___')
    mkdir -p "$q"
    sock=sbs-q-$$
    start_ibsim "$net" "$sock"
    q_load=$(cut -d' ' -f1 /proc/loadavg)
    w0=$(ibsim_writes)
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    (cd "$q" && IBSIM_SOCKNAME=$sock SIM_HOST=$host LD_PRELOAD=$UMAD2SIM \
        exec /usr/bin/time -f "%M" -o "$q/rss" "$SM_NODE" --fabric umad:/dev/infiniband/umad0 \
        --exit-after-subnet-up --sweep-interval 0 ${SM_ARGS:-} >"$q/summary" 2>"$q/log") \
        || { echo "sm-node failed" >&2; tail "$q/log" >&2; exit 1; }
    t1=$(date +%s.%N)
    q_ibsim=$(( $(ibsim_writes) - w0 ))
    ceiling=
    if [ -x "$UMAD_PROBE" ]; then
        for w in 64 128; do
            r=$(IBSIM_SOCKNAME=$sock SIM_HOST=$host LD_PRELOAD=$UMAD2SIM "$UMAD_PROBE" \
                --repeat 200000 --window $w 0,1 2>/dev/null | sed -n 's/.*, \([0-9]*\) SMPs\/s.*/\1/p')
            [ -n "$r" ] && { [ -z "$ceiling" ] || [ "$r" -gt "$ceiling" ]; } && ceiling=$r
        done
    fi
    stop_ibsim
    grep -q "SUBNET UP after" "$q/log" || { echo "sm-node did not reach SUBNET UP" >&2; tail "$q/log" >&2; exit 1; }
    q_start=$(head -1 "$q/log" | trc_secs)
    q_up=$(grep -m1 "SUBNET UP after" "$q/log" | trc_secs)
    q_s=$(awk -v a="$q_start" -v b="$q_up" 'BEGIN{d=b-a; if (d<0) d+=86400; printf "%.3f", d}')
    q_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')
    q_smps=$(sed 's/\x1b\[[0-9;]*m//g' "$q/log" | grep -m1 "SUBNET UP after" | sed 's/.*: \([0-9]*\) SMPs.*/\1/')
    q_timeouts=$(sed 's/\x1b\[[0-9;]*m//g' "$q/log" | grep -m1 "SUBNET UP after" | sed 's/.* \([0-9]*\) timeouts.*/\1/')
    q_rss=$(awk '{printf "%.0f", $1/1024}' "$q/rss" 2>/dev/null || echo "?")
    ratio=$(awk -v a="$osm_s" -v b="$q_s" 'BEGIN{ if (b > 0) printf "%.1f", a/b; else print "inf"}')
    if [ -n "$ceiling" ]; then
        floor_s=$(awk -v n="$q_smps" -v c="$ceiling" 'BEGIN{printf "%.3f", n/c}')
        max_ratio=$(awk -v a="$osm_s" -v f="$floor_s" 'BEGIN{printf "%.1f", a/f}')
        q_rate=$(awk -v n="$q_smps" -v t="$q_s" 'BEGIN{printf "%.0f", n/t}')
        ceil_col="${ceiling} SMPs/s; ours ${q_rate}/s; floor ${floor_s} s; max ratio ${max_ratio}x"
        echo "   path ceiling: umad-probe ${ceiling} SMPs/s on the same ibsim; our ${q_smps} SMPs need >= ${floor_s} s at that rate (max ratio ${max_ratio}x); ours ran at ${q_rate} SMPs/s" >&2
    else
        ceil_col="not measured (no umad-probe)"
    fi
    echo "   OpenSM: SUBNET UP ${osm_s} s after its first log line (process ${osm_wall} s), ${osm_smps} MADs answered by ibsim, peak RSS ${osm_rss} MB" >&2
    echo "   ours:   SUBNET UP ${q_s} s after its first log line (process ${q_wall} s), ${q_smps} SMPs (${q_timeouts} timeouts; ibsim answered ${q_ibsim}), peak RSS ${q_rss} MB" >&2
    rows+=("| $name | ${osm_s} s | ${q_s} s | ${ratio}x | ${osm_smps} | ${q_smps} (ibsim: ${q_ibsim}) | ${osm_rss} / ${q_rss} MB | ${osm_load} / ${q_load} | ${ceil_col} |")
done

echo
echo "| topology | OpenSM to SUBNET UP | Quorum SM to SUBNET UP | ratio | OpenSM SMPs (answered by ibsim) | Quorum SM SMPs | peak RSS OpenSM / ours | load at start OpenSM / ours | path ceiling |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
