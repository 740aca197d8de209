"""What every study records beside its figures: the environment it ran in
(commit, date, host, QEMU) and its CSV files."""
import csv
import os
import platform
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _output(*command):
    """What command printed (stripped), or "" if it could not run."""
    try:
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def qemu_version():
    """QEMU's version line ("QEMU emulator version 8.2.2 (...)"), or ""."""
    return _output("qemu-system-riscv64", "--version").split("\n")[0]


def uptime():
    """The host's `uptime` line (how loaded it is), or "uptime unavailable"."""
    return _output("uptime") or "uptime unavailable"


def environment():
    """The commit (with " (with local changes)" if tracked files differ from
    it), the date, the host, its CPUs and load, and the QEMU version."""
    commit = _output("git", "rev-parse", "--short", "HEAD") or "unknown"
    if _output("git", "status", "--porcelain", "--untracked-files=no"):
        commit += " (with local changes)"
    return {"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M %Z"), "host_cpus": os.cpu_count(),
            "host": platform.platform(), "qemu": qemu_version(),
            "loadavg_start": "%.1f" % os.getloadavg()[0]}


def write_csv(path, fields, rows):
    """A CSV file: the header fields, then one line a row. A row is a dict
    (its keys that are not fields are left out) or a sequence in the order
    of the fields."""
    with open(path, "w", newline="") as f:
        named = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        named.writeheader()
        plain = csv.writer(f)
        for r in rows:
            if isinstance(r, dict):
                named.writerow(r)
            else:
                plain.writerow(r)
