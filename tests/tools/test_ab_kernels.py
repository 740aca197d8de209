"""tools/ab_kernels.py: a bad command line names what is wrong (no QEMU needed)."""
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "ab_kernels.py"


def run(*args):
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True)


def test_missing_kernel_is_named(tmp_path):
    there = tmp_path / "k.elf"
    there.write_bytes(b"x")
    r = run("--before", str(there), "--after", str(tmp_path / "gone.elf"), "--image", str(there))
    assert r.returncode == 2
    assert "gone.elf" in r.stderr


def test_zero_boots_is_refused(tmp_path):
    there = tmp_path / "k.elf"
    there.write_bytes(b"x")
    r = run("--before", str(there), "--after", str(there), "--image", str(there), "--boots", "0")
    assert r.returncode == 2
    assert "--boots" in r.stderr


def test_unknown_case_is_refused(tmp_path):
    r = run("--before", "a", "--after", "b", "--case", "many")
    assert r.returncode == 2
    assert "many" in r.stderr
