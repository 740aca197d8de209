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
starts empty. The mean wait gets a 95% confidence interval: where theory
applies, from simulated runs of the ideal queue with this point's shape
(queueing.model_ci); elsewhere by batch means.

Writes to --out: open_loop.csv (config,rho,requests,mean_wait_ms,
ci95_low_ms,ci95_high_ms,theory_ms), points.csv (every figure of every
point), requests.csv (every request), summary.json, report.md and PNGs
(open_loop_report.py).
"""
import argparse
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
from .latency import percentile
from .options import model_name, number_list
from .output import environment, write_csv
from .open_loop_report import CLOCK, TICK_MS, fmt, open_loop_plots, report, verdict_word
from .parse import parse_aibench
from .boots import BIN, KERNEL, build_image, progress, run_command

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
PROG = "bench --open-loop"
CONFIGS = ("max_batch=1", "mix", "default")
CSV_FIELDS = ["config", "rho", "requests", "mean_wait_ms", "ci95_low_ms", "ci95_high_ms", "theory_ms"]
POINT_FIELDS = ["config", "rho", "rate_rps", "seed", "submitted", "done", "requests", "mean_wait_ms",
                "ci95_low_ms", "ci95_high_ms", "ci_method", "batch_ci95_low_ms", "batch_ci95_high_ms",
                "p95_wait_ms", "theory_ms", "mm1_ms", "theory_p95_ms", "mm1_p95_ms", "replay_ms", "agrees",
                "tolerance_ms", "throughput_rps", "offered_rps", "mean_service_ms", "max_in_flight_hint",
                "virtual_s", "wall_s"]
REQUEST_FIELDS = ["config", "rho", "client", "index", "state", "generated", "t_submit_ns", "t_start_ns",
                  "t_first_ns", "t_finish_ns", "wait_us", "service_us", "warmup"]


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
                                                 "(fewer below: they only add idle time; at most 200 from rho 1; default 1000)")
    ap.add_argument("--mix-requests", type=int, help="requests per mix point (default 800)")
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
    a.name = model_name(a.bundle, a.name)
    a.predict = a.predict or (60 if q else 10)
    a.long_predict = a.long_predict or (90 if q else 40)
    a.rho = number_list(a.rho or ("0.3,0.8" if q else "0.1,0.3,0.5,0.7,0.8,0.9,1.0,1.1"), "--rho", PROG)
    a.mix_rho = number_list(a.mix_rho or ("0.5" if q else "0.3,0.5,0.7,0.8"), "--mix-rho", PROG)
    a.default_load = number_list(a.default_load or ("0.5,3" if q else "0.5,1,1.5,2,3,4"), "--default-load", PROG)
    a.requests = a.requests or (40 if q else 1000)
    a.mix_requests = a.mix_requests or (40 if q else 800)
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
    waits there are rare and short. Near rho = 1 a point needs many: one long
    busy period makes the waits of hundreds of successive requests long
    together, so a run of a few hundred requests holds only a handful of
    independent pieces of information (docs/experiments.md, "Open loop": "How
    sure is a mean wait?")."""
    if config == "mix":
        return a.mix_requests
    if config == "default":
        return a.default_requests
    if rho >= 1:
        # An unstable queue: its mean wait grows with the run's length and has
        # no value to compare; a few hundred requests show the saturation.
        return min(a.requests, 200)
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
    # theory says. At 32 requests in the system the client's next submit is
    # refused (KAI_EDQUOT: the quota is checked first), which only overloads
    # well above capacity reach; the report counts them (done < submitted).
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
    mean, bm_lo, bm_hi = Q.batch_means_ci(waits)
    bm_lo = max(0.0, bm_lo)   # a wait is never negative: the interval's lower end neither
    solo = cfg["solo"]
    # S to 10 us: in exact mode a timestamp can still move by a microsecond or
    # two from run to run (the timer counts in 100 ns steps); rounded, the
    # theory column of a repeated run is the same to the last digit.
    S = round(solo["short"]["mean_s"], 5)
    lam = pt["rate_rps"]
    res = {"config": cfg["config"], "rho": pt["rho"], "rate_rps": lam, "seed": pt["seed"],
           "submitted": len(rows), "done": len(done), "requests": len(kept),
           "mean_wait_ms": mean, "batch_ci95_low_ms": bm_lo, "batch_ci95_high_ms": bm_hi,
           "p95_wait_ms": percentile(waits, 95), "wall_s": pt["wall_s"], "command": pt["command"]}
    # Service times by request size, as measured alone.
    size_s = {solo["short"]["predict"]: S}
    if "long" in solo:
        size_s[solo["long"]["predict"]] = round(solo["long"]["mean_s"], 5)
    services = [size_s.get(int(r["generated"]), S) for r in done]
    arrivals = [int(r["t_submit_ns"]) / 1e9 for r in done]
    replay = Q.lindley(arrivals, services)[skip:]
    res["replay_ms"] = 1e3 * sum(replay) / len(replay) if replay else 0.0
    rho_actual = lam * S
    if pt["rho"] >= 1:
        # Offered at or above capacity: no steady state, whatever the rate's
        # last digit makes of lam * S (4.645/s * 215.28 ms is 0.99998).
        rho_actual = max(rho_actual, 1.0)
    sizes = [(1.0, S)]
    if cfg["config"] == "max_batch=1":
        theory = 1e3 * Q.md1_mean_wait(rho_actual, S)
        res["mm1_ms"] = 1e3 * Q.mm1_mean_wait(rho_actual, S)
        res["theory_p95_ms"] = 1e3 * Q.md1_wait_quantile(0.95, rho_actual, S)
        res["mm1_p95_ms"] = 1e3 * Q.mm1_wait_quantile(0.95, rho_actual, S)
    elif cfg["config"] == "mix":
        p = a.long_share / 100
        sizes = [(1 - p, S), (p, size_s[solo["long"]["predict"]])]
        m1, m2 = Q.mix_moments(sizes)
        theory = 1e3 * Q.mg1_mean_wait(lam, m1, m2) if pt["rho"] < 1 else Q.INF
        # For contrast: M/D/1 with the same mean service time (no variance).
        res["mm1_ms"] = 1e3 * Q.md1_mean_wait(lam * m1, m1)
        res["theory_p95_ms"] = res["mm1_p95_ms"] = None
    else:
        theory = None
        res["mm1_ms"] = res["theory_p95_ms"] = res["mm1_p95_ms"] = None
    res["theory_ms"] = theory
    if theory is not None and not math.isinf(theory) and waits:
        # A queue with a formula: the interval from simulated runs of the
        # ideal queue of exactly this point's shape (queueing.py, "How sure
        # is a mean wait near saturation?"), in seconds inside.
        lo, hi = Q.model_ci(mean / 1e3, lam, sizes, len(done), skip)
        lo, hi, res["ci_method"] = lo * 1e3, hi * 1e3, "model"
    else:
        # No formula (the batching engine, rho >= 1): batch means, the best
        # the data alone can do (too narrow near saturation).
        lo, hi, res["ci_method"] = bm_lo, bm_hi, "batch means"
    res["ci95_low_ms"], res["ci95_high_ms"] = lo, hi
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

def write_open_loop_csvs(out, points, boots):
    """open_loop.csv, points.csv and requests.csv."""
    # Milliseconds to 10 us (a repeated run's timestamps may differ by a
    # microsecond or two).
    write_csv(os.path.join(out, "open_loop.csv"), CSV_FIELDS,
              ([p["config"], f"{p['rho']:g}", p["requests"], f"{p['mean_wait_ms']:.2f}",
                f"{p['ci95_low_ms']:.2f}", f"{p['ci95_high_ms']:.2f}",
                "" if p["theory_ms"] is None else ("inf" if math.isinf(p["theory_ms"]) else f"{p['theory_ms']:.2f}")]
               for p in points))
    write_csv(os.path.join(out, "points.csv"), POINT_FIELDS, points)
    write_csv(os.path.join(out, "requests.csv"), REQUEST_FIELDS,
              ({"config": cfg["config"], "rho": pt["rho"], **r} for cfg in boots for pt in cfg["points"]
               for r in pt["rows"]))


def main(argv):
    a = parse_args(argv)
    if a.replot:
        with open(os.path.join(a.out, "summary.json")) as f:
            summary = json.load(f)
        summary["plots"] = open_loop_plots(a.out, summary)
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
        # The boots' own command and date (the sweep's), when they recorded them.
        first = boots[0]
        command = first.get("sweep_command", command) + ("" if "sweep_command" not in first else
                                                         "  (reported with --from-raw)")
        env = environment()
        # The sweep's real time: its longest boot (they ran side by side),
        # if every boot recorded it; analysing here takes seconds.
        walls = [b.get("boot_wall_s") for b in boots]
        start = None if None in walls else time.monotonic() - max(walls)
        return finish(a, command, boots, start, first.get("commit", env["commit"]),
                      first.get("sweep_date", env["date"]))
    if not os.path.exists(os.path.join(a.bundle, "CFG.BIN")):
        sys.exit(f"bench --open-loop: no bundle at {a.bundle} "
                 f"(make {'test-models' if a.quick else 'build/models/mid-llama/INFO.TXT'})")
    if not os.path.exists(KERNEL) or not os.path.exists(os.path.join(BIN, "aibench")):
        sys.exit("bench --open-loop: kernel or build/user/bin/aibench missing (make)")
    os.makedirs(a.out, exist_ok=True)
    command = "tools/bench.py --open-loop " + " ".join(shlex.quote(x) for x in argv)
    start = time.monotonic()
    env = environment()
    commit, date = env["commit"], env["date"]
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
                    t0 = time.monotonic()
                    results[c] = boot_config(a, img, c, logs)
                    results[c].update(sweep_command=command, sweep_date=date, commit=commit,
                                      boot_wall_s=round(time.monotonic() - t0, 1))
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
    write_open_loop_csvs(a.out, points, boots)
    summary = {"command": command, "date": date, "commit": commit, "clock": CLOCK,
               "wall_s": None if start is None else time.monotonic() - start,
               "configs_measured": [b["config"] for b in boots],
               "config": {"name": a.name, "bundle": os.path.relpath(a.bundle, ROOT), "prompt": a.prompt,
                          "predict": a.predict, "long_predict": a.long_predict, "long_share": a.long_share,
                          "warmup": a.warmup, "solo": a.solo, "seed": a.seed, "configs": a.configs,
                          "quick": a.quick},
               "solo": {b["config"]: b["solo"] for b in boots},
               "kernel_options": {b["config"]: b["kernel_options"] for b in boots},
               "points": points, "saturation": sat}
    summary["plots"] = open_loop_plots(a.out, summary)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=lambda x: None)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(report(summary))
    for p in points:
        progress(f"{p['config']:12s} rho {p['rho']:<4g} mean wait {fmt(p['mean_wait_ms'])} ms "
                 f"[{fmt(p['ci95_low_ms'])}, {fmt(p['ci95_high_ms'])}] theory {fmt(p['theory_ms'])}: "
                 f"{verdict_word(p)}")
    took = "" if summary["wall_s"] is None else f" in {summary['wall_s'] / 60:.1f} min"
    progress(f"open loop done{took}: {os.path.join(a.out, 'report.md')}")
    return 0
