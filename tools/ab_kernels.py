#!/usr/bin/python3
"""Paired real-time comparison of two kernels: which one makes a student wait less?

    ab_kernels.py --before A.elf --after B.elf [--image IMG] [--smp N] [--harts H]
                  [--case one|ttft|batch8] [--boots K] [--append ARGS]

Real time on a shared host drifts by 10-30% from one minute to the next, more
than most changes it is asked to judge. So the two kernels are booted in
turn (A B, B A, A B, ...: K boots each, the order alternating so a slow
stretch of the host hurts both alike) on the same file-system image, and
only the ratio of the medians is reported. Per boot one short warm-up
request, then:
  one     `ai --timing --predict 16` three times: TPOT in ms (lower is better)
  ttft    the same requests: TTFT in ms (a 5-token prompt; lower is better)
  batch8  `aibench --clients 8 --requests 1 --prompt 4 --predict 16` twice:
          tokens/s (higher is better)
Keep other programs off the host while it runs (their CPU time is noise).
Exact mode is not used: it counts instructions, and what this measures is
what QEMU makes of them in real time (docs/runtime.md).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_run  # noqa: E402
from benchlib.parse import parse_ai_timing, parse_aibench  # noqa: E402
from perf import BATCH, MODEL, ONE_REQUEST, PROMPT_IDS  # noqa: E402  (the same requests as make perf)

WARM_UP = f"ai --model {MODEL} --int8 --predict 2 {PROMPT_IDS}"


def _timing_ms(key):
    """The figure `key` of `ai --timing`'s line, in ms (None if not printed)."""
    def figure(text):
        t = parse_ai_timing(text)
        return t[key] / 1000 if t and key in t else None
    return figure


CASES = {
    # name: (command, runs per boot, the figure from the output, unit, higher is better)
    "one": (ONE_REQUEST, 3, _timing_ms("tpot_us"), "TPOT ms", False),
    "ttft": (ONE_REQUEST, 3, _timing_ms("ttft_us"), "TTFT ms", False),
    "batch8": (BATCH, 2, lambda text: parse_aibench(text)[2].get("tokens_per_s"), "tokens/s", True),
}


def boot(kernel, args):
    command, runs, figure, _, _ = CASES[args.case]
    append = f"ai.harts={args.harts} {args.append}".strip()
    s = qemu_run.Session(args.image, kernel, args.smp, args.memory, snapshot=True, boot_timeout=300,
                         append=append)
    figures = []
    try:
        s.command(WARM_UP, args.timeout)
        for _ in range(runs):
            start = s.mark()
            if not s.command(command, args.timeout):
                raise SystemExit(f"ab_kernels: '{command}' did not finish within {args.timeout} s on {kernel}")
            value = figure(s.since(start))
            if value is None:
                raise SystemExit(f"ab_kernels: no figure in the output of '{command}' on {kernel}")
            figures.append(value)
    finally:
        s.halt()
        s.close()
    return figures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="kernel ELF A")
    ap.add_argument("--after", required=True, help="kernel ELF B")
    ap.add_argument("--image", default="build/fs-smol.img")
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--harts", type=int, default=2, help="ai.harts for both kernels")
    ap.add_argument("--case", choices=sorted(CASES), default="one")
    ap.add_argument("--boots", type=int, default=4, help="boots per kernel")
    ap.add_argument("--append", default="", help="more kernel arguments for both")
    ap.add_argument("--memory", default="1G")
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args(argv)
    for path in (args.before, args.after, args.image):
        if not os.path.exists(path):
            ap.error(f"no such file: {path}")
    if args.boots < 1:
        ap.error(f"--boots must be at least 1, not {args.boots}")
    _, _, _, unit, higher = CASES[args.case]
    got = {"before": [], "after": []}
    for b in range(args.boots):
        order = ("before", "after") if b % 2 == 0 else ("after", "before")
        for side in order:
            figures = boot(getattr(args, side), args)
            print(f"boot {b + 1} {side}: " + " ".join(f"{v:.2f}" for v in figures), file=sys.stderr, flush=True)
            got[side] += figures
    med = {side: statistics.median(v) for side, v in got.items()}
    for side, v in got.items():
        print(f"{side}: {unit} median {med[side]:.2f} [{min(v):.2f}..{max(v):.2f}] of {len(v)}")
    ratio = med["after"] / med["before"]
    better = ratio > 1 if higher else ratio < 1
    print(f"after/before ({unit}, real time, -smp {args.smp} ai.harts={args.harts}): {ratio:.3f}"
          f" ({'after is better' if better else 'after is not better'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
