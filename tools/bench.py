#!/usr/bin/python3
"""kai's benchmark study: cold versus warm start per disk model (exact mode),
counted work and a roofline projection, and a concurrent-client queueing
sweep repeated over boots (real time); written up as CSV, JSON, PNG plots and
report.md. docs/experiments.md explains the study and how to read it.

    bench.py [--out DIR] [--quick] [--bundle DIR] [--name NAME] [--smp N] [--memory SIZE]
             [--workers 1,2] [--clients 1,2,4] [--requests R] [--prompt P] [--predict N]
             [--repeat K] [--seed S] [--disk ram,nvme,ssd,hdd,sdcard] [--cold-runs K]
             [--noise-threshold PCT] [--calib-iterations N] [--float] [--deterministic] [--replot]

Two clocks (every table and plot says which):
- cold vs warm runs in exact mode (QEMU -icount, one hart: virtual time,
  1 instruction = 1 ns), one boot per disk model (--disk: QEMU throttles the
  virtual disk like that device, tools/disk_models.py), `coldwarm` K runs of
  each path: compute costs are identical from boot to boot, loading costs
  what the device would.
- the clients sweep needs several harts, so it runs in real time: each
  worker count is booted --repeat times (boots in a random order, seeded;
  client counts in a random order inside each boot), each point bracketed by
  the `calib` host-noise check. The report gives median [min-max] over the
  boots and says for each comparison whether the difference is larger than
  the spread. --deterministic runs the sweep in exact mode too (one hart:
  workers then take turns on it; see docs/experiments.md).

    bench.py --open-loop [options]   (see tools/benchlib/open_loop.py; `make bench-open-loop`)

--open-loop is a separate study: Poisson arrivals at offered loads from 0.1
to 1.1 of one-at-a-time capacity, in exact mode, drawn against M/D/1, M/G/1
and the batching engine's measured capacity.

The default study (`make bench`) uses the SmolLM2-135M-shape bundle
(build/assets/SMOL, `make smol-assets`); --quick the tiny synthetic Llama
(build/models/tiny-llama, `make test-models`). Requests use int8 activations
unless --float. Exit status 0 if every request finished, the two paths
produced identical tokens and Little's law held within 10% in every boot.
"""
import argparse
import csv
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import disk_models  # noqa: E402
import qemu_run  # noqa: E402
from benchlib import analysis  # noqa: E402
from benchlib.latency import derive, percentile, median, point_stats  # noqa: E402,F401  (used by tests)
from benchlib.noise import DEFAULT_THRESHOLD_PCT  # noqa: E402
from benchlib.options import model_name, number_list  # noqa: E402
from benchlib.output import environment, write_csv  # noqa: E402
from benchlib.parse import COLDWARM_FIELDS, parse_aibench, parse_coldwarm  # noqa: E402,F401
from benchlib.plots import EXACT, REAL, make_plots  # noqa: E402
from benchlib.report import LITTLE_TOLERANCE_PCT, write_report  # noqa: E402,F401
from benchlib.boots import BIN, KERNEL, build_image, progress  # noqa: E402,F401
from benchlib import boots  # noqa: E402

REQUEST_FIELDS = ["workers", "clients", "repeat", "client", "index", "state", "error", "prompt", "generated",
                  "queue_depth", "worker", "t_submit_ns", "t_start_ns", "t_first_ns", "t_finish_ns",
                  "queue_us", "ttft_us", "prefill_us", "tpot_us", "e2e_us", "service_us"]
DEFAULT_CALIB_ITERATIONS = 16_000_000   # about 0.1 s in real-time QEMU here


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--quick", action="store_true", help="tiny model, small study (a few minutes)")
    ap.add_argument("--bundle", help="model bundle directory")
    ap.add_argument("--name", help="its name under /AI (default: from the directory)")
    ap.add_argument("--smp", type=int, default=2, help="harts of the real-time sweep (QEMU -smp)")
    ap.add_argument("--memory", default=None, help="guest RAM (QEMU -m)")
    ap.add_argument("--workers", default="1,2", help="AI worker counts of the sweep")
    ap.add_argument("--clients", default="1,2,4", help="clients per sweep point")
    ap.add_argument("--requests", type=int, default=None, help="requests per client")
    ap.add_argument("--prompt", type=int, default=None, help="prompt tokens")
    ap.add_argument("--predict", type=int, default=None, help="tokens to generate")
    ap.add_argument("--max-batch", type=int, default=None,
                    help="kernel ai.max_batch: requests one worker runs together (1: one at a time; "
                         "default: the kernel's)")
    ap.add_argument("--repeat", type=int, default=3, help="boots per worker count of the sweep (default 3)")
    ap.add_argument("--seed", type=int, default=None, help="seed of the random boot and client order "
                                                            "(default: from the clock; recorded)")
    ap.add_argument("--disk", default=None, help="disk models of the cold/warm study, comma-separated "
                    f"({', '.join(disk_models.DISK_NAMES)}); the sweep uses the first")
    ap.add_argument("--cold-runs", type=int, default=None, help="cold/warm runs of each path per disk (0: skip)")
    ap.add_argument("--noise-threshold", type=float, default=DEFAULT_THRESHOLD_PCT,
                    help="flag a point whose calibration moved more than this many percent")
    ap.add_argument("--calib-iterations", type=int, default=DEFAULT_CALIB_ITERATIONS)
    ap.add_argument("--float", action="store_true", help="float activations (slow in real time)")
    ap.add_argument("--deterministic", action="store_true",
                    help="the sweep in exact mode too (virtual time, one hart: --smp 1)")
    ap.add_argument("--keep-image", action="store_true", help="keep bench.img in --out")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the plots and report.md from summary.json etc. in --out")
    args = ap.parse_args(argv)
    q = args.quick
    try:
        args.disks = disk_models.parse_disk_list(args.disk or ("ram,hdd" if q else ",".join(disk_models.DISK_NAMES)))
    except disk_models.UnknownDisk as e:
        ap.error(f"--disk: {e}")
    if args.max_batch is not None and not 1 <= args.max_batch <= 16:
        ap.error(f"--max-batch {args.max_batch}: want 1..16 (the kernel's ai.max_batch)")
    if args.repeat < 1:
        ap.error(f"--repeat {args.repeat}: want at least 1")
    args.sweep_disk = args.disks[0]
    if args.deterministic:
        args.smp = qemu_run.EXACT_MAX_SMP   # QEMU -icount: kai boots one hart (docs/experiments.md)
    args.bundle = os.path.abspath(args.bundle or os.path.join(ROOT, "build", "models" if q else "assets",
                                                              "tiny-llama" if q else "SMOL"))
    args.name = model_name(args.bundle, args.name)
    args.requests = args.requests or 3
    args.prompt = args.prompt or (8 if q else 4)
    args.predict = args.predict or (64 if q else 8)   # tiny requests must outlast the 10 ms sampling tick
    args.cold_runs = (2 if q else 3) if args.cold_runs is None else args.cold_runs
    args.memory = args.memory or ("1G" if q else "2G")
    args.seed = int(time.time()) % 100000 if args.seed is None else args.seed
    return args


def write_csvs(out, runs, cw_disks, sweep):
    """requests.csv, samples.csv, coldwarm.csv and calibration.csv."""
    ordered = sorted(runs, key=lambda r: (r["workers"], r["clients"], r["repeat"]))
    write_csv(os.path.join(out, "requests.csv"), REQUEST_FIELDS, (row for r in ordered for row in r["rows"]))
    write_csv(os.path.join(out, "samples.csv"), ["workers", "clients", "repeat", "t_ns", "queued", "running"],
              ([r["workers"], r["clients"], r["repeat"], *p] for r in runs for p in r["samples"]))
    write_csv(os.path.join(out, "coldwarm.csv"), ["disk"] + COLDWARM_FIELDS,
              ({"disk": d, **x} for d, r in cw_disks.items() for x in r["runs"]))
    write_csv(os.path.join(out, "calibration.csv"),
              ["workers", "clients", "repeat", "boot", "calib_before_us", "calib_after_us", "flags"],
              ([w, p["clients"], r["repeat"], r["boot"], r["calib_before_us"], r["calib_after_us"],
                "; ".join(r["flags"])] for w, points in sorted(sweep.items()) for p in points for r in p["runs"]))


def plot_inputs(runs):
    """Queue waits of every boot pooled, and the samples of the first boot of each point."""
    qwaits, samples = {}, {}
    for r in runs:
        key = (r["workers"], r["clients"])
        qwaits.setdefault(key, []).extend(int(x["queue_us"]) for x in r["rows"] if x["state"] == "done")
        if r["repeat"] == 0:
            samples[key] = r["samples"]
    return qwaits, samples


def main(argv=None):
    raw_argv = sys.argv[1:] if argv is None else argv
    if "--open-loop" in raw_argv:   # a study of its own, with its own options
        from benchlib import open_loop
        return open_loop.main([a for a in raw_argv if a != "--open-loop"])
    args = parse_args(raw_argv)
    if args.replot:
        return replot(args.out)
    q = args.quick
    command = "tools/bench.py " + " ".join(shlex.quote(a) for a in raw_argv)
    if not os.path.exists(os.path.join(args.bundle, "CFG.BIN")):
        sys.exit(f"bench: no bundle at {args.bundle} (make {'test-models' if q else 'smol-assets'})")
    if not os.path.exists(KERNEL):
        sys.exit("bench: kernel not built (make)")
    for prog in ("llmrun", "coldwarm", "aibench", "calib"):
        if not os.path.exists(os.path.join(BIN, prog)):
            sys.exit(f"bench: build/user/bin/{prog} missing (make user)")
    workers = number_list(args.workers, "--workers", "bench", whole=True)
    clients = number_list(args.clients, "--clients", "bench", whole=True)
    os.makedirs(args.out, exist_ok=True)
    env = environment()
    tmp = tempfile.mkdtemp(prefix="kai-bench-")
    logs = {}
    try:
        progress(f"building the image with {args.bundle} at /AI/{args.name}; seed {args.seed}")
        img = build_image(args.bundle, args.name, tmp)
        cw_raw = boots.cold_warm(args, img, args.disks, logs) if args.cold_runs else {}
        runs = boots.sweep(args, img, workers, clients, logs)
        if args.keep_image:
            shutil.copy(img, os.path.join(args.out, "bench.img"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for name, text in logs.items():
            with open(os.path.join(args.out, f"console-{name}.log"), "w") as f:
                f.write(text)

    sweep, calibration = analysis.sweep_points(runs, workers, clients, args.seed, args.noise_threshold)
    calibration["iterations"] = args.calib_iterations
    littles, problems = analysis.littles_law(sweep, args.requests)
    cw_disks = analysis.cold_warm_disks(cw_raw, args.seed)
    for d, r in cw_disks.items():
        if not r["tokens_identical"]:
            problems.append(f"disk {d}: cold and warm paths produced different tokens")
    write_csvs(args.out, runs, cw_disks, sweep)
    env["loadavg_end"] = "%.1f" % os.getloadavg()[0]
    summary = {"command": command, "via_make": "MAKELEVEL" in os.environ,
               "config": {"name": args.name, "bundle": os.path.relpath(args.bundle, ROOT), "smp": args.smp,
                          "memory": args.memory, "workers": workers, "clients": clients,
                          "requests": args.requests, "prompt": args.prompt, "predict": args.predict,
                          "repeat": args.repeat, "seed": args.seed, "max_batch": args.max_batch,
                          "disks": args.disks,
                          "sweep_disk": args.sweep_disk, "cold_runs": args.cold_runs, "float": args.float,
                          "noise_threshold_pct": args.noise_threshold, "quick": q,
                          "deterministic": args.deterministic},
               "time_modes": {"cold_warm": EXACT, "sweep": EXACT if args.deterministic else REAL},
               "environment": env, "wall_s": time.monotonic() - boots.STUDY_START,
               "cold_warm": {"time_mode": EXACT, "runs_each": args.cold_runs, "disks": cw_disks},
               "work": analysis.counted_work(cw_disks, args.bundle, args.prompt, args.predict),
               "sweep": {str(w): pts for w, pts in sweep.items()},
               "comparisons": analysis.comparisons(sweep, cw_disks, EXACT if args.deterministic else REAL),
               "calibration": calibration, "littles_law": littles, "problems": problems}
    progress("plots")
    qwaits, samples = plot_inputs(runs)
    summary["plots"] = make_plots(args.out, summary, qwaits, samples)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    write_report(args.out, summary, summary["plots"])
    for p in problems:
        progress(f"PROBLEM: {p}")
    progress(f"done in {summary['wall_s'] / 60:.1f} min: {os.path.join(args.out, 'report.md')}")
    return 0 if not problems else 1


def replot(out):
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    qwaits, samples = {}, {}
    with open(os.path.join(out, "requests.csv")) as f:
        for r in csv.DictReader(f):
            if r["state"] == "done":
                qwaits.setdefault((int(r["workers"]), int(r["clients"])), []).append(int(r["queue_us"]))
    with open(os.path.join(out, "samples.csv")) as f:
        for r in csv.DictReader(f):
            if r["repeat"] == "0":
                samples.setdefault((int(r["workers"]), int(r["clients"])), []).append(
                    (int(r["t_ns"]), int(r["queued"]), int(r["running"])))
    # The counted work is derived from the bundle and llmrun's timing line:
    # recompute it, so a newer work.py shows in the redrawn report.
    cfg = summary["config"]
    summary["work"] = analysis.counted_work(summary["cold_warm"]["disks"], os.path.join(ROOT, cfg["bundle"]),
                                            cfg["prompt"], cfg["predict"])
    summary["plots"] = make_plots(out, summary, qwaits, samples)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    write_report(out, summary, summary["plots"])
    progress(f"redrew {len(summary['plots'])} plots and {os.path.join(out, 'report.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
