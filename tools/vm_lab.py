#!/usr/bin/python3
"""The cold-start spectrum (make vm-lab): one request of 16 tokens on the
SMOL-shape bundle, int8, in exact mode (virtual time: 1 instruction = 1 ns)
with the ssd disk model, served seven ways:

  (a) llmrun, read() with the page cache cold      (b) read() again: warm
  (c) llmrun --mmap, cache cold                    (d) --mmap again: warm
  (e) llmrun --populate (MAP_POPULATE), cache cold
  (f) a child forked from a process holding the map (llmrun --mmap --forks 2:
      the second child's figures; the first warms the parent's cache)
  (g) the resident service (`ai`: the weights already in kernel memory)
  (h) llmrun --mmap in a fresh boot with the service sharing its pages (the
      default): the bundle is cached from the moment SMOL is loaded

Rows (a) to (g) boot with mem.share_models=0 (the service keeps a private
copy), so that "cold" means a cold cache.

Columns: load (ms; for the children of (f), fork() to the child's start),
TTFT and TPOT (ms, from the request's start), start-to-first-token (load +
init + TTFT), total, major/minor faults, bytes the page cache read from the
disk, and the process's resident and shared memory (MiB). The tokens of
every row must be the same (checked: exit status 1 otherwise).

Four boots (a cold cache needs a fresh boot); each waits a second of
virtual time first, so the AI service has loaded SMOL before anything is
measured.

--concurrent prints a second table instead: N = 1, 2, 4, 8 `llmrun`
processes started together (the shell's `&`) while the service answers an
`ai` request of the same prompt, one boot per mode: read(), --mmap, and
--mmap with the service keeping a private copy (mem.share_models=0). The
runs of one mode follow each other (N = 1 first). For each N: the memory in
use while all N run (`free`, sampled by a `sleep` of 1.5 N + 1 s that ends
after the loads and before the first exit: "used" counts page-cache pages
nobody maps as free), the page cache's pages and the service's pinned ones,
the memory holding SMOL's weights outside the processes (the service's
region + the cache's pages it does not pin; the target: one copy, <= 1.05x
the bundle), how many processes finished (a read() process that finds no
memory for its copy fails, and its message is shown), tokens per second
(the tokens of all the processes that finished over the longest one's
start-to-end: load + init + total, virtual time), and whether the service's
answer was the processes' tokens.

    /usr/bin/python3 tools/vm_lab.py [--image build/fs-smol.img] [--disk ssd] [--predict 16] [--concurrent]
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPT = "504 3575 282 4649 314"
TIMING = re.compile(r"^timing model=\S+ (.*)$", re.M)
IDS = re.compile(r"^\d+( \d+)+$", re.M)


# The AI service keeps its own copy of SMOL (not the page cache's pages):
# the rows that need a cold cache boot with it, since with sharing (the
# default) the bundle is cached, pinned, from the moment SMOL is loaded.
PRIVATE = "mem.share_models=0"


def boot(args, commands, append=""):
    argv = ["/usr/bin/python3", os.path.join(ROOT, "tools", "qemu_run.py"), "--image", args.image, "--snapshot",
            "--deterministic", "--smp", "1", "--disk", args.disk, "--timeout", "1800"]
    if append:
        argv += ["--append", append]
    for c in ["sleep 1"] + commands:
        argv += ["-c", c]
    out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT).stdout
    return out


def sections(out, commands):
    """The output of each command, by command line."""
    res = {}
    start = 0
    for i, c in enumerate(commands):
        start = out.find("$ " + c, start)   # in order: two rows may run the same command
        if start < 0:
            raise SystemExit(f"vm_lab: command missing from the transcript: {c}\n{out[-3000:]}")
        end = out.find("\n$ ", start + 2)
        res[i] = out[start:end if end > 0 else len(out)]
        start += 2
    return res


def fields(text):
    """Every timing line of text, as dicts."""
    rows = []
    for m in TIMING.finditer(text):
        rows.append({k: v for k, v in (f.split("=", 1) for f in m.group(1).split() if "=" in f)})
    return rows


def tokens(text):
    m = IDS.search(text)
    return m.group(0) if m else None


FREE = re.compile(r"^memory: total=(\d+) free=(\d+) unused=(\d+) used=(\d+) pages.*\n.*\n"
                  r"page cache: pages=(\d+) mapped=(\d+).*\nai service: pinned=(\d+)", re.M)
REGION = re.compile(r"^ai: model SMOL ready: .*, ([\d.]+) MiB, loaded", re.M)
COUNTS = (1, 2, 4, 8)


def concurrent(args):
    """The N = 1, 2, 4, 8 table (--concurrent)."""
    run = f"llmrun --int8 --timing --predict {args.predict}"
    ask = f"ai --int8 --predict {args.predict} {PROMPT}"
    bundle = sum(os.path.getsize(os.path.join(ROOT, "build", "assets", "SMOL", f))
                 for f in os.listdir(os.path.join(ROOT, "build", "assets", "SMOL"))
                 if re.fullmatch(r"(CFG|EMB|NRM|ROP|L\d\d)\.BIN", f))
    print(f"# vm-lab --concurrent: SMOL int8, predict {args.predict}; exact mode (virtual time), disk {args.disk}, "
          f"1 hart, 1 GiB, the AI service holding SMOL and serving `{ask}` beside the N processes; "
          f"weights: the service's region + the cache's pages not pinned by it, in MiB and in copies "
          f"of the {bundle / 1e6:.1f} MB bundle (processes' private read() copies not counted)")
    print("| mode | N | finished | used MiB (all N running) | over idle MiB | page cache MiB | pinned MiB | "
          "weights MiB (copies) | tokens/s | service's tokens | failures |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    want = None
    modes = (("read()", "", ""), ("mmap", " --mmap", ""),
             ("mmap, service's private copy", " --mmap", PRIVATE))
    for mode, flag, append in modes:
        cmds = ["free"]
        for n in COUNTS:
            jobs = " & ".join(f"{run}{flag} {PROMPT} > /o{n}-{k}" for k in range(n))
            cmds.append(f"{ask} > /s{n} & {jobs} & sleep {n * 3 // 2 + 1}; free; wait")
            cmds += [f"cat /o{n}-{k}" for k in range(n)] + [f"cat /s{n}"]
        out = boot(args, cmds, append)
        secs = sections(out, cmds)
        idle = FREE.search(secs[0])
        region = REGION.search(out)
        if not idle or not region:
            raise SystemExit(f"vm_lab: no free output or no SMOL load line:\n{out[-3000:]}")
        idle_used = int(idle.group(4))
        region_mib = float(region.group(1))
        at = 1
        for n in COUNTS:
            text = secs[at]
            mem = FREE.search(text)
            # Timing lines go to the console (stderr), N processes at once: a
            # line cut by another's write is left out of the rate (and said).
            timings = [t for t in fields(text) if all(k in t for k in ("load_us", "init_us", "total_us", "gen"))]
            outs = [secs[at + 1 + k] for k in range(n)]
            served = tokens(secs[at + 1 + n])
            at += 2 + n
            toks = [tokens(o) for o in outs] + [served]
            for t in toks:
                if t is not None:
                    want = want or t
                    ok &= t == want
            ok &= served is not None
            fails = sorted({line.strip() for line in text.splitlines()
                            if re.search(r"ENOMEM|killed|out of memory|panic", line)
                            and not line.startswith(("$ ", "memory:", "policy:", "page cache:"))})
            span = max((int(t["load_us"]) + int(t["init_us"]) + int(t["total_us"]) for t in timings), default=0)
            gen = sum(int(t["gen"]) for t in timings)
            mib = lambda pages: f"{int(pages) * 4096 / 2**20:.1f}"
            used = int(mem.group(4)) if mem else None
            weights = (region_mib + (int(mem.group(5)) - int(mem.group(7))) * 4096 / 2**20) if mem else None
            finished = sum(1 for o in outs if tokens(o) is not None)
            if len(timings) < finished:
                fails.append(f"{finished - len(timings)} timing line(s) cut on the console: rate of {len(timings)}")
            print(f"| {mode} | {n} | {finished} | {mib(used) if mem else '-'} | "
                  f"{mib(used - idle_used) if mem else '-'} | {mib(mem.group(5)) if mem else '-'} | "
                  f"{mib(mem.group(7)) if mem else '-'} | "
                  f"{f'{weights:.1f} ({weights * 2**20 / bundle:.2f}x)' if mem else '-'} | "
                  f"{gen / (span / 1e6) if span else 0:.2f} | "
                  f"{'same' if served == want else 'DIFFER' if served else 'missing'} | "
                  f"{'; '.join(fails) if fails else '-'} |")
    print(f"tokens: {'the same in every process that finished and the service' if ok else 'DIFFER'}: {want}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "fs-smol.img"))
    ap.add_argument("--disk", default="ssd")
    ap.add_argument("--predict", type=int, default=16)
    ap.add_argument("--concurrent", action="store_true", help="N = 1, 2, 4, 8 processes, read() against mmap")
    args = ap.parse_args()
    if not os.path.exists(args.image):
        raise SystemExit(f"vm_lab: {args.image} missing: run `make build/fs-smol.img`")
    if args.concurrent:
        return concurrent(args)
    run = f"llmrun --int8 --timing --align-tick --predict {args.predict}"
    boots = [
        ([("a", f"{run} {PROMPT}"), ("b", f"{run} {PROMPT}"), ("d", f"{run} --mmap {PROMPT}"),
          ("g", f"ai --int8 --timing --align-tick --predict {args.predict} {PROMPT}")], PRIVATE),
        ([("c", f"{run} --mmap {PROMPT}"), ("f", f"{run} --mmap --forks 2 {PROMPT}")], PRIVATE),
        ([("e", f"{run} --populate {PROMPT}")], PRIVATE),
        ([("h", f"{run} --mmap {PROMPT}")], ""),
    ]
    rows = {}
    for b, append in boots:
        cmds = [c for _, c in b]
        out = boot(args, cmds, append)
        secs = sections(out, cmds)
        for i, (row, _) in enumerate(b):
            t = fields(secs[i])
            if not t:
                raise SystemExit(f"vm_lab: no timing line for ({row}):\n{secs[i][-2000:]}")
            rows[row] = (t[-1], tokens(secs[i]))
    names = {"a": "read() cold", "b": "read() warm", "c": "mmap cold", "d": "mmap warm",
             "e": "mmap cold + populate", "f": "forked child of a mapper", "g": "resident service",
             "h": "mmap of the service's pages"}
    ms = lambda us: f"{int(us) / 1000:.1f}"
    print(f"# vm-lab: SMOL int8, predict {args.predict}, prompt {PROMPT}; exact mode, disk {args.disk}")
    print("| row | load ms | TTFT ms | start->1st ms | TPOT ms | total ms | major | minor | disk MiB | resident MiB | shared MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    want = rows["a"][1]
    for k in "abcdefgh":
        f, toks = rows[k]
        if toks != want:
            ok = False
        if k == "g":
            ttft = f.get("ttft_us", "0")
            print(f"| ({k}) {names[k]} | 0 | {ms(ttft)} | {ms(ttft)} | {ms(f.get('tpot_us', 0))} | "
                  f"{ms(int(ttft) + int(f.get('tpot_us', 0)) * (args.predict - 1))} | - | - | - | - | - |")
            continue
        load = int(f["fork_us"]) if "fork_us" in f else int(f["load_us"])
        first = load + int(f["init_us"]) + int(f["ttft_us"])
        print(f"| ({k}) {names[k]} | {ms(load)} | {ms(f['ttft_us'])} | {ms(first)} | {ms(f['tpot_us'])} | "
              f"{ms(f['total_us'])} | {f['major_faults']} | {f['minor_faults']} | "
              f"{int(f['disk_bytes']) / 2**20:.1f} | {int(f['resident_kib']) / 1024:.1f} | "
              f"{int(f['shared_kib']) / 1024:.1f} |")
    print(f"tokens: {'the same on every row' if ok else 'DIFFER'}: {want}")
    for k in "abcdefgh":
        if rows[k][1] != want:
            print(f"  ({k}): {rows[k][1]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
