"""What the QEMU integration tests share: where the build puts the kernel, the
user programs and the test models; skipping (never passing) when one of them
is missing; building a test image with tools/mkfsimg.py; and cutting the
output of one command out of a console transcript.

Booting itself is tools/qemu_run.py (`qemu_run.run` for a list of commands,
`qemu_run.Session` for an interactive boot); this module re-exports it."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import qemu_run  # noqa: E402,F401  (re-exported for the test files)

PYTHON = "/usr/bin/python3"
KERNEL = os.path.join(ROOT, "build", "kernel", "kernel.elf")
IMAGE = os.path.join(ROOT, "build", "fs.img")          # `make`'s default image
BIN = os.path.join(ROOT, "build", "user", "bin")
MODELS = os.path.join(ROOT, "build", "models")         # `make test-models`
MKFS = os.path.join(ROOT, "tools", "mkfsimg.py")


def need_built(*programs):
    """Skips the test unless the kernel and every named /bin program are built."""
    missing = [p for p in programs if not os.path.exists(os.path.join(BIN, p))]
    if not os.path.exists(KERNEL) or missing:
        what = "the kernel" if not os.path.exists(KERNEL) else "/bin/" + ", /bin/".join(missing)
        pytest.skip(f"{what} not built: run `make`")


def need_model(name):
    """The directory of a tiny test model under build/models, or a skip."""
    path = os.path.join(MODELS, name)
    if not os.path.exists(os.path.join(path, "CFG.BIN")):
        pytest.skip(f"tiny test model {name} missing: run `make test-models`")
    return path


def all_programs():
    """Every built user program (the files of build/user/bin without a dot)."""
    return [os.path.join(BIN, p) for p in sorted(os.listdir(BIN))
            if os.path.isfile(os.path.join(BIN, p)) and "." not in p]


def programs(*names):
    """The paths of the named user programs."""
    return [os.path.join(BIN, p) for p in names]


def make_image(img, progs, add_dirs=()):
    """Builds a file-system image at img holding progs under /bin and each
    (guest, host) directory of add_dirs under /guest; returns img."""
    cmd = [PYTHON, MKFS, "--out", img] + list(progs)
    for guest, host in add_dirs:
        cmd += ["--add-dir", f"{guest}={host}"]
    subprocess.check_call(cmd, stdout=subprocess.DEVNULL)
    return img


def output_of(transcript, command):
    """The console text between the last echo of `command` and the next prompt."""
    start = transcript.rindex(command + "\n") + len(command) + 1
    end = transcript.find(qemu_run.PROMPT, start)
    return transcript[start:end if end >= 0 else None]


def run_in_session(session, command, timeout=60):
    """Runs one command line in a qemu_run.Session and returns its output,
    without the echoed command line and the closing prompt."""
    start = session.mark()
    assert session.command(command, timeout=timeout), \
        f"`{command}` timed out\n" + session.transcript[-3000:]
    text = session.since(start)
    text = text[text.find(command + "\n") + len(command) + 1:]
    return text[:-len(qemu_run.PROMPT)] if text.endswith(qemu_run.PROMPT) else text
