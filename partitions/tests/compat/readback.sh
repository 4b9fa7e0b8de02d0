#!/bin/sh
# Reads back every end port's and every switch port's P_KeyTable (and switch ports'
# enforcement bits) from the fabric the umad2sim client is attached to, in the dump format of
# partitions::dump: "### node <GUID> port <N>" + smpquery output. Arg 1: highest LID to try.
# SMPQUERY: smpquery's full path (the test passes what testenv found; default: PATH).
max=${1:-64}
smpquery() { command "${SMPQUERY:-smpquery}" "$@"; }
lid=1
while [ "$lid" -le "$max" ]; do
  ni=$(smpquery nodeinfo "$lid" 2>/dev/null) || { lid=$((lid+1)); continue; }
  guid=$(echo "$ni" | sed -n 's/^Guid:\.*//p')
  type=$(echo "$ni" | sed -n 's/^NodeType:\.*//p')
  nports=$(echo "$ni" | sed -n 's/^NumPorts:\.*//p')
  lport=$(echo "$ni" | sed -n 's/^LocalPort:\.*//p')
  if [ "$type" = "Switch" ]; then
    p=0
    while [ "$p" -le "$nports" ]; do
      echo "### node $guid port $p"
      smpquery PKeys "$lid" "$p" 2>/dev/null
      if [ "$p" -gt 0 ]; then smpquery portinfo "$lid" "$p" 2>/dev/null | grep PartEnforce; fi
      p=$((p+1))
    done
  else
    echo "### node $guid port $lport"
    smpquery PKeys "$lid" "$lport" 2>/dev/null
  fi
  lid=$((lid+1))
done
