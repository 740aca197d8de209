#!/usr/bin/python3
"""kai's benchmark study: cold versus warm start, and a concurrent-client
queueing sweep, run in QEMU, written up as CSV, JSON, PNG plots and a report.

    bench.py [--out DIR] [--quick] [--bundle DIR] [--name NAME] [--smp N]
             [--memory SIZE] [--workers 1,2] [--clients 1,2,4,8] [--requests R]
             [--prompt P] [--predict N] [--cold-runs K] [--float]

The default study (`make bench`) uses the SmolLM2-135M-shape bundle
(build/assets/SMOL, made by `make smol-assets`); --quick uses the tiny
synthetic Llama (build/models/tiny-llama, `make test-models`) and a small sweep.
For each worker count the system is booted once (kernel command line
`ai.workers=W`); in the first boot `coldwarm` compares the cold path (fork +
exec of `llmrun`, which reads the model) with the warm path (the kernel
service); then each point of the sweep is one closed-loop `aibench` run with C
clients of R requests each. Requests use int8 activations (KAI_AI_INT8,
`llmrun --int8`) unless --float: under QEMU that is about ten times faster.

Outputs in --out: requests.csv (one row per request), samples.csv (the number
of requests in the service over time), coldwarm.csv, summary.json, PNG plots,
report.md, and the console log of each boot. Exit status 0 if every request
finished, the two paths produced identical tokens and Little's law held
within 10% at every point.
"""
import argparse
import csv
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import qemu_run  # noqa: E402

PYTHON = "/usr/bin/python3"
KERNEL = os.path.join(ROOT, "build", "kernel", "kernel.elf")
BIN = os.path.join(ROOT, "build", "user", "bin")
LITTLE_TOLERANCE_PCT = 10.0
REQUEST_FIELDS = ["workers", "clients", "client", "index", "state", "error", "prompt", "generated",
                  "queue_depth", "worker", "t_submit_ns", "t_start_ns", "t_first_ns", "t_finish_ns",
                  "queue_us", "ttft_us", "prefill_us", "tpot_us", "e2e_us", "service_us"]
COLDWARM_FIELDS = ["run", "path", "e2e_us", "load_us", "ttft_us", "tpot_us", "prefill_us"]
STUDY_START = time.monotonic()


def progress(msg):
    el = int(time.monotonic() - STUDY_START)
    print(f"[bench {el // 60:02d}:{el % 60:02d}] {msg}", file=sys.stderr, flush=True)


def build_image(bundle, name, out_dir):
    img = os.path.join(out_dir, "bench.img")
    progs = [os.path.join(BIN, p) for p in sorted(os.listdir(BIN))
             if os.path.isfile(os.path.join(BIN, p)) and "." not in p]
    subprocess.check_call([PYTHON, os.path.join(HERE, "mkfsimg.py"), "--out", img, *progs,
                           "--add-dir", f"AI/{name}={bundle}"], stdout=subprocess.DEVNULL)
    return img


def run_command(session, command, timeout, label, total=None):
    """Runs one shell command in the guest, printing a progress line now and
    then (aibench --progress reports finished requests); returns its output."""
    start = session.mark()
    session.command(command, wait=False)
    t0 = time.monotonic()
    last_shown, last_time = None, t0
    while True:
        if session.wait_prompt(start, timeout=5, skip_echo=True):
            break
        now = time.monotonic()
        if now - t0 > timeout:
            raise RuntimeError(f"`{command}` did not finish in {timeout} s:\n{session.transcript[start:]}")
        done = re.findall(r"aibench: progress (\d+)/(\d+)", session.transcript[start:])
        shown = f"{done[-1][0]}/{done[-1][1]} requests" if done else (f"0/{total} requests" if total else "running")
        if shown != last_shown or now - last_time >= 30:
            progress(f"{label}: {shown}, {now - t0:.0f} s")
            last_shown, last_time = shown, now
    text = session.transcript[start:]
    text = text[text.find("\n") + 1:]                # drop the echoed command line
    if text.endswith(qemu_run.PROMPT):
        text = text[:-len(qemu_run.PROMPT)]
    if any(m in text for m in qemu_run.PANIC_MARKERS):
        raise RuntimeError(f"kernel panic during `{command}`:\n{text}")
    return text.replace("\r", "")


# ---------------------------------------------------------------- parsing

def parse_aibench(text):
    """Per-request rows, samples and the summary figures of one aibench run."""
    rows, samples, header = [], [], None
    for line in text.splitlines():
        if line.startswith("csv,client,"):
            header = line.split(",")[1:]
        elif line.startswith("csv,") and header:
            rows.append(dict(zip(header, line.split(",")[1:])))
        elif line.startswith("sample,") and not line.startswith("sample,t_ns"):
            _, t, q, r = line.split(",")
            samples.append((int(t), int(q), int(r)))
    m = re.search(r"little: L_measured=([\d.]+) lambda=([\d.]+) W=([\d.]+) lambdaW=([\d.]+)", text)
    q = re.search(r"mean queue length ([\d.]+), mean in system ([\d.]+) \((\d+) samples over ([\d.]+)% "
                  r"of the run, largest gap (\d+) ms\)", text)
    d = re.search(r"requests: (\d+) done, (\d+) failed or cancelled, (\d+) never reported, (\d+) clients died",
                  text)
    summary = {
        "L_measured": float(m.group(1)) if m else None,
        "throughput_rps": float(m.group(2)) if m else None,
        "mean_latency_s": float(m.group(3)) if m else None,
        "lambda_W": float(m.group(4)) if m else None,
        "mean_queue_length": float(q.group(1)) if q else None,
        "samples": int(q.group(3)) if q else 0,
        "sampled_pct": float(q.group(4)) if q else 0.0,
        "largest_gap_ms": int(q.group(5)) if q else None,
        "clients_died": int(d.group(4)) if d else None,
        "never_reported": int(d.group(3)) if d else None,
    }
    return rows, samples, summary


def parse_coldwarm(text):
    runs = []
    for line in text.splitlines():
        if line.startswith("coldwarm,"):
            f = line.split(",")
            runs.append({"run": int(f[1]), "path": f[2], **{k: int(v) for k, v in zip(COLDWARM_FIELDS[2:], f[3:])}})
    return runs, "tokens identical: yes" in text


def parse_boot_load(transcript, name):
    # The shell's first prompt may have landed inside the line.
    m = re.search(rf"ai: model {re.escape(name)} ready: .*loaded in (\d+) ms",
                  transcript.replace(qemu_run.PROMPT, ""))
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------- statistics

def percentile(values, p):
    """Nearest-rank percentile (as aibench computes it)."""
    if not values:
        return 0.0
    v = sorted(values)
    rank = max(1, -(-p * len(v) // 100))
    return v[int(rank) - 1]


def median(vals):
    v = sorted(vals)
    n = len(v)
    return 0 if n == 0 else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def derive(row):
    """Adds the latencies (microseconds) of one request row."""
    s, st, f, e = (int(row[k]) for k in ("t_submit_ns", "t_start_ns", "t_first_ns", "t_finish_ns"))
    g = int(row["generated"])
    done = row["state"] == "done"
    row["queue_us"] = (st - s) // 1000 if done else ""
    row["ttft_us"] = (f - s) // 1000 if done else ""
    row["prefill_us"] = (f - st) // 1000 if done else ""
    row["tpot_us"] = (e - f) // 1000 // (g - 1) if done and g > 1 else ""
    row["e2e_us"] = (e - s) // 1000 if done else ""
    row["service_us"] = (e - st) // 1000 if done else ""
    return row


def point_stats(rows):
    """Statistics of one sweep point, from its request rows (as in requests.csv)."""
    done = [r for r in rows if r["state"] == "done"]
    span_s = (max(int(r["t_finish_ns"]) for r in done) - min(int(r["t_submit_ns"]) for r in done)) / 1e9 \
        if done else 0
    tokens = sum(int(r["generated"]) for r in done)
    stats = {"requests": len(rows), "done": len(done), "span_s": span_s,
             "throughput_rps": len(done) / span_s if span_s else 0,
             "tokens_per_s": tokens / span_s if span_s else 0}
    for name in ("e2e_us", "queue_us", "ttft_us", "prefill_us", "tpot_us", "service_us"):
        vals = [int(r[name]) for r in done if r[name] != ""]
        stats[name] = {"p50": percentile(vals, 50), "p95": percentile(vals, 95),
                       "max": max(vals) if vals else 0, "mean": sum(vals) / len(vals) if vals else 0}
    return stats


def cold_warm_medians(runs):
    out = {}
    for path in ("cold", "warm"):
        sel = [r for r in runs if r["path"] == path]
        out[path] = {m: {"median": median([r[m] for r in sel]), "min": min(r[m] for r in sel),
                         "max": max(r[m] for r in sel)} for m in COLDWARM_FIELDS[2:]} if sel else {}
        if sel:
            st = [r["ttft_us"] - r["prefill_us"] for r in sel]
            out[path]["startup_us"] = {"median": median(st), "min": min(st), "max": max(st)}
    return out


# ---------------------------------------------------------------- plots

def make_plots(out, sweep, qwaits, samples, cw):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=90)
        plt.close(fig)
        files.append(name)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for w, points in sorted(sweep.items()):
        cs = [p["clients"] for p in points]
        for ax, key in ((a1, "e2e_us"), (a2, "ttft_us")):
            line, = ax.plot(cs, [p["stats"][key]["p50"] / 1e3 for p in points], "o-", label=f"{w} worker(s) p50")
            ax.plot(cs, [p["stats"][key]["p95"] / 1e3 for p in points], "s--", color=line.get_color(),
                    label=f"{w} worker(s) p95")
    for ax, title in ((a1, "End-to-end latency"), (a2, "Time to first token")):
        ax.set_xlabel("concurrent clients")
        ax.set_ylabel("ms")
        ax.set_title(title)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({p["clients"] for pts in sweep.values() for p in pts}))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    save(fig, "latency_vs_clients.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    ax2 = ax.twinx()
    for w, points in sorted(sweep.items()):
        cs = [p["clients"] for p in points]
        line, = ax.plot(cs, [p["stats"]["throughput_rps"] for p in points], "o-", label=f"{w} worker(s)")
        ax2.plot(cs, [p["stats"]["tokens_per_s"] for p in points], ":", color=line.get_color(), alpha=0.6)
    ax.set_xlabel("concurrent clients")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({p["clients"] for pts in sweep.values() for p in pts}))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_ylabel("throughput (requests/s)")
    ax2.set_ylabel("generated tokens/s (dotted)")
    ax.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    ax.set_title("Throughput vs clients")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    save(fig, "throughput_vs_clients.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    all_clients = sorted({c for (_, c) in qwaits})
    all_workers = sorted({w for (w, _) in qwaits})
    for (w, c), vals in sorted(qwaits.items()):
        if not vals:
            continue
        v = sorted(x / 1e3 for x in vals)
        ax.step([0] + v, [0] + [(i + 1) / len(v) for i in range(len(v))], where="post",
                label=f"{w} worker(s), {c} clients", color=f"C{all_clients.index(c)}",
                linestyle=["-", "--", ":", "-."][all_workers.index(w) % 4])
    ax.set_xlabel("queue wait (ms)")
    ax.set_ylabel("fraction of requests")
    ax.set_title("Queue-wait CDF")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    save(fig, "queue_wait_cdf.png")

    biggest = max((c for (_, c), pts in samples.items() if pts), default=None)
    if biggest is not None:
        ws = sorted(w for (w, c), pts in samples.items() if c == biggest and pts)
        fig, axes = plt.subplots(1, len(ws), figsize=(5 * len(ws), 3.6), sharey=True, squeeze=False)
        for ax, w in zip(axes[0], ws):
            pts = samples[(w, biggest)]
            t = [(x - pts[0][0]) / 1e9 for x, _, _ in pts]
            run = [r for _, _, r in pts]
            tot = [q + r for _, q, r in pts]
            ax.fill_between(t, 0, run, step="post", color="tab:green", alpha=0.6, label="running")
            ax.fill_between(t, run, tot, step="post", color="tab:orange", alpha=0.6, label="queued")
            ax.set_title(f"{w} worker(s), {biggest} clients")
            ax.set_xlabel("time since the run started (s)")
            ax.yaxis.get_major_locator().set_params(integer=True)
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("requests in the service")
        axes[0][0].legend(loc="upper right", fontsize=8)
        fig.suptitle("Requests in the service over time (sampled every 10 ms)", fontsize=10)
        save(fig, "in_system.png")

    if cw.get("cold") and cw.get("warm"):
        fig, ax = plt.subplots(figsize=(6, 4))
        labels = ["TTFT", "end-to-end"]
        for i, path in enumerate(("cold", "warm")):
            m = cw[path]
            xs = [x + (i - 0.5) * 0.38 for x in range(len(labels))]
            color = "tab:red" if path == "cold" else "tab:blue"
            ttft = m["ttft_us"]["median"] / 1e3
            start = min(m["startup_us"]["median"] / 1e3, ttft)
            pre = ttft - start
            e2e = m["e2e_us"]["median"] / 1e3
            ax.bar(xs[0], start, 0.36, color=color, alpha=0.45, hatch="//")
            ax.bar(xs[0], pre, 0.36, bottom=start, color=color,
                   label=f"{path}: {'fork+exec+load+setup' if path == 'cold' else 'system calls'} (hatched)"
                         " + prefill")
            ax.bar(xs[1], e2e, 0.36, color=color)
            ax.text(xs[0], start + pre, f"{start + pre:.0f}", ha="center", va="bottom", fontsize=8)
            ax.text(xs[1], e2e, f"{e2e:.0f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels)
        ax.set_ylabel("median (ms)")
        ax.set_ylim(top=ax.get_ylim()[1] * 1.15)
        ax.set_title("Cold (llmrun) vs warm (kernel service)")
        ax.legend(fontsize=8)
        save(fig, "cold_vs_warm.png")
    return files


# ---------------------------------------------------------------- report

def ms(us):
    return f"{us / 1e3:.0f}" if us >= 10000 else f"{us / 1e3:.1f}"


def write_report(out, summary, plots):
    a = summary["config"]
    env = summary["environment"]
    lines = ["# kai benchmark report", "",
             f"Command: `{summary['command']}`" + (" (run by `make bench`)" if summary.get("via_make") else ""),
             "",
             f"Model `{a['name']}` from `{a['bundle']}`; QEMU `-smp {a['smp']}`, `-m {a['memory']}`; "
             f"prompt {a['prompt']} tokens, {a['predict']} generated per request; "
             f"{'float' if a['float'] else 'int8'} activations. Commit `{env['commit']}`, "
             f"{env['date']}, host: {env['host_cpus']} CPUs, load average {env['loadavg_start']} at the start "
             f"and {env['loadavg_end']} at the end; the whole study took {summary['wall_s'] / 60:.1f} min.", ""]
    cw = summary["cold_warm"]
    if cw["medians"].get("cold"):
        c, w = cw["medians"]["cold"], cw["medians"]["warm"]
        lines += ["## Cold versus warm start", "",
                  f"{cw['runs_each']} runs of each path, alternating, same prompt; median [min..max] in ms.", "",
                  "| metric | cold (`llmrun`) | warm (kernel service) | cold / warm |", "|---|---|---|---|"]
        for m, label in (("ttft_us", "**TTFT**"), ("startup_us", "  of which start-up (TTFT - prefill)"),
                         ("load_us", "  of which reading the model"), ("prefill_us", "  of which prefill"),
                         ("tpot_us", "TPOT"), ("e2e_us", "end-to-end")):
            cc, ww = c[m], w[m]
            r = cc["median"] / ww["median"] if ww["median"] else None
            ratio = "-" if r is None else (f"{r:.2f}x" if r < 100 else f">{100 if r < 1000 else 1000}x")
            lines.append(f"| {label} | {ms(cc['median'])} [{ms(cc['min'])}..{ms(cc['max'])}] | "
                         f"{ms(ww['median'])} [{ms(ww['min'])}..{ms(ww['max'])}] | {ratio} |")
        boot = cw.get("boot_load_ms")
        lines += ["", f"Tokens identical on both paths: **{'yes' if cw['tokens_identical'] else 'NO'}**. "
                  "Cold TTFT counts from the fork of `llmrun` (exec, reading and checking the bundle, setup, "
                  "prefill) to its first token; warm TTFT from `ai_submit`. "
                  + (f"The warm path paid its loading once, at boot: the kernel loaded `{a['name']}` in "
                     f"{boot} ms." if boot is not None else ""), ""]
    lines += ["## Clients sweep", "",
              f"Closed loop: each client sends {a['requests']} requests one after another (no think time). "
              "Latencies in ms (p50 / p95); *L* is the time-average number of requests in the service "
              "(queued + running) sampled with `ai_info` every 10 ms; *λW* is throughput times mean "
              "end-to-end latency; *service* is the mean time a worker spent on a request (start to finish: "
              "it grows when the harts are shared or the host is busy, not with queueing); *busy* is "
              "throughput times mean service time, the mean number of busy workers (the utilisation law); "
              "*host load* is the host's 1-minute load average after the point "
              "(QEMU's harts are host threads: a busy host slows the guest).", "",
              "| workers | clients | done | req/s | tok/s | end-to-end | queue wait | TTFT | TPOT | service | busy "
              "| L | λW | error | host load |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for w, points in sorted(summary["sweep"].items(), key=lambda kv: int(kv[0])):
        for p in points:
            s, li = p["stats"], p["little"]
            err = li.get("error_pct")
            lines.append(
                f"| {w} | {p['clients']} | {s['done']}/{s['requests']} | {s['throughput_rps']:.3f} | "
                f"{s['tokens_per_s']:.2f} | {ms(s['e2e_us']['p50'])} / {ms(s['e2e_us']['p95'])} | "
                f"{ms(s['queue_us']['p50'])} / {ms(s['queue_us']['p95'])} | "
                f"{ms(s['ttft_us']['p50'])} / {ms(s['ttft_us']['p95'])} | {ms(s['tpot_us']['p50'])} | "
                f"{ms(s.get('service_us', {}).get('mean', 0))} | "
                f"{s['throughput_rps'] * s.get('service_us', {}).get('mean', 0) / 1e6:.2f} | "
                f"{li.get('L_measured') or 0:.2f} | {li.get('lambda_W') or 0:.2f} | "
                f"{'-' if err is None else f'{err:.1f}%'} | {p.get('host_load', '-')} |")
    ll = summary["littles_law"]
    lines += ["", f"**Little's law** (L = λW): worst disagreement {ll['worst_pct']:.1f}% — "
              f"{'within' if ll['ok'] else 'NOT within'} {LITTLE_TOLERANCE_PCT:.0f}%. "
              "Both sides are measured independently: L by a sampler process watching the service, "
              "λ and W from the kernel's per-request timestamps. The check is only as fine as the "
              "sampling: it needs requests much longer than the 10 ms tick.", ""]
    if summary["problems"]:
        lines += ["## Problems", ""] + [f"- {p}" for p in summary["problems"]] + [""]
    lines += ["## Files", "",
              "`requests.csv` (one row per request, kernel timestamps in ns and derived latencies in us), "
              "`samples.csv` (number queued and running whenever it changed), `coldwarm.csv`, "
              "`summary.json`, `console-w*.log` (what the guest printed).", ""]
    for p in plots:
        lines += [f"![{p}]({p})", ""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))


def environment():
    def cmd(*c):
        try:
            return subprocess.run(c, cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = cmd("git", "rev-parse", "--short", "HEAD") or "unknown"
    if cmd("git", "status", "--porcelain", "--untracked-files=no"):
        commit += " (with local changes)"
    return {"commit": commit, "date": time.strftime("%Y-%m-%d %H:%M %Z"), "host_cpus": os.cpu_count(),
            "host": platform.platform(), "qemu": cmd("qemu-system-riscv64", "--version").split("\n")[0],
            "loadavg_start": "%.1f" % os.getloadavg()[0]}


# ---------------------------------------------------------------- the study

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "bench"))
    ap.add_argument("--quick", action="store_true", help="tiny model, small sweep (a few minutes at most)")
    ap.add_argument("--bundle", help="model bundle directory")
    ap.add_argument("--name", help="its name under /AI (default: from the directory)")
    ap.add_argument("--smp", type=int, default=2, help="harts (QEMU -smp)")
    ap.add_argument("--memory", default=None, help="guest RAM (QEMU -m)")
    ap.add_argument("--workers", default="1,2", help="AI worker counts, one boot each")
    ap.add_argument("--clients", default=None, help="clients per sweep point")
    ap.add_argument("--requests", type=int, default=None, help="requests per client")
    ap.add_argument("--prompt", type=int, default=None, help="prompt tokens")
    ap.add_argument("--predict", type=int, default=None, help="tokens to generate")
    ap.add_argument("--cold-runs", type=int, default=None, help="cold/warm runs of each path (0: skip)")
    ap.add_argument("--float", action="store_true", help="float activations (slow, exact)")
    ap.add_argument("--keep-image", action="store_true", help="keep bench.img in --out")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the plots and report.md from the data already in --out")
    raw_argv = sys.argv[1:] if argv is None else argv
    args = ap.parse_args(raw_argv)
    if args.replot:
        return replot(args.out)
    q = args.quick
    args.bundle = os.path.abspath(args.bundle or os.path.join(ROOT, "build", "models" if q else "assets",
                                                              "tiny-llama" if q else "SMOL"))
    args.name = (args.name or os.path.basename(os.path.normpath(args.bundle))).upper().replace("-", "")[:15]
    args.clients = args.clients or ("1,2,4" if q else "1,2,4,8")
    args.requests = args.requests or 3
    args.prompt = args.prompt or (8 if q else 4)
    args.predict = args.predict or (64 if q else 8)   # tiny requests must outlast the 10 ms sampling tick
    args.cold_runs = 3 if args.cold_runs is None else args.cold_runs
    args.memory = args.memory or ("1G" if q else "2G")
    command = "tools/bench.py " + " ".join(shlex.quote(a) for a in raw_argv)
    if not os.path.exists(os.path.join(args.bundle, "CFG.BIN")):
        sys.exit(f"bench: no bundle at {args.bundle} (make {'test-models' if q else 'smol-assets'})")
    if not os.path.exists(KERNEL):
        sys.exit("bench: kernel not built (make)")
    if args.cold_runs and not os.path.exists(os.path.join(BIN, "llmrun")):
        sys.exit("bench: build/user/bin/llmrun missing (make user); or --cold-runs 0")
    workers = [int(w) for w in args.workers.split(",")]
    clients = [int(c) for c in args.clients.split(",")]
    os.makedirs(args.out, exist_ok=True)
    env = environment()
    tmp = tempfile.mkdtemp(prefix="kai-bench-")
    try:
        progress(f"building the image with {args.bundle} at /AI/{args.name}")
        img = build_image(args.bundle, args.name, tmp)
        result = study(args, img, workers, clients)
        if args.keep_image:
            shutil.copy(img, os.path.join(args.out, "bench.img"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sweep, qwaits, samples, all_rows, cw_runs, identical, boot_load, logs = result

    problems = []
    littles = {"worst_pct": 0.0, "ok": True, "tolerance_pct": LITTLE_TOLERANCE_PCT}
    for w, points in sweep.items():
        for p in points:
            s, li = p["stats"], p["little"]
            expect = p["clients"] * args.requests
            if s["requests"] != expect or s["done"] != expect:
                problems.append(f"{w} worker(s), {p['clients']} clients: {s['done']} of {expect} requests done "
                                f"({s['requests']} reported)")
            if li.get("L_measured") is not None and li.get("lambda_W"):
                li["error_pct"] = abs(li["L_measured"] - li["lambda_W"]) / li["lambda_W"] * 100
                littles["worst_pct"] = max(littles["worst_pct"], li["error_pct"])
                if li["error_pct"] > LITTLE_TOLERANCE_PCT:
                    littles["ok"] = False
                    problems.append(f"{w} worker(s), {p['clients']} clients: L={li['L_measured']:.3f} but "
                                    f"λW={li['lambda_W']:.3f} ({li['error_pct']:.1f}%; largest sampling gap "
                                    f"{li.get('largest_gap_ms')} ms)")
            else:
                littles["ok"] = False
                problems.append(f"{w} worker(s), {p['clients']} clients: no Little's law figures")
    if args.cold_runs and not identical:
        problems.append("cold and warm paths produced different tokens")

    with open(os.path.join(args.out, "requests.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=REQUEST_FIELDS, extrasaction="ignore")
        wr.writeheader()
        wr.writerows(all_rows)
    with open(os.path.join(args.out, "samples.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["workers", "clients", "t_ns", "queued", "running"])
        for (w, c), pts in sorted(samples.items()):
            wr.writerows([w, c, *p] for p in pts)
    with open(os.path.join(args.out, "coldwarm.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=COLDWARM_FIELDS)
        wr.writeheader()
        wr.writerows(cw_runs)
    for w, text in logs.items():
        with open(os.path.join(args.out, f"console-w{w}.log"), "w") as f:
            f.write(text)
    env["loadavg_end"] = "%.1f" % os.getloadavg()[0]
    summary = {"command": command, "via_make": "MAKELEVEL" in os.environ,
               "config": {"name": args.name, "bundle": os.path.relpath(args.bundle, ROOT), "smp": args.smp,
                          "memory": args.memory, "workers": workers, "clients": clients,
                          "requests": args.requests, "prompt": args.prompt, "predict": args.predict,
                          "cold_runs": args.cold_runs, "float": args.float, "quick": q},
               "environment": env, "wall_s": time.monotonic() - STUDY_START,
               "cold_warm": {"runs_each": args.cold_runs, "tokens_identical": identical,
                             "boot_load_ms": boot_load, "medians": cold_warm_medians(cw_runs), "runs": cw_runs},
               "sweep": {str(w): pts for w, pts in sweep.items()},
               "littles_law": littles, "problems": problems}
    progress("plots")
    plots = make_plots(args.out, sweep, qwaits, samples, summary["cold_warm"]["medians"])
    summary["plots"] = plots
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    write_report(args.out, summary, plots)
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
            samples.setdefault((int(r["workers"]), int(r["clients"])), []).append(
                (int(r["t_ns"]), int(r["queued"]), int(r["running"])))
    sweep = {int(w): pts for w, pts in summary["sweep"].items()}
    plots = make_plots(out, sweep, qwaits, samples, summary["cold_warm"]["medians"])
    write_report(out, summary, plots)
    progress(f"redrew {len(plots)} plots and {os.path.join(out, 'report.md')}")
    return 0


def study(args, img, workers, clients):
    int8 = "" if args.float else " --int8"
    timeout = 3600
    sweep, qwaits, samples, all_rows, cw_runs, identical, boot_load, logs = {}, {}, {}, [], [], False, None, {}
    points_total = len(workers) * len(clients)
    point = 0
    for wi, w in enumerate(workers):
        progress(f"booting with {w} worker(s), -smp {args.smp}")
        with qemu_run.Session(img, KERNEL, smp=args.smp, memory=args.memory, snapshot=True,
                              boot_timeout=180, append=f"ai.workers={w}") as s:
            if not s.booted:
                sys.exit("bench: boot failed:\n" + s.transcript)
            # The model's load line comes while the shell starts: wait for it,
            # or it may interleave with a command's output. Not fatal: console
            # output from init or the shell can split the line beyond
            # recognition (the kernel's and user space's output interleave
            # character by character).
            if not s.wait_log(rf"ai: model {re.escape(args.name)} (ready|failed)", timeout=300):
                progress(f"model {args.name}'s load line not recognised on the console; going on")
            try:
                if wi == 0 and args.cold_runs:
                    prompt = " ".join(str(1 + i) for i in range(args.prompt))
                    out = run_command(s, f"coldwarm --model {args.name} --runs {args.cold_runs} "
                                         f"--predict {args.predict}{int8} --csv {prompt}", timeout,
                                      f"cold vs warm, {args.cold_runs} runs of each")
                    cw_runs, identical = parse_coldwarm(out)
                    if not cw_runs:
                        sys.exit("bench: coldwarm printed no results:\n" + out)
                    boot_load = parse_boot_load(s.transcript, args.name)
                sweep[w] = []
                for c in clients:
                    point += 1
                    label = f"point {point}/{points_total}: {w} worker(s), {c} client(s)"
                    out = run_command(s, f"aibench --model {args.name} --clients {c} --requests {args.requests} "
                                         f"--prompt {args.prompt} --predict {args.predict}{int8} --csv --progress",
                                      timeout, label, c * args.requests)
                    rows, smp, summary = parse_aibench(out)
                    rows = [derive({"workers": w, "clients": c, **r}) for r in rows]
                    stats = point_stats(rows)
                    sweep[w].append({"clients": c, "stats": stats, "little": summary,
                                     "host_load": round(os.getloadavg()[0], 1)})
                    qwaits[(w, c)] = [int(r["queue_us"]) for r in rows if r["state"] == "done"]
                    samples[(w, c)] = smp
                    all_rows.extend(rows)
                    progress(f"{label}: {stats['done']}/{stats['requests']} done, "
                             f"{stats['throughput_rps']:.3f} req/s, p50 {stats['e2e_us']['p50'] / 1e3:.0f} ms, "
                             f"L {summary['L_measured']} vs λW {summary['lambda_W']} (largest sampling gap {summary['largest_gap_ms']} ms)")
                if boot_load is None:
                    boot_load = parse_boot_load(s.transcript, args.name)
                s.halt()
            finally:
                logs[w] = s.transcript.replace("\r", "")
    return sweep, qwaits, samples, all_rows, cw_runs, identical, boot_load, logs


if __name__ == "__main__":
    sys.exit(main())
