#!/usr/bin/env bash
# tools/check_debian13.sh [ROOT]: does kai build and boot on a fresh Debian 13?
#
# Builds a Debian 13 (trixie) root file system with debootstrap in ROOT
# (default /var/tmp/kai-trixie; kept between runs, so a second run skips the
# download), copies this checkout into it (the files git knows, without
# build/), and inside it as a new user would:
#   1. tools/setup.sh        installs the packages (trixie's QEMU is 10.0)
#   2. make all test-models  builds kernel, programs, image, test bundles
#   3. usertests             boots kai with qemu_run.py and runs /bin/usertests
#   4. the AI smoke tests    tests/qemu/test_ai.py: aitest on every tiny model
#                            and the warm path's tokens against the reference
#   5. tests/tools/test_chat_template.py (trixie's python3-jinja2)
#   6. the host unit tests (build/host/unit_tests, with trixie's Catch2 v3)
# and prints one line per step with its time and result, then a summary.
# Exits non-zero when a step fails.
#
# Needs root (debootstrap, chroot, mounts) and network access to a Debian
# mirror (DEBIAN_MIRROR overrides deb.debian.org). Slow: the debootstrap and
# package steps download about 400 MB; on a 2-core machine the whole check
# takes tens of minutes. Not part of `make test`.
set -euo pipefail

ROOT=${1:-/var/tmp/kai-trixie}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=trixie
JOBS=${JOBS:-2}
REPO=$(cd "$(dirname "$0")/.." && pwd)

[ "$(id -u)" -eq 0 ] || { echo "check_debian13: needs root (debootstrap and chroot)" >&2; exit 2; }

step() {   # step NAME COMMAND...: runs COMMAND, prints NAME, seconds and ok/FAILED
  local name=$1; shift
  local t0=$SECONDS
  echo "check_debian13: --- $name"
  if "$@"; then
    echo "check_debian13: $name ok ($((SECONDS - t0)) s)"
    RESULTS+=("$name ok $((SECONDS - t0))s")
  else
    echo "check_debian13: $name FAILED ($((SECONDS - t0)) s)"
    RESULTS+=("$name FAILED $((SECONDS - t0))s")
    summary
    exit 1
  fi
}

summary() {
  echo "check_debian13: summary (Debian $SUITE root at $ROOT, total $((SECONDS - START)) s)"
  for r in "${RESULTS[@]}"; do echo "  $r"; done
}

MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT

bind() {   # bind HOSTDIR: makes HOSTDIR visible at the same place inside the root
  mkdir -p "$ROOT$1"
  mount --bind "$1" "$ROOT$1"
  MOUNTS+=("$ROOT$1")
}

make_root() {
  if [ -f "$ROOT/etc/debian_version" ] && grep -q '^13' "$ROOT/etc/debian_version"; then
    echo "check_debian13: reusing the root in $ROOT (Debian $(cat "$ROOT/etc/debian_version"))"
    return 0
  fi
  command -v debootstrap >/dev/null || {
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap; }
  # minbase: apt and dpkg only; tools/setup.sh must install everything else.
  debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$ROOT" "$MIRROR"
}

copy_checkout() {
  rm -rf "$ROOT/kai"
  mkdir -p "$ROOT/kai"
  (cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
     tar --null -T - -cf -) | tar -xf - -C "$ROOT/kai"
}

in_root() {   # in_root COMMAND: runs a shell command in /kai inside the root, as a clean login would
  chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /kai && $1"
}

boot_usertests() {
  # The transcript goes to a file; the step passes only on usertests' own verdict.
  in_root "/usr/bin/python3 tools/qemu_run.py --timeout 900 -c usertests" > "$ROOT/kai/usertests.log" 2>&1 || {
    tail -20 "$ROOT/kai/usertests.log"; return 1; }
  grep -E '^[0-9]+ passed, 0 failed' "$ROOT/kai/usertests.log" || {
    tail -20 "$ROOT/kai/usertests.log"; return 1; }
}

START=$SECONDS
RESULTS=()
step "debootstrap $SUITE" make_root
bind /proc; bind /sys; bind /dev; bind /dev/pts
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
step "copy checkout" copy_checkout
step "tools/setup.sh" in_root "bash tools/setup.sh"
in_root 'grep PRETTY_NAME /etc/os-release; qemu-system-riscv64 --version | head -1
         dpkg-query -W opensbi catch2 libcatch2-dev 2>/dev/null; true' | sed 's/^/check_debian13: /'
step "make all test-models" in_root "make -j$JOBS all test-models"
step "boot: usertests" boot_usertests
step "AI smoke: test_ai.py" in_root "/usr/bin/python3 -m pytest -x -q tests/qemu/test_ai.py -k 'aitest_all_models or warm_tokens_equal_reference'"
step "chat templates: test_chat_template.py" in_root "/usr/bin/python3 -m pytest -x -q tests/tools/test_chat_template.py"
step "host unit tests" in_root "set -o pipefail; make -j$JOBS build/host/unit_tests && build/host/unit_tests | tail -3"
summary
