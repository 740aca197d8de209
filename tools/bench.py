#!/usr/bin/python3
"""kai's benchmark study: cold versus warm start, and a concurrent-client
queueing sweep, run in QEMU, written up as CSV, JSON, PNG plots and a report.

    bench.py [--out DIR] [--quick] [--bundle DIR] [--smp N] [--workers 1,2]
             [--clients 1,2,4,8] [--requests R] [--prompt P] [--predict N]
             [--cold-runs K] [--float]

The default study (`make bench`) uses the SmolLM2-135M-shape bundle
(build/assets/SMOL, made by `make smol-assets`); --quick uses the tiny
synthetic Llama (build/models/tiny-llama) and a small sweep that finishes in a
few minutes. For each worker count the system is booted once; each point of
the sweep is one `aibench` run in that boot. The cold/warm comparison is one
`coldwarm` run. Requests use int8 activations (KAI_AI_INT8, `llmrun --int8`)
unless --float: under QEMU that is about ten times faster.
"""
import argparse
import csv
import json
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import qemu_run  # noqa: E402

PYTHON = "/usr/bin/python3"
KERNEL = os.path.join(ROOT, "build", "kernel", "kernel.elf")
BIN = os.path.join(ROOT, "build", "user", "bin")


def progress(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def build_image(bundle, name, out_dir):
    img = os.path.join(out_dir, "bench.img")
    progs = [os.path.join(BIN, p) for p in sorted(os.listdir(BIN))
             if os.path.isfile(os.path.join(BIN, p)) and "." not in p]
    subprocess.check_call([PYTHON, os.path.join(HERE, "mkfsimg.py"), "--out", img, *progs,
                           "--add-dir", f"AI/{name}={bundle}"], stdout=subprocess.DEVNULL)
    return img


def command_output(session, command, timeout):
    start = session.mark()
    if not session.command(command, timeout=timeout):
        raise RuntimeError(f"`{command}` did not finish in {timeout} s:\n{session.transcript[start:]}")
    text = session.transcript[start:]
    text = text[text.find("\n") + 1:]                # drop the echoed command line
    if text.endswith(qemu_run.PROMPT):
        text = text[:-len(qemu_run.PROMPT)]
    if any(m in text for m in qemu_run.PANIC_MARKERS):
        raise RuntimeError(f"kernel panic during `{command}`:\n{text}")
    return text.replace("\r", "")


def parse_aibench(text):
    """Per-request CSV rows and the summary figures of one aibench run."""
    rows = []
    lines = text.splitlines()
    header = None
    for line in lines:
        if line.startswith("csv,client,"):
            header = line.split(",")[1:]
        elif line.startswith("csv,") and header:
            rows.append(dict(zip(header, line.split(",")[1:])))
    m = re.search(r"little: L_measured=([\d.]+) lambda=([\d.]+) W=([\d.]+) lambdaW=([\d.]+)", text)
    q = re.search(r"mean queue length ([\d.]+), mean in system ([\d.]+)", text)
    summary = {
        "L_measured": float(m.group(1)) if m else None,
        "throughput_rps": float(m.group(2)) if m else None,
        "mean_latency_s": float(m.group(3)) if m else None,
        "lambda_W": float(m.group(4)) if m else None,
        "mean_queue_length": float(q.group(1)) if q else None,
    }
    return rows, summary


def percentile(values, p):
    if not values:
        return 0.0
    v = sorted(values)
    rank = max(1, -(-p * len(v) // 100))
    return v[int(rank) - 1]


def point_stats(rows):
    done = [r for r in rows if r["state"] == "done"]
    us = lambda a, b: (int(b) - int(a)) / 1000.0
    e2e = [us(r["t_submit_ns"], r["t_finish_ns"]) for r in done]
    qw = [us(r["t_submit_ns"], r["t_start_ns"]) for r in done]
    ttft = [us(r["t_submit_ns"], r["t_first_ns"]) for r in done]
    tpot = [us(r["t_first_ns"], r["t_finish_ns"]) / (int(r["generated"]) - 1)
            for r in done if int(r["generated"]) > 1]
    span_s = (max(int(r["t_finish_ns"]) for r in done) - min(int(r["t_submit_ns"]) for r in done)) / 1e9 \
        if done else 0
    tokens = sum(int(r["generated"]) for r in done)
    stats = {"requests": len(rows), "done": len(done),
             "throughput_rps": len(done) / span_s if span_s else 0,
             "tokens_per_s": tokens / span_s if span_s else 0}
    for name, vals in (("e2e_us", e2e), ("queue_us", qw), ("ttft_us", ttft), ("tpot_us", tpot)):
        stats[name] = {"p50": percentile(vals, 50), "p95": percentile(vals, 95),
                       "max": max(vals) if vals else 0, "mean": sum(vals) / len(vals) if vals else 0}
    return stats, qw


def parse_coldwarm(text):
    runs = []
    for line in text.splitlines():
        if line.startswith("coldwarm,"):
            _, k, path, e2e, load, ttft, tpot = line.split(",")
            runs.append({"run": int(k), "path": path, "e2e_us": int(e2e), "load_us": int(load),
                         "ttft_us": int(ttft), "tpot_us": int(tpot)})
    identical = "tokens identical: yes" in text
    return runs, identical


def median(vals):
    v = sorted(vals)
    n = len(v)
    return 0 if n == 0 else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def make_plots(out, sweep, qwaits, cold_warm):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []

    fig, ax = plt.subplots(figsize=(6, 4))
    for w, points in sorted(sweep.items()):
        cs = [p["clients"] for p in points]
        ax.plot(cs, [p["stats"]["e2e_us"]["p50"] / 1e3 for p in points], "o-", label=f"{w} worker(s) p50")
        ax.plot(cs, [p["stats"]["e2e_us"]["p95"] / 1e3 for p in points], "s--", label=f"{w} worker(s) p95")
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_title("Latency percentiles vs clients")
    ax.legend()
    ax.grid(alpha=0.3)
    files.append("latency_vs_clients.png")
    fig.tight_layout()
    fig.savefig(os.path.join(out, files[-1]), dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for w, points in sorted(sweep.items()):
        ax.plot([p["clients"] for p in points], [p["stats"]["throughput_rps"] for p in points], "o-",
                label=f"{w} worker(s)")
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("throughput (requests/s)")
    ax.set_title("Throughput vs clients")
    ax.legend()
    ax.grid(alpha=0.3)
    files.append("throughput_vs_clients.png")
    fig.tight_layout()
    fig.savefig(os.path.join(out, files[-1]), dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for (w, c), vals in sorted(qwaits.items()):
        if not vals:
            continue
        v = sorted(x / 1e3 for x in vals)
        ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", label=f"{w}w, {c} clients")
    ax.set_xlabel("queue wait (ms)")
    ax.set_ylabel("fraction of requests")
    ax.set_title("Queue-wait CDF")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    files.append("queue_wait_cdf.png")
    fig.tight_layout()
    fig.savefig(os.path.join(out, files[-1]), dpi=110)
    plt.close(fig)

    if cold_warm:
        metrics = ["e2e_us", "load_us", "ttft_us", "tpot_us"]
        cold = [median([r[m] for r in cold_warm if r["path"] == "cold"]) / 1e3 for m in metrics]
        warm = [median([r[m] for r in cold_warm if r["path"] == "warm"]) / 1e3 for m in metrics]
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = range(len(metrics))
        ax.bar([x - 0.2 for x in xs], cold, 0.4, label="cold (llmrun)")
        ax.bar([x + 0.2 for x in xs], warm, 0.4, label="warm (kernel service)")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(["end-to-end", "loading", "TTFT", "TPOT"])
        ax.set_ylabel("median (ms)")
        ax.set_title("Cold vs warm start")
        ax.legend()
        files.append("cold_vs_warm.png")
        fig.tight_layout()
        fig.savefig(os.path.join(out, files[-1]), dpi=110)
        plt.close(fig)
    return files


def write_report(out, args, command, sweep, cold_warm, identical, plots, littles):
    lines = ["# kai benchmark report", "",
             f"Command: `{command}`", "",
             f"Model: `{args.name}` from `{args.bundle}`; QEMU `-smp {args.smp}`; "
             f"prompt {args.prompt} tokens, {args.predict} generated, "
             f"{'float' if args.float else 'int8'} activations; "
             f"{time.strftime('%Y-%m-%d %H:%M')}.", ""]
    if cold_warm:
        lines += ["## Cold versus warm start", "",
                  "| metric (ms) | cold median | warm median | cold/warm |", "|---|---|---|---|"]
        for m, label in (("e2e_us", "end-to-end"), ("load_us", "loading"), ("ttft_us", "TTFT"),
                         ("tpot_us", "TPOT")):
            c = median([r[m] for r in cold_warm if r["path"] == "cold"]) / 1e3
            w = median([r[m] for r in cold_warm if r["path"] == "warm"]) / 1e3
            ratio = f"{c / w:.2f}x" if w else "-"
            lines.append(f"| {label} | {c:.1f} | {w:.1f} | {ratio} |")
        lines += ["", f"Tokens identical on both paths: **{'yes' if identical else 'NO'}**. "
                  "Cold TTFT counts from the fork of `llmrun` (exec, loading, prefill); warm TTFT "
                  "from `ai_submit`.", ""]
    lines += ["## Clients sweep", "",
              "| workers | clients | done | req/s | tok/s | e2e p50 | e2e p95 | queue p50 | queue p95 | "
              "TTFT p50 | TPOT p50 | L measured | λW | Little error |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for w, points in sorted(sweep.items()):
        for p in points:
            s, l = p["stats"], p["little"]
            err = l.get("error_pct")
            lines.append(
                f"| {w} | {p['clients']} | {s['done']}/{s['requests']} | {s['throughput_rps']:.3f} | "
                f"{s['tokens_per_s']:.2f} | {s['e2e_us']['p50'] / 1e3:.0f} | {s['e2e_us']['p95'] / 1e3:.0f} | "
                f"{s['queue_us']['p50'] / 1e3:.0f} | {s['queue_us']['p95'] / 1e3:.0f} | "
                f"{s['ttft_us']['p50'] / 1e3:.0f} | {s['tpot_us']['p50'] / 1e3:.1f} | "
                f"{l.get('L_measured', 0) or 0:.2f} | {l.get('lambda_W', 0) or 0:.2f} | "
                f"{'-' if err is None else f'{err:.1f}%'} |")
    lines += ["", "Latencies in ms. *L measured* is the time-average number of requests in the "
              "service (queued + running), sampled with `ai_info` every 10 ms; *λW* is throughput "
              "times mean end-to-end latency. Little's law says they are equal.", "",
              f"Little's law: worst disagreement {littles['worst_pct']:.1f}% "
              f"({'within' if littles['ok'] else 'NOT within'} 10%).", ""]
    for p in plots:
        lines += [f"![{p}]({p})", ""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--quick", action="store_true", help="tiny model, small sweep")
    ap.add_argument("--bundle", help="model bundle directory")
    ap.add_argument("--name", help="its name under /AI (default: from the directory)")
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--memory", default=None)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--clients", default=None)
    ap.add_argument("--requests", type=int, default=None, help="per client")
    ap.add_argument("--prompt", type=int, default=None)
    ap.add_argument("--predict", type=int, default=None)
    ap.add_argument("--cold-runs", type=int, default=None)
    ap.add_argument("--float", action="store_true", help="float activations (slow, exact)")
    args = ap.parse_args(argv)
    q = args.quick
    args.bundle = args.bundle or os.path.join(ROOT, "build", "models" if q else "assets",
                                              "tiny-llama" if q else "SMOL")
    args.name = (args.name or os.path.basename(os.path.normpath(args.bundle))).upper().replace("-", "")[:15]
    args.clients = args.clients or ("1,2,4" if q else "1,2,4,8")
    args.requests = args.requests or (3 if q else 2)
    args.prompt = args.prompt or 8
    args.predict = args.predict or (16 if q else 8)
    args.cold_runs = args.cold_runs or 3
    args.memory = args.memory or ("1G" if q else "2G")
    command = "python3 tools/bench.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    if not os.path.exists(os.path.join(args.bundle, "CFG.BIN")):
        sys.exit(f"bench: no bundle at {args.bundle} (make {'test-models' if q else 'smol-assets'})")
    if not os.path.exists(KERNEL):
        sys.exit("bench: kernel not built (make)")
    os.makedirs(args.out, exist_ok=True)
    progress(f"building the image with {args.bundle} at /AI/{args.name}")
    img = build_image(args.bundle, args.name, args.out)
    int8 = "" if args.float else " --int8"
    workers = [int(w) for w in args.workers.split(",")]
    clients = [int(c) for c in args.clients.split(",")]
    per_request_timeout = 3600

    sweep, qwaits, all_rows, cold_warm, identical = {}, {}, [], [], False
    littles = {"worst_pct": 0.0, "ok": True}
    for wi, w in enumerate(workers):
        progress(f"booting with {w} worker(s), -smp {args.smp}")
        with qemu_run.Session(img, KERNEL, smp=args.smp, memory=args.memory, snapshot=True,
                              boot_timeout=120, append=f"ai.workers={w}") as s:
            if not s.booted:
                sys.exit("bench: boot failed:\n" + s.transcript)
            if wi == 0:
                progress("cold vs warm (coldwarm)")
                out = command_output(s, f"coldwarm --model {args.name} --runs {args.cold_runs} "
                                        f"--predict {args.predict}{int8} --csv " +
                                        " ".join(str(1 + i) for i in range(args.prompt)), per_request_timeout)
                cold_warm, identical = parse_coldwarm(out)
                if not cold_warm:
                    sys.exit("bench: coldwarm printed no results:\n" + out)
            sweep[w] = []
            for c in clients:
                progress(f"{w} worker(s): {c} client(s) x {args.requests} requests")
                out = command_output(s, f"aibench --model {args.name} --clients {c} --requests {args.requests} "
                                        f"--prompt {args.prompt} --predict {args.predict}{int8} --csv",
                                     per_request_timeout)
                rows, summary = parse_aibench(out)
                stats, qw = point_stats(rows)
                little = dict(summary)
                if summary["L_measured"] and summary["lambda_W"]:
                    little["error_pct"] = abs(summary["L_measured"] - summary["lambda_W"]) / summary["lambda_W"] * 100
                    littles["worst_pct"] = max(littles["worst_pct"], little["error_pct"])
                    littles["ok"] = littles["ok"] and little["error_pct"] <= 10
                sweep[w].append({"clients": c, "stats": stats, "little": little})
                qwaits[(w, c)] = qw
                for r in rows:
                    all_rows.append({"workers": w, "clients": c, **r})
            s.halt()

    with open(os.path.join(args.out, "requests.csv"), "w", newline="") as f:
        if all_rows:
            wr = csv.DictWriter(f, fieldnames=list(all_rows[0].keys()))
            wr.writeheader()
            wr.writerows(all_rows)
    with open(os.path.join(args.out, "coldwarm.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=["run", "path", "e2e_us", "load_us", "ttft_us", "tpot_us"])
        wr.writeheader()
        wr.writerows(cold_warm)
    summary = {"command": command, "model": args.name, "bundle": args.bundle, "smp": args.smp,
               "prompt": args.prompt, "predict": args.predict, "int8": not args.float,
               "sweep": {str(w): pts for w, pts in sweep.items()},
               "cold_warm": cold_warm, "tokens_identical": identical, "littles_law": littles}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    progress("plots")
    plots = make_plots(args.out, sweep, qwaits, cold_warm)
    write_report(args.out, args, command, sweep, cold_warm, identical, plots, littles)
    progress(f"done: {os.path.join(args.out, 'report.md')}")
    return 0 if identical and littles["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
