# Sourced by the scripts: the one tool lookup and package table, the shell twin of the
# `testenv` crate (testenv/src/lib.rs). A test of that crate checks that both agree, tool by
# tool, so change them together.
#
#   qsm_find_tool NAME    prints the full path of NAME (PATH, then /usr/sbin, /sbin);
#                         status 1 when it is not installed
#   qsm_require_tool NAME the same, or exits 2 naming NAME and its Debian package
#   QSM_TOOLS             "tool=package ..." for every program tests and scripts run
#   QSM_FILES             "path=package ..." for every file they read

QSM_TOOLS="ibsim=ibsim-utils opensm=opensm osmtest=opensm ibnetdiscover=infiniband-diags \
ibroute=infiniband-diags ibswitches=infiniband-diags perfquery=infiniband-diags \
saquery=infiniband-diags sminfo=infiniband-diags smpdump=infiniband-diags \
smpquery=infiniband-diags timeout=coreutils chromium=chromium chromedriver=chromium-driver"

QSM_FILES="/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so=libumad2sim0 \
/usr/share/doc/ibsim-utils/net-examples=ibsim-utils"

qsm_find_tool() {
  local name=$1 dir
  [ -n "$name" ] || return 1
  case $name in
    */*) if [ -f "$name" ] && [ -x "$name" ]; then printf '%s\n' "$name"; return 0; fi
         return 1 ;;
  esac
  local IFS=:
  for dir in $PATH /usr/sbin /sbin; do
    [ -n "$dir" ] || continue
    if [ -f "$dir/$name" ] && [ -x "$dir/$name" ]; then
      printf '%s\n' "$dir/$name"
      return 0
    fi
  done
  return 1
}

qsm_tool_package() {
  local pair
  for pair in $QSM_TOOLS; do
    if [ "${pair%%=*}" = "$1" ]; then printf '%s\n' "${pair#*=}"; return 0; fi
  done
  return 1
}

qsm_require_tool() {
  qsm_find_tool "$1" && return 0
  echo "$(basename "$0"): $1 is not installed (Debian package $(qsm_tool_package "$1" || echo unknown))" >&2
  exit 2
}
