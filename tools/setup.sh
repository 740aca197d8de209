#!/usr/bin/env bash
# Installs every Debian package kai needs to build, run and test. Safe to run twice.
set -euo pipefail

PACKAGES=(
  make git
  g++ gcc                      # host runner and host unit tests
  g++-riscv64-linux-gnu        # cross compiler for the kernel and user programs
  binutils-riscv64-linux-gnu
  qemu-system-misc             # qemu-system-riscv64 (and OpenSBI via opensbi package)
  opensbi
  catch2                       # host unit tests (Catch2 v2, single header)
  python3 python3-numpy python3-pytest python3-matplotlib
  gdb-multiarch                # make qemu-gdb
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# The first python3 on PATH may be a build without numpy; kai's tools use Debian's.
/usr/bin/python3 -c 'import numpy, pytest' || { echo "setup: /usr/bin/python3 lacks numpy/pytest" >&2; exit 1; }
command -v qemu-system-riscv64 >/dev/null || { echo "setup: qemu-system-riscv64 missing" >&2; exit 1; }
command -v riscv64-linux-gnu-g++ >/dev/null || { echo "setup: riscv64-linux-gnu-g++ missing" >&2; exit 1; }
echo "setup: ok"
