#!/usr/bin/env bash
# Routing engines side by side: ours (`smctl route`, offline) and OpenSM's (on ibsim, read
# back with ibroute) on the same fabrics, measured with the same metrics
# (`smctl route analyze`). Prints one markdown table per fabric and, with --json, the same
# data as JSON.
#
# Ours, per engine: `smctl route --topology NET --engine E --workers W --json` (minhop with
# --accept-credit-loops, so that its loops are measured rather than refused). An engine
# that is unknown or refuses the fabric gives a row with the refusal code and reason.
# OpenSM, per engine: a fresh ibsim of the same net file, `opensm -o` (one sweep, exit),
# every switch's LFT read back with `ibroute -n` (destinations named from one
# `ibnetdiscover -p`; the last LFT block, which ibroute skips when the top LID is a multiple
# of 64, read with smpdump), then `smctl route analyze` of the concatenated dump.
#
# Columns: routing time (ours: the engine's run with W workers, `routing_ms`; OpenSM: its
# log from the first "building routing with" line to "tables configured on all switches",
# i.e. the engine's run, fallbacks included, plus queueing the LFT blocks; OpenSM is
# single-threaded), busiest link of all-to-all (pairs on the most loaded switch-to-switch
# channel), worst shift permutation (most pairs on one channel over the shifts), pairs
# without a route, VLs, and the channel dependency graph (CDG) twice: per VL with every
# switch LID a destination and every switch a source (our deadlock check: the engine's
# `deadlock_check` for ours, the LFTs on one VL for OpenSM), and host traffic only
# (`metrics.cdg.hosts_only`: from switches with hosts to end-port LIDs, one VL), the graph
# OpenSM's dfsssp and nue keep acyclic. OpenSM's VLs: dfsssp's "Virtual Lanes needed" from
# its log; torus-2QoS reports none ("n/r"). Their per-path SLs are not read back, so the
# one-VL graphs of an engine that spreads paths over VLs may have cycles its layering
# breaks.
#
# OpenSM options per engine: ftree/minhop/updn: `-R E`; dfsssp: `-R dfsssp -Q` (its man
# page); nue: `-R nue` (nue_max_num_vls 1: host paths deadlock-free on one VL, so the
# hosts-only graph is its whole claim); torus-2QoS: `-R torus-2QoS -Q --torus_config FILE`,
# FILE generated from the switch coordinates our generator writes into the net file (tori
# only). Every run: `-e -s 0 -o -D 0x07` (error, info, verbose) and force_log_flush.
# OpenSM falls back to minhop when the engine fails: the "ran" column says which engine
# programmed the tables.
#
# Runtime: about 12 minutes for the six default fabrics on 2 busy cores (ft2:36 about 30 s
# each, the 256-switch random fabric 5 min: OpenSM's dfsssp and nue take 30-90 s there,
# ft3:36:pods=6 4 min); reading back the LFTs costs 10-60 s per OpenSM run. Use --fabrics,
# --engines, --ours, --opensm for a subset.
#
# usage: scripts/route-compare.sh [options] [FABRIC...]
#   FABRIC: a generator spec (ft2:36:remove=3:seed=1, torus:6x6x6:hosts=4, ...) or an
#           ibsim/ibnetdiscover file; default: the fabrics listed in DEFAULT_FABRICS below
#   --fabrics LIST     comma-separated fabrics (same as the positional arguments)
#   --engines LIST     engines for both SMs (default: ours ftree,updn,minhop,dfsssp,torus-2QoS;
#                      OpenSM's ftree,minhop,updn,dfsssp,nue,torus-2QoS)
#   --ours LIST        our engines only ("none": skip ours)
#   --opensm LIST      OpenSM's engines only ("none": skip OpenSM and ibsim)
#   --workers N        worker threads of our engines (default 2)
#   --json FILE        also write the rows as JSON
#   --keep             keep the scratch directory (logs, dumps, net files) and print it
#   --render FILE      measure nothing: print the tables of an earlier --json FILE
#   env: SMCTL (default target/release/smctl), OSM_TIMEOUT seconds per OpenSM run
#        (default 900), OSM_ARGS extra opensm flags for every run
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SMCTL=${SMCTL:-$ROOT/target/release/smctl}
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
OSM_TIMEOUT=${OSM_TIMEOUT:-900}
DEFAULT_FABRICS="ft2:36:remove=3:seed=1 ft2:36:remove=3:seed=2 ft2:36:remove=3:seed=3 \
ft3:36:pods=6:remove=1%:seed=1 random:256:radix=36:links=24:hosts=12 torus:6x6x6:hosts=4"
OURS_DEFAULT=ftree,updn,minhop,dfsssp,torus-2QoS
OSM_DEFAULT=ftree,minhop,updn,dfsssp,nue,torus-2QoS

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "route-compare: $*" >&2; exit 2; }

fabrics=() ours_list=$OURS_DEFAULT osm_list=$OSM_DEFAULT workers=2 json_out= keep= render=
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) usage; exit 0 ;;
        --fabrics) [ $# -ge 2 ] || die "--fabrics needs a list"; IFS=, read -r -a f <<<"$2"; fabrics+=("${f[@]}"); shift 2 ;;
        --engines) [ $# -ge 2 ] || die "--engines needs a list"; ours_list=$2; osm_list=$2; shift 2 ;;
        --ours) [ $# -ge 2 ] || die "--ours needs a list"; ours_list=$2; shift 2 ;;
        --opensm) [ $# -ge 2 ] || die "--opensm needs a list"; osm_list=$2; shift 2 ;;
        --workers) [ $# -ge 2 ] || die "--workers needs a number"; workers=$2; shift 2 ;;
        --json) [ $# -ge 2 ] || die "--json needs a file"; json_out=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        --render) [ $# -ge 2 ] || die "--render needs a file"; render=$2; shift 2 ;;
        -*) usage >&2; die "unknown option $1" ;;
        *) fabrics+=("$1"); shift ;;
    esac
done
fabrics_given=${#fabrics[@]}
# shellcheck disable=SC2206
[ ${#fabrics[@]} -gt 0 ] || fabrics=($DEFAULT_FABRICS)
[ "$ours_list" = none ] && ours_list=
[ "$osm_list" = none ] && osm_list=
[ -z "$render" ] || { [ -f "$render" ] || die "$render: no such file"; ours_list= osm_list=; }
IFS=, read -r -a OURS <<<"$ours_list"
IFS=, read -r -a OSM_ENGINES <<<"$osm_list"

. "$ROOT/scripts/tools.sh" # the tests' tool lookup: PATH, then /usr/sbin and /sbin
JQ=$(qsm_find_tool jq) || die "jq is not installed (Debian package jq)"
[ -n "$render" ] || [ -x "$SMCTL" ] || die "$SMCTL missing: build first: cargo build --release -p smctl"
if [ ${#OSM_ENGINES[@]} -gt 0 ]; then
    IBSIM=$(qsm_require_tool ibsim)
    OPENSM=$(qsm_require_tool opensm)
    IBROUTE=$(qsm_require_tool ibroute)
    IBNETDISCOVER=$(qsm_require_tool ibnetdiscover)
    SMPDUMP=$(qsm_require_tool smpdump)
    TIMEOUT=$(qsm_require_tool timeout)
    [ -f "$UMAD2SIM" ] || die "$UMAD2SIM missing (Debian package libumad2sim0)"
fi

WORK=$(mktemp -d /tmp/route-compare.XXXXXX)
IBSIM_PID= OSM_PID=
cleanup() {
    # Clients before ibsim (a client whose ibsim has gone hangs on exit).
    if [ -n "$OSM_PID" ]; then kill "$OSM_PID" 2>/dev/null || true; wait "$OSM_PID" 2>/dev/null || true; fi
    if [ -n "$IBSIM_PID" ]; then kill "$IBSIM_PID" 2>/dev/null || true; wait "$IBSIM_PID" 2>/dev/null || true; fi
    if [ -n "$keep" ]; then echo "route-compare: scratch kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ROWS=$WORK/rows.jsonl
: >"$ROWS"
script_t0=$(date +%s.%N)
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)

# Seconds (float) of an OpenSM log timestamp "Dec 01 23:51:02 659392".
osm_secs() { awk '{split($3,t,":"); printf "%.6f\n", t[1]*3600+t[2]*60+t[3]+$4/1e6}'; }
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN{d=b-a; if (d<0) d+=86400; printf "%.1f", d*1000}'; }

. "$ROOT/scripts/ibsim.sh" # start_ibsim NET SOCK, stop_ibsim
# A client of the running ibsim (socket $SOCK), attached at its first node.
sim() { IBSIM_SOCKNAME=$SOCK LD_PRELOAD=$UMAD2SIM "$@"; }

# torus-2QoS.conf for a net file whose Switch lines carry our generator's coordinates
# (`# "torus x,y,z"`): the radices and one seed at the origin, both directions per
# dimension. Prints nothing when the file has no such coordinates.
torus_conf() {
    awk '
    /^switchguid=/ { g = $0; sub(/^switchguid=/, "", g); sub(/\(.*/, "", g) }
    /^Switch/ && /# "torus [0-9,]+"/ {
        c = $0; sub(/.*# "torus /, "", c); sub(/".*/, "", c)
        nd = split(c, x, ",")
        guid[c] = g
        for (i = 1; i <= nd; i++) if (x[i] + 1 > r[i]) r[i] = x[i] + 1
        dims = nd
    }
    END {
        if (dims < 1 || dims > 3) exit
        for (i = dims + 1; i <= 3; i++) r[i] = 1
        printf "torus %d %d %d\n", r[1], r[2], r[3]
        split("x y z", name, " ")
        o = "0"; for (i = 2; i <= dims; i++) o = o ",0"
        for (i = 1; i <= dims; i++) {
            if (r[i] < 2) continue
            p = ""; m = ""
            for (j = 1; j <= dims; j++) {
                p = p (j > 1 ? "," : "") (j == i ? 1 : 0)
                m = m (j > 1 ? "," : "") (j == i ? r[i] - 1 : 0)
            }
            printf "%sp_link %s %s\n", name[i], guid[o], guid[p]
            if (r[i] > 2) printf "%sm_link %s %s\n", name[i], guid[o], guid[m]
        }
        print "portgroup_max_ports 64"
    }' "$1"
}

# Every switch's LFT in `ibroute` format, read from the running ibsim into $1.
read_lfts() {
    local out=$1 d=$2
    sim "$IBNETDISCOVER" -p >"$d/ports" 2>"$d/ibnetdiscover.err" || { tail "$d/ibnetdiscover.err" >&2; return 1; }
    # LID -> port GUID (switches: the switch's GUID), and the switch LIDs.
    awk '($1 == "CA" || $1 == "SW" || $1 == "RT") && $2 ~ /^[0-9]+$/ {print $2, $4, $1}' "$d/ports" | sort -un >"$d/lidmap"
    awk '$3 == "SW" {print $1}' "$d/lidmap" | sort -un >"$d/switch-lids"
    local maxlid lid
    maxlid=$(awk 'BEGIN{m=0} $1+0 > m {m=$1+0} END{print m}' "$d/lidmap")
    : >"$d/raw"
    while read -r lid; do
        sim "$IBROUTE" -n "$lid" >>"$d/raw" 2>>"$d/ibroute.err" || { echo "ibroute $lid failed" >&2; tail -3 "$d/ibroute.err" >&2; return 1; }
        # ibroute stops one block short when the top LID is a multiple of 64: read that
        # block with smpdump (LinearForwardingTable, attribute 0x19, modifier = block).
        if [ $((maxlid % 64)) -eq 0 ]; then
            echo "SMPDUMP-BLOCK $((maxlid / 64))" >>"$d/raw"
            sim "$SMPDUMP" "$lid" 0x19 $((maxlid / 64)) >>"$d/raw" 2>>"$d/ibroute.err" || { echo "smpdump $lid failed" >&2; return 1; }
            echo "SMPDUMP-END" >>"$d/raw"
        fi
    done <"$d/switch-lids"
    # Name each destination by its port GUID, as ibroute does without -n.
    awk -v maxlid="$maxlid" '
    function hex(s,   i, c, v) { v = 0; s = tolower(s); sub(/^0x/, "", s)
        for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
        return v }
    FNR == NR { guid[$1] = $2; next }
    /^SMPDUMP-BLOCK/ { blk = $2; inblk = 1; b = 0; next }
    /^SMPDUMP-END/ { inblk = 0; next }
    inblk { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9a-f][0-9a-f][0-9a-f][0-9a-f]$/) for (k = 0; k < 2; k++) {
                l = blk * 64 + b; b++; p = hex(substr($i, 2 * k + 1, 2))
                if (l >= 1 && l <= maxlid && p != 255 && !(l in seen))
                    printf "0x%04x %03d : (portguid %s: smpdump)\n", l, p, guid[l] }
            next }
    /^Unicast lids/ { delete seen; print; next }
    /^0x[0-9a-fA-F]+ [0-9]+/ { l = hex($1); seen[l] = 1
        if (l in guid) printf "%s %s : (portguid %s)\n", $1, $2, guid[l]; else print; next }
    { print }' "$d/lidmap" "$d/raw" >"$out"
}

# The VLs column of ours and the CDG column, from a deadlock_check / metrics.cdg object.
jq_cdg='(.per_vl // []) | map("VL\(.vl): " + (if .acyclic then "acyclic" else "CYCLE (\(.cycle | length) channels)" end)) | join(", ")'

run_ours() {
    local fabric=$1 net=$2 engine=$3 d=$4 extra=() label=$3
    if [ "$engine" = minhop ]; then extra=(--accept-credit-loops); label="minhop (loops accepted)"; fi
    local rc=0
    "$SMCTL" route --topology "$net" --engine "$engine" --workers "$workers" --json "${extra[@]}" \
        >"$d/ours-$engine.json" 2>"$d/ours-$engine.err" || rc=$?
    if [ $rc -ne 0 ] || ! "$JQ" -e . "$d/ours-$engine.json" >/dev/null 2>&1; then
        local msg code
        msg=$(sed -n 's/^smctl: error: //p' "$d/ours-$engine.err" | head -1)
        [ -n "$msg" ] || msg=$(tail -1 "$d/ours-$engine.err")
        code=${msg%%:*}
        "$JQ" -nc --arg f "$fabric" --arg e "$engine" --arg l "$label" --arg code "$code" --arg msg "$msg" --argjson rc "$rc" \
            '{fabric:$f, sm:"ours", engine:$e, label:$l, ran:null, refused:true, refusal_code:$code, refusal:$msg, exit:$rc}' >>"$ROWS"
        echo "   ours $engine: refused: $msg" >&2
        return 0
    fi
    "$JQ" -c --arg f "$fabric" --arg e "$engine" --arg l "$label" --argjson w "$workers" "
        {fabric:\$f, sm:\"ours\", engine:\$e, label:\$l, ran:.engine, refused:false,
         refusals:.refusals, warnings:.warnings, routing_ms:.routing_ms, workers:\$w,
         busiest_a2a:.metrics.all_to_all.max_link_load, worst_shift:.metrics.shift.max_link_load,
         unreachable_pairs:.metrics.unreachable_pairs, loops:.metrics.loops, dead_ends:.metrics.dead_ends,
         mean_hops:.metrics.mean_hops, vls_used:.deadlock_check.vls_used,
         cdg_acyclic:((.deadlock_check.per_vl // []) | all(.acyclic)),
         cdg:(.deadlock_check | $jq_cdg), cdg_source:\"engine\",
         cdg_hosts_only_acyclic:.metrics.cdg.hosts_only.acyclic,
         cdg_hosts_only_cycle:.metrics.cdg.hosts_only.cycle}" "$d/ours-$engine.json" >>"$ROWS"
    echo "   ours $engine: $("$JQ" -r '"\(.engine) \(.routing_ms) ms, busiest \(.metrics.all_to_all.max_link_load)"' "$d/ours-$engine.json")" >&2
}

run_opensm() {
    local fabric=$1 net=$2 engine=$3 d0=$4 host=$5
    local d=$d0/opensm-$engine args=(-R "$engine") note=
    mkdir -p "$d"
    case $engine in
        dfsssp) args+=(-Q) ;;
        torus-2QoS)
            torus_conf "$net" >"$d/torus-2QoS.conf"
            if [ ! -s "$d/torus-2QoS.conf" ]; then
                "$JQ" -nc --arg f "$fabric" --arg e "$engine" \
                    '{fabric:$f, sm:"opensm", engine:$e, label:$e, ran:null, refused:true, refusal:"not run: no torus coordinates in the net file (tori of our generator only)"}' >>"$ROWS"
                echo "   OpenSM $engine: not run (not a torus)" >&2
                return 0
            fi
            args+=(-Q --torus_config "$d/torus-2QoS.conf") ;;
    esac
    sed 's/^force_log_flush FALSE/force_log_flush TRUE/' "$OSM_CONF" >"$d/opensm.conf"
    SOCK=rcmp-$$-$RANDOM
    start_ibsim "$net" "$SOCK"
    local load t0 t1 rc=0
    load=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    (cd "$d" && IBSIM_SOCKNAME=$SOCK SIM_HOST=$host OSM_TMP_DIR=$d OSM_CACHE_DIR=$d LD_PRELOAD=$UMAD2SIM \
        exec "$TIMEOUT" "$OSM_TIMEOUT" "$OPENSM" -F "$d/opensm.conf" -e -f "$d/osm.log" -s 0 -o -D 0x07 \
        "${args[@]}" ${OSM_ARGS:-} >"$d/stdout" 2>&1) &
    OSM_PID=$!
    wait "$OSM_PID" || rc=$?
    OSM_PID=
    t1=$(date +%s.%N)
    local wall up=false ran tried errs vls= routing_ms= subnet_up_s=
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
    grep -q "SUBNET UP" "$d/osm.log" 2>/dev/null && up=true
    ran=$(sed -n 's/.*osm_ucast_mgr_process: \(.*\) tables configured on all switches.*/\1/p' "$d/osm.log" | tail -1)
    tried=$(sed -n "s/.*building routing with '\([^']*\)' routing algorithm.*/\1/p" "$d/osm.log" | awk '!s[$0]++' | paste -sd, -)
    # Errors of the engine(s) between their start and the tables (why a fallback happened).
    errs=$(awk '/building routing with/{on=1} /tables configured on all switches/{on=0} on && (/ERR|WRN|disabling/ || / 0x01 -> /)' "$d/osm.log" \
        | sed 's/^.*-> //' | awk '!s[$0]++' | head -3 | paste -sd'|' - | sed 's/|/ | /g' | cut -c1-300)
    local b e
    b=$(grep -m1 "building routing with" "$d/osm.log" | osm_secs || true)
    e=$(grep "tables configured on all switches" "$d/osm.log" | tail -1 | osm_secs || true)
    [ -n "$b" ] && [ -n "$e" ] && routing_ms=$(ms_between "$b" "$e")
    if $up; then
        subnet_up_s=$(awk -v a="$(head -1 "$d/osm.log" | osm_secs)" -v b="$(grep -m1 "SUBNET UP" "$d/osm.log" | osm_secs)" \
            'BEGIN{d=b-a; if (d<0) d+=86400; printf "%.2f", d}')
    fi
    case $engine in
        dfsssp) vls=$(sed -n 's/.*Virtual Lanes needed: \([0-9]*\).*/\1/p' "$d/osm.log" | tail -1) ;;
    esac
    local analyzed=false
    if $up && [ -n "$ran" ]; then
        if read_lfts "$d/lfts.txt" "$d"; then
            if "$SMCTL" route analyze --topology "$net" --lfts "$d/lfts.txt" --json >"$d/analyze.json" 2>"$d/analyze.err"; then
                analyzed=true
            else
                note="analyze failed: $(tail -1 "$d/analyze.err")"
            fi
        else
            note="reading the LFTs back failed"
        fi
    else
        note="OpenSM exit $rc, no SUBNET UP or no tables: $(grep -m2 "ERR" "$d/osm.log" 2>/dev/null | sed 's/^.*-> //' | paste -sd' ' - | cut -c1-200)"
    fi
    stop_ibsim
    # Paths spread over VLs by SL: the LFTs alone do not tell which VL a hop uses.
    local layered=false
    case $ran in
        torus-2QoS|lash) layered=true ;;
        dfsssp) [ "${vls:-1}" -gt 1 ] && layered=true ;;
    esac
    local base
    base=$("$JQ" -nc --arg f "$fabric" --arg e "$engine" --arg ran "$ran" --arg tried "$tried" --arg errs "$errs" \
        --arg args "${args[*]}" --arg rms "$routing_ms" --arg up "$subnet_up_s" --arg wall "$wall" --arg load "$load" \
        --arg vls "$vls" --arg note "$note" --argjson rc "$rc" --argjson layered "$layered" \
        '{fabric:$f, sm:"opensm", engine:$e, label:$e, ran:(if $ran == "" then null else $ran end),
          refused:($ran == ""), engines_tried:$tried, engine_errors:$errs, opensm_args:$args, exit:$rc,
          routing_ms:(if $rms == "" then null else ($rms | tonumber) end),
          subnet_up_s:(if $up == "" then null else ($up | tonumber) end), wall_s:($wall | tonumber),
          load_at_start:($load | tonumber), opensm_vls_needed:(if $vls == "" then null else ($vls | tonumber) end),
          layered_by_sl:$layered, note:$note}')
    if $analyzed; then
        "$JQ" -c --argjson b "$base" "\$b + {
            busiest_a2a:.metrics.all_to_all.max_link_load, worst_shift:.metrics.shift.max_link_load,
            unreachable_pairs:.metrics.unreachable_pairs, loops:.metrics.loops, dead_ends:.metrics.dead_ends,
            mean_hops:.metrics.mean_hops, switches_missing:.switches_missing,
            end_ports_without_lid:.end_ports_without_lid, vls_used:.metrics.cdg.vls_used,
            cdg_acyclic:((.metrics.cdg.per_vl // []) | all(.acyclic)),
            cdg:(.metrics.cdg | $jq_cdg), cdg_source:\"LFTs only (one VL)\",
            cdg_hosts_only_acyclic:.metrics.cdg.hosts_only.acyclic,
            cdg_hosts_only_cycle:.metrics.cdg.hosts_only.cycle}" "$d/analyze.json" >>"$ROWS"
    else
        echo "$base" >>"$ROWS"
    fi
    echo "   OpenSM $engine: ran ${ran:-nothing} (tried $tried), routing ${routing_ms:-?} ms, SUBNET UP ${subnet_up_s:-no} s, process ${wall} s${note:+; $note}" >&2
}

if [ -n "$render" ]; then
    "$JQ" -c '.rows[]' "$render" >"$ROWS" || die "$render: not a route-compare JSON file"
    # The fabrics of the file, in its order, unless some are named.
    [ "$fabrics_given" -gt 0 ] || mapfile -t fabrics < <("$JQ" -r '.fabric' "$ROWS" | awk '!s[$0]++')
fi

if [ ${#OSM_ENGINES[@]} -gt 0 ]; then
    OSM_CONF=$WORK/opensm.conf.default
    "$OPENSM" -c "$OSM_CONF" >/dev/null 2>&1 || die "opensm -c failed (cannot write OpenSM's default config)"
fi

measure=("${fabrics[@]}")
[ -z "$render" ] || measure=()
for fabric in ${measure[@]+"${measure[@]}"}; do
    ft0=$(date +%s.%N)
    fd=$WORK/$(echo "$fabric" | tr ':=/%' '____')
    mkdir -p "$fd"
    if [ -f "$fabric" ]; then
        net=$(realpath "$fabric")
    else
        net=$fd/fabric.net
        "$SMCTL" topo gen spec "$fabric" -o "$net" 2>"$fd/gen.err" || die "cannot generate $fabric: $(cat "$fd/gen.err")"
    fi
    echo "== $fabric: $(grep -c '^Switch' "$net") switches, $(grep -cE '^(Ca|Hca)' "$net") hosts" >&2
    for engine in "${OURS[@]}"; do
        run_ours "$fabric" "$net" "$engine" "$fd"
    done
    if [ ${#OSM_ENGINES[@]} -gt 0 ]; then
        # OpenSM attaches at the first CA of the file.
        host=$(awk '/^(Ca|Hca)/{match($0, /"[^"]*"/); print substr($0, RSTART+1, RLENGTH-2); exit}' "$net")
        for engine in "${OSM_ENGINES[@]}"; do
            run_opensm "$fabric" "$net" "$engine" "$fd" "$host"
        done
    fi
    echo "   ($fabric took $(awk -v a="$ft0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b-a}') s)" >&2
done

total_s=$(awk -v a="$script_t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b-a}')
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo "+dirty" || true)
osm_version=
[ ${#OSM_ENGINES[@]} -gt 0 ] && osm_version=$("$OPENSM" --version 2>/dev/null </dev/null | sed -n 's/^OpenSM //p' | head -1)
if [ -n "$render" ]; then
    commit=$("$JQ" -r '.commit' "$render") dirty=
    osm_version=$("$JQ" -r '.opensm_version // ""' "$render")
    load_at_start=$("$JQ" -r '.load_average_at_start' "$render")
    total_s=$("$JQ" -r '.total_s' "$render")
    workers=$("$JQ" -r '.workers' "$render")
fi

# One markdown table per fabric.
for fabric in "${fabrics[@]}"; do
    echo
    echo "**$fabric**"
    echo
    echo "| SM | engine | ran | routing ms | busiest link (all-to-all) | worst shift | unrouted pairs | VLs | CDG per VL (switch LIDs in) | CDG hosts only | notes |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    "$JQ" -r --arg f "$fabric" '
        select(.fabric == $f) |
        def n(x): if x == null then "-" else (x | tostring) end;
        def sm: if .sm == "ours" then "Quorum SM" else "OpenSM" end;
        if .refused and .sm == "ours" then
            "| \(sm) | \(.label) | - | - | - | - | - | - | - | - | refused: \(.refusal | gsub("\\|"; "/")) |"
        elif .ran == null then
            "| \(sm) | \(.label) | - | - | - | - | - | - | - | - | \((.refusal // .note // "") | gsub("\\|"; "/")) |"
        else
            ( if .sm == "ours" then
                [ (if (.refusals | length) > 0 then "fell back: " + (.refusals | map("\(.engine) \(.code)") | join(", ")) else empty end),
                  (if .engine == "minhop" and (.cdg_acyclic | not) then "credit loop accepted" else empty end) ]
              else
                [ (if .ran != .engine then "fell back (" + .engines_tried + "): " + .engine_errors else empty end),
                  (if .layered_by_sl then "paths spread over VLs by SL, not read back: the one-VL graphs are not its deadlock check" else empty end),
                  (if .opensm_vls_needed != null then "OpenSM: \(.opensm_vls_needed) VL(s) needed" else empty end),
                  (if (.switches_missing // 0) > 0 then "\(.switches_missing) switches missing from the dump" else empty end),
                  (if (.end_ports_without_lid // 0) > 0 then "\(.end_ports_without_lid) end ports without LID" else empty end),
                  (if (.loops // 0) > 0 then "\(.loops) looping walks" else empty end),
                  (if (.note // "") != "" then .note else empty end),
                  "SUBNET UP \(n(.subnet_up_s)) s" ]
              end | join("; ") | gsub("\\|"; "/")) as $notes |
            "| \(sm) | \(.label) | \(.ran) | \(n(.routing_ms)) | \(n(.busiest_a2a)) | \(n(.worst_shift)) | \(n(.unreachable_pairs)) | \(if .sm == "opensm" and .ran == "dfsssp" and .opensm_vls_needed != null then .opensm_vls_needed elif .layered_by_sl then "n/r" else n(.vls_used | if . == null then null else length end) end) | \(.cdg) | \(if .cdg_hosts_only_acyclic == null then "-" elif .cdg_hosts_only_acyclic then "acyclic" else "CYCLE (\(.cdg_hosts_only_cycle | length) channels)" end) | \($notes) |"
        end' "$ROWS"
done
echo
echo "Measured at commit ${commit}${dirty}, OpenSM ${osm_version:-not run}, load average at start ${load_at_start}; routing ms: ours ${workers} worker(s), OpenSM single-threaded; whole run ${total_s} s."

if [ -n "$json_out" ]; then
    "$JQ" -s --arg commit "$commit$dirty" --arg osm "$osm_version" --arg load "$load_at_start" \
        --argjson total "$total_s" --argjson workers "$workers" \
        '{commit:$commit, opensm_version:$osm, load_average_at_start:$load, total_s:$total, workers:$workers, rows:.}' \
        "$ROWS" >"$json_out"
    echo "route-compare: JSON written to $json_out" >&2
fi
