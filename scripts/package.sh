#!/usr/bin/env bash
# Builds the Debian packages sm-node, smctl and sm-agent from a release build:
#
#   scripts/package.sh [OUT_DIR]     # default target/debian; prints the .deb paths
#
# Plain `dpkg-deb --build` of a staged tree, so no cargo tool has to be installed (no
# cargo-deb): the package stanzas come from debian/control, the files from packaging/
# (systemd units, /etc/quorum-sm/sm-node.toml, /etc/default files) and docs/deploy.md.
# Dependencies are computed by dpkg-shlibdeps when it is installed (package dpkg-dev),
# else set to libc6 and libgcc-s1. Binaries are stripped of debug info in the package
# only. Needs: cargo, dpkg-deb; optional: dpkg-shlibdeps, objcopy.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/debian}
VERSION=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
ARCH=$(dpkg --print-architecture)
[ -n "$VERSION" ] || { echo "package.sh: no version in Cargo.toml [workspace.package]" >&2; exit 1; }

cargo build --release -p sm-node -p smctl -p sm-agent
mkdir -p "$OUT"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

# stanza PACKAGE: its paragraph of debian/control (without the source paragraph).
stanza() { awk -v p="$1" 'BEGIN{RS=""; FS="\n"} $1 == "Package: " p {print; exit}' debian/control; }

build() { # PACKAGE BINARY
  local pkg=$1 bin=$2 root="$STAGE/$1"
  install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/doc/$pkg"
  install -m 0755 "target/release/$bin" "$root/usr/bin/$bin"
  if command -v objcopy >/dev/null; then objcopy --strip-debug "$root/usr/bin/$bin"; fi
  install -m 0644 docs/deploy.md "$root/usr/share/doc/$pkg/deploy.md"
  install -m 0644 LICENSE* "$root/usr/share/doc/$pkg/" 2>/dev/null || true
  case $pkg in
    sm-node)
      install -D -m 0644 packaging/systemd/quorum-sm.service "$root/usr/lib/systemd/system/quorum-sm.service"
      install -D -m 0644 packaging/etc/sm-node.toml "$root/etc/quorum-sm/sm-node.toml"
      install -D -m 0644 packaging/etc/default/quorum-sm "$root/etc/default/quorum-sm"
      install -m 0644 docs/migrate-from-opensm.md "$root/usr/share/doc/$pkg/"
      printf '/etc/quorum-sm/sm-node.toml\n/etc/default/quorum-sm\n' >"$root/DEBIAN/conffiles"
      unit=quorum-sm.service ;;
    sm-agent)
      install -D -m 0644 packaging/systemd/quorum-sm-agent.service "$root/usr/lib/systemd/system/quorum-sm-agent.service"
      install -D -m 0644 packaging/etc/default/quorum-sm-agent "$root/etc/default/quorum-sm-agent"
      printf '/etc/default/quorum-sm-agent\n' >"$root/DEBIAN/conffiles"
      unit=quorum-sm-agent.service ;;
    *) unit= ;;
  esac
  if [ -n "$unit" ]; then
    # The unit is installed, not enabled or started: a new SM must not take a fabric by
    # surprise. systemd re-reads its units when it runs.
    for s in postinst postrm; do
      printf '#!/bin/sh\nset -e\nif [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi\n' >"$root/DEBIAN/$s"
      chmod 0755 "$root/DEBIAN/$s"
    done
    printf '#!/bin/sh\nset -e\nif [ "$1" = remove ] && [ -d /run/systemd/system ]; then systemctl stop %s || true; fi\n' "$unit" >"$root/DEBIAN/prerm"
    chmod 0755 "$root/DEBIAN/prerm"
  fi
  local deps
  deps=$(dpkg-shlibdeps -O -e "$root/usr/bin/$bin" 2>/dev/null | sed -n 's/^shlibs:Depends=//p' || true)
  [ -n "$deps" ] || deps="libc6, libgcc-s1"
  local size
  size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  stanza "$pkg" | sed "s/\${shlibs:Depends}/$deps/" | awk -v v="$VERSION" -v a="$ARCH" -v s="$size" '
    /^Architecture:/ {print "Version: " v; print "Architecture: " a; print "Installed-Size: " s; next}
    {print}' >"$root/DEBIAN/control"
  grep -q '^Maintainer:' "$root/DEBIAN/control" || sed -n 's/^Maintainer: /Maintainer: /p' debian/control | head -1 >>"$root/DEBIAN/control"
  grep -q '^Section:' "$root/DEBIAN/control" || echo "Section: net" >>"$root/DEBIAN/control"
  grep -q '^Priority:' "$root/DEBIAN/control" || echo "Priority: optional" >>"$root/DEBIAN/control"
  dpkg-deb --root-owner-group --build "$root" "$OUT/${pkg}_${VERSION}_${ARCH}.deb" >/dev/null
  echo "$OUT/${pkg}_${VERSION}_${ARCH}.deb"
}

build sm-node sm-node
build smctl smctl
build sm-agent sm-agent
