# Sourced by the scripts that run SMs on ibsim (side-by-side.sh, route-compare.sh,
# reconverge.sh): one ibsim instance at a time. The caller sets IBSIM (the binary, from
# tools.sh) and WORK (a scratch directory, the instance's log goes there).
#
#   start_ibsim NET SOCK [FIFO]
#                          starts ibsim on the net file NET with socket name SOCK, sized for
#                          the file, and waits until its control socket is up (2 min);
#                          sets IBSIM_PID; status 1 with ibsim's log when it does not come up.
#                          With FIFO, ibsim's console reads the FIFO (made here and held open
#                          on fd 3: `echo 'Unlink ...' >&3`); without, it has no console (-n)
#   stop_ibsim             stops it

start_ibsim() {
    local net=$1 sock=$2 fifo=${3:-} n s p i
    # Nodes, switches, ports (a switch counts nports+1) with headroom; ibsim's defaults
    # are 2048 / 256 / 13312; the LID cap (30720) is above every fabric the scripts run.
    read -r n s p < <(awk '/^Switch/{s++; n++; p+=$2+1} /^(Ca|Hca)/{n++; p+=$2} END{print n+0, s+0, p+0}' "$net")
    local flags=(-N $((n > 2048 ? n + 16 : 2048)) -S $((s > 256 ? s + 16 : 256)) -P $((p > 13312 ? p + 64 : 13312)))
    if [ -n "$fifo" ]; then
        rm -f "$fifo"
        mkfifo "$fifo"
        exec 3<>"$fifo"
        IBSIM_SOCKNAME=$sock "$IBSIM" -s "${flags[@]}" "$net" <"$fifo" >"$WORK/ibsim-$sock.log" 2>&1 &
    else
        IBSIM_SOCKNAME=$sock "$IBSIM" -s -n "${flags[@]}" "$net" >"$WORK/ibsim-$sock.log" 2>&1 &
    fi
    IBSIM_PID=$!
    for i in $(seq 1 1200); do
        grep -q "@$sock:ctl" /proc/net/unix && return 0
        kill -0 "$IBSIM_PID" 2>/dev/null || { cat "$WORK/ibsim-$sock.log" >&2; return 1; }
        sleep 0.1
    done
    echo "$(basename "$0"): ibsim did not come up" >&2
    return 1
}

stop_ibsim() { kill "$IBSIM_PID" 2>/dev/null || true; wait "$IBSIM_PID" 2>/dev/null || true; IBSIM_PID=; }
