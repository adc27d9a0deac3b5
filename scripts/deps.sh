#!/usr/bin/env bash
# Install the Debian packages that building, running and testing lathist need.
# Idempotent: installs only what is missing; runs apt-get update at most once.
# Usage: scripts/deps.sh [build|test|bench]   (each level includes the previous)
set -euo pipefail

level=${1:-build}
build_pkgs=(clang llvm make gcc pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev libjson-c-dev libssl-dev
  libmicrohttpd-dev
  help2man go-md2man)
test_pkgs=(libcmocka-dev python3 strace util-linux fdisk procps man-db python3-jsonschema python3-prometheus-client
  librsvg2-bin qemu-system-x86 busybox-static cpio libclang-rt-14-dev systemd)
# Unpacked (not installed) into build/tools for the export tests, so that no
# Prometheus service is installed or started: promtool and node_exporter.
tool_debs=(prometheus prometheus-node-exporter)
bench_pkgs=(bpftrace linux-perf fio libbpf-tools time)

want=("${build_pkgs[@]}")
case "$level" in
  build) ;;
  test) want+=("${test_pkgs[@]}") ;;
  bench) want+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  *) echo "deps.sh: unknown level '$level' (use build, test or bench)" >&2; exit 2 ;;
esac

unpack_tools() {
  local dir="build/tools" tmp
  [ -x "$dir/usr/bin/promtool" ] && [ -x "$dir/usr/bin/prometheus-node-exporter" ] && return 0
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download -qq "${tool_debs[@]}" >/dev/null 2>&1); then
    apt-get update -qq
    (cd "$tmp" && apt-get download -qq "${tool_debs[@]}" >/dev/null 2>&1)
  fi
  mkdir -p "$dir"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$dir"; done
  rm -rf "$tmp"
}

# Debian's own kernels for the kernel matrix (tests/integration/test_kernels.py): the newest
# linux-image-6.1.0-N-amd64 and its PREEMPT_RT flavour, unpacked (vmlinuz, config, loop.ko,
# and the virtio block driver with its modules, the guests' disk for their results) into
# build/kernels/PACKAGE, never installed. .complete-2 marks an unpacking with the virtio modules.
fetch_kernels() {
  local dir="build/kernels" flavour pkg tmp
  [ "$(uname -m)" = x86_64 ] || return 0
  for flavour in amd64 rt-amd64; do
    pkg=$(apt-cache search --names-only "^linux-image-6\.1\.0-[0-9]+-${flavour}\$" 2>/dev/null |
          awk '{print $1}' | sort -V | tail -1)
    if [ -z "$pkg" ]; then
      apt-get update -qq
      pkg=$(apt-cache search --names-only "^linux-image-6\.1\.0-[0-9]+-${flavour}\$" |
            awk '{print $1}' | sort -V | tail -1)
    fi
    [ -n "$pkg" ] || continue
    [ -f "$dir/$pkg/.complete-2" ] && continue
    tmp=$(mktemp -d)
    if ! (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1); then
      # an old package list names a version the mirror no longer has
      apt-get update -qq
      pkg=$(apt-cache search --names-only "^linux-image-6\.1\.0-[0-9]+-${flavour}\$" |
            awk '{print $1}' | sort -V | tail -1)
      (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1)
    fi
    rm -rf "${dir:?}/$pkg"
    mkdir -p "$dir/$pkg"
    dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$dir/$pkg" --wildcards \
      './boot/vmlinuz-*' './boot/config-*' './lib/modules/*/kernel/drivers/block/loop.ko' \
      './lib/modules/*/kernel/drivers/block/virtio_blk.ko' './lib/modules/*/kernel/drivers/virtio/*.ko'
    touch "$dir/$pkg/.complete-2"
    rm -rf "$tmp"
  done
}

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  [ "$level" = build ] || { unpack_tools; fetch_kernels; }
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing Debian packages: ${missing[*]}; run as root or: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "$level" = build ] || { unpack_tools; fetch_kernels; }
