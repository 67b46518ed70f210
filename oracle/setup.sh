#!/usr/bin/env bash
# One-time set-up for `memcgsim oracle`: installs QEMU, busybox, cpio and a static C
# toolchain from Debian's packages, and unpacks Debian's linux-image-amd64 (Linux 6.1) into
# the oracle directory ($MEMCGSIM_ORACLE_DIR, default ~/.cache/memcgsim/oracle) without
# installing it.
#
#   oracle/setup.sh                 the default kernel, into DIR/linux (used by default)
#   oracle/setup.sh PACKAGE         another Debian kernel package, into DIR/PACKAGE, e.g.
#                                   linux-image-6.12.113+deb12-amd64-unsigned; then pass
#                                   --kernel DIR/PACKAGE/boot/vmlinuz-* to memcgsim oracle
set -euo pipefail
dir="${MEMCGSIM_ORACLE_DIR:-$HOME/.cache/memcgsim/oracle}"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq qemu-system-x86 busybox-static cpio gcc libc6-dev e2fsprogs util-linux xz-utils >/dev/null
if [ $# -ge 1 ]; then
  pkg="$1"
  dest="$dir/$pkg"
else
  # linux-image-amd64 is a metapackage; take the image package it depends on.
  pkg="$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
  dest="$dir/linux"
fi
if ls "$dest"/boot/vmlinuz-* >/dev/null 2>&1; then
  echo "kernel already unpacked in $dest"
  exit 0
fi
mkdir -p "$dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && apt-get download "$pkg" >/dev/null 2>&1 )
rm -rf "$dest"
dpkg-deb -x "$tmp"/"$pkg"_*.deb "$dest"
echo "unpacked $pkg into $dest"
