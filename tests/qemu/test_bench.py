"""The benchmark study, small: `tools/bench.py --quick` on the tiny synthetic
Llama (1 and 2 workers on 2 harts, 1 and 2 clients, 2 requests each, 2 cold
runs) into a temporary directory. Checks structure and consistency, not
speed: every file is there, one CSV row per request and every request done,
kernel timestamps in order, the JSON agrees with the CSV, the PNGs are PNGs,
Little's law holds, cold and warm tokens are identical.

Also aibench's robustness in one boot: clients that die mid-run (--die-after,
and one killed with `kill` from the shell while the run goes on in the
background) and the open loop (--rate)."""
import csv
import json
import os
import re
import struct
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench  # noqa: E402
import qemu_run  # noqa: E402

PYTHON = "/usr/bin/python3"
TINY = os.path.join(ROOT, "build", "models", "tiny-llama")
# Six requests per client: each point then lasts long enough (about a
# second) for the 10 ms sampler to measure the mean number in the service.
WORKERS, CLIENTS, REQUESTS, PREDICT, COLD_RUNS = (1, 2), (1, 2), 6, 64, 2
PLOTS = ["latency_vs_clients.png", "throughput_vs_clients.png", "queue_wait_cdf.png", "in_system.png",
         "cold_vs_warm.png"]


def need_built():
    if not os.path.exists(bench.KERNEL):
        pytest.skip("kernel not built: run `make`")
    if not os.path.exists(os.path.join(TINY, "CFG.BIN")):
        pytest.skip("build/models/tiny-llama missing: run `make test-models`")
    for prog in ("llmrun", "aibench", "coldwarm"):
        if not os.path.exists(os.path.join(bench.BIN, prog)):
            pytest.skip(f"/bin/{prog} not built (build/user/bin/{prog}): run `make user`")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    need_built()
    out = str(tmp_path_factory.mktemp("bench"))
    cmd = [PYTHON, os.path.join(ROOT, "tools", "bench.py"), "--quick", "--out", out, "--smp", "2",
           "--workers", ",".join(map(str, WORKERS)), "--clients", ",".join(map(str, CLIENTS)),
           "--requests", str(REQUESTS), "--predict", str(PREDICT), "--cold-runs", str(COLD_RUNS)]
    for attempt in (1, 2):
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        # On a busy host QEMU can deliver the guest's timer ticks hundreds of
        # ms late; the 10 ms sampler then misses whole requests of the tiny
        # model. That is a measurement gap (the report shows it), not a
        # service bug: try once more, and fail if it happens again.
        gaps = [p["little"].get("largest_gap_ms") or 0 for pts in summary["sweep"].values() for p in pts]
        if summary["littles_law"]["ok"] or max(gaps) < 100 or attempt == 2:
            break
        print(f"test_bench: sampling gaps up to {max(gaps)} ms spoilt the Little's law check; running again",
              file=sys.stderr)
    with open(os.path.join(out, "requests.csv")) as f:
        rows = list(csv.DictReader(f))
    return {"out": out, "proc": proc, "summary": summary, "rows": rows}


def test_study_succeeds_and_writes_every_file(study):
    proc, out = study["proc"], study["out"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\[bench \d\d:\d\d\] point 4/4", proc.stderr), "no progress lines"
    for name in ["requests.csv", "samples.csv", "coldwarm.csv", "summary.json", "report.md",
                 "console-w1.log", "console-w2.log"] + PLOTS:
        path = os.path.join(out, name)
        assert os.path.exists(path) and os.path.getsize(path) > 0, name
    assert not os.path.exists(os.path.join(out, "bench.img")), "the image is temporary"
    assert study["summary"]["problems"] == []
    report = open(os.path.join(out, "report.md")).read()
    assert "tools/bench.py --quick" in report and "## Cold versus warm start" in report
    assert "## Clients sweep" in report and "Little's law" in report
    for p in PLOTS:
        assert f"]({p})" in report


def test_one_row_per_request_all_done_timestamps_ordered(study):
    rows = study["rows"]
    for w in WORKERS:
        for c in CLIENTS:
            point = [r for r in rows if int(r["workers"]) == w and int(r["clients"]) == c]
            assert len(point) == c * REQUESTS, (w, c)
            assert sorted((int(r["client"]), int(r["index"])) for r in point) == \
                [(i, j) for i in range(c) for j in range(REQUESTS)]
    for r in rows:
        assert r["state"] == "done" and r["error"] == "0", r
        assert int(r["generated"]) == PREDICT and int(r["prompt"]) == 8
        s, st, f, e = (int(r[k]) for k in ("t_submit_ns", "t_start_ns", "t_first_ns", "t_finish_ns"))
        assert 0 < s <= st <= f <= e, r
        assert int(r["worker"]) < int(r["workers"])
        assert int(r["e2e_us"]) == (e - s) // 1000 and int(r["queue_us"]) == (st - s) // 1000
    # With one worker, requests run one at a time: their run intervals never overlap.
    one = sorted((int(r["t_start_ns"]), int(r["t_finish_ns"])) for r in rows
                 if int(r["workers"]) == 1 and int(r["clients"]) == 2)
    assert all(a[1] <= b[0] for a, b in zip(one, one[1:]))


def test_json_matches_csv(study):
    summary, rows = study["summary"], study["rows"]
    assert summary["config"]["workers"] == list(WORKERS) and summary["config"]["clients"] == list(CLIENTS)
    assert sorted(summary["sweep"]) == sorted(str(w) for w in WORKERS)
    for w, points in summary["sweep"].items():
        assert [p["clients"] for p in points] == list(CLIENTS)
        for p in points:
            mine = [r for r in rows if r["workers"] == w and int(r["clients"]) == p["clients"]]
            again = bench.point_stats(mine)
            assert again["done"] == p["stats"]["done"] == p["stats"]["requests"] == p["clients"] * REQUESTS
            assert again["throughput_rps"] == pytest.approx(p["stats"]["throughput_rps"])
            for k in ("e2e_us", "queue_us", "ttft_us", "tpot_us"):
                assert again[k] == pytest.approx(p["stats"][k]), k
            # aibench's own figures (printed in the guest) agree with the rows.
            e2e = [int(r["t_finish_ns"]) - int(r["t_submit_ns"]) for r in mine]
            assert p["little"]["mean_latency_s"] == pytest.approx(sum(e2e) / len(e2e) / 1e9, rel=1e-3, abs=1e-4)
            assert p["little"]["throughput_rps"] == pytest.approx(again["throughput_rps"], rel=1e-3)
    with open(os.path.join(study["out"], "coldwarm.csv")) as f:
        cw = list(csv.DictReader(f))
    assert [int(r["run"]) for r in cw] == [k for k in range(COLD_RUNS) for _ in (0, 1)]
    assert summary["cold_warm"]["runs"] == [{k: (v if k == "path" else int(v)) for k, v in r.items()} for r in cw]


def test_pngs_are_valid(study):
    for name in PLOTS:
        with open(os.path.join(study["out"], name), "rb") as f:
            data = f.read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        assert data[12:16] == b"IHDR" and data[-8:-4] == b"IEND", name
        width, height = struct.unpack(">II", data[16:24])
        assert 200 <= width <= 2000 and 200 <= height <= 2000, (name, width, height)


def test_littles_law_holds(study):
    ll = study["summary"]["littles_law"]
    assert ll["ok"] and ll["worst_pct"] <= bench.LITTLE_TOLERANCE_PCT
    for points in study["summary"]["sweep"].values():
        for p in points:
            li = p["little"]
            assert li["samples"] > 0 and li["L_measured"] > 0
            assert li["error_pct"] <= bench.LITTLE_TOLERANCE_PCT, li


def test_cold_and_warm_tokens_identical(study):
    cw = study["summary"]["cold_warm"]
    assert cw["tokens_identical"] is True
    assert len(cw["runs"]) == 2 * COLD_RUNS
    for r in cw["runs"]:
        assert r["ttft_us"] >= r["prefill_us"] > 0 and r["e2e_us"] >= r["ttft_us"], r
        assert (r["load_us"] > 0) == (r["path"] == "cold"), r
    assert cw["boot_load_ms"] is not None


# ---------------------------------------------------------------- aibench robustness

@pytest.fixture(scope="module")
def session(tmp_path_factory):
    need_built()
    img = bench.build_image(TINY, "TINY", str(tmp_path_factory.mktemp("img")))
    with qemu_run.Session(img, bench.KERNEL, smp=2, memory="1G", snapshot=True, boot_timeout=120,
                          append="ai.workers=1") as s:
        assert s.booted, s.transcript
        # Commands only after the model's load line (it could interleave with their output).
        assert s.wait_log(r"ai: model TINY ready", timeout=120), s.transcript
        yield s


def output(s, command, timeout=120):
    start = s.mark()
    assert s.command(command, timeout=timeout), s.transcript[start:]
    text = s.transcript[start:].replace("\r", "")
    assert not any(m in text for m in qemu_run.PANIC_MARKERS), text
    return text


def in_flight(s):
    m = re.search(r"in_flight=(\d+)", output(s, "aistat"))
    return int(m.group(1))


def test_aibench_clients_dying_mid_run(session):
    # Clients 0 and 1 of 3 submit their second request and exit without waiting.
    text = output(session, "aibench --model TINY --clients 3 --requests 3 --predict 16 --int8 --csv "
                           "--die-after 1 --die-clients 2")
    rows, _, summary = bench.parse_aibench(text)
    assert summary["clients_died"] == 2 and summary["never_reported"] == 4, text
    assert sorted((int(r["client"]), int(r["index"])) for r in rows) == [(0, 0), (1, 0), (2, 0), (2, 1), (2, 2)]
    assert all(r["state"] == "done" for r in rows)
    assert in_flight(session) == 0
    # Every client dies at once, before any result: the run still ends.
    text = output(session, "aibench --model TINY --clients 4 --requests 2 --predict 16 --int8 --die-after 0 "
                           "--die-clients 4")
    assert "requests: 0 done, 0 failed or cancelled, 8 never reported, 4 clients died" in text, text
    assert in_flight(session) == 0


def test_aibench_client_killed_from_the_shell(session):
    start = session.mark()
    session.command("aibench --model TINY --clients 3 --requests 8 --predict 64 --int8 --csv &", wait=False)
    pid_line = re.compile(r"aibench: client pids (\d+) (\d+) (\d+)\r?\n")
    assert session.console.wait_for(lambda t: pid_line.search(t[start:]), 60), session.transcript[start:]
    pids = pid_line.search(session.transcript[start:]).groups()
    output(session, f"kill {pids[1]}")
    assert session.wait_text("little:", start, timeout=120) or \
        session.wait_text("never reported", start, timeout=1), session.transcript[start:]
    text = session.transcript[start:].replace("\r", "")
    m = re.search(r"requests: (\d+) done, (\d+) failed or cancelled, (\d+) never reported, (\d+) clients died",
                  text)
    assert m, text
    done, failed, lost, died = map(int, m.groups())
    assert died == 1 and done + failed + lost == 24 and lost >= 1 and done >= 16, text
    rows, _, _ = bench.parse_aibench(text)
    assert all(r["state"] == "done" for r in rows if r["client"] != "1")
    assert len([r for r in rows if r["client"] == "1"]) < 8
    assert in_flight(session) == 0


def test_aibench_open_loop(session):
    text = output(session, "aibench --model TINY --clients 2 --requests 5 --predict 16 --int8 --csv --rate 10")
    assert "open loop at 10.00 req/s" in text
    rows, _, summary = bench.parse_aibench(text)
    assert len(rows) == 10 and all(r["state"] == "done" for r in rows), text
    assert summary["clients_died"] == 0
    submits = sorted(int(r["t_submit_ns"]) for r in rows)
    # Arrivals are spread over time (about 1 s at 10/s), not sent at once.
    assert (submits[-1] - submits[0]) / 1e9 > 0.2, submits
    # Open loop: a client submits its next request whether or not the last one finished.
    for c in ("0", "1"):
        mine = sorted((int(r["index"]), int(r["t_submit_ns"])) for r in rows if r["client"] == c)
        assert [i for i, _ in mine] == list(range(5))
