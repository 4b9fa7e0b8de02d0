#!/usr/bin/env bash
# Reconvergence and failover on ibsim, side by side with OpenSM (issue 24, items 3-5).
#
# A fault (COMMAND an ibsim console command): each SM runs alone on a fresh ibsim of the
# topology with the ibsim console on a FIFO, the SM at the first CA, a 10 s sweep interval.
# After the SM's first SUBNET UP and 3 s of quiet, the fault (`Unlink "S-..."[port]`,
# `Unlink "S-..."`, `ReLink "S-..."[port]`) is written to the console, and the time from
# writing it to the SM's next end of sweep is taken: OpenSM's next `SUBNET UP` log line, our
# next `HEAVY SWEEP COMPLETE` (timestamps of each SM's own log against the clock read when
# the command was written). For ours also the sweeps that ran (targeted or full), their
# discovery SMPs and the LFT blocks written (our log lines); OpenSM logs no such counts.
#
# Failover (COMMAND `failover`): OpenSM master (priority 15, first CA) and OpenSM standby
# (priority 14, second CA) on one ibsim; after the standby logs STANDBY and 3 s of quiet,
# kill -9 of the master -> the standby's SUBNET UP. Then, on a fresh ibsim, three Quorum SM
# replicas (first three CAs, Raft over loopback): once the cluster has settled (the master
# it reports has completed a sweep in its term and no replica became master for 5 s), every
# switch's `ibroute` (from the fourth CA), kill -9 of the master -> a surviving replica's
# `becomes MASTER` and its first `HEAVY SWEEP COMPLETE` after it; `ibroute` of every switch
# again, compared with the first dump (the script fails when they differ).
#
# usage: scripts/reconverge.sh TOPOLOGY COMMAND [TOPOLOGY COMMAND...]
#   TOPOLOGY: a generator spec (ft2:36, ft3:36:pods=6) or an ibsim/ibnetdiscover file
#   COMMAND:  `failover`, or an ibsim console command, e.g. 'Unlink "S-2002000000000000"[5]';
#             'A then B' applies A first, waits for the SM's next end of sweep, then
#             measures B (a link coming back: 'Unlink "S-.."[5] then ReLink "S-.."[5]')
#   env: SM_NODE (default target/release/sm-node), SMCTL (default target/release/smctl),
#        RC_KEEP=1 keeps the scratch directory, RC_BOUND seconds to wait for each end of
#        sweep (default 600), RC_OURS_ONLY=1 skips OpenSM in a failover row, RC_NO_DUMP=1
#        skips the ibroute dumps (each takes minutes on ft3:36): a failover's before/after
#        comparison and a fault's count of end-port pairs left without a route (after each
#        SM's end of sweep: the fabric by ibnetdiscover, every switch's ibroute, the
#        unreachable pairs of `smctl route analyze`).
# Generated fat trees name spines S-2002..., leaves S-2001... (ft2) and cores S-2003...,
# aggregations S-2002... (ft3); `smctl topo gen spec SPEC -o F` writes the file to look.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SM_NODE=${SM_NODE:-$ROOT/target/release/sm-node}
SMCTL=${SMCTL:-$ROOT/target/release/smctl}
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
BOUND=${RC_BOUND:-600}

. "$ROOT/scripts/tools.sh" # the tests' tool lookup: PATH, then /usr/sbin and /sbin
. "$ROOT/scripts/ibsim.sh" # start_ibsim NET SOCK [CONSOLE_FIFO], stop_ibsim
IBSIM=$(qsm_require_tool ibsim)
OPENSM=$(qsm_require_tool opensm)
[ -f "$UMAD2SIM" ] || { echo "reconverge: $UMAD2SIM missing" >&2; exit 2; }
[ -x "$SM_NODE" ] || { echo "reconverge: build first: cargo build --release -p sm-node -p smctl" >&2; exit 2; }
[ $# -ge 2 ] && [ $(($# % 2)) -eq 0 ] || { sed -n '2,30p' "$0"; exit 2; }
IBSWITCHES=$(qsm_require_tool ibswitches)
IBROUTE=$(qsm_require_tool ibroute)
IBNETDISCOVER=$(qsm_require_tool ibnetdiscover)

WORK=$(mktemp -d /tmp/reconverge.XXXXXX)
IBSIM_PID=
SM_PID=
EXTRA_PIDS=()
cleanup() {
    for p in "$SM_PID" "${EXTRA_PIDS[@]}"; do
        [ -n "$p" ] || continue
        kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
    done
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

stop_all() {
    for p in "$SM_PID" "${EXTRA_PIDS[@]}"; do
        [ -n "$p" ] || continue
        kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
    done
    SM_PID= EXTRA_PIDS=()
    stop_ibsim
    exec 3>&-
}

# The switch LIDs' LFTs as `ibroute` prints them, from CA $1 of ibsim socket $2, to file $3
# (one ibroute per switch, 6 at a time: each waits on its own SMPs, and ibsim serves at
# most 10 clients, three of them the replicas; concatenated in LID order).
dump_lfts() {
    local ca=$1 sock=$2 out=$3 dir
    dir=$(mktemp -d "$WORK/dump.XXXXXX")
    (cd "$dir" && IBSIM_SOCKNAME=$sock SIM_HOST=$ca LD_PRELOAD=$UMAD2SIM "$IBSWITCHES") \
        | sed -n 's/.* lid \([0-9]*\) .*/\1/p' | sort -n >"$dir/lids"
    (cd "$dir" && xargs -P 6 -I{} sh -c 'IBSIM_SOCKNAME=$0 SIM_HOST=$1 LD_PRELOAD=$2 "$3" {} >lft.{} 2>&1' \
        "$sock" "$ca" "$UMAD2SIM" "$IBROUTE" <lids)
    while read -r l; do cat "$dir/lft.$l"; done <"$dir/lids" >"$out"
    rm -rf "$dir"
}

# End-port pairs the SM's tables leave without a route although the fabric has a path
# between them, seen from CA $1 of ibsim socket $2 (scratch files in directory $3): the
# fabric as `ibnetdiscover` finds it now, every switch's `ibroute`, the unreachable pairs of
# `smctl route analyze`. `-` with RC_NO_DUMP=1.
unrouted_pairs() {
    local ca=$1 sock=$2 dir=$3
    [ -z "${RC_NO_DUMP:-}" ] || { echo -; return 0; }
    (cd "$dir" && IBSIM_SOCKNAME=$sock SIM_HOST=$ca LD_PRELOAD=$UMAD2SIM "$IBNETDISCOVER") \
        >"$dir/now.net" 2>"$dir/ibnetdiscover.err" || { echo "?"; return 0; }
    # Each entry cut to `LID PORT portguid GUID` (what `route analyze` reads): the full text
    # of ft3:36:pods=16 is over smctl's 256 MiB input limit.
    dump_lfts "$ca" "$sock" "$dir/now.full"
    sed 's/ : (.*portguid \(0x[0-9a-fA-F]*\).*/ portguid \1/' "$dir/now.full" >"$dir/now.lfts"
    rm -f "$dir/now.full"
    "$SMCTL" route analyze --topology "$dir/now.net" --lfts "$dir/now.lfts" --json 2>"$dir/analyze.err" \
        | grep -o '"unreachable_pairs": [0-9]*' | grep -o '[0-9]*$' || echo "?"
}

# The first four CA names of netfile $1.
# (awk stops by itself: a `| head` would end the pipe early, a failure under pipefail.)
cas_of() { awk '/^(Ca|Hca)/{match($0, /"[^"]*"/); print substr($0, RSTART+1, RLENGTH-2); if (++n == 4) exit}' "$1"; }

# Failover of OpenSM (master + standby) and of three Quorum SM replicas; appends a row to
# fo_rows.
measure_failover() {
    local topo=$1 net=$2 tag=$3 d q sock t_kill t_up t_elect t_done osm_ms e_ms q_ms m new i g
    local -a cas
    mapfile -t cas < <(cas_of "$net")
    [ "${#cas[@]}" -ge 4 ] || { echo "reconverge: failover needs 4 CAs in $net" >&2; return 1; }

    # OpenSM master + standby (RC_OURS_ONLY=1 skips it).
    osm_ms=-
    if [ -z "${RC_OURS_ONLY:-}" ]; then
    d=$WORK/osm-$tag
    mkdir -p "$d"
    sock=fo-osm-$$
    start_ibsim "$net" "$sock" "$d/console"
    (cd "$d" && IBSIM_SOCKNAME=$sock SIM_HOST=${cas[0]} OSM_TMP_DIR=$d OSM_CACHE_DIR=$d LD_PRELOAD=$UMAD2SIM \
        exec "$OPENSM" -F "$OSM_CONF" -e -f "$d/master.log" -p 15 -s 10 >"$d/master.out" 2>&1) &
    SM_PID=$!
    wait_count "$d/master.log" 0 "SUBNET UP"
    mkdir -p "$d/standby"
    (cd "$d/standby" && IBSIM_SOCKNAME=$sock SIM_HOST=${cas[1]} OSM_TMP_DIR=$d/standby OSM_CACHE_DIR=$d/standby \
        LD_PRELOAD=$UMAD2SIM exec "$OPENSM" -F "$OSM_CONF" -e -f "$d/standby.log" -p 14 -s 10 >"$d/standby.out" 2>&1) &
    EXTRA_PIDS=("$!")
    local master=$SM_PID
    SM_PID=${EXTRA_PIDS[0]}
    wait_count "$d/standby.log" 0 "Entering STANDBY state"
    sleep 3
    t_kill=$(now_local)
    kill -9 "$master"
    wait "$master" 2>/dev/null || true
    wait_count "$d/standby.log" 0 "SUBNET UP"
    t_up=$(grep -m1 "SUBNET UP" "$d/standby.log" | osm_secs)
    osm_ms=$(diff_ms "$t_kill" "$t_up")
    stop_all
    echo "   OpenSM: kill -9 of the master -> the standby's SUBNET UP after ${osm_ms} ms" >&2
    fi

    # Three Quorum SM replicas.
    q=$WORK/q-$tag
    sock=fo-q-$$
    mkdir -p "$q"
    start_ibsim "$net" "$sock" "$q/console"
    local -a ports=(0 $((17200 + $$ % 500)) $((17700 + $$ % 500)) $((18200 + $$ % 500)))
    local peers=1=127.0.0.1:${ports[1]},2=127.0.0.1:${ports[2]},3=127.0.0.1:${ports[3]}
    local -a pids
    for i in 1 2 3; do
        mkdir -p "$q/r$i"
        (cd "$q/r$i" && IBSIM_SOCKNAME=$sock SIM_HOST=${cas[$((i - 1))]} LD_PRELOAD=$UMAD2SIM NO_COLOR=1 \
            SM_INSECURE_LOOPBACK=1 exec "$SM_NODE" --id $i --peers "$peers" --initial-cluster-state new \
            --data-dir "$q/r$i/data" --fabric umad:/dev/infiniband/umad0 --sweep-interval 10 \
            >"$q/r$i/summary" 2>"$q/r$i/log") &
        pids[$i]=$!
    done
    EXTRA_PIDS=("${pids[@]}")
    # The master the cluster reports (replica id), asked of replica $1.
    master_of() {
        "$SMCTL" cluster --server "127.0.0.1:${ports[$1]}" --json 2>/dev/null \
            | grep -m1 -o '"replica_id": [0-9]*' | grep -o '[0-9]*$' || true
    }
    # Has the log $1 a HEAVY SWEEP COMPLETE after its last "becomes MASTER"?
    swept_in_term() { awk '/becomes MASTER/{s=0} /HEAVY SWEEP COMPLETE/{s=1} END{exit !s}' "$1" 2>/dev/null; }
    masters() { cat "$q"/r*/log 2>/dev/null | grep -c "becomes MASTER" || true; }
    # Settled: the reported master has completed a sweep in its term, and no replica became
    # master for 5 s.
    m=
    for _ in $(seq 1 "$BOUND"); do
        local c0 x
        c0=$(masters)
        x=$(master_of 1)
        if [ -n "$x" ] && [ "$x" != 0 ] && swept_in_term "$q/r$x/log"; then
            sleep 5
            [ "$(masters)" = "$c0" ] && [ "$(master_of 1)" = "$x" ] && { m=$x; break; }
        else
            sleep 1
        fi
    done
    [ -n "$m" ] || { echo "reconverge: the cluster did not settle on a master within ${BOUND} s" >&2; return 1; }
    local terms_up
    terms_up=$(masters)
    [ -n "${RC_NO_DUMP:-}" ] || dump_lfts "${cas[3]}" "$sock" "$q/before.txt"
    local -a n0
    for i in 1 2 3; do n0[$i]=$(wc -l <"$q/r$i/log"); done
    t_kill=$(now_utc)
    kill -9 "${pids[$m]}"
    wait "${pids[$m]}" 2>/dev/null || true
    # The first survivor that becomes master after the kill and completes a sweep.
    new=
    for _ in $(seq 1 $((BOUND * 20))); do
        for i in 1 2 3; do
            [ "$i" = "$m" ] && continue
            tail -n +"$((n0[i] + 1))" "$q/r$i/log" >"$q/r$i/after"
            awk '/becomes MASTER/{s=1} s&&/HEAVY SWEEP COMPLETE/{f=1} END{exit !f}' "$q/r$i/after" && new=$i
        done
        [ -n "$new" ] && break
        sleep 0.05
    done
    [ -n "$new" ] || { echo "reconverge: no surviving replica completed a sweep as master within ${BOUND} s" >&2; return 1; }
    local after=$q/r$new/after
    t_elect=$(grep -m1 "becomes MASTER" "$after" | trc_secs)
    t_done=$(sed -n '/becomes MASTER/,$p' "$after" | grep -m1 "HEAVY SWEEP COMPLETE" | trc_secs || true)
    e_ms=$(diff_ms "$t_kill" "$t_elect")
    q_ms=$(diff_ms "$t_kill" "$t_done")
    local lfts smps
    # (|| true: grep -m1 ends the pipe early, which set -o pipefail would count as a failure.)
    lfts=$(sed -n '/becomes MASTER/,$p' "$after" | grep -m1 -o "PROGRAMMING COMPLETE: [0-9]* LFT blocks" | sed 's/[^0-9]*\([0-9]*\) LFT.*/\1/' || true)
    smps=$(sed -n '/becomes MASTER/,$p' "$after" | grep -m1 -o "DISCOVERY COMPLETE: .*, [0-9]* SMPs" | sed 's/.*, \([0-9]*\) SMPs/\1/' || true)
    local same=not-compared switches=0
    if [ -z "${RC_NO_DUMP:-}" ]; then
        dump_lfts "${cas[3]}" "$sock" "$q/after.txt"
        switches=$(grep -c "valid lids dumped" "$q/before.txt" || true)
        if cmp -s "$q/before.txt" "$q/after.txt"; then same=identical; else same=DIFFER; fi
    fi
    stop_all
    local ratio=-
    [ "$osm_ms" = - ] || ratio=$(awk -v a="$osm_ms" -v b="$q_ms" 'BEGIN{ if (b > 0) printf "%.1f", a/b; else print "inf"}')
    echo "   ours: kill -9 of replica $m (the master; $terms_up masters before the cluster settled) -> replica $new MASTER after ${e_ms} ms, first sweep complete after ${q_ms} ms (${ratio}x); LFT blocks ${lfts:-?}; ibroute of ${switches} switches ${same}" >&2
    fo_rows+=("| $topo | ${osm_ms} ms | ${e_ms} ms | ${q_ms} ms | ${ratio}x | ${smps:-?} | ${lfts:-?} | ${switches} switches ${same} |")
    [ "$same" != DIFFER ] || { diff "$q/before.txt" "$q/after.txt" | head -20 >&2; return 1; }
}

# One fault on each SM; appends a row to rows.
measure_fault() {
    local topo=$1 net=$2 tag=$3 cmd=$4 setup fault host other d q sock n0 t_cmd t_up t_done osm_ms q_ms lines0 after osm_pairs q_pairs
    case "$cmd" in
        *" then "*) setup=${cmd%% then *} fault=${cmd#* then } ;;
        *) setup= fault=$cmd ;;
    esac
    host=$(cas_of "$net" | sed -n 1p)
    other=$(cas_of "$net" | sed -n 2p)

    # OpenSM.
    d=$WORK/osm-$tag
    mkdir -p "$d"
    sock=rc-osm-$$
    start_ibsim "$net" "$sock" "$d/console"
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
    osm_pairs=$(unrouted_pairs "$other" "$sock" "$d")
    stop_all

    # Quorum SM (a single replica).
    q=$WORK/q-$tag
    mkdir -p "$q"
    sock=rc-q-$$
    start_ibsim "$net" "$sock" "$q/console"
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
    local sweeps smps lfts ratio
    sweeps=$(echo "$after" | grep -o "Entering heavy sweep [0-9]* ([A-Za-z]*" | sed 's/.*(//' | paste -sd, -)
    smps=$(echo "$after" | grep -o "DISCOVERY COMPLETE: .*, [0-9]* SMPs" | sed 's/.*, \([0-9]*\) SMPs/\1/' | paste -sd+ -)
    lfts=$(echo "$after" | grep -m1 -o "PROGRAMMING COMPLETE: [0-9]* LFT blocks" | sed 's/[^0-9]*\([0-9]*\) LFT.*/\1/' || true)
    q_pairs=$(unrouted_pairs "$other" "$sock" "$q")
    stop_all
    ratio=$(awk -v a="$osm_ms" -v b="$q_ms" 'BEGIN{ if (b > 0) printf "%.1f", a/b; else print "inf"}')
    echo "   OpenSM ${osm_ms} ms, ours ${q_ms} ms (${ratio}x): sweeps ${sweeps:-?}, discovery SMPs ${smps:-?}, LFT blocks ${lfts:-0}; end-port pairs without a route: OpenSM ${osm_pairs}, ours ${q_pairs}" >&2
    rows+=("| $topo | \`$cmd\` | ${osm_ms} ms | ${q_ms} ms | ${ratio}x | ${sweeps:-?} | ${smps:-?} | ${lfts:-0} | ${osm_pairs} / ${q_pairs} |")
}

rows=()
fo_rows=()
while [ $# -ge 2 ]; do
    topo=$1 cmd=$2
    shift 2
    if [ -f "$topo" ]; then
        net=$(realpath "$topo")
    else
        net=$WORK/$(echo "$topo" | tr ':=' '__').net
        [ -f "$net" ] || "$SMCTL" topo gen spec "$topo" -o "$net" >&2
    fi
    tag=$(echo "$topo-$cmd" | tr -c 'A-Za-z0-9' '_')
    echo "== $topo: $cmd" >&2
    if [ "$cmd" = failover ]; then
        measure_failover "$topo" "$net" "$tag"
    else
        measure_fault "$topo" "$net" "$tag" "$cmd"
    fi
done

if [ ${#fo_rows[@]} -gt 0 ]; then
    echo
    echo "| fabric | OpenSM: kill -9 of the master to the standby's SUBNET UP | Quorum SM: to a new master | to its first sweep complete | ratio | its discovery SMPs | its LFT blocks | ibroute before/after |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${fo_rows[@]}"
fi
if [ ${#rows[@]} -gt 0 ]; then
    echo
    echo "| fabric | fault (ibsim console) | OpenSM to next SUBNET UP | Quorum SM to next sweep end | ratio | our sweeps | our discovery SMPs | our LFT blocks | end-port pairs without a route (OpenSM / ours) |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
fi
