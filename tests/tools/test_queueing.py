"""tools/benchlib/queueing.py against simulation, and the open-loop sweep's
analysis on requests whose waits are known: the formulas the report draws
(M/D/1, M/M/1, M/G/1 means, the M/D/1 and M/M/1 percentiles) agree with a
single-server queue simulated with seeded Poisson arrivals (the Lindley
recursion), the batch-means interval covers the true mean, the verdict rule
is the wider of the interval and 15%, and a point's figures (warm-up
discarded, theory, replay, open_loop.csv's columns) come out as defined."""
import csv
import math
import os
import random
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from benchlib import queueing as Q  # noqa: E402
from benchlib import open_loop as OL  # noqa: E402


def simulate(rho, service, n=200_000, seed=1):
    """Waits of n requests with Poisson arrivals at rate rho / E[S]; service()
    draws one service time (it gets the generator)."""
    rng = random.Random(seed)
    services = [service(rng) for _ in range(n)]
    lam = rho / (sum(services) / n)
    t, arrivals = 0.0, []
    for _ in range(n):
        t += rng.expovariate(lam)
        arrivals.append(t)
    waits = Q.lindley(arrivals, services)
    return waits[n // 10:], lam, services


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_md1_mean_and_p95_match_simulation(rho):
    waits, _, _ = simulate(rho, lambda r: 1.0)
    mean = sum(waits) / len(waits)
    assert mean == pytest.approx(Q.md1_mean_wait(rho, 1.0), rel=0.05)
    assert Q.percentile(waits, 95) == pytest.approx(Q.md1_wait_quantile(0.95, rho, 1.0), rel=0.05)


def test_mm1_mean_and_p95_match_simulation():
    waits, _, _ = simulate(0.6, lambda r: r.expovariate(1.0))
    assert sum(waits) / len(waits) == pytest.approx(Q.mm1_mean_wait(0.6, 1.0), rel=0.06)
    assert Q.percentile(waits, 95) == pytest.approx(Q.mm1_wait_quantile(0.95, 0.6, 1.0), rel=0.06)


def test_mg1_with_two_sizes_matches_simulation():
    sizes = [(0.8, 0.2), (0.2, 0.8)]   # (share, S)
    waits, lam, _ = simulate(0.7, lambda r: 0.2 if r.random() < 0.8 else 0.8, seed=3)
    m1, m2 = Q.mix_moments(sizes)
    assert m1 == pytest.approx(0.32) and m2 == pytest.approx(0.8 * 0.04 + 0.2 * 0.64)
    assert sum(waits) / len(waits) == pytest.approx(Q.mg1_mean_wait(lam, m1, m2), rel=0.06)
    # The variance of the service time costs: more than M/D/1 with the same mean.
    assert Q.mg1_mean_wait(lam, m1, m2) > 1.3 * Q.md1_mean_wait(lam * m1, m1)


def test_formulas_at_the_edges():
    assert Q.md1_mean_wait(0.5, 2.0) == pytest.approx(1.0)      # 0.5 * 2 / (2 * 0.5)
    assert Q.mm1_mean_wait(0.5, 2.0) == pytest.approx(2.0)
    assert math.isinf(Q.md1_mean_wait(1.0, 1.0)) and math.isinf(Q.mm1_mean_wait(1.1, 1.0))
    assert Q.md1_wait_quantile(0.5, 0.3, 1.0) == 0.0            # 70% of requests never wait
    assert Q.md1_wait_cdf(0.0, 0.3, 1.0) == pytest.approx(0.7)
    assert Q.t975(9) == pytest.approx(2.262) and Q.t975(1000) == pytest.approx(1.96, abs=0.01)


def test_batch_means_interval_covers_the_mean_of_correlated_waits():
    """95% intervals over independent M/D/1 runs at rho 0.5: most cover the
    true mean (batch means account for the correlation between waits)."""
    theory, covered = Q.md1_mean_wait(0.5, 1.0), 0
    for seed in range(40):
        waits, _, _ = simulate(0.5, lambda r: 1.0, n=4000, seed=100 + seed)
        _, lo, hi = Q.batch_means_ci(waits)
        covered += lo <= theory <= hi
    assert covered >= 32, f"{covered} of 40 intervals cover the mean"


def test_verdict_takes_the_wider_of_the_interval_and_15_percent():
    assert Q.verdict(110, 105, 115, 100) == (True, 15)        # 15% wider than the half-width 5
    assert Q.verdict(114, 99, 129, 100) == (True, 15)         # half-width 15 = 15%
    assert Q.verdict(140, 100, 180, 100) == (True, 40)        # the interval is wider
    assert Q.verdict(120, 118, 122, 100)[0] is False
    assert Q.verdict(5, 4, 6, float("inf")) == (None, None)


def rows_for(arrivals_ms, service_ms):
    """aibench CSV rows of a single FIFO server with the given arrivals."""
    waits = Q.lindley(arrivals_ms, [service_ms] * len(arrivals_ms))
    out = []
    for i, (a, w) in enumerate(zip(arrivals_ms, waits)):
        start = a + w
        out.append({"client": "0", "index": str(i), "state": "done", "error": "0", "prompt": "4",
                    "generated": "10", "queue_depth": "0", "worker": "0",
                    "t_submit_ns": str(int(a * 1e6)), "t_start_ns": str(int(start * 1e6)),
                    "t_first_ns": str(int(start * 1e6) + 1), "t_finish_ns": str(int((start + service_ms) * 1e6))})
    return out, waits


def test_a_point_is_analysed_as_defined(tmp_path):
    rng = random.Random(5)
    t, arrivals = 0.0, []
    for _ in range(200):
        t += rng.expovariate(0.5 / 200.0)     # rho 0.5 with S = 200 ms
        arrivals.append(t)
    rows, waits = rows_for(arrivals, 200.0)
    a = types.SimpleNamespace(warmup=10)
    cfg = {"config": "max_batch=1", "solo": {"short": {"predict": 10, "mean_s": 0.2}}}
    pt = {"rho": 0.5, "seed": 100, "rate_rps": 2.5, "rows": rows, "wall_s": 1.0, "command": "aibench ..."}
    p = OL.analyse_point(a, cfg, pt)
    kept = waits[20:]
    assert p["requests"] == 180 and p["submitted"] == 200
    assert p["mean_wait_ms"] == pytest.approx(sum(kept) / len(kept), abs=0.01)
    assert p["theory_ms"] == pytest.approx(100.0)                   # 0.5 * 200 / (2 * 0.5)
    assert p["mm1_ms"] == pytest.approx(200.0)
    assert p["replay_ms"] == pytest.approx(p["mean_wait_ms"], abs=0.01)   # the same queue, replayed
    assert p["ci95_low_ms"] <= p["mean_wait_ms"] <= p["ci95_high_ms"]
    assert p["agrees"] in (True, False)
    OL.write_csvs(str(tmp_path), [p], [{"config": "max_batch=1", "points": [pt]}])
    with open(tmp_path / "open_loop.csv") as f:
        got = list(csv.DictReader(f))
    assert list(got[0]) == ["config", "rho", "requests", "mean_wait_ms", "ci95_low_ms", "ci95_high_ms", "theory_ms"]
    assert got[0]["config"] == "max_batch=1" and float(got[0]["theory_ms"]) == pytest.approx(100.0)


def test_the_default_engine_has_no_theory_column(tmp_path):
    rows, _ = rows_for([0.0, 50.0, 400.0], 100.0)
    a = types.SimpleNamespace(warmup=0)
    cfg = {"config": "default", "solo": {"short": {"predict": 10, "mean_s": 0.1}}}
    p = OL.analyse_point(a, cfg, {"rho": 1, "seed": 1, "rate_rps": 10.0, "rows": rows, "wall_s": 0,
                                  "command": ""})
    assert p["theory_ms"] is None and p["agrees"] is None
    OL.write_csvs(str(tmp_path), [p], [{"config": "default", "points": []}])
    with open(tmp_path / "open_loop.csv") as f:
        assert list(csv.DictReader(f))[0]["theory_ms"] == ""
