#!/usr/bin/python3
"""The batched-inference benchmark (`make perf`): instructions per multiply-add
of the forward pass on the SmolLM2-135M-shape model, int8 activations.

    perf.py [--image IMG] [--kernel ELF] [--memory SIZE] [--quick] [--out FILE]
            [--timeout S] [--no-real] [--no-exact] [--repeat R]

Boots kai twice with the image's /perfbench (user/bin/perfbench.cpp):
  1. exact mode (qemu_run --deterministic: QEMU -icount shift=0, one hart): the
     guest clock counts instructions, 1 ns each, so `ns` of a case IS its
     instruction count, reproducible to the instruction;
  2. real time (one hart too): tokens per second of the same cases, each the
     fastest of --repeat runs (real time on a shared host is noisy).
For each case (decode@B: B requests, one token each, in one pass; prefill@N:
an N-token prompt in one pass) it prints the runtime's own multiply-add count,
the instructions, instructions per multiply-add and real tokens/s, then
  perf: instr/MAC decode@1=A decode@8=B prefill@64=C
Also two real-time ratios: the per-token cost at batch 8
over batch 1, and the time of a 64-token prefill over 64 decode steps.
This is a benchmark, not a test: it asserts nothing. Standard library only.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import qemu_run  # noqa: E402

LINE = re.compile(r"^perf case=(\w+) batch=(\d+) tokens=(\d+) macs=(\d+) ns=(\d+) weight_bytes=(\d+)", re.M)


def run_bench(args, exact):
    cmd = "perfbench --quick" if args.quick else "perfbench"
    if not exact:
        cmd += f" --repeat {args.repeat}"
    res = qemu_run.run([cmd], image=args.image, kernel=args.kernel, smp=1, memory=args.memory,
                       timeout=args.timeout, boot_timeout=120, snapshot=True, deterministic=exact)
    if not res.ok or "perfbench done" not in res.transcript:
        sys.stderr.write(res.transcript[-3000:])
        raise SystemExit(f"perf: {'exact' if exact else 'real-time'} boot failed: {res.error or 'no perfbench done'}")
    cases = {}
    for m in LINE.finditer(res.transcript):
        kind, batch, tokens, macs, ns, wbytes = m.group(1), *map(int, m.groups()[1:])
        cases[f"{kind}@{batch}"] = {"tokens": tokens, "macs": macs, "ns": ns, "weight_bytes": wbytes}
    return cases


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "fs-smol.img"))
    ap.add_argument("--kernel", default=os.path.join(ROOT, "build", "kernel", "kernel.elf"))
    ap.add_argument("--memory", default="1G")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds for the perfbench command")
    ap.add_argument("--quick", action="store_true", help="decode@1, decode@8, prefill@64 only")
    ap.add_argument("--no-real", action="store_true", help="skip the real-time boot")
    ap.add_argument("--no-exact", action="store_true", help="skip the exact-mode boot")
    ap.add_argument("--repeat", type=int, default=3,
                    help="real time: run each case this often, report the fastest (default 3)")
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args(argv)

    exact = {} if args.no_exact else run_bench(args, True)
    real = {} if args.no_real else run_bench(args, False)
    lines = [f"# {qemu_run.TIME_MODE_EXACT} (instructions); tokens/s in real time, one hart",
             f"{'case':<12} {'tokens':>6} {'MACs':>13} {'instructions':>14} {'instr/MAC':>9} "
             f"{'weight bytes/token':>18} {'tokens/s (real)':>15}"]
    for name in (exact or real):
        c, r = exact.get(name), real.get(name)
        base = c or r
        tps = f"{r['tokens'] / (r['ns'] / 1e9):.2f}" if r else "-"
        ins = f"{c['ns']:>14} {c['ns'] / c['macs']:>9.2f}" if c else f"{'-':>14} {'-':>9}"
        lines.append(f"{name:<12} {base['tokens']:>6} {base['macs']:>13} {ins} "
                     f"{base['weight_bytes'] // base['tokens']:>18} {tps:>15}")
    for name, table in (("exact", exact), ("real", real)):
        d1, d8, p64 = table.get("decode@1"), table.get("decode@8"), table.get("prefill@64")
        if d1 and d8:
            lines.append(f"{name}: per-token cost at batch 8 / batch 1 = "
                         f"{(d8['ns'] / d8['tokens']) / d1['ns']:.3f}")
        if d1 and p64:
            lines.append(f"{name}: 64-token prefill / 64 decode steps = {p64['ns'] / (64 * d1['ns']):.3f}")
    ipm = {k: exact[k]["ns"] / exact[k]["macs"] for k in ("decode@1", "decode@8", "prefill@64") if k in exact}
    if ipm:
        lines.append("perf: instr/MAC " + " ".join(f"{k}={v:.2f}" for k, v in ipm.items()))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
