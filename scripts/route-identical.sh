#!/usr/bin/env bash
# Routing output of two smctl binaries, compared: for each case below, `smctl route ...
# --dump-lfts F --json --no-metrics` of both must give byte-identical LFT dumps (compared
# by SHA-256, read from a FIFO: the ibroute text of ft3:48 is 6.8 GB) and
# equal JSON reports once the timing and memory fields are removed (the deadlock check's
# channels, dependency count, acyclicity and cycle; with --drop-link the changed blocks of
# the full and incremental re-routes and the incremental tables' unreachable pairs, loops
# and dead ends). For speed-only changes to the routing crate: build the old binary first.
#
#   scripts/route-identical.sh OLD_SMCTL NEW_SMCTL [WORKERS]
#
# ROUTE_CASES=REGEX runs only the cases whose name matches (e.g. ROUTE_CASES='dfsssp|2qos').
# Exit status 1 when any case differs (each difference is printed), 2 on a failed run.
set -euo pipefail
old=${1:?usage: route-identical.sh OLD_SMCTL NEW_SMCTL [WORKERS]}
new=${2:?usage: route-identical.sh OLD_SMCTL NEW_SMCTL [WORKERS]}
workers=${3:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# name|arguments
cases=(
  "ft3-36|--topology ft3:36"
  "ft3-48|--topology ft3:48"
  "ft2-36|--topology ft2:36"
  "torus|--topology torus:6x6x6"
  "torus-2qos|--topology torus:6x6x6 --engine torus-2QoS"
  "random|--topology random:256:seed=7"
  "random-dfsssp|--topology random:256:seed=7 --engine dfsssp"
  "random-minhop|--topology random:256:seed=7 --engine minhop --accept-credit-loops"
  "ft3-36-lmc2|--topology ft3:36 --lmc 2"
  "ft2-36-lmc2-updn|--topology ft2:36 --lmc 2 --engine updn"
  "ft3-36-updn|--topology ft3:36 --engine updn"
  "ft3-36-minhop|--topology ft3:36 --engine minhop --accept-credit-loops"
  "ft3-36-degraded|--topology ft3:36:remove=1%"
  "ft2-36-degraded|--topology ft2:36:remove=3:seed=1"
  "ft3-36-droplink|--topology ft3:36 --drop-link 0x2001000000000000:19"
  "ft3-36-lmc2-droplink|--topology ft3:36 --lmc 2 --drop-link 0x2001000000000000:20"
)
strip='del(.routing_ms, .load_ms, .input_ms, .metrics_ms, .peak_rss_mb,
  .peak_rss_mb_with_metrics) | if .drop_link then del(.drop_link.full_ms,
  .drop_link.incremental_ms) else . end'
fail=0
for c in "${cases[@]}"; do
  name=${c%%|*}
  [[ $name =~ ${ROUTE_CASES:-.} ]] || continue
  read -r -a args <<<"${c#*|}"
  for side in old new; do
    bin=$old
    [[ $side == new ]] && bin=$new
    mkfifo "$dir/$name.$side.fifo"
    sha256sum <"$dir/$name.$side.fifo" >"$dir/$name.$side.sum" &
    if ! "$bin" route "${args[@]}" --workers "$workers" --no-metrics --json \
      --dump-lfts "$dir/$name.$side.fifo" >"$dir/$name.$side.raw" 2>"$dir/$name.$side.err"; then
      : >"$dir/$name.$side.fifo" # unblocks sha256sum if the run never opened the FIFO
      wait
      echo "FAIL $name: $side run failed:"
      cat "$dir/$name.$side.err"
      exit 2
    fi
    wait
    jq -S "$strip" "$dir/$name.$side.raw" >"$dir/$name.$side.json"
  done
  if ! cmp -s "$dir/$name.old.sum" "$dir/$name.new.sum"; then
    echo "FAIL $name: LFT dumps differ"
    fail=1
  elif ! diff -u "$dir/$name.old.json" "$dir/$name.new.json"; then
    echo "FAIL $name: reports differ"
    fail=1
  else
    deps=$(jq -c '[.deadlock_check.per_vl[] | [.dependencies, .acyclic]]' "$dir/$name.new.json")
    echo "same $name: LFT dump sha256 $(cut -c1-16 "$dir/$name.new.sum"), engine $(jq -r .engine \
      "$dir/$name.new.json"), cdg [deps, acyclic] $deps"
  fi
done
exit $fail
