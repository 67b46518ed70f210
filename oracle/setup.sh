#!/usr/bin/env bash
# One-time set-up for `memcgsim oracle`: installs QEMU, busybox, cpio, a static C
# toolchain, e2fsprogs and fdisk (the guest's disks) from Debian's packages, and unpacks Debian's linux-image-amd64 (Linux 6.1) into
# the oracle directory ($MEMCGSIM_ORACLE_DIR, default ~/.cache/memcgsim/oracle) without
# installing it. It then extracts the uncompressed kernel (boot/vmlinux-VERSION) from the
# bzImage: QEMU boots that ELF directly through its PVH entry point, which saves the
# decompression (7-8 s per boot under TCG); memcgsim oracle prefers it when it is there.
#
#   oracle/setup.sh                 the default kernel, into DIR/linux (used by default)
#   oracle/setup.sh PACKAGE         another Debian kernel package, into DIR/PACKAGE, e.g.
#                                   linux-image-6.12.113+deb12-amd64-unsigned; then pass
#                                   --kernel DIR/PACKAGE/boot/vmlinux-* (or vmlinuz-*) to
#                                   memcgsim oracle
set -euo pipefail
dir="${MEMCGSIM_ORACLE_DIR:-$HOME/.cache/memcgsim/oracle}"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq qemu-system-x86 busybox-static cpio gcc libc6-dev e2fsprogs util-linux fdisk xz-utils zstd bzip2 >/dev/null
if [ $# -ge 1 ]; then
  pkg="$1"
  dest="$dir/$pkg"
else
  # linux-image-amd64 is a metapackage; take the image package it depends on.
  pkg="$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
  dest="$dir/linux"
fi

# extract_vmlinux BZIMAGE OUT: find the compressed payload inside the bzImage by its
# format's magic bytes, decompress from there and keep the first result that is an ELF
# file. The decompressors stop at the end of their stream; what follows it is ignored.
extract_vmlinux() {
  local img="$1" out="$2" magic tool off
  for pair in 'fd377a585a00:xz -dc --single-stream' '1f8b0800:gzip -dcq' \
              '28b52ffd:zstd -dcq' '425a68:bzip2 -dcq' '5d000000:xz -dc --format=lzma' \
              '02214c18:lz4 -dcq'; do
    magic="${pair%%:*}"
    tool="${pair#*:}"
    command -v "${tool%% *}" >/dev/null || continue
    # Byte offsets of the magic: the image as one hex line, two characters per byte.
    for off in $(od -An -v -tx1 "$img" | tr -d ' \n' | grep -ob "$magic" | cut -d: -f1); do
      [ $((off % 2)) = 0 ] || continue
      tail -c +$((off / 2 + 1)) "$img" | $tool > "$out.tmp" 2>/dev/null || true
      if [ "$(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; then
        mv "$out.tmp" "$out"
        return 0
      fi
    done
  done
  rm -f "$out.tmp"
  return 1
}

if ! ls "$dest"/boot/vmlinuz-* >/dev/null 2>&1; then
  mkdir -p "$dir"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  ( cd "$tmp" && apt-get download "$pkg" >/dev/null 2>&1 )
  rm -rf "$dest"
  dpkg-deb -x "$tmp"/"$pkg"_*.deb "$dest"
  echo "unpacked $pkg into $dest"
else
  echo "kernel already unpacked in $dest"
fi
for z in "$dest"/boot/vmlinuz-*; do
  x="$dest/boot/vmlinux-${z##*/vmlinuz-}"
  [ -s "$x" ] && continue
  if extract_vmlinux "$z" "$x"; then
    echo "extracted the uncompressed kernel into $x"
  else
    echo "could not extract an uncompressed kernel from $z; memcgsim oracle boots the bzImage"
  fi
done
