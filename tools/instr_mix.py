#!/usr/bin/python3
"""Which kinds of instruction a workload runs, and what they should cost.

    instr_mix.py LOG [--kernel ELF] [--user ELF] [--costs OPCOST_LOG]

LOG is a console transcript with aitrace's SAMPLE events recorded in exact
mode (qemu_run --deterministic), where the timer counts instructions: a
sample then lands on an instruction with a probability in proportion to how
often it runs, so the samples' instructions are a fair draw of the ones the
workload executed. (In real time they are not: QEMU takes an interrupt only
between translated blocks, so real-time samples all sit on a block's first
instruction.) Each sample's instruction is read from the ELF's disassembly
and put in one of the classes below.

--costs reads a transcript of `opcost` (real time per instruction of each
kind, measured on this host) and prints what the mix predicts for the
workload's real time per instruction: the sum over the classes of share x
cost. Set beside the measured ns per instruction (make perf), it says
whether a case is slow for its work (the prediction is low) or only does
dearer work (docs/runtime.md, "What each kind of instruction costs").

Example (docs/runtime.md has the whole recipe):
    tools/qemu_run.py --deterministic --smp 1 --snapshot --image build/fs-smol.img \\
        --append ai.trace=65536 -c "aitrace stop" -c "aitrace clear" \\
        -c "perfbench --case decode@8 --repeat 10 --profile" -c aitrace > d8.txt
    tools/qemu_run.py -c opcost > opcost.txt
    tools/instr_mix.py d8.txt --user build/user/bin/perfbench --costs opcost.txt
"""
import argparse
import os
import re
import subprocess
import sys
from collections import Counter

from hotspots import MODE_KERNEL, kai_trace, sample_arguments, sample_pc

OBJDUMP = os.environ.get("OBJDUMP", "riscv64-linux-gnu-objdump")

# class: (what it holds, the opcost row whose time it is charged).
CLASSES = {
    "integer": ("ALU, system", "add"),
    "branch": ("branches and jumps: each ends a translated block", "bnez"),
    "multiply": ("mul, mulh, div, rem", "mul"),
    "memory": ("loads and stores, float ones too", "lw"),
    "float move": ("fmv, sign injection (fabs, fneg)", "fsgnjx.s"),
    "float32": ("add, sub, mul, div, min, max, sqrt of floats", "fadd.s"),
    "float32 fused": ("fmadd.s, fmsub.s, fnmadd.s, fnmsub.s", "fmadd.s"),
    "float64": ("add, sub, mul, div, min, max, sqrt of doubles", "fadd.d"),
    "float compare": ("feq, flt, fle, fclass", "flt.s"),
    "convert exact": ("float -> double, integer -> float", "fcvt.s.l"),
    "convert rounding": ("double -> float, float -> integer", "fcvt.s.d"),
}
LOAD_STORE = re.compile(r"^(c\.)?(l[bhwd]u?|s[bhwd]|fl[wd]|fs[wd])(sp)?$")


def classify(mnemonic):
    """The class of one instruction, by its mnemonic (objdump's spelling)."""
    m = mnemonic
    if LOAD_STORE.match(m):
        return "memory"
    if re.match(r"^(c\.)?(mul|div|rem)", m):
        return "multiply"
    if re.match(r"^(c\.)?(b[a-z]*|j|jal|jr|jalr|ret|tail|call)$", m):
        return "branch"
    if not m.startswith("f") or m in ("fence", "fence.i", "frflags", "fsflags", "frrm", "fsrm", "frcsr", "fscsr"):
        return "integer"
    if m.startswith(("fmv", "fsgnj", "fneg", "fabs")):
        return "float move"
    if m.startswith(("feq", "flt", "fle", "fclass")):
        return "float compare"
    if m.startswith("fcvt"):
        to, frm = m.split(".")[1:3]
        exact = (to == "d" and frm == "s") or (to in ("s", "d") and frm in ("w", "wu", "l", "lu"))
        return "convert exact" if exact else "convert rounding"
    if m.startswith(("fmadd", "fmsub", "fnmadd", "fnmsub")):
        return "float32 fused" if m.endswith(".s") else "float64"
    return "float64" if m.endswith(".d") else "float32"


def disassembly(path):
    """pc -> mnemonic for every instruction of an ELF's text."""
    if not os.path.exists(path):
        raise SystemExit(f"instr_mix: no such ELF file: {path}")
    out = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"instr_mix: {OBJDUMP} cannot read {path}: {out.stderr.strip()}")
    code = {}
    for line in out.stdout.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s+(\S+)", line)
        if m:
            code[int(m.group(1), 16)] = m.group(2)
    return code


def opcost_costs(text):
    """opcost's table: row name -> ns per instruction; the fastest reading of each row when the
    transcript holds several runs (the host can only ever slow a run down)."""
    costs = {}
    for name, ns in re.findall(r"^(\S+) +(\d+\.\d+) ns ", text, re.M):
        costs[name] = min(float(ns), costs.get(name, float("inf")))
    missing = sorted({row for _, row in CLASSES.values()} - set(costs))
    if missing:
        raise SystemExit(f"instr_mix: the opcost transcript has no row for {', '.join(missing)}")
    return costs


def mix(events, kernel_code, user_code):
    """Counter of classes over the SAMPLE events; idle samples and pcs the ELFs do not hold are left out
    (their number is returned too)."""
    counts, unknown = Counter(), 0
    for e in events:
        if e.name != "SAMPLE" or e["pid"] == 0:
            continue
        pc = sample_pc(e)
        code = kernel_code if e["mode"] == MODE_KERNEL else user_code
        mnemonic = code.get(pc) if code else None
        if mnemonic is None:
            unknown += 1
        else:
            counts[classify(mnemonic)] += 1
    return counts, unknown


def report(counts, unknown, costs=None):
    n = sum(counts.values())
    lines = [f"instr_mix: {n} samples" + (f" ({unknown} on code the ELFs do not hold, left out)" if unknown else ""),
             f"{'class':<17} {'share':>6}" + (f" {'ns each':>8} {'ns share':>8}" if costs else "") + "  holds"]
    predicted = 0.0
    for name, (what, row) in CLASSES.items():
        share = counts[name] / n
        line = f"{name:<17} {100 * share:5.1f}%"
        if costs:
            predicted += share * costs[row]
            line += f" {costs[row]:8.2f} {share * costs[row]:8.3f}"
        lines.append(line + f"  {what}" + (f" (charged as {row})" if costs else ""))
    if costs:
        # The samples are a random draw of the executed instructions, so the
        # prediction (the mean cost over the samples) has a standard error of
        # the costs' standard deviation over sqrt(n). A rare dear kind (a few
        # float samples at 30-150 adds each) makes most of it.
        variance = sum(counts[name] / n * (costs[row] - predicted) ** 2 for name, (_, row) in CLASSES.items())
        error = (variance / n) ** 0.5
        lines.append(f"predicted real time per instruction: {predicted:.3f} ns +- {error:.3f} "
                     f"({predicted / costs['add']:.2f} adds)")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sample_arguments(ap, "console transcript with aitrace's SAMPLE lines, recorded in exact mode")
    ap.add_argument("--costs", help="a transcript of opcost: predict ns per instruction from the mix")
    args = ap.parse_args(argv)
    try:
        text = open(args.log, errors="replace").read()
        costs = opcost_costs(open(args.costs, errors="replace").read()) if args.costs else None
    except OSError as e:
        ap.error(f"cannot read {e.filename}: {e.strerror}")
    counts, unknown = mix(kai_trace.parse(text), disassembly(args.kernel),
                          disassembly(args.user) if args.user else None)
    if not counts:
        print(f"instr_mix: no SAMPLE events on known code in {args.log} (record them with `aitrace start samples`"
              " or perfbench --profile)", file=sys.stderr)
        return 1
    print("\n".join(report(counts, unknown, costs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
