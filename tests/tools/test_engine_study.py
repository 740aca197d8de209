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


def test_parse_aibench():
    r = engine_study.parse_aibench(AIBENCH)
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
