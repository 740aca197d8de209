"""Queueing theory for the open-loop sweep, and the statistics that compare
a measurement with it. Pure functions of numbers; open_loop.py runs the
boots, tests/tools/test_queueing.py checks these against simulation.

A single server (one AI worker running one request at a time) fed by Poisson
arrivals at rate lam (requests per second), each request needing S seconds:
the offered load is rho = lam * S, and the queue is stable only for rho < 1.

- M/D/1 (every request the same, S fixed): mean wait in the queue
  W_q = rho * S / (2 (1 - rho))             (Pollaczek-Khinchine)
- M/M/1 (exponential service times, mean S): W_q = rho * S / (1 - rho),
  twice M/D/1's: the variance of the service time alone doubles the wait.
- M/G/1 (any service distribution, mean E[S], second moment E[S^2]):
  W_q = lam * E[S^2] / (2 (1 - rho)),  rho = lam * E[S]
  (M/D/1 and M/M/1 are the cases E[S^2] = S^2 and 2 S^2).

Waits are in the unit of S (seconds in, seconds out; the report uses ms).
"""
import functools
import math

import numpy as np

INF = float("inf")


def md1_mean_wait(rho, s):
    return INF if rho >= 1 else rho * s / (2 * (1 - rho))


def mm1_mean_wait(rho, s):
    return INF if rho >= 1 else rho * s / (1 - rho)


def mg1_mean_wait(lam, mean_s, second_moment_s):
    rho = lam * mean_s
    return INF if rho >= 1 else lam * second_moment_s / (2 * (1 - rho))


def mix_moments(sizes):
    """[(share, S), ...] (shares sum to 1) -> (E[S], E[S^2])."""
    total = sum(p for p, _ in sizes)
    m1 = sum(p * s for p, s in sizes) / total
    m2 = sum(p * s * s for p, s in sizes) / total
    return m1, m2


def md1_wait_cdf(t, rho, s):
    """P(W_q <= t) for M/D/1 (Erlang's formula, for rho < 1):
    (1 - rho) * sum_{k=0}^{floor(t/S)} (lam (k S - t))^k / k! * exp(-lam (k S - t)).
    The terms alternate in sign; math.fsum keeps the sum exact enough for
    t up to a few tens of S."""
    if t < 0:
        return 0.0
    lam = rho / s
    terms = []
    for k in range(int(math.floor(t / s)) + 1):
        x = lam * (k * s - t)   # <= 0
        terms.append((x ** k) / math.factorial(k) * math.exp(-x))
    return min(1.0, max(0.0, (1 - rho) * math.fsum(terms)))


def md1_wait_quantile(q, rho, s):
    """The q-quantile (0 < q < 1) of M/D/1's wait, by bisection on the CDF."""
    if rho >= 1:
        return INF
    if q <= 1 - rho:          # P(W_q = 0) = 1 - rho: that many requests never wait
        return 0.0
    lo, hi = 0.0, s
    while md1_wait_cdf(hi, rho, s) < q:
        lo, hi = hi, hi * 2
        if hi > 60 * s:       # beyond what the formula can sum in floating point
            return INF
    for _ in range(60):
        mid = (lo + hi) / 2
        if md1_wait_cdf(mid, rho, s) < q:
            lo = mid
        else:
            hi = mid
    return hi


def mm1_wait_quantile(q, rho, s):
    """M/M/1: P(W_q > t) = rho * exp(-(mu - lam) t)."""
    if rho >= 1:
        return INF
    if q <= 1 - rho:
        return 0.0
    mu, lam = 1 / s, rho / s
    return math.log(rho / (1 - q)) / (mu - lam)


def lindley(arrivals, services):
    """Waits of a single FIFO server, from arrival times (sorted) and each
    request's service time: W[0] = 0, W[n+1] = max(0, W[n] + S[n] - gap[n]).
    The queue that the measured arrival times would have formed."""
    waits, w = [], 0.0
    for i, a in enumerate(arrivals):
        if i:
            w = max(0.0, w + services[i - 1] - (a - arrivals[i - 1]))
        waits.append(w)
    return waits


# Student's t, two-sided 95% (0.975 quantile), by degrees of freedom.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 19: 2.093, 24: 2.064, 29: 2.045}


def t975(df):
    """From the table (a missing df takes the next smaller one's, slightly
    wider); beyond 29 the normal 1.96 plus a 1/df correction."""
    if df < 1:
        return INF
    if df >= 30:
        return 1.96 + (2.045 - 1.96) * 29 / df
    return _T975[max(d for d in _T975 if d <= df)]


def batch_means_ci(values, batches=10):
    """Mean of values (in time order) with a 95% confidence interval by
    batch means: waits of successive requests are correlated (one long
    wait makes the next one long too), so the spread of single values
    understates the uncertainty. The values are cut into `batches`
    consecutive groups; the group means are nearly independent when a group
    is much longer than a busy period, and Student's t over them gives the
    interval. Returns (mean, low, high); (mean, mean, mean) if too few."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0, 0.0
    mean = sum(values) / n
    k = min(batches, n // 2)
    if k < 2:
        return mean, mean, mean
    size = n // k
    means = [sum(values[i * size:(i + 1) * size]) / size for i in range(k)]
    m = sum(means) / k
    var = sum((x - m) ** 2 for x in means) / (k - 1)
    half = t975(k - 1) * math.sqrt(var / k)
    return mean, mean - half, mean + half


# How sure is a mean wait near saturation? Batch means (above) assume that
# batches of a run are nearly independent and their means nearly normal. At
# rho 0.8 one busy period of an M/D/1 queue spans dozens of requests (the
# queue forgets its state over about (1 - sqrt(rho))^-2 service times, 90 S
# at rho 0.8, 380 S at 0.9), so a run of a few hundred requests holds a
# handful of independent stretches, and their means are skewed: most runs
# see no very long busy period and measure a little below the long-run mean,
# with a small spread; a few catch one and measure far above it. A run that
# measured low then also estimates a small spread, and its interval misses
# the truth. In simulation the 95% batch-means interval (10 batches) of 180
# requests covers the true mean in 87% of runs at rho 0.5, 80% at 0.7, 68% at
# 0.8 and 44% at 0.9; fewer, longer batches or independent replications of
# the same total length reach only 85-90% at rho 0.8 even with 1000 requests.
#
# For a point whose queue has a formula, the sweep therefore asks the
# question the verdict needs directly: how far does the mean of a run of
# exactly this shape (n requests from an empty queue, the first `skip`
# discarded, Poisson arrivals at lam) fall from the long-run mean when the
# system *is* the ideal queue? model_error_range simulates 20000 such
# runs (the Lindley recursion, seeded; the 97.5% quantile of a skewed
# distribution needs that many: with 4000 it still moved by 10% from seed to
# seed) and returns the 2.5% and 97.5%
# quantiles of that error, e_lo < 0 < e_hi. The interval
# [mean - e_hi, mean - e_lo] then covers the long-run mean in 95% of runs
# whatever rho and n are (it is the "basic" parametric bootstrap interval),
# and theory lies inside it exactly when the measured mean lies between
# theory + e_lo and theory + e_hi, the range that 95% of ideal runs reach.
# It is asymmetric: a run can measure far above its long-run mean but never
# more than that mean below it. The warm-up's bias (an empty queue at the
# start) is simulated too, so it needs no correction.


@functools.lru_cache(maxsize=256)
def model_error_range(lam, sizes, n, skip, runs=20000, seed=1, level=0.95):
    """Quantiles (e_lo, e_hi) of (mean of waits[skip:n]) - (long-run mean
    wait) over `runs` simulated runs of a single FIFO server: Poisson arrivals
    at rate lam, each request's service time drawn from sizes = ((share, S),
    ...) (shares sum to 1), the queue empty when the first request arrives.
    Same seed, same answer. The runs go side by side: one numpy array holds
    the wait of every run's current request."""
    if n - skip < 1:
        raise ValueError(f"no requests after the warm-up (n {n}, skip {skip})")
    rng = np.random.default_rng(seed)
    m1, m2 = mix_moments(sizes)
    if lam * m1 >= 1:
        raise ValueError(f"rho {lam * m1:.3f} >= 1: no long-run mean")
    # Service time of a request: the size whose cumulative share first
    # exceeds a uniform draw.
    cumulative = np.cumsum([p for p, _ in sizes]) / sum(p for p, _ in sizes)
    times = np.array([s for _, s in sizes], dtype=float)

    def draw_services():
        return times[np.minimum(np.searchsorted(cumulative, rng.random(runs), side="right"), len(times) - 1)]

    wait = np.zeros(runs)            # request 0 finds the queue empty
    total = np.zeros(runs)
    service = draw_services()        # of the request before the current one
    for i in range(1, n):
        gap = rng.exponential(1 / lam, size=runs)
        wait = np.maximum(0.0, wait + service - gap)   # Lindley: W[i] from W[i-1]
        service = draw_services()
        if i >= skip:
            total += wait
    means = total / (n - skip)
    tail = (1 - level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    exact = mg1_mean_wait(lam, m1, m2)
    return float(lo - exact), float(hi - exact)


def model_ci(mean, lam, sizes, n, skip, seed=1):
    """The 95% interval (low, high) of a measured mean wait of n requests
    (the first skip discarded) of a queue with Poisson arrivals at lam and
    service sizes ((share, S), ...), from model_error_range; low is clipped
    at 0 (no wait is negative)."""
    e_lo, e_hi = model_error_range(lam, tuple(tuple(x) for x in sizes), n, skip, seed=seed)
    return max(0.0, mean - e_hi), mean - e_lo


def verdict(mean, low, high, theory, rel=0.15):
    """Does the measured mean agree with theory? Yes when theory lies in the
    interval [low, high] or within rel of it, whichever is wider. The
    interval need not be symmetric: the tolerance is its side towards theory.
    Returns (agrees, tolerance); agrees is None when theory is infinite (an
    unstable queue: nothing to compare)."""
    if theory is None or math.isinf(theory):
        return None, None
    side = (high - mean) if theory >= mean else (mean - low)
    tol = max(side, rel * theory)
    return abs(mean - theory) <= tol, tol
