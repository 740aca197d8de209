"""The open-loop sweep (tools/bench.py --open-loop): Poisson arrivals at a
range of offered loads, measured in exact mode and drawn against queueing
theory (queueing.py). docs/experiments.md, "Open loop", explains it.

    bench.py --open-loop [--out DIR] [--quick] [--bundle DIR] [--name NAME]
                         [--prompt P] [--predict N] [--long-predict N2] [--long-share PCT]
                         [--rho LIST] [--mix-rho LIST] [--default-load LIST]
                         [--requests N] [--mix-requests N] [--default-requests N]
                         [--warmup PCT] [--solo K] [--seed S] [--configs LIST] [--jobs J]

Three configurations, each in its own boot (exact mode: QEMU -icount, one
hart, virtual time, 1 instruction = 1 ns; boots may run side by side, --jobs):
  max_batch=1  ai.max_batch=1, identical requests (prompt P, N tokens): M/D/1
  mix          ai.max_batch=1, a seeded PCT percent of the requests ask for N2
               tokens instead of N: M/G/1
  default      the kernel's default engine (batching): no closed formula;
               throughput against offered load shows its capacity
Every boot first measures the service time S of each request size alone
(--solo closed-loop requests, one at a time); the offered load rho = lambda S
then sets each point's arrival rate lambda. One `aibench --rate` run per
point: one client, Poisson arrivals from a seed (the point's seed is
--seed * 100 + its index), the clock started right after a timer tick
(--align-tick), so the same seed gives the same table. The first --warmup
percent of each point's requests (by arrival) are discarded: the queue
starts empty. The mean wait gets a 95% confidence interval by batch means.

Writes to --out: open_loop.csv (config,rho,requests,mean_wait_ms,
ci95_low_ms,ci95_high_ms,theory_ms), points.csv (every figure of every
point), requests.csv (every request), summary.json, report.md and PNGs.
"""
import argparse
import csv
import json
import math
import os
import re
import shlex
import sys
import tempfile
import threading
import time

import qemu_run

from . import queueing as Q
from .parse import parse_aibench
from .study import BIN, KERNEL, build_image, progress, run_command

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
CLOCK = ("virtual time (exact mode, QEMU -icount with idle stretches warped to the next timer deadline, "
         "one hart): 1 instruction = 1 ns")
CONFIGS = ("max_batch=1", "mix", "default")
CSV_FIELDS = ["config", "rho", "requests", "mean_wait_ms", "ci95_low_ms", "ci95_high_ms", "theory_ms"]
POINT_FIELDS = ["config", "rho", "rate_rps", "seed", "submitted", "done", "requests", "mean_wait_ms",
                "ci95_low_ms", "ci95_high_ms", "p95_wait_ms", "theory_ms", "mm1_ms", "theory_p95_ms",
                "mm1_p95_ms", "replay_ms", "agrees", "tolerance_ms", "throughput_rps", "offered_rps",
                "mean_service_ms", "max_in_flight_hint", "virtual_s", "wall_s"]
REQUEST_FIELDS = ["config", "rho", "client", "index", "state", "generated", "t_submit_ns", "t_start_ns",
                  "t_first_ns", "t_finish_ns", "wait_us", "service_us", "warmup"]
TICK_MS = 10


def float_list(text, what):
    try:
        vals = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        vals = []
    if not vals or min(vals) <= 0:
        sys.exit(f"bench --open-loop: {what} {text!r}: want positive numbers separated by commas")
    return vals


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench.py --open-loop", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "open_loop"))
    ap.add_argument("--quick", action="store_true",
                    help="the tiny test model, a few points, few requests (for tests; a minute or two)")
    ap.add_argument("--bundle", help="model bundle (default build/models/mid-llama; --quick: tiny-llama)")
    ap.add_argument("--name", help="its name under /AI (default: from the directory)")
    ap.add_argument("--prompt", type=int, default=4, help="prompt tokens of every request")
    ap.add_argument("--predict", type=int, help="tokens each request generates (default 10; --quick 60)")
    ap.add_argument("--long-predict", type=int, help="tokens of the mix's long requests (default 40; --quick 90)")
    ap.add_argument("--long-share", type=int, default=20, help="percent of long requests in the mix")
    ap.add_argument("--rho", help="offered loads of max_batch=1 (default 0.1,0.3,0.5,0.7,0.8,0.9,1.0,1.1)")
    ap.add_argument("--mix-rho", help="offered loads of the mix (default 0.3,0.5,0.7,0.8)")
    ap.add_argument("--default-load", help="offered loads of the default engine, in units of one-at-a-time "
                                           "capacity 1/S (default 0.5,1,1.5,2,3,4)")
    ap.add_argument("--requests", type=int, help="requests per max_batch=1 point at rho >= 0.5 "
                                                 "(fewer below: they only add idle time; default 200)")
    ap.add_argument("--mix-requests", type=int, help="requests per mix point (default 150)")
    ap.add_argument("--default-requests", type=int, help="requests per default-engine point (default 150)")
    ap.add_argument("--warmup", type=float, default=10, help="percent of each point's first requests discarded")
    ap.add_argument("--solo", type=int, default=6, help="solo requests that measure S")
    ap.add_argument("--seed", type=int, default=1, help="seed of every arrival stream (default 1)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="which of " + ",".join(CONFIGS))
    ap.add_argument("--jobs", type=int, default=2, help="boots run side by side (default 2)")
    ap.add_argument("--memory", default="1G")
    ap.add_argument("--replot", action="store_true", help="only redraw report and plots from summary.json")
    ap.add_argument("--from-raw", action="store_true",
                    help="no boots: analyse the raw-*.json that finished boots left in --out")
    a = ap.parse_args(argv)
    q = a.quick
    a.bundle = os.path.abspath(a.bundle or os.path.join(ROOT, "build", "models", "tiny-llama" if q else "mid-llama"))
    a.name = (a.name or os.path.basename(os.path.normpath(a.bundle))).upper().replace("-", "")[:15]
    a.predict = a.predict or (60 if q else 10)
    a.long_predict = a.long_predict or (90 if q else 40)
    a.rho = float_list(a.rho or ("0.3,0.8" if q else "0.1,0.3,0.5,0.7,0.8,0.9,1.0,1.1"), "--rho")
    a.mix_rho = float_list(a.mix_rho or ("0.5" if q else "0.3,0.5,0.7,0.8"), "--mix-rho")
    a.default_load = float_list(a.default_load or ("0.5,3" if q else "0.5,1,1.5,2,3,4"), "--default-load")
    a.requests = a.requests or (40 if q else 200)
    a.mix_requests = a.mix_requests or (40 if q else 150)
    a.default_requests = a.default_requests or (40 if q else 150)
    a.configs = [c.strip() for c in a.configs.split(",") if c.strip()]
    for c in a.configs:
        if c not in CONFIGS:
            ap.error(f"--configs: unknown configuration {c!r} (choose from {', '.join(CONFIGS)})")
    for name in ("requests", "mix_requests", "default_requests"):
        if not 10 <= getattr(a, name) <= 1024:
            ap.error(f"--{name.replace('_', '-')} {getattr(a, name)}: want 10..1024 (aibench's limit per client)")
    if a.long_predict <= a.predict:
        ap.error(f"--long-predict {a.long_predict}: want more than --predict {a.predict}")
    if not 0 < a.long_share < 100:
        ap.error(f"--long-share {a.long_share}: want 1..99 percent")
    if not 0 <= a.warmup < 50:
        ap.error(f"--warmup {a.warmup}: want 0..50 percent")
    if a.solo < 2:
        ap.error(f"--solo {a.solo}: want at least 2")
    if a.jobs < 1:
        ap.error(f"--jobs {a.jobs}: want at least 1")
    return a


# ---------------------------------------------------------------- the boots

def aibench(a, predict, extra):
    return (f"aibench --model {a.name} --clients 1 --prompt {a.prompt} --predict {predict} --int8 --csv "
            f"--align-tick {extra}")


def requests_at(a, config, rho):
    """Requests of a point. Below rho = 0.5 a max_batch=1 point gets
    proportionally fewer (at least 60): its run is mostly idle time, and
    waits there are rare and short."""
    if config == "mix":
        return a.mix_requests
    if config == "default":
        return a.default_requests
    return a.requests if rho >= 0.5 else max(min(a.requests, 60), int(round(a.requests * rho / 0.5)))


def solo_service(a, session, predict, label):
    """Mean service time (s) of one request size alone, from --solo requests
    one after another (closed loop), and their spread."""
    text = run_command(session, aibench(a, predict, f"--requests {a.solo} --seed {a.seed}"), 3600, label)
    rows, _, _ = parse_aibench(text)
    done = [r for r in rows if r["state"] == "done"]
    if len(done) != a.solo:
        raise RuntimeError(f"solo run of {predict} tokens: {len(done)} of {a.solo} done:\n{text}")
    s = [(int(r["t_finish_ns"]) - int(r["t_start_ns"])) / 1e9 for r in done]
    return {"predict": predict, "mean_s": sum(s) / len(s), "min_s": min(s), "max_s": max(s)}


def run_point(a, session, config, rho, index, rate, predict_args, n):
    seed = a.seed * 100 + index
    cmd = aibench(a, a.predict, f"--requests {n} --rate {rate:.3f} --seed {seed} {predict_args}").strip()
    t0 = time.monotonic()
    text = run_command(session, cmd, 3 * 3600, f"{config} rho={rho:g}", n)
    rows, _, summary = parse_aibench(text)
    if not rows:
        raise RuntimeError(f"{config} rho={rho}: aibench printed no requests:\n{text}")
    return {"config": config, "rho": rho, "seed": seed, "rate_rps": float(f"{rate:.3f}"), "command": cmd,
            "rows": rows, "wall_s": round(time.monotonic() - t0, 1)}


def boot_config(a, img, config, logs):
    """One boot: the solo runs, then every point of config."""
    # One client holds every request of a point: lift the per-process quota
    # (default 8 slots) to the whole table, so that the queue can grow as
    # theory says; at 32 requests in the system submit blocks (the table is
    # full), which only overloads above rho = 1 reach.
    append = "ai.max_per_process=32" + ("" if config == "default" else " ai.max_batch=1")
    # Exact mode with idle stretches warped (qemu_run.ICOUNT_IDLE_WARPS): a
    # point's gaps between arrivals are idle time, and with sleep=on each
    # would end a little after its deadline, by however late the host was.
    s = qemu_run.Session(img, KERNEL, smp=1, memory=a.memory, snapshot=True, boot_timeout=600,
                         append=append, deterministic=True, idle_warps=True)
    try:
        if not s.booted:
            raise RuntimeError("boot failed:\n" + s.transcript[-3000:])
        if not s.wait_log(rf"ai: model {re.escape(a.name)} (ready|failed)", timeout=600):
            raise RuntimeError(f"model {a.name} did not load:\n" + s.transcript[-3000:])
        out = {"config": config, "kernel_options": append or "(defaults)", "solo": {}, "points": []}
        short = solo_service(a, s, a.predict, f"{config}: S alone ({a.predict} tokens)")
        out["solo"]["short"] = short
        S = short["mean_s"]
        if config == "mix":
            long_ = solo_service(a, s, a.long_predict, f"{config}: S alone ({a.long_predict} tokens)")
            out["solo"]["long"] = long_
            p = a.long_share / 100
            m1, m2 = Q.mix_moments([(1 - p, S), (p, long_["mean_s"])])
            out["solo"]["mix_mean_s"], out["solo"]["mix_second_moment_s2"] = m1, m2
            loads, mix_args = a.mix_rho, f"--long-predict {a.long_predict} --long-share {a.long_share}"
            unit = m1
        else:
            loads = a.rho if config == "max_batch=1" else a.default_load
            mix_args, unit = "", S
        progress(f"{config}: S = {S * 1e3:.1f} ms alone ({S * 1e3 / TICK_MS:.1f} timer ticks)")
        for i, rho in enumerate(loads):
            n = requests_at(a, config, rho)
            pt = run_point(a, s, config, rho, i + (0 if config == "max_batch=1" else 50 if config == "mix" else 80),
                           rho / unit, mix_args, n)
            out["points"].append(pt)
            progress(f"{config}: rho {rho:g} done ({n} requests, {pt['wall_s']:.0f} s real)")
        s.halt()
        return out
    finally:
        logs[config] = s.transcript.replace("\r", "")
        s.close()


# ---------------------------------------------------------------- analysis

def analyse_point(a, cfg, pt):
    """Every figure of one point, from its request rows."""
    rows = sorted(pt["rows"], key=lambda r: int(r["t_submit_ns"]) if r["state"] == "done" else 1 << 62)
    done = [r for r in rows if r["state"] == "done"]
    skip = int(math.ceil(len(rows) * a.warmup / 100))
    kept = done[skip:]
    for i, r in enumerate(done):
        r["warmup"] = int(i < skip)
        r["wait_us"] = (int(r["t_start_ns"]) - int(r["t_submit_ns"])) // 1000
        r["service_us"] = (int(r["t_finish_ns"]) - int(r["t_start_ns"])) // 1000
    waits = [(int(r["t_start_ns"]) - int(r["t_submit_ns"])) / 1e6 for r in kept]
    mean, lo, hi = Q.batch_means_ci(waits)
    lo = max(0.0, lo)   # a wait is never negative: the interval's lower end neither
    solo = cfg["solo"]
    # S to 10 us: in exact mode a timestamp can still move by a microsecond or
    # two from run to run (the timer counts in 100 ns steps); rounded, the
    # theory column of a repeated run is the same to the last digit.
    S = round(solo["short"]["mean_s"], 5)
    lam = pt["rate_rps"]
    res = {"config": cfg["config"], "rho": pt["rho"], "rate_rps": lam, "seed": pt["seed"],
           "submitted": len(rows), "done": len(done), "requests": len(kept),
           "mean_wait_ms": mean, "ci95_low_ms": lo, "ci95_high_ms": hi,
           "p95_wait_ms": Q.percentile(waits, 95), "wall_s": pt["wall_s"], "command": pt["command"]}
    # Service times by request size, as measured alone.
    size_s = {solo["short"]["predict"]: S}
    if "long" in solo:
        size_s[solo["long"]["predict"]] = round(solo["long"]["mean_s"], 5)
    services = [size_s.get(int(r["generated"]), S) for r in done]
    arrivals = [int(r["t_submit_ns"]) / 1e9 for r in done]
    replay = Q.lindley(arrivals, services)[skip:]
    res["replay_ms"] = 1e3 * sum(replay) / len(replay) if replay else 0.0
    rho_actual = lam * S
    if cfg["config"] == "max_batch=1":
        theory = 1e3 * Q.md1_mean_wait(rho_actual, S)
        res["mm1_ms"] = 1e3 * Q.mm1_mean_wait(rho_actual, S)
        res["theory_p95_ms"] = 1e3 * Q.md1_wait_quantile(0.95, rho_actual, S)
        res["mm1_p95_ms"] = 1e3 * Q.mm1_wait_quantile(0.95, rho_actual, S)
    elif cfg["config"] == "mix":
        p = a.long_share / 100
        m1, m2 = Q.mix_moments([(1 - p, S), (p, size_s[solo["long"]["predict"]])])
        theory = 1e3 * Q.mg1_mean_wait(lam, m1, m2)
        # For contrast: M/D/1 with the same mean service time (no variance).
        res["mm1_ms"] = 1e3 * Q.md1_mean_wait(lam * m1, m1)
        res["theory_p95_ms"] = res["mm1_p95_ms"] = None
    else:
        theory = None
        res["mm1_ms"] = res["theory_p95_ms"] = res["mm1_p95_ms"] = None
    res["theory_ms"] = theory
    agrees, tol = Q.verdict(mean, lo, hi, theory)
    res["agrees"], res["tolerance_ms"] = agrees, tol
    if done:
        span = (max(int(r["t_finish_ns"]) for r in done) - min(int(r["t_submit_ns"]) for r in done)) / 1e9
        res["throughput_rps"] = len(done) / span if span > 0 else 0.0
        res["virtual_s"] = span
        res["mean_service_ms"] = sum(int(r["service_us"]) for r in done) / len(done) / 1e3
    else:
        res["throughput_rps"] = res["virtual_s"] = res["mean_service_ms"] = 0.0
    res["offered_rps"] = lam
    # Arrivals faster than the 32 request slots drain: submit blocks, and the
    # open loop turns into a closed one at 32 requests in the system.
    res["max_in_flight_hint"] = max_in_system(done)
    return res


def max_in_system(done):
    events = sorted([(int(r["t_submit_ns"]), 1) for r in done] + [(int(r["t_finish_ns"]), -1) for r in done])
    n = best = 0
    for _, d in events:
        n += d
        best = max(best, n)
    return best


def analyse(a, boots):
    points = []
    for cfg in boots:
        for pt in cfg["points"]:
            points.append(analyse_point(a, cfg, pt))
    sat = {}
    if any(c["config"] == "max_batch=1" for c in boots):
        S = next(c for c in boots if c["config"] == "max_batch=1")["solo"]["short"]["mean_s"]
        sat["one_at_a_time_rps"] = 1 / S
    dflt = [p for p in points if p["config"] == "default"]
    if dflt:
        sat["default_measured_rps"] = max(p["throughput_rps"] for p in dflt)
        if "one_at_a_time_rps" in sat:
            sat["ratio"] = sat["default_measured_rps"] / sat["one_at_a_time_rps"]
    return points, sat


# ---------------------------------------------------------------- output

def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return f"{v:.{digits}f}"


def write_csvs(out, points, boots):
    with open(os.path.join(out, "open_loop.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for p in points:
            # Milliseconds to 10 us (a repeated run's timestamps may differ
            # by a microsecond or two).
            w.writerow([p["config"], f"{p['rho']:g}", p["requests"], f"{p['mean_wait_ms']:.2f}",
                        f"{p['ci95_low_ms']:.2f}", f"{p['ci95_high_ms']:.2f}",
                        "" if p["theory_ms"] is None else ("inf" if math.isinf(p["theory_ms"])
                                                           else f"{p['theory_ms']:.2f}")])
    with open(os.path.join(out, "points.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=POINT_FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(points)
    with open(os.path.join(out, "requests.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=REQUEST_FIELDS, extrasaction="ignore")
        w.writeheader()
        for cfg in boots:
            for pt in cfg["points"]:
                for r in pt["rows"]:
                    w.writerow({"config": cfg["config"], "rho": pt["rho"], **r})


def verdict_word(p):
    return {True: "agrees", False: "DIFFERS", None: "no theory"}[p["agrees"]]


def report(summary):
    pts, solo, sat = summary["points"], summary["solo"], summary["saturation"]
    cfg = summary["config"]
    L = ["# Open loop: waits against queueing theory", "",
         f"Command: `{summary['command']}`  ", f"Date: {summary['date']}; commit {summary['commit']}  ",
         f"Clock: {CLOCK}. Wall time of the sweep: {summary['wall_s'] / 60:.1f} min (real time, host-dependent).",
         "", f"Model {cfg['name']} ({cfg['bundle']}), prompt {cfg['prompt']} tokens, int8 activations, "
             f"one client with Poisson arrivals (aibench --rate, seeded), {cfg['warmup']:g}% of each point's "
             "requests discarded as warm-up, 95% confidence intervals by batch means (10 batches).", ""]
    L += ["## Service times alone", "", "| boot | request | S mean ms | min ms | max ms | timer ticks |",
          "|---|---|---|---|---|---|"]
    for c, s in solo.items():
        for k in ("short", "long"):
            if k in s:
                x = s[k]
                L.append(f"| {c} | {x['predict']} tokens | {x['mean_s'] * 1e3:.2f} | {x['min_s'] * 1e3:.2f} | "
                         f"{x['max_s'] * 1e3:.2f} | {x['mean_s'] * 1e3 / TICK_MS:.1f} |")
    L.append("")
    head = ("| rho | requests | mean wait ms [95% CI] | theory ms | replay ms | p95 wait ms | theory p95 ms | "
            "verdict |")
    if any(p["config"] == "max_batch=1" for p in pts):
        L += ["## One request at a time (ai.max_batch=1): M/D/1", "",
              "theory: M/D/1 mean wait rho S / (2 (1 - rho)) and its 95th percentile (Erlang's formula); "
              "M/M/1 (rho S / (1 - rho)) for contrast. replay: the same single server fed the measured "
              "arrival times with S fixed (the Lindley recursion): what this run's own arrivals predict.", "",
              head.replace("verdict |", "M/M/1 ms | verdict |"), "|---|---|---|---|---|---|---|---|---|"]
        for p in pts:
            if p["config"] == "max_batch=1":
                L.append(f"| {p['rho']:g} | {p['requests']} | {fmt(p['mean_wait_ms'])} [{fmt(p['ci95_low_ms'])}, "
                         f"{fmt(p['ci95_high_ms'])}] | {fmt(p['theory_ms'])} | {fmt(p['replay_ms'])} | "
                         f"{fmt(p['p95_wait_ms'])} | {fmt(p['theory_p95_ms'])} | {fmt(p['mm1_ms'])} | "
                         f"{verdict_word(p)} |")
        L += ["", "![waits against rho](wait_vs_rho.png)", ""]
    if any(p["config"] == "mix" for p in pts):
        ms = solo.get("mix", {})
        L += ["## Two request sizes (ai.max_batch=1): M/G/1", "",
              f"{100 - cfg['long_share']}% of the requests generate {cfg['predict']} tokens, {cfg['long_share']}% "
              f"generate {cfg['long_predict']}: E[S] = {ms.get('mix_mean_s', 0) * 1e3:.1f} ms, "
              f"E[S^2] = {ms.get('mix_second_moment_s2', 0) * 1e6:.0f} ms^2. theory: M/G/1 "
              "lambda E[S^2] / (2 (1 - rho)); for contrast M/D/1 with the same mean.", "",
              "| rho | requests | mean wait ms [95% CI] | M/G/1 ms | replay ms | p95 wait ms | M/D/1 same mean ms | "
              "verdict |", "|---|---|---|---|---|---|---|---|"]
        for p in pts:
            if p["config"] == "mix":
                L.append(f"| {p['rho']:g} | {p['requests']} | {fmt(p['mean_wait_ms'])} [{fmt(p['ci95_low_ms'])}, "
                         f"{fmt(p['ci95_high_ms'])}] | {fmt(p['theory_ms'])} | {fmt(p['replay_ms'])} | "
                         f"{fmt(p['p95_wait_ms'])} | {fmt(p['mm1_ms'])} | {verdict_word(p)} |")
        L += ["", "![the mix against M/G/1](mix_vs_rho.png)", ""]
    L += ["## Throughput against offered load", "",
          "Offered load in units of one-at-a-time capacity 1/S (rho = lambda S).", "",
          "| config | rho | offered req/s | throughput req/s | mean wait ms | p95 wait ms | most in system |",
          "|---|---|---|---|---|---|---|"]
    for p in pts:
        if p["config"] != "mix":
            L.append(f"| {p['config']} | {p['rho']:g} | {p['offered_rps']:.3f} | {p['throughput_rps']:.3f} | "
                     f"{fmt(p['mean_wait_ms'])} | {fmt(p['p95_wait_ms'])} | {p['max_in_flight_hint']} |")
    L.append("")
    if "one_at_a_time_rps" in sat:
        L.append(f"Saturation of one request at a time: 1/S = {sat['one_at_a_time_rps']:.3f} req/s.")
    if "default_measured_rps" in sat:
        line = f"The default (batching) engine's highest measured throughput: {sat['default_measured_rps']:.3f} req/s"
        if "ratio" in sat:
            line += f", {sat['ratio']:.2f}x one at a time"
        L.append(line + ".")
    L += ["", "![throughput against offered load](throughput_vs_load.png)", "",
          "The verdict: a measured mean agrees when it lies within its confidence interval's half-width of "
          "the theory, or within 15% of it, whichever is wider. Above rho = 1 the queue has no steady state "
          "(theory: infinite): the mean wait there grows with the length of the run.", ""]
    return "\n".join(L)


def make_plots(out, summary):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pts, solo = summary["points"], summary["solo"]
    files = []

    def curve(fn, top):
        xs = [i / 200 for i in range(1, int(min(top, 0.99) * 200) + 1)]
        return xs, [fn(x) for x in xs]

    one = [p for p in pts if p["config"] == "max_batch=1"]
    if one:
        S = solo["max_batch=1"]["short"]["mean_s"]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        top = max(p["rho"] for p in one)
        stable = [p for p in one if p["theory_ms"] is not None and not math.isinf(p["theory_ms"])]
        ymax = max([p["ci95_high_ms"] for p in stable] + [p["theory_ms"] for p in stable] + [1]) * 1.6
        for ax, what in zip(axes, ("mean", "p95")):
            if what == "mean":
                xs, ys = curve(lambda r: 1e3 * Q.md1_mean_wait(r, S), top)
                ax.plot(xs, ys, "C0-", label="M/D/1")
                xs, ys = curve(lambda r: 1e3 * Q.mm1_mean_wait(r, S), top)
                ax.plot(xs, ys, "C1--", label="M/M/1 (contrast)")
                ax.errorbar([p["rho"] for p in one], [p["mean_wait_ms"] for p in one],
                            yerr=[[p["mean_wait_ms"] - p["ci95_low_ms"] for p in one],
                                  [p["ci95_high_ms"] - p["mean_wait_ms"] for p in one]],
                            fmt="ko", capsize=4, label="measured (95% CI)")
                ax.set_title("mean queue wait, ai.max_batch=1")
            else:
                xs, ys = curve(lambda r: 1e3 * Q.md1_wait_quantile(0.95, r, S), top)
                ax.plot(xs, ys, "C0-", label="M/D/1 p95")
                xs, ys = curve(lambda r: 1e3 * Q.mm1_wait_quantile(0.95, r, S), top)
                ax.plot(xs, ys, "C1--", label="M/M/1 p95 (contrast)")
                ax.plot([p["rho"] for p in one], [p["p95_wait_ms"] for p in one], "ks", label="measured p95")
                ax.set_title("95th percentile of the queue wait")
                ymax = max(ymax, max([p["p95_wait_ms"] for p in stable] + [0]) * 1.3)
            ax.axvline(1.0, color="grey", lw=0.8)
            ax.set_xlabel("offered load rho = lambda S")
            ax.set_ylabel("ms (virtual time)")
            ax.set_ylim(0, ymax)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="upper left")
        fig.suptitle(f"Open loop, one request at a time, S = {S * 1e3:.0f} ms ({CLOCK})", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "wait_vs_rho.png"), dpi=90)
        plt.close(fig)
        files.append("wait_vs_rho.png")
    mix = [p for p in pts if p["config"] == "mix"]
    if mix:
        m = solo["mix"]
        fig, ax = plt.subplots(figsize=(6, 4.2))
        top = max(p["rho"] for p in mix)
        xs, ys = curve(lambda r: 1e3 * Q.mg1_mean_wait(r / m["mix_mean_s"], m["mix_mean_s"],
                                                       m["mix_second_moment_s2"]), max(top, 0.9))
        ax.plot(xs, ys, "C2-", label="M/G/1 (Pollaczek-Khinchine)")
        xs, ys = curve(lambda r: 1e3 * Q.md1_mean_wait(r, m["mix_mean_s"]), max(top, 0.9))
        ax.plot(xs, ys, "C0:", label="M/D/1, same mean (contrast)")
        ax.errorbar([p["rho"] for p in mix], [p["mean_wait_ms"] for p in mix],
                    yerr=[[p["mean_wait_ms"] - p["ci95_low_ms"] for p in mix],
                          [p["ci95_high_ms"] - p["mean_wait_ms"] for p in mix]],
                    fmt="ko", capsize=4, label="measured (95% CI)")
        ax.set_xlabel("offered load rho = lambda E[S]")
        ax.set_ylabel("mean queue wait, ms (virtual time)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title("two request sizes, ai.max_batch=1", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "mix_vs_rho.png"), dpi=90)
        plt.close(fig)
        files.append("mix_vs_rho.png")
    thr = [p for p in pts if p["config"] != "mix"]
    if thr:
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        top = max(p["offered_rps"] for p in thr) * 1.05
        ax.plot([0, top], [0, top], color="grey", lw=0.8, label="throughput = offered load")
        for c, style in (("max_batch=1", "C0o-"), ("default", "C3s-")):
            ps = sorted((p for p in thr if p["config"] == c), key=lambda p: p["offered_rps"])
            if ps:
                ax.plot([p["offered_rps"] for p in ps], [p["throughput_rps"] for p in ps], style,
                        label={"max_batch=1": "ai.max_batch=1", "default": "default engine (batching)"}[c])
        sat = summary["saturation"]
        if "one_at_a_time_rps" in sat:
            ax.axhline(sat["one_at_a_time_rps"], color="C0", ls=":", label="1/S: one at a time")
        if "default_measured_rps" in sat:
            ax.axhline(sat["default_measured_rps"], color="C3", ls=":", label="batching, measured saturation")
        ax.set_xlabel("offered load, requests/s (virtual time)")
        ax.set_ylabel("throughput, requests/s")
        ax.set_xlim(0, top)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        ax.set_title("throughput against offered load", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "throughput_vs_load.png"), dpi=90)
        plt.close(fig)
        files.append("throughput_vs_load.png")
    return files


def environment():
    import subprocess
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return commit, time.strftime("%Y-%m-%d %H:%M %Z")


def main(argv):
    a = parse_args(argv)
    if a.replot:
        with open(os.path.join(a.out, "summary.json")) as f:
            summary = json.load(f)
        summary["plots"] = make_plots(a.out, summary)
        with open(os.path.join(a.out, "report.md"), "w") as f:
            f.write(report(summary))
        return 0
    if a.from_raw:
        command = "tools/bench.py --open-loop " + " ".join(shlex.quote(x) for x in argv)
        order, boots = [], []
        for c in CONFIGS:
            path = os.path.join(a.out, f"raw-{c.replace('=', '')}.json")
            if c in a.configs and os.path.exists(path):
                with open(path) as f:
                    boots.append(json.load(f))
                order.append(c)
        if not boots:
            sys.exit(f"bench --open-loop --from-raw: no raw-*.json in {a.out}")
        return finish(a, command, boots, time.monotonic(), *environment())
    if not os.path.exists(os.path.join(a.bundle, "CFG.BIN")):
        sys.exit(f"bench --open-loop: no bundle at {a.bundle} "
                 f"(make {'test-models' if a.quick else 'build/models/mid-llama/INFO.TXT'})")
    if not os.path.exists(KERNEL) or not os.path.exists(os.path.join(BIN, "aibench")):
        sys.exit("bench --open-loop: kernel or build/user/bin/aibench missing (make)")
    os.makedirs(a.out, exist_ok=True)
    command = "tools/bench.py --open-loop " + " ".join(shlex.quote(x) for x in argv)
    start = time.monotonic()
    commit, date = environment()
    tmp = tempfile.mkdtemp(prefix="kai-open-loop-")
    logs, results, errors = {}, {}, []
    try:
        img = build_image(a.bundle, a.name, tmp)
        progress(f"open loop: {', '.join(a.configs)} in exact mode, {a.jobs} boot(s) at a time, seed {a.seed}")
        # Longest boots first, so that the side-by-side boots end together.
        order = [c for c in ("max_batch=1", "mix", "default") if c in a.configs]
        lock = threading.Semaphore(a.jobs)

        def work(c):
            with lock:
                try:
                    results[c] = boot_config(a, img, c, logs)
                    # Each boot's raw data as soon as it is there: --from-raw
                    # can report the finished ones if a later boot fails.
                    with open(os.path.join(a.out, f"raw-{c.replace('=', '')}.json"), "w") as f:
                        json.dump(results[c], f)
                except Exception as e:   # reported below; the other boots go on
                    errors.append(f"{c}: {e}")
        threads = [threading.Thread(target=work, args=(c,)) for c in order]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        for name, text in logs.items():
            with open(os.path.join(a.out, f"console-{name.replace('=', '')}.log"), "w") as f:
                f.write(text)
    if errors:
        for e in errors:
            progress(f"FAILED: {e[:3000]}")
        return 1
    boots = [results[c] for c in order]
    return finish(a, command, boots, start, commit, date)


def finish(a, command, boots, start, commit, date):
    """Analysis, CSVs, summary, plots and report of the boots' raw data."""
    points, sat = analyse(a, boots)
    write_csvs(a.out, points, boots)
    summary = {"command": command, "date": date, "commit": commit, "clock": CLOCK,
               "wall_s": time.monotonic() - start,
               "configs_measured": [b["config"] for b in boots],
               "config": {"name": a.name, "bundle": os.path.relpath(a.bundle, ROOT), "prompt": a.prompt,
                          "predict": a.predict, "long_predict": a.long_predict, "long_share": a.long_share,
                          "warmup": a.warmup, "solo": a.solo, "seed": a.seed, "configs": a.configs,
                          "quick": a.quick},
               "solo": {b["config"]: b["solo"] for b in boots},
               "kernel_options": {b["config"]: b["kernel_options"] for b in boots},
               "points": points, "saturation": sat}
    summary["plots"] = make_plots(a.out, summary)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=lambda x: None)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(report(summary))
    for p in points:
        progress(f"{p['config']:12s} rho {p['rho']:<4g} mean wait {fmt(p['mean_wait_ms'])} ms "
                 f"[{fmt(p['ci95_low_ms'])}, {fmt(p['ci95_high_ms'])}] theory {fmt(p['theory_ms'])}: "
                 f"{verdict_word(p)}")
    progress(f"open loop done in {summary['wall_s'] / 60:.1f} min: {os.path.join(a.out, 'report.md')}")
    return 0
