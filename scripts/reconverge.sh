#!/usr/bin/env bash
# Reconvergence on ibsim, side by side with OpenSM (issue 24, items 4 and 5): for each
# (topology, fault) pair, each SM runs alone on a fresh ibsim of the topology with the ibsim
# console on a FIFO, the SM at the first CA, a 10 s sweep interval. After the SM's first
# SUBNET UP and 3 s of quiet, the fault (an ibsim console command: `Unlink "S-..."[port]`,
# `Unlink "S-..."`, `ReLink "S-..."[port]`) is written to the console, and the time from
# writing it to the SM's next end of sweep is taken: OpenSM's next `SUBNET UP` log line, our
# next `HEAVY SWEEP COMPLETE` (timestamps of each SM's own log against the clock read when
# the command was written). For ours also the sweeps that ran (targeted or full), their
# discovery SMPs and the LFT blocks written (our log lines); OpenSM logs no such counts.
#
# usage: scripts/reconverge.sh TOPOLOGY COMMAND [TOPOLOGY COMMAND...]
#   TOPOLOGY: a generator spec (ft2:36, ft3:36:pods=6) or an ibsim/ibnetdiscover file
#   COMMAND:  an ibsim console command, e.g. 'Unlink "S-2002000000000000"[5]'; 'A then B'
#             applies A first, waits for the SM's next end of sweep, then measures B (a
#             link coming back: 'Unlink "S-.."[5] then ReLink "S-.."[5]')
#   env: SM_NODE (default target/release/sm-node), SMCTL (default target/release/smctl),
#        RC_KEEP=1 keeps the scratch directory, RC_BOUND seconds to wait for each end of
#        sweep (default 600).
# Generated fat trees name spines S-2002..., leaves S-2001... (ft2) and cores S-2003...,
# aggregations S-2002... (ft3); `smctl topo gen spec SPEC -o F` writes the file to look.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM_NODE=${SM_NODE:-$ROOT/target/release/sm-node}
SMCTL=${SMCTL:-$ROOT/target/release/smctl}
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
BOUND=${RC_BOUND:-600}

. "$ROOT/scripts/tools.sh" # the tests' tool lookup: PATH, then /usr/sbin and /sbin
IBSIM=$(qsm_require_tool ibsim)
OPENSM=$(qsm_require_tool opensm)
[ -f "$UMAD2SIM" ] || { echo "reconverge: $UMAD2SIM missing" >&2; exit 2; }
[ -x "$SM_NODE" ] || { echo "reconverge: build first: cargo build --release -p sm-node -p smctl" >&2; exit 2; }
[ $# -ge 2 ] && [ $(($# % 2)) -eq 0 ] || { sed -n '2,21p' "$0"; exit 2; }

WORK=$(mktemp -d /tmp/reconverge.XXXXXX)
IBSIM_PID=
SM_PID=
cleanup() {
    if [ -n "$SM_PID" ]; then kill "$SM_PID" 2>/dev/null || true; wait "$SM_PID" 2>/dev/null || true; fi
    if [ -n "$IBSIM_PID" ]; then kill "$IBSIM_PID" 2>/dev/null || true; wait "$IBSIM_PID" 2>/dev/null || true; fi
    exec 3>&- 2>/dev/null || true
    [ -n "${RC_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
OSM_CONF=$WORK/opensm.conf
"$OPENSM" -c "$WORK/opensm.conf.default" >/dev/null 2>&1 || { echo "reconverge: opensm -c failed" >&2; exit 2; }
sed 's/^force_log_flush FALSE/force_log_flush TRUE/' "$WORK/opensm.conf.default" >"$OSM_CONF"

# Seconds (float) of an OpenSM log line "Dec 02 08:20:57 776532 ..." (local time).
osm_secs() { awk '{split($3,t,":"); printf "%.6f\n", t[1]*3600+t[2]*60+t[3]+$4/1e6}'; }
# Seconds of a tracing line "2026-12-02T08:20:57.776532Z ..." (UTC).
trc_secs() { sed 's/\x1b\[[0-9;]*m//g' | awk '{split($1,a,"T"); sub("Z","",a[2]); split(a[2],t,":"); printf "%.6f\n", t[1]*3600+t[2]*60+t[3]}'; }
# Now as seconds of the day, local time (OpenSM) or UTC (ours).
now_local() { date +%H:%M:%S.%N | awk -F: '{printf "%.6f\n", $1*3600+$2*60+$3}'; }
now_utc() { date -u +%H:%M:%S.%N | awk -F: '{printf "%.6f\n", $1*3600+$2*60+$3}'; }
diff_ms() { awk -v a="$1" -v b="$2" 'BEGIN{d=b-a; if (d<0) d+=86400; printf "%.0f", d*1000}'; }

# Waits until file $1 holds more than $2 lines matching $3 (bounded).
wait_count() {
    local i c
    for i in $(seq 1 $((BOUND * 20))); do
        c=$(grep -c -- "$3" "$1" 2>/dev/null) || true
        [ "${c:-0}" -gt "$2" ] && return 0
        kill -0 "$SM_PID" 2>/dev/null || { echo "reconverge: the SM exited" >&2; tail -5 "$1" >&2; return 1; }
        sleep 0.05
    done
    echo "reconverge: no '$3' in $1 within ${BOUND} s" >&2
    return 1
}

# ibsim with its console reading the FIFO $3 (held open on fd 3).
start_ibsim_console() {
    local net=$1 sock=$2 fifo=$3 n s p i
    read -r n s p < <(awk '/^Switch/{s++; n++; p+=$2+1} /^(Ca|Hca)/{n++; p+=$2} END{print n+0, s+0, p+0}' "$net")
    rm -f "$fifo"
    mkfifo "$fifo"
    exec 3<>"$fifo"
    IBSIM_SOCKNAME=$sock "$IBSIM" -s -N $((n > 2048 ? n + 16 : 2048)) -S $((s > 256 ? s + 16 : 256)) \
        -P $((p > 13312 ? p + 64 : 13312)) "$net" <"$fifo" >"$WORK/ibsim-$sock.log" 2>&1 &
    IBSIM_PID=$!
    for i in $(seq 1 2400); do
        grep -q "@$sock:ctl" /proc/net/unix && return 0
        kill -0 "$IBSIM_PID" 2>/dev/null || { cat "$WORK/ibsim-$sock.log" >&2; return 1; }
        sleep 0.05
    done
    echo "reconverge: ibsim did not come up" >&2
    return 1
}

stop_all() {
    kill "$SM_PID" 2>/dev/null || true; wait "$SM_PID" 2>/dev/null || true; SM_PID=
    kill "$IBSIM_PID" 2>/dev/null || true; wait "$IBSIM_PID" 2>/dev/null || true; IBSIM_PID=
    exec 3>&-
}

rows=()
while [ $# -ge 2 ]; do
    topo=$1 cmd=$2
    shift 2
    case "$cmd" in
        *" then "*) setup=${cmd%% then *} fault=${cmd#* then } ;;
        *) setup= fault=$cmd ;;
    esac
    if [ -f "$topo" ]; then
        net=$(realpath "$topo")
    else
        net=$WORK/$(echo "$topo" | tr ':=' '__').net
        [ -f "$net" ] || "$SMCTL" topo gen spec "$topo" -o "$net" >&2
    fi
    host=$(awk '/^(Ca|Hca)/{match($0, /"[^"]*"/); print substr($0, RSTART+1, RLENGTH-2); exit}' "$net")
    tag=$(echo "$topo-$cmd" | tr -c 'A-Za-z0-9' '_')
    echo "== $topo: $cmd (SMs at $host)" >&2

    # OpenSM.
    d=$WORK/osm-$tag
    mkdir -p "$d"
    sock=rc-osm-$$
    start_ibsim_console "$net" "$sock" "$d/console"
    (cd "$d" && IBSIM_SOCKNAME=$sock SIM_HOST=$host OSM_TMP_DIR=$d OSM_CACHE_DIR=$d LD_PRELOAD=$UMAD2SIM \
        exec "$OPENSM" -F "$OSM_CONF" -e -f "$d/osm.log" -s 10 >"$d/stdout" 2>&1) &
    SM_PID=$!
    wait_count "$d/osm.log" 0 "SUBNET UP"
    sleep 3
    if [ -n "$setup" ]; then
        n0=$(grep -c "SUBNET UP" "$d/osm.log")
        echo "$setup" >&3
        wait_count "$d/osm.log" "$n0" "SUBNET UP"
        sleep 3
    fi
    n0=$(grep -c "SUBNET UP" "$d/osm.log")
    t_cmd=$(now_local)
    echo "$fault" >&3
    wait_count "$d/osm.log" "$n0" "SUBNET UP"
    t_up=$(grep "SUBNET UP" "$d/osm.log" | sed -n "$((n0 + 1))p" | osm_secs)
    osm_ms=$(diff_ms "$t_cmd" "$t_up")
    stop_all

    # Quorum SM (a single replica).
    q=$WORK/q-$tag
    mkdir -p "$q"
    sock=rc-q-$$
    start_ibsim_console "$net" "$sock" "$q/console"
    (cd "$q" && IBSIM_SOCKNAME=$sock SIM_HOST=$host LD_PRELOAD=$UMAD2SIM NO_COLOR=1 \
        exec "$SM_NODE" --fabric umad:/dev/infiniband/umad0 --sweep-interval 10 >"$q/summary" 2>"$q/log") &
    SM_PID=$!
    wait_count "$q/log" 0 "SUBNET UP after"
    sleep 3
    if [ -n "$setup" ]; then
        n0=$(grep -c "HEAVY SWEEP COMPLETE" "$q/log")
        echo "$setup" >&3
        wait_count "$q/log" "$n0" "HEAVY SWEEP COMPLETE"
        sleep 3
    fi
    n0=$(grep -c "HEAVY SWEEP COMPLETE" "$q/log")
    lines0=$(wc -l <"$q/log")
    t_cmd=$(now_utc)
    echo "$fault" >&3
    wait_count "$q/log" "$n0" "HEAVY SWEEP COMPLETE"
    t_done=$(grep "HEAVY SWEEP COMPLETE" "$q/log" | sed -n "$((n0 + 1))p" | trc_secs)
    q_ms=$(diff_ms "$t_cmd" "$t_done")
    after=$(tail -n +"$((lines0 + 1))" "$q/log" | sed 's/\x1b\[[0-9;]*m//g')
    sweeps=$(echo "$after" | grep -o "Entering heavy sweep [0-9]* ([A-Za-z]*" | sed 's/.*(//' | paste -sd, -)
    smps=$(echo "$after" | grep -o "DISCOVERY COMPLETE: .*, [0-9]* SMPs" | sed 's/.*, \([0-9]*\) SMPs/\1/' | paste -sd+ -)
    lfts=$(echo "$after" | grep -m1 -o "PROGRAMMING COMPLETE: [0-9]* LFT blocks" | sed 's/[^0-9]*\([0-9]*\) LFT.*/\1/')
    stop_all
    ratio=$(awk -v a="$osm_ms" -v b="$q_ms" 'BEGIN{ if (b > 0) printf "%.1f", a/b; else print "inf"}')
    echo "   OpenSM ${osm_ms} ms, ours ${q_ms} ms (${ratio}x): sweeps ${sweeps:-?}, discovery SMPs ${smps:-?}, LFT blocks ${lfts:-0}" >&2
    rows+=("| $topo | \`$cmd\` | ${osm_ms} ms | ${q_ms} ms | ${ratio}x | ${sweeps:-?} | ${smps:-?} | ${lfts:-0} |")
done

echo
echo "| fabric | fault (ibsim console) | OpenSM to next SUBNET UP | Quorum SM to next sweep end | ratio | our sweeps | our discovery SMPs | our LFT blocks |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
