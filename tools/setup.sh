#!/usr/bin/env bash
# Installs every Debian package kai needs to build, run and test. Safe to run twice.
# Works on Debian 12 (bookworm), Debian 13 (trixie) and Ubuntu 24.04 (noble):
# every name below exists on all three, except QEMU's RISC-V emulator, which
# Debian moved out of qemu-system-misc into its own package qemu-system-riscv
# with QEMU 9.1 (Debian 13); Debian 12 and Ubuntu 24.04 still ship it in
# qemu-system-misc.
set -euo pipefail

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

# The package that holds qemu-system-riscv64 here: qemu-system-riscv where the
# package lists know it, qemu-system-misc otherwise.
qemu_package() {
  if apt-cache show qemu-system-riscv >/dev/null 2>&1; then echo qemu-system-riscv
  else echo qemu-system-misc; fi
}
# A fresh system may have no package lists yet; then apt-cache knows nothing.
if ! apt-cache show make >/dev/null 2>&1; then $SUDO apt-get update -q; fi
QEMU_PACKAGE=$(qemu_package)

PACKAGES=(
  make git
  g++ gcc                      # host runner and host unit tests
  g++-riscv64-linux-gnu        # cross compiler for the kernel and user programs
  binutils-riscv64-linux-gnu
  "$QEMU_PACKAGE"              # qemu-system-riscv64
  opensbi                      # the firmware behind QEMU's -bios default
  catch2                       # host unit tests (Catch2 v2, single header)
  python3 python3-numpy python3-pytest python3-matplotlib
  python3-jinja2               # reference renderings of chat templates (tests/tools)
  gdb-multiarch                # make qemu-gdb
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# The first python3 on PATH may be a build without numpy; kai's tools use Debian's.
/usr/bin/python3 -c 'import numpy, pytest, jinja2' || { echo "setup: /usr/bin/python3 lacks numpy/pytest/jinja2" >&2; exit 1; }
command -v qemu-system-riscv64 >/dev/null || { echo "setup: qemu-system-riscv64 missing" >&2; exit 1; }
command -v riscv64-linux-gnu-g++ >/dev/null || { echo "setup: riscv64-linux-gnu-g++ missing" >&2; exit 1; }
echo "setup: ok"
