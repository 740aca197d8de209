#!/usr/bin/python3
"""The speculative-decoding lab (docs/experiments.md, "Speculative decoding").

    python3 tools/spec_lab.py [--image build/fs-smol.img] [--ks 0,1,2,4,8]
                              [--accept 0,0.5,0.8,1] [--predict 16] [--seeds N]
                              [--concurrent C,... [--concurrent-ks 2,5,8] [--concurrent-accept A]]
                              [--out build/spec_lab.md]

Boots kai in exact mode (qemu_run --deterministic: the guest clock counts
instructions, 1 ns each, so every figure repeats from boot to boot), one
hart, and measures in one boot:
  * perfbench --case decode@B for B = 1..max(k)+1: the cost of one batched
    pass of B positions (instructions = ns), so r(n) = pass(n) / pass(1);
  * `ai --model SMOL --int8 --predict P --align-tick --timing` plain (k = 0),
    and with --speculate oracle:k:A for every k and A (and --adaptive, k
    moving in 0..max(k)): the kernel's TPOT, drafts and accepted drafts of
    one request; with --seeds N, N corruption patterns (`ai --seed`) per
    acceptance strictly between 0 and 1, averaged;
  * with --concurrent C,...: for each C, C such requests at once (the shell's `&` and
    `wait`), plain and with each of --concurrent-ks drafts: how much of
    the gain is left when other requests already fill the pass.
The model: a pass of k+1 positions costs r(k+1) plain steps and yields, when
each draft is accepted with probability A independently until the first
rejection, E = (1 - A^(k+1)) / (1 - A) tokens; so the predicted TPOT ratio
is r(k+1) / E and the break-even acceptance is the A where E = r(k+1).
Every k sees the same predictions for a given A and seed, and with k = 1
each pass checks exactly one draft, so that row's accepted/drafted is the
acceptance the predictions really have (A_eff; a short answer is a small
sample); the last column uses it.
With --real-time R the tool boots without exact mode (the guest clock is
the host's: real time, so run it on a quiet host and nothing else), still
one hart, and runs R rounds that alternate plain decoding with k = 4 at
A = 0.8 (each oracle seed) and the adaptive 0..8 at A = 0.8: each round's
ratio compares runs seconds apart, so slow drifts of the host cancel; the
table gives every round's ratio and their median.
Writes a markdown table (and prints it). Standard library only."""
import argparse
import contextlib
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPT = "1 2 3 4 5"


def tokens_per_pass(a, k):
    """Expected tokens one pass of k drafts publishes at acceptance a."""
    return float(k + 1) if a >= 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)


def break_even(r, k):
    """The acceptance at which a pass of k drafts costs what plain decoding
    of its tokens costs (bisection: tokens_per_pass grows with a)."""
    if k == 0:
        return 0.0
    if tokens_per_pass(1.0, k) < r:
        return float("nan")   # never pays, even when every draft is kept
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if tokens_per_pass(mid, k) < r:
            lo = mid
        else:
            hi = mid
    return hi


def ai_command(predict, k, a, adaptive=False, seed=0, prompt=PROMPT, align=True):
    """One `ai` request; seed picks the oracle's corruption pattern."""
    spec = f"--speculate oracle:{k}:{a:g} " + ("--adaptive " if adaptive else "") if k > 0 else ""
    seed_opt = f"--seed {seed} " if seed else ""
    tick = "--align-tick " if align else ""
    return f"ai --model SMOL --int8 --predict {predict} {tick}--timing {seed_opt}{spec}{prompt}"


def concurrent_command(predict, k, a, clients):
    """`clients` requests at once (the shell's & and wait), each its own
    prompt and corruption seed: the batch's TPOT with and without drafts."""
    parts = [ai_command(predict, k, a, seed=c, prompt=" ".join(str(c + i) for i in range(1, 6)), align=False)
             for c in range(clients)]
    return " & ".join(parts) + " & wait"


def parse_timing(out):
    m = re.search(r"tpot_us=(\d+).*drafted=(\d+) accepted=(\d+)", out)
    if not m:
        raise SystemExit(f"spec_lab: no timing line in:\n{out}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def parse_all_timings(out, n):
    """Mean TPOT, drafted and accepted sums of the n timing lines in out."""
    found = re.findall(r"tpot_us=(\d+).*?drafted=(\d+) accepted=(\d+)", out)
    if len(found) != n:
        raise SystemExit(f"spec_lab: {len(found)} timing lines, not {n}, in:\n{out}")
    return (sum(int(t) for t, _, _ in found) / n, sum(int(d) for _, d, _ in found),
            sum(int(x) for _, _, x in found))


def seeds_for(a, seeds):
    """At A = 0 and A = 1 every seed gives the same prediction: one run."""
    return range(seeds) if 0 < a < 1 else range(1)


def seeded(outputs, predict, k, a, seeds, adaptive=False):
    """Mean TPOT and summed drafted/accepted over the oracle's seeds."""
    got = [parse_timing(outputs[ai_command(predict, k, a, adaptive, seed)]) for seed in seeds_for(a, seeds)]
    return sum(t for t, _, _ in got) / len(got), sum(d for _, d, _ in got), sum(x for _, _, x in got)


@contextlib.contextmanager
def lab_session(args, deterministic):
    """One hart, 1 GiB, booted and SMOL loaded: the lab's guest."""
    with qemu_run.Session(args.image, args.kernel, smp=1, memory="1G", snapshot=True, boot_timeout=600,
                          deterministic=deterministic) as s:
        if not s.booted:
            raise SystemExit("spec_lab: boot failed\n" + s.transcript)
        if not s.wait_log(r"ai: model SMOL (ready|failed)", timeout=900):
            raise SystemExit("spec_lab: model SMOL never loaded\n" + s.transcript)
        yield s


def plot_lab(path, pass_ns, points, adaptive_points):
    """TPOT / plain against acceptance: the model's curve r(k+1) / E(A, k)
    for each k (lines) and the measured runs at their real acceptance (dots:
    fixed k; crosses: adaptive). The curves cross 1.0 at the break-even A."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from benchlib.plots import pyplot, save_png
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    grid = [i / 100 for i in range(101)]
    colours = {}
    for k in sorted({k for k, _, _ in points}):
        r = pass_ns[k + 1][1] / pass_ns[1][1]
        line, = ax.plot(grid, [r / tokens_per_pass(a, k) for a in grid], label=f"k = {k} (model)")
        colours[k] = line.get_color()
    for k, a, ratio in points:
        ax.plot([a], [ratio], "o", color=colours[k])
    for a, ratio in adaptive_points:
        ax.plot([a], [ratio], "kx", markersize=8)
    ax.plot([], [], "kx", label="adaptive 0..K (measured)")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_ylim(0, 2.2)
    ax.set_xlabel("acceptance A (measured: accepted / drafted at k = 1)")
    ax.set_ylabel("TPOT / plain decoding")
    ax.set_title("Speculative decoding, exact mode (dots: measured)")
    ax.legend(fontsize=8)
    save_png(fig, path)


def real_time_rounds(args):
    """Paired, alternating real-time runs: plain, k = 4 (every seed), adaptive."""
    a = args.concurrent_accept
    seeds = list(seeds_for(a, args.seeds))
    plain = ai_command(args.predict, 0, 0)
    fixed = [ai_command(args.predict, 4, a, seed=x) for x in seeds]
    adaptive = [ai_command(args.predict, 8, a, True, x) for x in seeds]
    rows = []
    started = time.time()
    with lab_session(args, deterministic=False) as s:
        def run(cmd):
            start = s.mark()
            if not s.command(cmd, timeout=3600):
                raise SystemExit(f"spec_lab: `{cmd}` timed out\n" + s.since(start))
            return parse_timing(s.since(start))[0]
        run(plain)   # warm the translation cache before the first measured round
        for r in range(args.real_time):
            p1 = run(plain)
            f = sum(run(c) for c in fixed) / len(fixed)
            ad = sum(run(c) for c in adaptive) / len(adaptive)
            p2 = run(plain)
            base = (p1 + p2) / 2   # plain before and after: the pair brackets the drafted runs
            rows.append((base, f, ad))
            print(f"[{time.time() - started:6.0f} s] round {r + 1}: plain {base:.0f} us, k=4 {f / base:.3f}, "
                  f"adaptive {ad / base:.3f}", file=sys.stderr, flush=True)
        s.halt()

    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
    lines = [f"Real time (host clock, `-smp 1`, not exact mode), SMOL shape, int8, one request, "
             f"--predict {args.predict}, prompt `{PROMPT}`, A = {a:g}, oracle seeds 0..{len(seeds) - 1}; "
             f"{args.real_time} rounds, each plain / k = 4 / adaptive 0..8 / plain; "
             f"{time.strftime('%Y-%m-%d', time.gmtime())}.", "",
             "| round | plain TPOT us (mean of the pair) | k = 4 / plain | adaptive / plain |", "|---|---|---|---|"]
    for i, (base, f, ad) in enumerate(rows):
        lines.append(f"| {i + 1} | {base:.0f} | {f / base:.3f} | {ad / base:.3f} |")
    lines.append(f"| median | {median([b for b, _, _ in rows]):.0f} | {median([f / b for b, f, _ in rows]):.3f} | "
                 f"{median([ad / b for b, _, ad in rows]):.3f} |")
    return "\n".join(lines) + "\n", started


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "fs-smol.img"))
    ap.add_argument("--kernel", default=qemu_run.DEFAULT_KERNEL)
    ap.add_argument("--ks", default="0,1,2,4,8")
    ap.add_argument("--accept", default="0,0.5,0.8,1")
    ap.add_argument("--predict", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=1,
                    help="corruption patterns of the oracle per (k, A), averaged (--seed 0..N-1)")
    ap.add_argument("--concurrent", default="",
                    help="also run C requests at once for each C of this list (e.g. 2,4,8), plain and with "
                         "--concurrent-ks at --concurrent-accept")
    ap.add_argument("--concurrent-ks", default="2,5,8")
    ap.add_argument("--concurrent-accept", type=float, default=0.8)
    ap.add_argument("--real-time", type=int, default=0, metavar="ROUNDS",
                    help="instead of the exact-mode lab: ROUNDS paired real-time rounds (plain, k = 4, "
                         "adaptive, plain) at --concurrent-accept, one hart; needs a quiet host")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "spec_lab.md"))
    ap.add_argument("--plot", default=os.path.join(ROOT, "build", "spec_lab.png"),
                    help="the exact-mode lab's plot: TPOT / plain against A, model and measured")
    args = ap.parse_args()
    if args.real_time:
        if not os.path.exists(args.image):
            raise SystemExit(f"spec_lab: {args.image} missing: run `make fsimg-smol`")
        table, started = real_time_rounds(args)
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(table)
        print(table)
        print(f"spec_lab: {args.real_time} real-time rounds in {time.time() - started:.0f} s; table in {args.out}",
              file=sys.stderr)
        return
    ks = [int(k) for k in args.ks.split(",")]
    accepts = [float(a) for a in args.accept.split(",")]
    if not os.path.exists(args.image):
        raise SystemExit(f"spec_lab: {args.image} missing: run `make fsimg-smol`")
    if args.concurrent and not re.fullmatch(r"\d+(,\d+)*", args.concurrent):
        raise SystemExit(f"spec_lab: --concurrent: '{args.concurrent}' is not a list of client counts like 2,4,8")
    cases = [f"perfbench --case decode@{b}" for b in range(1, max(ks) + 2)]
    runs = [ai_command(args.predict, 0, 0)]
    runs += [ai_command(args.predict, k, a, seed=x) for k in ks if k > 0 for a in accepts
             for x in seeds_for(a, args.seeds)]
    runs += [ai_command(args.predict, max(ks), a, True, x) for a in accepts for x in seeds_for(a, args.seeds)]
    clients = [int(c) for c in args.concurrent.split(",")] if args.concurrent else []
    cks = [int(k) for k in args.concurrent_ks.split(",")] if clients else []
    for c in clients:
        runs += [concurrent_command(args.predict, k, args.concurrent_accept, c) for k in [0] + cks]
    outputs = {}
    started = time.time()
    with lab_session(args, deterministic=True) as s:
        for cmd in cases + runs:
            start = s.mark()
            if not s.command(cmd, timeout=3600):
                raise SystemExit(f"spec_lab: `{cmd}` timed out\n" + s.since(start))
            outputs[cmd] = s.since(start)
            print(f"[{time.time() - started:6.0f} s] {cmd}", file=sys.stderr, flush=True)
        s.halt()
    pass_ns = {}
    for b in range(1, max(ks) + 2):
        m = re.search(r"perf case=decode batch=\d+ tokens=\d+ macs=(\d+) ns=(\d+)", outputs[cases[b - 1]])
        if not m:
            raise SystemExit(f"spec_lab: no perf line for decode@{b}:\n{outputs[cases[b - 1]]}")
        pass_ns[b] = (int(m.group(1)), int(m.group(2)))
    plain_tpot, _, _ = parse_timing(outputs[runs[0]])
    lines = [f"Exact mode (virtual time: 1 guest ns = 1 instruction), SMOL shape, int8, one request, "
             f"--predict {args.predict}, prompt `{PROMPT}`, oracle seeds 0..{args.seeds - 1} (TPOT: their mean); "
             f"{time.strftime('%Y-%m-%d', time.gmtime())}.",
             "", "Cost of one pass of n positions (perfbench decode@n): r(n) = pass(n) / pass(1).", "",
             "| n | instr/MAC | r(n) |", "|---|---|---|"]
    for b, (macs, ns) in sorted(pass_ns.items()):
        lines.append(f"| {b} | {ns / macs:.2f} | {ns / pass_ns[1][1]:.2f} |")
    lines += ["", f"Plain decoding (k = 0): TPOT {plain_tpot} us.", "",
              "| k | break-even A | A asked | accepted/drafted | TPOT us | TPOT / plain | model at A | A_eff | model at A_eff |",
              "|---|---|---|---|---|---|---|---|---|"]
    a_eff = {}
    points, adaptive_points = [], []
    if 1 in ks:
        for a in accepts:
            _, drafted, accepted = seeded(outputs, args.predict, 1, a, args.seeds)
            a_eff[a] = accepted / drafted if drafted else a
    for k in ks:
        if k == 0:
            continue
        r = pass_ns[k + 1][1] / pass_ns[1][1]
        for a in accepts:
            tpot, drafted, accepted = seeded(outputs, args.predict, k, a, args.seeds)
            measured_a = f"{accepted}/{drafted}" if drafted else "0/0"
            eff = a_eff.get(a, a)
            points.append((k, eff, tpot / plain_tpot))
            lines.append(f"| {k} | {break_even(r, k):.2f} | {a:g} | {measured_a} | {tpot:.0f} | "
                         f"{tpot / plain_tpot:.2f} | {r / tokens_per_pass(a, k):.2f} | {eff:.2f} | "
                         f"{r / tokens_per_pass(eff, k):.2f} |")
    for a in accepts:
        tpot, drafted, accepted = seeded(outputs, args.predict, max(ks), a, args.seeds, adaptive=True)
        adaptive_points.append((a_eff.get(a, a), tpot / plain_tpot))
        lines.append(f"| 0..{max(ks)} adaptive | | {a:g} | {accepted}/{drafted} | {tpot:.0f} | "
                     f"{tpot / plain_tpot:.2f} | | | |")
    for c in clients:
        base, _, _ = parse_all_timings(outputs[concurrent_command(args.predict, 0, 0, c)], c)
        lines += ["", f"{c} requests at once (`ai ... & ... & wait`, each its own prompt and seed), "
                  f"A = {args.concurrent_accept:g}: mean TPOT of the {c}.", "",
                  "| k | accepted/drafted | mean TPOT us | / plain in the same batch | / plain alone |",
                  "|---|---|---|---|---|", f"| 0 | | {base:.0f} | 1.00 | {base / plain_tpot:.2f} |"]
        for k in cks:
            tpot, drafted, accepted = parse_all_timings(
                outputs[concurrent_command(args.predict, k, args.concurrent_accept, c)], c)
            lines.append(f"| {k} | {accepted}/{drafted} | {tpot:.0f} | {tpot / base:.2f} | {tpot / plain_tpot:.2f} |")
    table = "\n".join(lines) + "\n"
    if args.plot:
        plot_lab(args.plot, pass_ns, points, adaptive_points)
        table += f"\nPlot: {args.plot}\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(table)
    print(table)
    print(f"spec_lab: {len(cases) + len(runs)} commands in {time.time() - started:.0f} s real time; "
          f"table in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
