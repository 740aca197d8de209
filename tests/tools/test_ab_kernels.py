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


def test_each_case_reads_its_figure_from_the_programs_output():
    sys.path.insert(0, str(TOOL.parent))
    import ab_kernels
    timing = ("timing model=SMOL path=warm prompt=5 gen=16 queue_us=290 ttft_us=2754365 prefill_us=2700000 "
              "tpot_us=456246 total_us=9600000 iterations=16 mean_batch=1.00 finish=length\r\n")
    bench = ("requests: 8 done, 0 failed or cancelled, 0 never reported, 0 clients died; wall 12.800 s\n"
             "throughput: 0.625 req/s, 10.00 tokens/s\n")
    assert ab_kernels.CASES["one"][2](timing) == 456.246
    assert ab_kernels.CASES["ttft"][2](timing) == 2754.365
    assert ab_kernels.CASES["batch8"][2](bench) == 10.0
    assert all(case[2]("ai: model: no such model\n") is None for case in ab_kernels.CASES.values())
