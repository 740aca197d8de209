"""tools/benchlib/queueing.py against simulation, and the open-loop sweep's
analysis on requests whose waits are known: the formulas the report draws
(M/D/1, M/M/1, M/G/1 means, the M/D/1 and M/M/1 percentiles) agree with a
single-server queue simulated with seeded Poisson arrivals (the Lindley
recursion); the sweep's 95% interval of a mean wait covers the long-run mean
in 95% of simulated runs at every load, where batch means alone fall far
short near saturation; the verdict rule is the wider of the interval and
15%; and a point's figures (warm-up discarded, theory, replay, interval,
open_loop.csv's columns) come out as defined."""
import csv
import math
import os
import random
import sys
import types

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from benchlib import queueing as Q  # noqa: E402
from benchlib.latency import percentile  # noqa: E402
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
    assert percentile(waits, 95) == pytest.approx(Q.md1_wait_quantile(0.95, rho, 1.0), rel=0.05)


def test_mm1_mean_and_p95_match_simulation():
    waits, _, _ = simulate(0.6, lambda r: r.expovariate(1.0))
    assert sum(waits) / len(waits) == pytest.approx(Q.mm1_mean_wait(0.6, 1.0), rel=0.06)
    assert percentile(waits, 95) == pytest.approx(Q.mm1_wait_quantile(0.95, 0.6, 1.0), rel=0.06)


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


def run_means(rho, sizes, n, skip, runs, seed):
    """Mean waits of requests skip..n-1 of `runs` independent simulated runs
    of a single server from an empty queue (arrivals at rho / E[S]), each run
    as a point of the sweep measures it; and the waits themselves."""
    rng = np.random.default_rng(seed)
    m1, _ = Q.mix_moments(sizes)
    lam = rho / m1
    p_first = sizes[0][0]
    services = np.where(rng.random((runs, n)) < p_first, sizes[0][1], sizes[-1][1])
    gaps = rng.exponential(1 / lam, (runs, n))
    waits = np.zeros((runs, n))
    for i in range(1, n):
        waits[:, i] = np.maximum(0.0, waits[:, i - 1] + services[:, i - 1] - gaps[:, i])
    return waits[:, skip:].mean(axis=1), waits[:, skip:], lam


def coverage(interval, rho, sizes=((1.0, 1.0),), n=200, skip=20, runs=1000, seed=7):
    """Share of simulated runs whose interval contains the long-run mean."""
    means, waits, lam = run_means(rho, sizes, n, skip, runs, seed)
    m1, m2 = Q.mix_moments(sizes)
    truth = Q.mg1_mean_wait(lam, m1, m2)
    hits = 0
    for mean, w in zip(means, waits):
        lo, hi = interval(float(mean), list(w), lam, sizes, n, skip)
        hits += lo <= truth <= hi
    return hits / runs


def batch_means(mean, waits, lam, sizes, n, skip):
    return Q.batch_means_ci(waits)[1:]


def model(mean, waits, lam, sizes, n, skip):
    return Q.model_ci(mean, lam, sizes, n, skip)


@pytest.mark.parametrize("rho", [0.5, 0.7, 0.8, 0.9])
def test_the_sweeps_interval_covers_the_long_run_mean_95_percent_of_the_time(rho):
    """The interval of a point with a formula (model_ci), on 1000 simulated
    runs of 200 requests with 20 discarded (seeds other than the interval's
    own): it contains the long-run M/D/1 mean in 95% of them, at every load.
    0.925..0.975 is more than 3 standard deviations of a 1000-run share."""
    assert 0.925 <= coverage(model, rho) <= 0.975


def test_the_sweeps_interval_covers_with_two_sizes_and_long_runs():
    """M/G/1 with two sizes (the mix), and a point of the sweep's length."""
    assert 0.925 <= coverage(model, 0.8, sizes=((0.8, 0.2), (0.2, 0.8)), n=400, skip=40) <= 0.975
    assert 0.925 <= coverage(model, 0.8, n=1000, skip=100, seed=8) <= 0.975


def test_batch_means_alone_miss_near_saturation():
    """Why the sweep does not use batch means where it has a formula: runs of
    200 requests, 10 batches of 18. At rho 0.5 they cover nearly as promised;
    at 0.8 and 0.9 the batches are shorter than a busy period, the mean of a
    short run is skewed, and the intervals miss the long-run mean far more
    often than 5% of the time."""
    assert coverage(batch_means, 0.5) > 0.8
    assert coverage(batch_means, 0.8) < 0.8
    assert coverage(batch_means, 0.9) < 0.6


def test_the_interval_is_where_ideal_runs_fall_around_theory():
    """theory lies in [mean - e_hi, mean - e_lo] exactly when the mean lies in
    [theory + e_lo, theory + e_hi]; the range is skewed upwards (a short run
    can measure far above the long-run mean, never more than it below), it
    narrows with longer runs, and the same arguments give the same range."""
    lam, sizes = 0.8, ((1.0, 1.0),)
    theory = Q.md1_mean_wait(0.8, 1.0)
    e_lo, e_hi = Q.model_error_range(lam, sizes, 200, 20)
    assert -theory < e_lo < 0 < -e_lo < e_hi
    for mean in (theory + e_lo - 0.01, theory + e_lo + 0.01, theory + e_hi - 0.01, theory + e_hi + 0.01):
        lo, hi = Q.model_ci(mean, lam, sizes, 200, 20)
        assert (lo <= theory <= hi) == (theory + e_lo <= mean <= theory + e_hi)
    long_lo, long_hi = Q.model_error_range(lam, sizes, 2000, 200)
    assert e_lo < long_lo < 0 < long_hi < e_hi
    Q.model_error_range.cache_clear()
    assert Q.model_error_range(lam, sizes, 200, 20) == (e_lo, e_hi)
    assert Q.model_ci(0.0, lam, sizes, 200, 20)[0] == 0.0      # clipped: no wait is negative
    with pytest.raises(ValueError):
        Q.model_error_range(1.0, sizes, 200, 20)


def test_verdict_takes_the_wider_of_the_interval_and_15_percent():
    assert Q.verdict(110, 105, 115, 100) == (True, 15)        # 15% wider than the half-width 5
    assert Q.verdict(114, 99, 129, 100) == (True, 15)         # half-width 15 = 15%
    assert Q.verdict(140, 100, 180, 100) == (True, 40)        # the interval is wider
    assert Q.verdict(120, 118, 122, 100)[0] is False
    assert Q.verdict(5, 4, 6, float("inf")) == (None, None)
    # An asymmetric interval: the side towards theory counts.
    assert Q.verdict(100, 90, 200, 180) == (True, 100)         # 80 above, the interval reaches 100 up
    assert Q.verdict(100, 50, 110, 30) == (False, 50)          # 70 below, the interval reaches 50 down


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
    # The interval of a point with a formula: ideal runs of its own shape
    # (200 requests from an empty queue, 20 discarded, in seconds inside).
    lo, hi = Q.model_ci(p["mean_wait_ms"] / 1e3, 2.5, [(1.0, 0.2)], 200, 20)
    assert p["ci_method"] == "model"
    assert (p["ci95_low_ms"], p["ci95_high_ms"]) == pytest.approx((lo * 1e3, hi * 1e3))
    assert p["agrees"] == (p["ci95_low_ms"] <= 100.0 <= p["ci95_high_ms"]
                           or abs(p["mean_wait_ms"] - 100.0) <= 15.0)
    OL.write_open_loop_csvs(str(tmp_path), [p], [{"config": "max_batch=1", "points": [pt]}])
    with open(tmp_path / "open_loop.csv") as f:
        got = list(csv.DictReader(f))
    assert list(got[0]) == ["config", "rho", "requests", "mean_wait_ms", "ci95_low_ms", "ci95_high_ms", "theory_ms"]
    assert got[0]["config"] == "max_batch=1" and float(got[0]["theory_ms"]) == pytest.approx(100.0)


def test_a_point_offered_at_capacity_has_no_theory():
    """rho = 1 with the rate rounded to 3 digits (4.645/s * 215.28 ms =
    0.99998) is still an unstable queue: no finite theory, no verdict, the
    interval from batch means."""
    rng = random.Random(6)
    t, arrivals = 0.0, []
    for _ in range(100):
        t += rng.expovariate(4.645 / 1000)
        arrivals.append(t)
    rows, _ = rows_for(arrivals, 215.28)
    cfg = {"config": "max_batch=1", "solo": {"short": {"predict": 10, "mean_s": 0.21528}}}
    p = OL.analyse_point(types.SimpleNamespace(warmup=10), cfg,
                         {"rho": 1.0, "seed": 106, "rate_rps": 4.645, "rows": rows, "wall_s": 0, "command": ""})
    assert math.isinf(p["theory_ms"]) and p["agrees"] is None and p["ci_method"] == "batch means"


def test_the_default_engine_has_no_theory_column(tmp_path):
    rows, _ = rows_for([0.0, 50.0, 400.0], 100.0)
    a = types.SimpleNamespace(warmup=0)
    cfg = {"config": "default", "solo": {"short": {"predict": 10, "mean_s": 0.1}}}
    p = OL.analyse_point(a, cfg, {"rho": 1, "seed": 1, "rate_rps": 10.0, "rows": rows, "wall_s": 0,
                                  "command": ""})
    assert p["theory_ms"] is None and p["agrees"] is None and p["ci_method"] == "batch means"
    OL.write_open_loop_csvs(str(tmp_path), [p], [{"config": "default", "points": []}])
    with open(tmp_path / "open_loop.csv") as f:
        assert list(csv.DictReader(f))[0]["theory_ms"] == ""
