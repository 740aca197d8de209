"""tools/engine_study.py reads the guest programs' summaries right and
writes a report that names its clock; the numbers here are canned program
output, not produced by the code under test."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import engine_study  # noqa: E402

AIBENCH = """aibench: model SMOL, 8 clients x 1 requests, prompt 8, predict 8, closed loop, int8 activations
requests: 8 done, 0 failed or cancelled, 0 never reported, 0 clients died; wall 24.816 s
throughput: 0.322 req/s, 2.58 tokens/s
end-to-end   mean    22000  p50    23213  p95    24815  max    24815 us
queue wait   mean      100  p50       90  p95      200  max      200 us
TTFT         mean     5000  p50     5586  p95     9000  max     9100 us
TPOT         mean     2300  p50     2250  p95     2600  max     2700 us
"""


def test_aibench_summary():
    r = engine_study.aibench_summary(AIBENCH)
    assert r["done"] == 8
    assert r["req_per_s"] == 0.322 and r["tokens_per_s"] == 2.58
    assert r["end_to_end"]["p50_ms"] == 23.213 and r["ttft"]["p95_ms"] == 9.0
    assert r["queue_wait"]["max_ms"] == 0.2 and r["tpot"]["mean_ms"] == 2.3


def test_report_names_clock_and_ratio():
    class A:
        exact = True
        clients = [1, 8]
    res = {"batching": [
        {"max_batch": 1, "clients": 8, "tokens_per_s": 1.72},
        {"max_batch": 8, "clients": 8, "tokens_per_s": 2.58},
    ]}
    text = engine_study.report(A(), res)
    assert "virtual time (QEMU -icount, one hart): 1 instruction = 1 ns" in text
    assert "batching gives 1.50x the throughput" in text
    A.exact = False
    assert "real time" in engine_study.report(A(), res)


# aibench --csv lines (canned): times in ns since boot.
LIGHT_CSV = """csv,client,index,state,error,prompt,generated,queue_depth,worker,t_submit_ns,t_start_ns,t_first_ns,t_finish_ns
csv,0,0,done,0,8,4,7,0,11300000000,47700000000,49900000000,55500000000
"""


def test_aibench_requests():
    rows = engine_study.aibench_requests(AIBENCH + LIGHT_CSV)
    assert rows == [{"client": 0, "index": 0, "state": "done", "prompt": 8, "generated": 4,
                     "t_submit": 11300000000, "t_start": 47700000000, "t_first": 49900000000,
                     "t_finish": 55500000000}]
    assert engine_study.aibench_requests(AIBENCH) == []


def test_spread_report_names_arrivals_and_ratio():
    class A:
        exact = True
        light_after = "1"
    flood = [{"t_submit": 10 * 10**9, "t_start": 10 * 10**9, "t_first": 0, "t_finish": (10 + k) * 10**9}
             for k in (40, 41, 42, 43, 80)]
    light = engine_study.aibench_requests(LIGHT_CSV)
    rows = [{"policy": p, "spread_s": 13.0, "light": {"ttft": {"p50_ms": ms, "max_ms": ms}},
             "flood": {"done": 16, "tokens_per_s": 1.5, "ttft": {"p50_ms": 50000}},
             "light_requests": light, "flood_requests": flood} for p, ms in (("fcfs", 80000), ("fair", 40000))]
    text = "\n".join(engine_study.spread_report(A(), {"flood_spread": rows}))
    assert "13 s apart, the first 1 s after the flood started" in text
    assert "| fair | 40000 | 40000 | 16 | 1.50 | 50000 |" in text
    assert "0.50x that under fcfs" in text
    # Seconds from the flood's first submission (10 s after boot here).
    assert ("fair: light requests submitted at 1.3 s, admitted at 37.7 s; the flood's first four requests "
            "ended at 40.0, 41.0, 42.0, 43.0 s") in text


def test_light_spread_must_be_seconds(capsys):
    import pytest
    with pytest.raises(SystemExit):
        engine_study.main(["--only", "sharing", "--light-spread", "soon", "--out", "/tmp/engine-study-test"])
    assert "--light-spread: 'soon' is not a number of seconds" in capsys.readouterr().err
