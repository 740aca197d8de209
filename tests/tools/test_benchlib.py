"""Unit tests of the benchmark's Python pieces (tools/benchlib,
tools/disk_models.py, qemu_run's --disk): no QEMU needed."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bundle  # noqa: E402
import disk_models  # noqa: E402
import qemu_run  # noqa: E402
from benchlib import latency, noise, spread, work  # noqa: E402
from benchlib.parse import (parse_ai_timing, parse_aibench, parse_aistat_clients, parse_calib,  # noqa: E402
                            parse_chat_turns, parse_coldwarm)

PYTHON = "/usr/bin/python3"


# ---------------------------------------------------------------- latency formulas

def test_latency_formulas_from_the_four_timestamps():
    row = {"t_submit_ns": "1000000", "t_start_ns": "3000000", "t_first_ns": "10000000",
           "t_finish_ns": "40000000", "generated": "4", "state": "done"}
    latency.derive(row)
    assert row["queue_us"] == 2000 and row["prefill_us"] == 7000 and row["ttft_us"] == 9000
    assert row["tpot_us"] == 10000          # (40 - 10) ms over 3 decode steps
    assert row["e2e_us"] == 39000 and row["service_us"] == 37000
    one = dict(row, generated="1")
    assert latency.derive(one)["tpot_us"] == ""   # no decode step to time
    failed = dict(row, state="failed")
    assert latency.derive(failed)["e2e_us"] == ""


def test_nearest_rank_percentile_and_median():
    vals = list(range(1, 17))
    assert latency.percentile(vals, 50) == 8 and latency.percentile(vals, 95) == 16
    assert latency.percentile(list(range(1, 21)), 95) == 19
    assert latency.median([3, 1, 2]) == 2 and latency.median([4, 1, 2, 3]) == 2.5


# ---------------------------------------------------------------- spread and comparisons

def test_summarize_gives_median_range_and_a_seeded_bootstrap_interval():
    s = spread.summarize([10, 30, 20], seed=1)
    assert (s["n"], s["median"], s["min"], s["max"]) == (3, 20, 10, 30)
    assert 10 <= s["ci95"][0] <= 20 <= s["ci95"][1] <= 30
    assert spread.summarize([10, 30, 20], seed=1)["ci95"] == s["ci95"]       # reproducible
    wide = spread.summarize([100, 101, 99, 100, 102, 98, 100, 500, 100], seed=2)
    assert wide["ci95"][1] < 500                     # the interval of the median ignores one outlier
    assert spread.summarize([None, None])["n"] == 0


def test_compare_says_larger_than_the_spread_only_when_ranges_are_apart():
    a, b = spread.summarize([1.0, 1.2, 1.1]), spread.summarize([2.0, 2.5, 2.2])
    c = spread.compare(a, b)
    assert c["separated"] is True and c["ratio"] == pytest.approx(2.0) and c["verdict"].startswith("yes")
    overlap = spread.compare(a, spread.summarize([1.15, 3.0, 2.0]))
    assert overlap["separated"] is False and overlap["verdict"].startswith("no")
    single = spread.compare(spread.summarize([1]), spread.summarize([2]))
    assert single["separated"] is None and "no spread" in single["verdict"]


# ---------------------------------------------------------------- noise flags

def test_calibration_flags():
    assert noise.calibration_flags(100000, 105000, 100000, 15)[0] == []
    flags, fig = noise.calibration_flags(100000, 130000, 100000, 15)
    assert fig["moved_pct"] == 30.0 and any("moved 30%" in f for f in flags)
    flags, _ = noise.calibration_flags(140000, 141000, 100000, 15)
    assert len(flags) == 1 and "slower" in flags[0]
    assert noise.calibration_flags(None, 100, 100)[0] == ["no calibration"]


def test_parse_calib_and_coldwarm_timing_line():
    assert parse_calib("calib: 16000000 iterations in 98765 us (checksum -3)\n") == 98765
    assert parse_calib("calib: unknown argument\n") is None
    text = ("llmrun-timing: timing model=TINY load_us=5 prefill_macs=10\ntokens: 1 2\n"
            "coldwarm,0,cold,100,5,50,10,40\ncoldwarm,0,warm,90,0,45,10,44\ntokens identical: yes\n")
    runs, same, timing = parse_coldwarm(text)
    assert same and timing == "timing model=TINY load_us=5 prefill_macs=10"
    assert runs[1] == {"run": 0, "path": "warm", "e2e_us": 90, "load_us": 0, "launch_ttft_us": 45, "tpot_us": 10,
                       "prefill_us": 44}


# ---------------------------------------------------------------- counted work

SMOL = bundle.Config(dim=576, hidden_dim=1536, n_layers=30, n_heads=9, n_kv_heads=3, vocab_size=49152,
                     seq_len=8192, runtime_seq_len=256)


# One aibench run with --csv and --samples, as printed (canned, shortened;
# test_engine_study.py has the rest of its latency table).
AIBENCH_RUN = """aibench: model SMOL, 2 clients x 1 requests, prompt 8, predict 4, closed loop, int8 activations
requests: 2 done, 0 failed or cancelled, 0 never reported, 0 clients died; wall 3.000 s
throughput: 0.667 req/s, 2.67 tokens/s
end-to-end   mean     2500  p50     2000  p95     3000  max     3000 us
csv,client,index,state,error,prompt,generated,queue_depth,worker,t_submit_ns,t_start_ns,t_first_ns,t_finish_ns
csv,0,0,done,0,8,4,0,0,1000,1000,2000,3000
csv,1,0,done,0,8,4,1,0,1000,2000,3000,4000
mean queue length 0.250, mean in system 1.500 (load meter: 300 samples by hart 0's timer)
sample,t_ns,queued,running
sample,1000,1,1
little: L_measured=1.500 lambda=0.6667 W=2.5000 lambdaW=1.667
"""


def test_one_aibench_reader_serves_the_sweep_and_the_engine_study():
    # The bench sweep and the open loop read rows, samples and Little's law;
    # the engine study the throughput line and the latency table (ms).
    rows, samples, s = parse_aibench(AIBENCH_RUN)
    assert [r["t_finish_ns"] for r in rows] == ["3000", "4000"] and rows[1]["client"] == "1"
    assert samples == [(1000, 1, 1)]
    assert s["done"] == 2 and s["L_measured"] == 1.5 and s["mean_queue_length"] == 0.25 and s["samples"] == 300
    assert s["req_per_s"] == 0.667 and s["tokens_per_s"] == 2.67
    assert s["end_to_end"]["p50_ms"] == 2.0 and s["end_to_end"]["mean_ms"] == 2.5 and "ttft" not in s
    # What was not printed: figures None or absent, never a crash.
    rows, samples, s = parse_aibench("aibench: connect: no such model\n")
    assert rows == [] and samples == [] and s["done"] == 0 and s["L_measured"] is None
    assert "ttft" not in s and "tokens_per_s" not in s


def test_timing_chat_turns_and_aistat_clients():
    t = parse_ai_timing("26746 155\r\ntiming model=SMOL path=warm prompt=5 gen=16 queue_us=290 ttft_us=2754365 "
                        "prefill_us=2700000 tpot_us=456246 total_us=9600000 iterations=16 mean_batch=1.00 "
                        "finish=length\r\n$ ")
    assert t["ttft_us"] == 2754365 and t["tpot_us"] == 456246 and t["model"] == "SMOL" and t["finish"] == "length"
    assert parse_ai_timing("ai: no such model\n") is None
    turns = "turn 1 prompt=9 cached=0 ttft_us=500 tpot_us=40\r\nturn 2 prompt=21 cached=9 ttft_us=510 tpot_us=41\r\n"
    assert parse_chat_turns(turns) == [(1, 9, 0, 500, 40), (2, 21, 9, 510, 41)]
    stat = ("client: pid=7 served=3 prompt_tokens=24 output_tokens=12\n"
            "client: pid=9 served=1 prompt_tokens=8 output_tokens=4\n")
    assert parse_aistat_clients(stat) == {7: (3, 24, 12), 9: (1, 8, 4)}
    assert parse_aibench(AIBENCH_RUN)[2]["wall_s"] == 3.0


def test_number_lists_and_model_names_of_the_command_lines():
    from benchlib.options import model_name, number_list
    assert number_list("1,2, 4", "--clients", "bench", whole=True) == [1, 2, 4]
    assert number_list("0.5,1.5,", "--rho", "bench --open-loop") == [0.5, 1.5]
    for bad, whole in (("1,0", True), ("1.5", True), ("", False), ("0.3,x", False), ("-1", False)):
        with pytest.raises(SystemExit, match="want positive"):
            number_list(bad, "--x", "bench", whole)
    assert model_name("/a/b/tiny-llama/") == "TINYLLAMA" and model_name("/x", "smol") == "SMOL"
    assert model_name("/m/a-very-long-model-name") == "AVERYLONGMODELN"


def test_analytic_work_of_the_smol_shape():
    # By hand: 134.5 M multiply-adds for a decode step with the
    # classifier (30 layers of q, k, v, o and the MLP, plus 49,152 x 576),
    # plus attention over the positions so far (9 heads x 64 x 2 per position).
    step = work.llama_pass(SMOL, 0, True)
    assert step["macs"] == 30 * (2 * 576 * 576 + 2 * 192 * 576 + 3 * 576 * 1536) + 49152 * 576 + 30 * 2 * 576
    assert round(step["macs"] / 1e6, 1) == 134.5
    # int8 weights: one byte per weight and a 4-byte scale per row
    assert step["weight_bytes"] == step["macs"] - 30 * 2 * 576 + 4 * (30 * (576 + 192 + 192 + 576 + 1536 * 2
                                                                           + 576) + 49152)
    w = work.analytic(SMOL, 4, 8)
    assert w["decode_macs"] == sum(work.llama_pass(SMOL, 4 + i, True)["macs"] for i in range(7))
    # prefill: 4 passes, the classifier only after the last
    assert w["prefill_macs"] == 4 * (step["macs"] - 49152 * 576 - 30 * 2 * 576) + 49152 * 576 + \
        30 * 2 * 576 * (1 + 2 + 3 + 4)
    assert w["prefill_kv_write"] == 4 * 30 * 2 * 192 * 4 and w["decode_kv_write"] == 7 * 30 * 2 * 192 * 4


def test_intensity_decode_memory_bound_long_batched_prefill_compute_bound():
    w = work.analytic(SMOL, 4, 8)
    rows = {r["phase"].split(" (")[0] + str(r["tokens"]): r for r in work.phases(w, SMOL, 4, 8)}
    decode, batched = rows["decode1"], rows["prefill, batched256"]
    assert 0.9 < decode["intensity"] < 1.1
    assert batched["intensity"] > 100
    for m in work.MACHINES:
        assert work.roofline(decode, m)["bound"] == "memory"
    cpu = next(m for m in work.MACHINES if m["name"] == "laptop CPU")
    assert work.roofline(batched, cpu)["bound"] == "compute"


def test_parse_counted_needs_every_field():
    line = ("timing model=SMOL load_us=1 prefill_macs=10 prefill_weight_bytes=11 prefill_kv_read=12 "
            "prefill_kv_write=13 decode_macs=20 decode_weight_bytes=21 decode_kv_read=22 decode_kv_write=23")
    c = work.parse_counted(line)
    assert c["prefill_macs"] == 10 and c["decode_kv_write"] == 23
    assert work.parse_counted(line.replace(" decode_kv_write=23", "")) is None
    assert work.parse_counted(None) is None


# ---------------------------------------------------------------- disk models

def test_disk_models_throttle_through_the_drive_option():
    assert disk_models.drive_options("ram") == ""
    assert disk_models.drive_options("hdd") == ",throttling.bps-total=150000000,throttling.iops-total=100"
    cmd = qemu_run.qemu_command(image="x.img", disk="sdcard", snapshot=True)
    drive = cmd[cmd.index("-drive") + 1]
    assert drive.endswith("throttling.bps-total=45000000,throttling.iops-total=1500") and "snapshot=on" in drive
    # slower devices cost more for the same bytes
    t = [disk_models.load_seconds(n, 130 << 20) for n in ("nvme", "ssd", "hdd", "sdcard")]
    assert t == sorted(t) and disk_models.load_seconds("ram", 1) is None


def test_exact_mode_uses_the_kernel_disk_clock_instead_of_the_throttle():
    """In exact mode QEMU's throttle (real time) is replaced by the kernel's
    disk clock, the same table's figures as a boot option; ram has neither."""
    assert disk_models.clock_option("ssd") == "disk.clock=550000000,90000"
    assert disk_models.clock_option("ram") == ""
    cmd = qemu_run.qemu_command(image="x.img", disk="ssd", deterministic=True, smp=1, append="ai.workers=1")
    drive = cmd[cmd.index("-drive") + 1]
    assert "throttling" not in drive
    assert cmd[cmd.index("-append") + 1] == "ai.workers=1 disk.clock=550000000,90000"
    assert "sleep=on" in cmd[cmd.index("-icount") + 1]
    warped = qemu_run.qemu_command(image="x.img", disk="ssd", deterministic=True, smp=1, idle_warps=True)
    assert "sleep=off" in warped[warped.index("-icount") + 1]
    plain = qemu_run.qemu_command(image="x.img", disk="ram", deterministic=True, smp=1)
    assert "-append" not in plain
    p = subprocess.run([PYTHON, "tools/qemu_run.py", "--idle-warps", "-c", "ls"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--idle-warps needs --deterministic" in p.stderr


def test_bad_disk_name_is_rejected_with_the_choices():
    with pytest.raises(disk_models.UnknownDisk, match="'floppy'.*ram, nvme, ssd, hdd, sdcard"):
        qemu_run.qemu_command(disk="floppy")
    with pytest.raises(disk_models.UnknownDisk, match="'tape'"):
        disk_models.parse_disk_list("ram,tape")
    for cmd in ([PYTHON, "tools/qemu_run.py", "--disk", "floppy", "-c", "ls"],
                [PYTHON, "tools/bench.py", "--quick", "--disk", "ram,floppy", "--out", "/nonexistent"],
                [PYTHON, "tools/disk_models.py", "--drive-options", "floppy"]):
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (cmd, p.stderr)
        assert "unknown disk model 'floppy'" in p.stderr and "sdcard" in p.stderr, p.stderr
    p = subprocess.run(["make", "-n", "qemu", "DISK=floppy"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0 and "DISK=floppy: unknown disk model" in p.stderr, p.stderr
    p = subprocess.run(["make", "-n", "qemu", "DISK=hdd"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "throttling.bps-total=150000000" in p.stdout, p.stdout + p.stderr


def test_the_docs_show_the_same_tables_as_the_code():
    with open(os.path.join(ROOT, "docs", "experiments.md")) as f:
        doc = f.read()
    assert disk_models.markdown_table() in doc, "docs/experiments.md: regenerate with tools/disk_models.py --markdown"
    assert work.machines_markdown() in doc, "docs/experiments.md: the machine table differs from benchlib/work.py"
