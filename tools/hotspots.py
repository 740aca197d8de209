#!/usr/bin/python3
"""Where the real time goes: a profile from the trace's timer samples.

    hotspots.py LOG [--kernel ELF] [--user ELF] [--top N] [--harts]

LOG is a console transcript holding /bin/aitrace's lines after
`aitrace start samples` (see tools/trace.py for the format). Each SAMPLE
event says where one hart was when its timer interrupt came: TICK_HZ times
a second of real time per hart. So the share of samples in a function is
the share of real time spent in it, which instruction counts (exact mode)
cannot show: under QEMU a float instruction or a load costs several times
an add, and a jump out of a 4 KiB page costs a lookup.

--kernel names kernel pcs with the symbols of ELF (default
build/kernel/kernel.elf); --user names user pcs with the symbols of one
program (every user program is linked at the same addresses, so only the
program you name can be resolved; other user samples count as
"(user pid N)"). Samples of an idle hart (pid 0) are counted as "(idle)"
whatever the pc. --harts splits each row by hart.

In exact mode (qemu_run --deterministic) the clock counts instructions,
so a tick comes every 10 M instructions and the share of samples is the
share of *instructions*. Profile the same workload both ways and divide:
a function's share of real time over its share of instructions is what
each of its instructions costs against the average (worked through in
docs/notebook/2026-12-runtime-tuning.md, "Night of 2026-12-04").

Samples land where interrupts come on again: code that runs with
interrupts off (inside a spinlock) is counted where it releases the lock,
in pop_interrupts_off(). Those rows name the caller too, from the sample's
return address ("pop_interrupts_off() <- wakeup(void*)"): the lock that
was held, roughly. --callers FUNC does the same for another leaf function.
"""
import argparse
import bisect
import importlib.util
import os
import subprocess
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# tools/trace.py parses the events. Loaded by path: Python's standard
# library has a module named trace too.
_spec = importlib.util.spec_from_file_location("kai_trace", os.path.join(ROOT, "tools", "trace.py"))
kai_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kai_trace)
DEFAULT_KERNEL = os.path.join(ROOT, "build", "kernel", "kernel.elf")
NM = os.environ.get("NM", "riscv64-linux-gnu-nm")
MODE_KERNEL, MODE_USER = 0, 1


class Symbols:
    """The functions of one ELF, sorted by address, for pc -> name."""

    def __init__(self, starts, names, ends):
        self.starts, self.names, self.ends = starts, names, ends

    @classmethod
    def from_nm(cls, text):
        """Reads `nm -C -n -S --defined-only` output: text symbols with a size."""
        rows = []
        for line in text.splitlines():
            parts = line.split(None, 3)
            if len(parts) != 4 or parts[2] not in "tTwW":
                continue
            try:
                start, size = int(parts[0], 16), int(parts[1], 16)
            except ValueError:
                continue
            if size:
                rows.append((start, start + size, parts[3]))
        rows.sort()
        return cls([r[0] for r in rows], [r[2] for r in rows], [r[1] for r in rows])

    @classmethod
    def from_elf(cls, path):
        if not os.path.exists(path):
            raise SystemExit(f"hotspots: no such ELF file: {path}")
        out = subprocess.run([NM, "-C", "-n", "-S", "--defined-only", path], capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"hotspots: {NM} cannot read {path}: {out.stderr.strip()}")
        return cls.from_nm(out.stdout)

    def name(self, pc):
        i = bisect.bisect_right(self.starts, pc) - 1
        if i >= 0 and pc < self.ends[i]:
            return self.names[i]
        return f"0x{pc:x}"


# Leaf functions whose samples are worth splitting by caller (see the top).
INTERRUPTS_BACK_ON = "pop_interrupts_off()"


def sample_pc(e):
    """The pc a SAMPLE event records (split in two 32-bit fields)."""
    return (e["pc_hi"] << 32) | e["pc_lo"]


def sample_rows(events, kernel, user, callers=(INTERRUPTS_BACK_ON,)):
    """(hart, where) for every SAMPLE event."""
    rows = []
    for e in events:
        if e.name != "SAMPLE":
            continue
        pc = sample_pc(e)
        if e["pid"] == 0:
            where = "(idle)"
        elif e["mode"] == MODE_KERNEL:
            where = kernel.name(pc)
            if where in callers:
                # The kernel lies below 4 GiB: ra_lo is the whole address.
                where += " <- " + kernel.name(e["ra_lo"])
        elif user is not None:
            where = "user: " + user.name(pc)
        else:
            where = f"(user pid {e['pid']})"
        rows.append((e.hart, where))
    return rows


def table(rows, top, by_hart):
    """The profile as text lines, largest first."""
    total = Counter(w for _, w in rows)
    harts = sorted({h for h, _ in rows})
    per_hart = Counter(rows)
    n = len(rows)
    head = f"{'samples':>8} {'share':>6}  "
    if by_hart:
        head += "".join(f"{'hart ' + str(h):>8}" for h in harts) + "  "
    lines = [f"hotspots: {n} samples on {len(harts)} harts", head + "function"]
    for where, count in total.most_common(top):
        line = f"{count:8d} {100.0 * count / n:5.1f}%  "
        if by_hart:
            line += "".join(f"{per_hart[(h, where)]:8d}" for h in harts) + "  "
        lines.append(line + where)
    return lines


def sample_arguments(ap, log_help):
    """The arguments of a tool that reads aitrace's SAMPLE lines (this one
    and instr_mix.py): the transcript and the ELFs that name its pcs."""
    ap.add_argument("log", help=log_help)
    ap.add_argument("--kernel", default=DEFAULT_KERNEL, help="kernel ELF for kernel pcs")
    ap.add_argument("--user", help="user program ELF for user pcs")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sample_arguments(ap, "console transcript with aitrace's SAMPLE lines")
    ap.add_argument("--top", type=int, default=25, help="rows to print (default 25)")
    ap.add_argument("--harts", action="store_true", help="a column per hart")
    ap.add_argument("--callers", action="append", default=[INTERRUPTS_BACK_ON], metavar="FUNC",
                    help="split a leaf function's kernel samples by caller (as nm -C names it)")
    args = ap.parse_args(argv)
    if args.top < 1:
        ap.error(f"--top must be at least 1, not {args.top}")
    try:
        text = open(args.log, errors="replace").read()
    except OSError as e:
        ap.error(f"cannot read {args.log}: {e.strerror}")
    events = kai_trace.parse(text)
    kernel = Symbols.from_elf(args.kernel)
    user = Symbols.from_elf(args.user) if args.user else None
    rows = sample_rows(events, kernel, user, tuple(args.callers))
    if not rows:
        print(f"hotspots: no SAMPLE events in {args.log} (record them with `aitrace start samples`)",
              file=sys.stderr)
        return 1
    print("\n".join(table(rows, args.top, args.harts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
