"""From the raw runs to what the report shows: spreads over repeats, noise
flags, comparisons, Little's law, counted work."""
import os

from . import noise, spread, work
from .parse import COLDWARM_FIELDS
from .plots import EXACT, REAL
from .report import LITTLE_TOLERANCE_PCT

# The per-boot figures of a sweep point that are summarised over repeats.
SWEEP_METRICS = {
    "throughput_rps": lambda s: s["throughput_rps"],
    "tokens_per_s": lambda s: s["tokens_per_s"],
    "e2e_p50_us": lambda s: s["e2e_us"]["p50"],
    "e2e_p95_us": lambda s: s["e2e_us"]["p95"],
    "queue_p50_us": lambda s: s["queue_us"]["p50"],
    "ttft_p50_us": lambda s: s["ttft_us"]["p50"],
    "tpot_p50_us": lambda s: s["tpot_us"]["p50"],
    "service_mean_us": lambda s: s["service_us"]["mean"],
}


def sweep_points(runs, workers, clients, seed, threshold_pct):
    """{workers: [point]} with per-boot runs, their noise flags and spreads;
    and the calibration summary."""
    calibs = [x for r in runs for x in (r["calib_before_us"], r["calib_after_us"]) if x]
    reference = spread.summarize(calibs)["median"] if calibs else None
    out = {}
    for w in workers:
        out[w] = []
        for c in clients:
            mine = sorted((r for r in runs if r["workers"] == w and r["clients"] == c), key=lambda r: r["repeat"])
            point_runs = []
            for r in mine:
                flags, figures = noise.calibration_flags(r["calib_before_us"], r["calib_after_us"], reference,
                                                         threshold_pct)
                metrics = {k: f(r["stats"]) for k, f in SWEEP_METRICS.items()}
                point_runs.append({"repeat": r["repeat"], "boot": r["boot"], "stats": r["stats"],
                                   "little": r["little"], "metrics": metrics,
                                   "calib_before_us": r["calib_before_us"], "calib_after_us": r["calib_after_us"],
                                   "noise": figures, "flags": flags, "host_load": r["host_load"]})
            seed_of = seed * 1000 + w * 100 + c
            sp = {k: spread.summarize([pr["metrics"][k] for pr in point_runs], seed_of) for k in SWEEP_METRICS}
            sp["calib_before_us"] = spread.summarize([pr["calib_before_us"] for pr in point_runs], seed_of)
            sp["calib_after_us"] = spread.summarize([pr["calib_after_us"] for pr in point_runs], seed_of)
            out[w].append({"clients": c, "runs": point_runs, "spread": sp,
                           "flagged": sum(1 for pr in point_runs if pr["flags"])})
    calibration = {"reference_us": reference, "threshold_pct": threshold_pct, "count": len(calibs),
                   "min_us": min(calibs) if calibs else None, "max_us": max(calibs) if calibs else None}
    return out, calibration


def littles_law(sweep, requests):
    problems = []
    result = {"worst_pct": 0.0, "ok": True, "tolerance_pct": LITTLE_TOLERANCE_PCT}
    sampler_off = []
    for w, points in sweep.items():
        for p in points:
            for r in p["runs"]:
                s, li = r["stats"], r["little"]
                where = f"{w} worker(s), {p['clients']} clients, repeat {r['repeat'] + 1}"
                expect = p["clients"] * requests
                if s["requests"] != expect or s["done"] != expect:
                    problems.append(f"{where}: {s['done']} of {expect} requests done ({s['requests']} reported)")
                if li.get("sampler_L") is not None and li.get("lambda_W"):
                    # Signed: the sampler process reads low (docs/experiments.md).
                    li["sampler_off_pct"] = (li["sampler_L"] - li["lambda_W"]) / li["lambda_W"] * 100
                    sampler_off.append(li["sampler_off_pct"])
                if li.get("L_measured") is not None and li.get("lambda_W"):
                    li["error_pct"] = abs(li["L_measured"] - li["lambda_W"]) / li["lambda_W"] * 100
                    result["worst_pct"] = max(result["worst_pct"], li["error_pct"])
                    if li["error_pct"] > LITTLE_TOLERANCE_PCT:
                        result["ok"] = False
                        problems.append(f"{where}: L={li['L_measured']:.3f} but λW={li['lambda_W']:.3f} "
                                        f"({li['error_pct']:.1f}%; {li.get('samples')} samples of the load meter)")
                else:
                    result["ok"] = False
                    problems.append(f"{where}: no Little's law figures")
    if sampler_off:   # the sampler process's L, beside the meter's: how far off, lowest and highest
        result["sampler_off_pct"] = [min(sampler_off), max(sampler_off)]
    return result, problems


def cold_warm_disks(raw, seed):
    """Per disk: the runs, median [min-max] of each figure per path, and the
    cold-vs-warm TTFT comparison."""
    out = {}
    for i, (d, r) in enumerate(raw.items()):
        med = {}
        for path in ("cold", "warm"):
            sel = [x for x in r["runs"] if x["path"] == path]
            med[path] = {m: spread.summarize([x[m] for x in sel], seed + i) for m in COLDWARM_FIELDS[2:]}
            med[path]["startup_us"] = spread.summarize([x["launch_ttft_us"] - x["prefill_us"] for x in sel], seed + i)
        out[d] = {**r, "medians": med, "comparison": spread.compare(med["warm"]["launch_ttft_us"], med["cold"]["launch_ttft_us"])}
    return out


def comparisons(sweep, cw_disks, sweep_clock=REAL):
    """The comparisons the study exists for; A and B are spread summaries."""
    out = []

    def add(what, clock, figure, unit, a, b):
        out.append({"what": what, "clock": clock, "figure": figure, "unit": unit, "a": a, "b": b,
                    **spread.compare(a, b)})

    for w, points in sorted(sweep.items()):
        by_c = {p["clients"]: p for p in points}
        lo = min(by_c)
        hi = 4 if 4 in by_c and lo != 4 else max(by_c)
        if hi != lo:
            for key, fig, unit in (("throughput_rps", "requests/s", "rps"), ("service_mean_us", "service time", "us"),
                                   ("e2e_p50_us", "end-to-end p50", "us")):
                add(f"{w} worker(s): {lo} (A) vs {hi} (B) clients", sweep_clock, fig, unit,
                    by_c[lo]["spread"][key], by_c[hi]["spread"][key])
    ws = sorted(sweep)
    if len(ws) >= 2:
        a, b = ws[0], ws[1]
        for pa, pb in zip(sweep[a], sweep[b]):
            if pa["clients"] == pb["clients"]:
                add(f"{pa['clients']} client(s): {a} (A) vs {b} (B) workers", sweep_clock, "requests/s", "rps",
                    pa["spread"]["throughput_rps"], pb["spread"]["throughput_rps"])
    for d, r in cw_disks.items():
        m = r["medians"]
        add(f"disk {d}: warm (A) vs cold (B)", EXACT, "launch TTFT", "us", m["warm"]["launch_ttft_us"], m["cold"]["launch_ttft_us"])
    return out


def counted_work(cw_disks, bundle_dir, n_prompt, n_gen):
    """The work section's data: counted figures from llmrun when it printed
    them, else the analytic ones; and the intensity rows."""
    import bundle as bundle_mod   # numpy; only needed here
    try:
        with open(os.path.join(bundle_dir, "CFG.BIN"), "rb") as f:
            cfg = bundle_mod.parse_cfg(f.read())
    except (OSError, bundle_mod.BundleError):
        cfg = None
    timing = next((r["timing_line"] for r in cw_disks.values() if r.get("timing_line")), None)
    counted = work.parse_counted(timing)
    ana = work.analytic(cfg, n_prompt, n_gen) if cfg is not None else None
    figures, source = (counted, "counted") if counted else (ana, "analytic")
    if figures is None:
        return {"source": "none", "phases": [], "timing_line": timing}
    check = None
    if counted and ana:
        worst = max(abs(counted[k] - ana[k]) / ana[k] * 100 for k in work.COUNTED_KEYS if ana[k])
        check = (f"The runtime's counts agree with the analytic figures within {worst:.1f}% "
                 "(tools/benchlib/work.py).")
    return {"source": source, "figures": figures, "analytic": ana, "timing_line": timing, "check": check,
            "phases": work.phases(figures, cfg, n_prompt, n_gen)}
