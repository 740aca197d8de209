"""Repeated measurements: how to summarise K values of one figure and how to
tell whether two configurations really differ.

On a shared host one run of a point can be off by a factor of two (the host
was busy), so bench.py repeats each point K times over separate boots and
reports the median with its spread:
- min-max: every repeat lies inside; honest and easy to read for small K;
- a bootstrap 95% interval of the median: resample the K values with
  replacement many times and take the middle 95% of the resampled medians
  (seeded, so a report is reproducible from its data). With K = 3 it can only
  be as wide as min-max; it narrows when K grows.
Two configurations differ "by more than the spread" when their min-max
ranges do not overlap: every repeat of one beat every repeat of the other.
That is a cautious test (K = 3 against 3 has a 1 in 10 chance of a false
"yes" when there is no difference at all) and it says nothing when K = 1.
"""
import random

from .latency import median

BOOTSTRAP_RESAMPLES = 2000


def bootstrap_median_interval(values, seed, confidence=0.95):
    """(low, high) of the bootstrap interval of the median of values."""
    if not values:
        return (0, 0)
    rng = random.Random(seed)
    n = len(values)
    meds = sorted(median([values[rng.randrange(n)] for _ in range(n)]) for _ in range(BOOTSTRAP_RESAMPLES))
    cut = int(round((1 - confidence) / 2 * BOOTSTRAP_RESAMPLES))
    return (meds[cut], meds[BOOTSTRAP_RESAMPLES - 1 - cut])


def summarize(values, seed=0):
    """Median, min, max and the bootstrap 95% interval of K measurements."""
    vals = [v for v in values if v is not None]
    if not vals:
        return {"n": 0, "median": None, "min": None, "max": None, "ci95": [None, None], "values": []}
    lo, hi = bootstrap_median_interval(vals, seed)
    return {"n": len(vals), "median": median(vals), "min": min(vals), "max": max(vals), "ci95": [lo, hi],
            "values": list(vals)}


def compare(a, b):
    """Compares two summaries (from summarize) of the same figure. Returns
    the ratio of the medians b/a and whether the difference is larger than
    the spread (min-max ranges apart); 'separated' is None if either side
    has fewer than two values (no spread to compare with)."""
    if not a["n"] or not b["n"]:
        return {"ratio": None, "separated": None, "verdict": "no data"}
    ratio = b["median"] / a["median"] if a["median"] else None
    if a["n"] < 2 or b["n"] < 2:
        return {"ratio": ratio, "separated": None, "verdict": "one run each: no spread to judge by"}
    separated = a["max"] < b["min"] or b["max"] < a["min"]
    return {"ratio": ratio, "separated": separated,
            "verdict": "yes: larger than the spread" if separated else "no: within the spread"}
