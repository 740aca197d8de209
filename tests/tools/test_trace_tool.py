"""tools/trace.py reads aitrace's lines out of a console transcript and tells
each request's story right: tokens, TTFT, end-to-end time, finish reason,
phases through a preemption, queue and running counts, Little's law; its
Chrome JSON loads and its slices nest on every track (and the nesting check
does catch overlaps); its PNG is drawn. The transcript below is written by
hand, and so are the expected figures."""
import json
import os
import subprocess

import importlib.util

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "trace.py")
PYTHON = "/usr/bin/python3"
# Loaded by path: Python's standard library has a module named trace too.
_spec = importlib.util.spec_from_file_location("kai_trace", TOOL)
kai_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kai_trace)

# Two requests on worker 0. Request 1 (prompt 4, 3 tokens) runs alone, then
# beside request 2; request 2 (prompt 6) finds 4 prompt tokens in the prefix
# cache, is preempted after its first token and recomputed. Noise around the
# lines, a kernel message in the middle, and part of the ring printed twice.
TRANSCRIPT = """\
$ aitrace
aitrace: version=1 ring=64 classes=0x3f next=40
ev 0 500 5007 0 STARTED capacity=64 classes=63
ev 1 600 6007 0 LOAD model=0 phase=2
ev 2 900 9007 0 LOAD model=0 phase=3
ev 3 1000 10007 0 SUBMIT req=1 model=0 prompt=4 predict=3 priority=0 queue=0
ev 4 1100 11007 0 ADMIT req=1 worker=0 policy=0 queue=0 running=1
ev 5 1150 11507 0 KV_TAKE req=1 model=0 blocks=1 used=1
ev 6 1200 12007 0 ITER_BEGIN worker=0 requests=1 tokens=4 budget=8 max_batch=4
ev 7 1200 12007 0 ITEM req=1 worker=0 phase=1 first=0 count=4
ev 8 1300 13007 1 PART_BEGIN worker=0 part=1
ev 9 1900 19007 1 PART_END worker=0 part=1
ev 10 1500 15007 0 SUBMIT req=2 model=0 prompt=6 predict=2 priority=0 queue=1
ev 11 2000 20007 0 TOKEN req=1 worker=0 index=0 token=11
ev 12 2010 20107 0 ITER_END worker=0 requests=1 tokens=4
ev 13 2100 21007 0 ADMIT req=2 worker=0 policy=0 queue=0 running=2
ai: some kernel message in between
ev 14 2100 21007 0 PREFIX_HIT req=2 model=0 blocks=1 tokens=4
ev 15 2100 21007 0 KV_TAKE req=2 model=0 blocks=2 used=2
ev 16 2200 22007 0 ITER_BEGIN worker=0 requests=2 tokens=3 budget=8 max_batch=4
ev 17 2200 22007 0 ITEM req=1 worker=0 phase=2 first=4 count=1
ev 18 2200 22007 0 ITEM req=2 worker=0 phase=1 first=4 count=2
ev 19 3000 30007 0 TOKEN req=1 worker=0 index=1 token=12
ev 20 3000 30007 0 TOKEN req=2 worker=0 index=0 token=21
ev 21 3010 30107 0 ITER_END worker=0 requests=2 tokens=3
ev 22 3100 31007 0 PREEMPT req=2 worker=0 cause=1 lost=7
ev 23 3100 31007 0 KV_FREE req=2 model=0 blocks=2 used=1 cached=1
ev 24 3200 32007 0 ITER_BEGIN worker=0 requests=1 tokens=1 budget=8 max_batch=4
ev 25 3200 32007 0 ITEM req=1 worker=0 phase=2 first=5 count=1
ev 26 4000 40007 0 TOKEN req=1 worker=0 index=2 token=13
ev 27 4000 40007 0 KV_FREE req=1 model=0 blocks=1 used=0 cached=0
ev 28 4001 40017 0 FINISH req=1 reason=1 generated=3 error=0 worker=0
ev 29 4010 40107 0 ITER_END worker=0 requests=1 tokens=1
ev 30 4100 41007 0 ADMIT req=2 worker=0 policy=0 queue=0 running=1
ev 31 4100 41007 0 KV_TAKE req=2 model=0 blocks=1 used=1
ev 32 4200 42007 0 ITER_BEGIN worker=0 requests=1 tokens=7 budget=8 max_batch=4
ev 33 4200 42007 0 ITEM req=2 worker=0 phase=1 first=0 count=7
ev 34 5000 50007 0 TOKEN req=2 worker=0 index=1 token=22
ev 35 5000 50007 0 KV_FREE req=2 model=0 blocks=1 used=0 cached=0
ev 36 5001 50017 0 FINISH req=2 reason=1 generated=2 error=0 worker=0
ev 37 5010 50107 0 ITER_END worker=0 requests=1 tokens=7
aitrace: end events=38 dropped=0
$ aitrace --from 34
aitrace: version=1 ring=64 classes=0x3f next=38
ev 34 5000 50007 0 TOKEN req=2 worker=0 index=1 token=22
ev 35 5000 50007 0 KV_FREE req=2 model=0 blocks=1 used=0 cached=0
ev 36 5001 50017 0 FINISH req=2 reason=1 generated=2 error=0 worker=0
ev 37 5010 50107 0 ITER_END worker=0 requests=1 tokens=7
aitrace: end events=4 dropped=0
$ """


@pytest.fixture
def tr():
    return kai_trace.Trace(kai_trace.parse(TRANSCRIPT))


def test_parse_keeps_each_event_once_and_skips_other_lines():
    events = kai_trace.parse(TRANSCRIPT)
    assert [e.seq for e in events] == list(range(38))
    e = events[33]
    assert (e.name, e.req, e.t, e.instret, e.hart) == ("ITEM", 2, 4200, 42007, 0)
    assert e.args == {"worker": 0, "phase": 1, "first": 0, "count": 7}
    assert events[8].hart == 1


def test_requests_as_the_results_would_say(tr):
    r1, r2 = tr.requests[1], tr.requests[2]
    assert [tok for _, tok in r1.tokens] == [11, 12, 13]
    assert [tok for _, tok in r2.tokens] == [21, 22]
    assert (r1.ttft_ns, r1.e2e_ns, r1.reason_name) == (1000, 3001, "length")
    assert (r2.ttft_ns, r2.e2e_ns, r2.reason_name) == (1500, 3501, "length")
    assert (r2.prefix_tokens, r2.preempts, r2.admits) == (4, [3100], [2100, 4100])
    assert (r1.iterations, r2.iterations) == (3, 2)
    assert r2.first_iteration == (0, 2200)


def test_phases_through_a_preemption(tr):
    assert tr.requests[1].phases() == [("queued", 1000, 1100), ("prefill", 1100, 2000), ("decode", 2000, 4001)]
    assert tr.requests[2].phases() == [("queued", 1500, 2100), ("prefill", 2100, 3000), ("decode", 3000, 3100),
                                       ("queued", 3100, 4100), ("prefill", 4100, 5000), ("decode", 5000, 5001)]


def test_iterations_and_parts(tr):
    assert [(it["t0"], it["t1"], it["tokens"]) for it in tr.iterations] == [
        (1200, 2010, 4), (2200, 3010, 3), (3200, 4010, 1), (4200, 5010, 7)]
    assert [sum(i["count"] for i in it["items"]) for it in tr.iterations] == [4, 3, 1, 7]
    assert [it["instructions"] for it in tr.iterations] == [8100, 8100, 8100, 8100]
    assert tr.parts == [(0, 1, 1, 1300, 1900)]


def test_counters_and_littles_law(tr):
    assert tr.counters() == [(1000, 1, 0), (1100, 0, 1), (1500, 1, 1), (2100, 0, 2), (3100, 1, 1),
                             (4001, 1, 0), (4100, 0, 1), (5001, 0, 0)]
    L, lam, W = tr.littles_law()
    # In the system: 1 request over [1000, 1500), 2 over [1500, 4001), 1 over [4001, 5001).
    assert L == pytest.approx((500 + 2 * 2501 + 1000) / 4001)
    assert lam == pytest.approx(2 / 4001)
    assert W == pytest.approx((3001 + 3501) / 2)
    assert L == pytest.approx(lam * W)
    assert [u for _, u in tr.kv_used] == [1, 2, 1, 0, 1, 0]


def test_chrome_json_loads_and_nests(tr, tmp_path):
    out = tmp_path / "t.json"
    kai_trace.write_json(tr, str(out))
    events = json.loads(out.read_text())["traceEvents"]
    assert kai_trace.check_nesting(events) == []
    names = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert {"worker 0", "request 1", "request 2", "worker 0 rows part 1", "model loader"} <= names
    slices = [e for e in events if e.get("ph") == "X"]
    assert sum(1 for e in slices if e["name"].startswith("iteration")) == 4
    # Request 2's track: the whole request, and its six phases inside it.
    r2 = [e for e in slices if e["tid"] == kai_trace.REQUEST_TID + 2]
    assert [e["name"] for e in r2] == ["request 2", "queued", "prefill", "decode", "queued", "prefill", "decode"]
    assert r2[0]["ts"] == 1.5 and r2[0]["dur"] == pytest.approx(3.501)
    flows = sorted((e["ph"], e["id"], e["tid"], e["ts"]) for e in events if e.get("cat") == "flow")
    assert flows == [("f", 1, kai_trace.WORKER_TID, 1.2), ("f", 2, kai_trace.WORKER_TID, 2.2),
                     ("s", 1, kai_trace.REQUEST_TID + 1, 1.0), ("s", 2, kai_trace.REQUEST_TID + 2, 1.5)]
    counters = {e["name"] for e in events if e.get("ph") == "C"}
    assert counters == {"requests", "KV blocks in use"}
    marks = [(e["name"], e["ts"]) for e in events if e.get("ph") == "i" and e["tid"] == kai_trace.REQUEST_TID + 2]
    assert ("preempted", 3.1) in marks and ("prefix hit", 2.1) in marks


def test_nesting_check_finds_overlaps():
    ok = [{"ph": "X", "pid": 1, "tid": 1, "name": "a", "ts": 0, "dur": 10},
          {"ph": "X", "pid": 1, "tid": 1, "name": "b", "ts": 2, "dur": 3},
          {"ph": "X", "pid": 1, "tid": 2, "name": "c", "ts": 5, "dur": 10}]
    assert kai_trace.check_nesting(ok) == []
    bad = ok + [{"ph": "X", "pid": 1, "tid": 1, "name": "d", "ts": 8, "dur": 5}]
    problems = kai_trace.check_nesting(bad)
    assert len(problems) == 1 and "d" in problems[0] and "overlaps a" in problems[0]


def test_png_is_drawn(tr, tmp_path):
    out = tmp_path / "t.png"
    kai_trace.write_png(tr, str(out), title="two requests")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000


def test_command_line(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(TRANSCRIPT)
    j, p = tmp_path / "o.json", tmp_path / "o.png"
    run = subprocess.run([PYTHON, TOOL, str(log), "--json", str(j), "--png", str(p), "--summary"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[1:] == ["1 4 3 1 3 length 3 0 0", "2 6 2 1 3 length 2 1 4"]
    assert j.exists() and p.exists()
    empty = tmp_path / "empty.txt"
    empty.write_text("$ ls\nREADME\n")
    run = subprocess.run([PYTHON, TOOL, str(empty)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "no trace events" in run.stderr
    run = subprocess.run([PYTHON, TOOL, str(tmp_path / "missing.txt")], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "cannot read" in run.stderr


# Row-team parts of one worker, 4 parts per job, written by hand (times in
# ms, the trace's ns times are 1e6 times these). The ring begins in the middle
# of a job (its parts 2 and 3); then comes a job, 5-8, whose part 0 a helper
# recorded after the worker's part 1, so no job can be known to start there
# (counting from its part 0 would leave part 1 to the next job, and so on);
# then:
#   job A, 10-20: the worker (hart 0) runs part 0, the helper (hart 1) joins
#     1 ms later; the harts end 2 ms apart (hart 0 at 18, hart 1 at 20);
#   job B, 25-33: the helper claims part 0 but records its beginning after
#     the worker's part 1; both start at once and end 1 ms apart;
#   job C, 40-48: on hart 0 alone (the helper slept);
#   job D: cut short by the end of the trace (parts 0 and 1 only).
HANDOFF_PARTS = [
    (2, 0, 1, 3), (3, 1, 1.5, 4),
    (1, 0, 5, 6.5), (0, 1, 5, 7), (2, 0, 6.5, 7.5), (3, 1, 7, 8),
    (0, 0, 10, 14), (1, 1, 11, 15), (2, 0, 14, 18), (3, 1, 15, 20),
    (1, 0, 25, 28), (0, 1, 25, 29), (2, 0, 28, 32), (3, 1, 29, 33),
    (0, 0, 40, 42), (1, 0, 42, 44), (2, 0, 44, 46), (3, 0, 46, 48),
    (0, 0, 50, 51), (1, 1, 50.5, 51),
]


def handoff_trace():
    events = []
    for part, hart, t0, t1 in HANDOFF_PARTS:
        events += [(int(t0 * 1e6), hart, "PART_BEGIN", part), (int(t1 * 1e6), hart, "PART_END", part)]
    # In the order of their times; ties as listed (job B's part 1 begins in
    # the same ns as its part 0 and is recorded first).
    lines = [f"ev {seq} {t} {t * 10} {hart} {name} worker=0 part={part}"
             for seq, (t, hart, name, part) in enumerate(sorted(events, key=lambda e: e[0]))]
    return kai_trace.Trace(kai_trace.parse("\n".join(lines)))


def test_row_jobs_group_the_parts_of_each_job():
    jobs = kai_trace.row_jobs(handoff_trace())
    assert list(jobs) == [0]
    # The partial job and the one at 5-8 at the start, and the cut one at the
    # end, are left out.
    assert [[p[1] for p in j] for j in jobs[0]] == [[0, 1, 2, 3], [1, 0, 2, 3], [0, 1, 2, 3]]
    assert [(min(p[3] for p in j) // 10**6, max(p[4] for p in j) // 10**6) for j in jobs[0]] == [
        (10, 20), (25, 33), (40, 48)]


def test_handoff_summary():
    # Jobs 10+8+8 = 26 ms of 38; gaps 5 and 7 ms; the second hart 1 and 0 ms
    # late (jobs A and B); the harts end 2 and 1 ms apart. (A median of two
    # is their mean; the 90th percentile is nearest-rank: benchlib.latency.)
    assert kai_trace.handoff_lines(handoff_trace()) == [
        "worker 0: 3 row-team jobs over 38.0 ms, up to 4 parts each",
        "  inside jobs 26.0 ms (68%), between jobs 12.0 ms (32%: the worker alone)",
        "  between two jobs: median 6000.0 us, p90 7000.0 us",
        "  jobs run on one hart only: 1 (8.0 ms)",
        "  second hart joins a job after: median 500.0 us, p90 1000.0 us",
        "  harts finish a job apart by: median 1500.0 us, mean 1500.0 us",
    ]


def test_handoffs_on_the_command_line(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(TRANSCRIPT)
    run = subprocess.run([PYTHON, TOOL, str(log), "--handoffs"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    # One part, no whole job: nothing to say about hand-offs, and no summary.
    assert run.stdout.splitlines() == ["no row-team parts in the trace (aitrace start parts)"]


# A team of 3 at -smp 4 (worker 0), windows written by hand: three
# references at 3 (900, 1000, 1100 ps per multiply-add), a probe of 2 that
# wins (700), a recheck (1000), a probe that wins (650), a recheck (950), the
# third win (680): adopted; a reference at 2 (690), a probe of 3 that loses
# (1000), and a prompt chunk at 1, not judged (400).
WIDTH_WINDOWS = [
    (3, 900, 900, 1), (3, 1000, 950, 1), (3, 1100, 1000, 1), (2, 700, 1000, 2), (3, 1000, 1000, 1),
    (2, 650, 1000, 2), (3, 950, 1000, 1), (2, 680, 680, 3), (2, 690, 685, 1), (3, 1000, 685, 4),
    (1, 400, 685, 5),
]


def width_trace_text():
    return "\n".join(f"ev {k} {(k + 1) * 200_000_000} {k * 1000} 0 WIDTH worker=0 width={w} ps_per_mac={ps} "
                     f"reference_ps={ref} verdict={v}" for k, (w, ps, ref, v) in enumerate(WIDTH_WINDOWS))


def test_width_lines_tell_each_window_and_where_the_team_settled():
    tr = kai_trace.Trace(kai_trace.parse(width_trace_text()))
    lines = kai_trace.width_lines(tr)
    assert lines[0] == "worker 0: 11 measuring windows"
    assert lines[2] == "  0.0 3 900 900 reference"
    assert lines[5] == "  600.0 2 700 1000 won"
    assert lines[9] == "  1400.0 2 680 680 adopted"
    assert lines[11] == "  1800.0 3 1000 685 lost"
    assert lines[12] == "  2000.0 1 400 685 unjudged"
    # Width 1: one window; 2: four (all but one probes), median of 650, 680,
    # 690, 700 = 685; 3: six, one a probe, median of 900, 950, 1000, 1000,
    # 1000, 1100 = 1000.
    assert lines[13:] == [
        "  width 1: 1 windows (1 probes), median 400 ps per multiply-add",
        "  width 2: 4 windows (3 probes), median 685 ps per multiply-add",
        "  width 3: 6 windows (1 probes), median 1000 ps per multiply-add",
        "  verdicts: reference 6, won 2, adopted 1, lost 1, unjudged 1",
        "  settled at the end: 2",
    ]


# The same team's boot-time survey, written by hand (verdict 6: a survey
# window, ps per step of the stand-in job; 7: the choice), 10 ms apart,
# then two windows of requests at the chosen width 2.
SURVEY_WINDOWS = [
    (1, 2900, 0, 6), (2, 1480, 0, 6), (3, 3050, 0, 6), (3, 1750, 0, 6), (2, 1460, 0, 6), (1, 2870, 0, 6),
    (1, 2850, 0, 6), (2, 1500, 0, 6), (3, 1530, 0, 6), (2, 1480, 0, 7), (2, 700, 700, 1), (2, 720, 710, 1),
]


def test_width_lines_show_the_survey_apart_from_the_windows():
    text = "\n".join(f"ev {k} {(k + 1) * 10_000_000} {k * 1000} 0 WIDTH worker=0 width={w} ps_per_mac={ps} "
                     f"reference_ps={ref} verdict={v}" for k, (w, ps, ref, v) in enumerate(SURVEY_WINDOWS))
    lines = kai_trace.width_lines(kai_trace.Trace(kai_trace.parse(text)))
    # Medians: width 1 of 2900, 2870, 2850 = 2870; 2 of 1480, 1460, 1500 =
    # 1480; 3 of 3050, 1750, 1530 = 1750. The choice came 90 ms after the first.
    assert lines == [
        "worker 0: survey, ps per step of the stand-in job at each width",
        "  width 1: 2900 2870 2850 (median 2870)",
        "  width 2: 1480 1460 1500 (median 1480)",
        "  width 3: 3050 1750 1530 (median 1750)",
        "  chose width 2 after 90.0 ms",
        "worker 0: 2 measuring windows",
        "  t_ms width ps_per_mac reference_ps verdict",
        "  0.0 2 700 700 reference",
        "  10.0 2 720 710 reference",
        "  width 2: 2 windows (0 probes), median 710 ps per multiply-add",
        "  verdicts: reference 2",
        "  settled at the end: 2",
    ]


def test_widths_on_the_command_line(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(width_trace_text())
    run = subprocess.run([PYTHON, TOOL, str(log), "--widths"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "  settled at the end: 2"
    log.write_text(TRANSCRIPT)
    run = subprocess.run([PYTHON, TOOL, str(log), "--widths"], capture_output=True, text=True, timeout=60)
    assert run.stdout.splitlines() == [
        "no WIDTH events in the trace (a row team of 2 or more harts, class iterations)"]
