"""The latency figures of a request, defined once (bench.py, its tests and
the report all use these functions; docs/experiments.md has the same table).

The kernel stamps each request with its clock: t_submit (ai_submit accepted
it), t_start (a worker first took it), t_first (first generated token known),
t_finish (last token known), all in ns; a request that was preempted also
says how long it waited in the queue again (requeued, kai_ai_result's
requeued_us), which belongs to the queue wait and not to the service time,
so queue wait + service = end to end.
"""


def queue_wait_ns(t_submit, t_start, requeued_ns=0):
    """Time spent waiting for a free worker (again, after a preemption)."""
    return t_start - t_submit + requeued_ns


def ttft_ns(t_submit, t_first):
    """Time to first token: what a user waits before anything appears."""
    return t_first - t_submit


def prefill_ns(t_start, t_first):
    """Processing the prompt up to the first new token."""
    return t_first - t_start


def tpot_ns(t_first, t_finish, generated):
    """Time per output token after the first: one decode step. None if
    fewer than two tokens were generated (no decode step to time)."""
    return (t_finish - t_first) / (generated - 1) if generated > 1 else None


def e2e_ns(t_submit, t_finish):
    """End to end: the whole request (W in Little's law)."""
    return t_finish - t_submit


def service_ns(t_start, t_finish, requeued_ns=0):
    """The worker's time on the request."""
    return t_finish - t_start - requeued_ns


LATENCY_KEYS = ("e2e_us", "queue_us", "ttft_us", "prefill_us", "tpot_us", "service_us")


def derive(row):
    """Adds the latencies in whole microseconds (as requests.csv has them) to
    a request row with the four kernel timestamps; empty if not done."""
    s, st, f, e = (int(row[k]) for k in ("t_submit_ns", "t_start_ns", "t_first_ns", "t_finish_ns"))
    rq = int(row.get("requeued_us") or 0) * 1000   # a column older rows lack
    g = int(row["generated"])
    done = row["state"] == "done"
    tpot = tpot_ns(f, e, g)
    row["queue_us"] = queue_wait_ns(s, st, rq) // 1000 if done else ""
    row["ttft_us"] = ttft_ns(s, f) // 1000 if done else ""
    row["prefill_us"] = prefill_ns(st, f) // 1000 if done else ""
    row["tpot_us"] = int(tpot // 1000) if done and tpot is not None else ""
    row["e2e_us"] = e2e_ns(s, e) // 1000 if done else ""
    row["service_us"] = service_ns(st, e, rq) // 1000 if done else ""
    return row


def percentile(values, p):
    """Nearest-rank percentile (as aibench computes it): the smallest value
    that at least p% of the values do not exceed."""
    if not values:
        return 0.0
    v = sorted(values)
    rank = max(1, -(-p * len(v) // 100))
    return v[int(rank) - 1]


def median(values):
    v = sorted(values)
    n = len(v)
    return 0 if n == 0 else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def point_stats(rows):
    """Statistics of one run of a sweep point, from its request rows."""
    done = [r for r in rows if r["state"] == "done"]
    span_s = (max(int(r["t_finish_ns"]) for r in done) - min(int(r["t_submit_ns"]) for r in done)) / 1e9 \
        if done else 0
    tokens = sum(int(r["generated"]) for r in done)
    stats = {"requests": len(rows), "done": len(done), "span_s": span_s,
             "throughput_rps": len(done) / span_s if span_s else 0,
             "tokens_per_s": tokens / span_s if span_s else 0}
    for name in LATENCY_KEYS:
        vals = [int(r[name]) for r in done if r[name] != ""]
        stats[name] = {"p50": percentile(vals, 50), "p95": percentile(vals, 95),
                       "max": max(vals) if vals else 0, "mean": sum(vals) / len(vals) if vals else 0}
    return stats
