#!/usr/bin/env bash
# Runs the whole Quorum SM test suite on a fresh machine.
#
# 1. Installs what the tests need when it is missing: the real InfiniBand tools we prove
#    against (Debian packages ibsim-utils, opensm, infiniband-diags), and headless Chromium
#    with its WebDriver (chromium, chromium-driver) for the dashboard's browser test.
# 2. Runs every test of the workspace.
#
# Usage: scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v ibsim >/dev/null 2>&1 || need_pkgs+=(ibsim-utils)
command -v opensm >/dev/null 2>&1 || need_pkgs+=(opensm)
command -v smpquery >/dev/null 2>&1 || need_pkgs+=(infiniband-diags)
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_pkgs+=(chromium-driver)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "test.sh: installing ${need_pkgs[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  if $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null; then
    # The opensm package starts a system service on install; we run our own instances.
    $SUDO systemctl stop opensm >/dev/null 2>&1 || true
  else
    echo "test.sh: could not install ${need_pkgs[*]}; tests that need them will say they are skipped" >&2
  fi
fi

cargo test --workspace "$@"
