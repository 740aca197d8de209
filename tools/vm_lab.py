#!/usr/bin/python3
"""The cold-start spectrum (make vm-lab): one request of 16 tokens on the
SMOL-shape bundle, int8, in exact mode (virtual time: 1 instruction = 1 ns)
with the ssd disk model (the kernel's disk clock: each request costs the
model's time in virtual time, so every row repeats to the microsecond;
idle waits warp to the next timer deadline, qemu_run.ICOUNT_IDLE_WARPS),
served seven ways:

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

--pressure prints a third table: files larger than the memory the page
cache may use. One boot of build/vm-pressure.img (built here: every program,
SMOL at /AI/SMOL, the Qwen3.5-0.8B-shape bundle of `make qwen-assets` at
/BIG/QWEN, outside /AI so that the service does not load it): the bundle
summed (cksum) through read(), a map and read() again, its largest file
copied with write() (cp) and the copy summed through a map and read(), then
again after a bundle pass evicted it. For each pass: virtual time, MiB read
from the disk, pages evicted, the cache's size after; every checksum must
equal the host's `cksum`, and the service's answer be the same before and
after (exit status 1 otherwise).

    /usr/bin/python3 tools/vm_lab.py [--image build/fs-smol.img] [--disk ssd] [--predict 16] [--concurrent | --pressure]
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPT = "504 3575 282 4649 314"
TIMING = re.compile(r"^timing model=\S+ (.*)$", re.M)
IDS = re.compile(r"^\d+( \d+)+$", re.M)


# The AI service keeps its own copy of SMOL (not the page cache's pages):
# the rows that need a cold cache boot with it, since with sharing (the
# default) the bundle is cached, pinned, from the moment SMOL is loaded.
PRIVATE = "mem.share_models=0"


def boot(args, commands, append="", image=None):
    """One boot in exact mode (one hart, the disk model's clock, idle waits
    warped, 1 GiB): `sleep 1` first (the service loads SMOL meanwhile), then
    each command in turn.
    Returns the console's transcript and each command's output (its echo,
    what it printed and the next prompt), in order."""
    with qemu_run.Session(image or args.image, qemu_run.DEFAULT_KERNEL, smp=1, memory="1G", snapshot=True,
                          boot_timeout=300, append=append, deterministic=True, disk=args.disk,
                          idle_warps=True) as s:
        if not s.booted:
            raise SystemExit("vm_lab: boot failed:\n" + s.transcript[-3000:])
        outputs = []
        for c in ["sleep 1"] + commands:
            start = s.mark()
            done = s.command(c, timeout=1800)
            text = s.since(start)
            if any(m in text for m in qemu_run.PANIC_MARKERS):
                raise SystemExit(f"vm_lab: kernel panic during `{c}`:\n{text[-3000:]}")
            if not done:
                raise SystemExit(f"vm_lab: `{c}` did not finish in 1800 s:\n{text[-3000:]}")
            outputs.append(text)
        s.halt()
        return s.transcript, outputs[1:]


def fields(text):
    """Every timing line of text, as dicts."""
    rows = []
    for m in TIMING.finditer(text):
        rows.append({k: v for k, v in (f.split("=", 1) for f in m.group(1).split() if "=" in f)})
    return rows


def tokens(text):
    m = IDS.search(text)
    return m.group(0) if m else None


# free's lines: memory, policy, page cache, buffer cache (since vm5), ai service.
FREE = re.compile(r"^memory: total=(\d+) free=(\d+) unused=(\d+) used=(\d+) pages.*\n.*\n"
                  r"page cache: pages=(\d+) mapped=(\d+).*\n(?:buffer cache:.*\n)?ai service: pinned=(\d+)", re.M)
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
        out, secs = boot(args, cmds, append)
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


CACHE = re.compile(r"^page cache: pages=(\d+) mapped=(\d+) hits=(\d+) misses=(\d+) evictions=(\d+) "
                   r"disk_bytes=(\d+)", re.M)
REAL = re.compile(r"^real (\d+)\.(\d+) ms$", re.M)
SUMS = re.compile(r"^(\d+) (\d+) (/\S+)$", re.M)
PRESSURE_IMAGE = os.path.join(ROOT, "build", "vm-pressure.img")


def pressure_image(qwen):
    """build/vm-pressure.img: every program, SMOL at /AI/SMOL (the service
    loads it: its pages are pinned) and the Qwen-shape bundle at /BIG/QWEN
    (not under /AI: the service would load it too), with room for a copy of
    its largest file. Rebuilt on every run (about ten seconds)."""
    smol = os.path.join(ROOT, "build", "assets", "SMOL")
    bins = os.path.join(ROOT, "build", "user", "bin")
    progs = [os.path.join(bins, p) for p in sorted(os.listdir(bins))
             if os.path.isfile(os.path.join(bins, p)) and "." not in p]
    size = lambda d: sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    biggest = max(os.path.getsize(os.path.join(qwen, f)) for f in os.listdir(qwen))
    mib = (size(smol) + size(qwen) + biggest) // 2**20 + 128
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "mkfsimg.py"), "--out", PRESSURE_IMAGE,
                    "--size", f"{mib}M", "--add-dir", f"AI/SMOL={smol}", "--add-dir", f"BIG/QWEN={qwen}"] + progs,
                   check=True, stdout=subprocess.DEVNULL)
    return PRESSURE_IMAGE


def pressure(args):
    """Files larger than the memory the page cache may use (--pressure): the
    Qwen3.5-0.8B-shape bundle (721 MiB) read through read(), through a map
    and through read() again, beside the AI service holding SMOL in 1 GiB;
    then its largest file copied with write() (cp) and the copy read
    through a map and read(), before and after its pages were evicted.
    Every checksum must equal the host's; the service must answer the same
    before and after. One boot, exact mode."""
    qwen = os.path.join(ROOT, "build", "assets", "QWEN")
    if not os.path.exists(os.path.join(qwen, "CFG.BIN")):
        raise SystemExit("vm_lab: build/assets/QWEN missing: run `make qwen-assets`")
    image = pressure_image(qwen)
    names = sorted(os.listdir(qwen))
    biggest = max(names, key=lambda f: os.path.getsize(os.path.join(qwen, f)))
    host = {}
    for line in subprocess.run(["cksum"] + names, cwd=qwen, capture_output=True, text=True,
                               check=True).stdout.splitlines():
        crc, size, name = line.split()
        host[f"/BIG/QWEN/{name}"] = (crc, size)
    host["/copy"] = host[f"/BIG/QWEN/{biggest}"]
    files = " ".join(f"/BIG/QWEN/{n}" for n in names)
    bundle = sum(int(v[1]) for k, v in host.items() if k != "/copy")
    ask = f"ai --model SMOL --int8 --predict 4 {PROMPT}"
    passes = [("bundle, read()", f"cksum {files}"),
              ("bundle, map (cksum --mmap)", f"cksum --mmap {files}"),
              ("bundle, read() again", f"cksum {files}"),
              (f"cp {biggest} /copy (write())", f"cp /BIG/QWEN/{biggest} /copy"),
              ("copy, map", "cksum --mmap /copy"),
              ("copy, read()", "cksum /copy"),
              ("bundle, read() (evicts the copy)", f"cksum {files}"),
              ("copy, map, after eviction", "cksum --mmap /copy"),
              ("copy, read(), after eviction", "cksum /copy")]
    cmds = [ask, "free"]
    for _, c in passes:
        cmds += [f"time {c}", "free"]
    cmds.append(ask)
    out, secs = boot(args, cmds, image=image)
    first = FREE.search(secs[1])
    cache0 = CACHE.search(secs[1])
    if not first or not cache0:
        raise SystemExit(f"vm_lab: no free output:\n{secs[1][-2000:]}")
    mib = lambda pages: int(pages) * 4096 / 2**20
    print(f"# vm-lab --pressure: the Qwen3.5-0.8B-shape bundle ({bundle / 2**20:.1f} MiB, {len(names)} files) "
          f"beside the AI service holding SMOL ({mib(first.group(7)):.1f} MiB pinned); 1 GiB, exact mode "
          f"(virtual time), 1 hart, disk {args.disk}; before: {mib(first.group(2)):.1f} MiB free, "
          f"page cache {mib(first.group(5)):.1f} MiB")
    print("| pass | virtual s | MiB read from the disk | pages evicted | page cache MiB after | "
          "free MiB after | checksums |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    prev = cache0
    for k, (what, c) in enumerate(passes):
        text, after = secs[2 + 2 * k], secs[3 + 2 * k]
        real = REAL.search(text)
        cache, mem = CACHE.search(after), FREE.search(after)
        sums = {name: (crc, size) for crc, size, name in SUMS.findall(text)}
        if c.startswith("cp "):
            verdict = "-" if "cp:" not in text else "FAILED: " + text.strip().splitlines()[-1]
            ok &= verdict == "-"
        else:
            wanted = [n for n in host if n in c.split()]
            bad = [n for n in wanted if sums.get(n) != host[n]]
            verdict = f"{len(wanted)} equal to the host's" if not bad else f"DIFFER: {', '.join(bad)}"
            ok &= not bad
        if not real or not cache or not mem:
            raise SystemExit(f"vm_lab: pass '{what}' has no timing or free output:\n{text[-2000:]}\n{after[-1000:]}")
        secs_v = int(real.group(1)) / 1000 + int(real.group(2)) / 1e6
        disk = (int(cache.group(6)) - int(prev.group(6))) / 2**20
        evicted = int(cache.group(5)) - int(prev.group(5))
        print(f"| {what} | {secs_v:.2f} | {disk:.1f} | {evicted} | {mib(cache.group(1)):.1f} | "
              f"{mib(mem.group(2)):.1f} | {verdict} |")
        prev = cache
    before, after = tokens(secs[0]), tokens(secs[len(cmds) - 1])
    ok &= before is not None and before == after
    killed = [line for line in out.splitlines() if "killed" in line or "ENOMEM" in line]
    ok &= not killed
    print(f"the service's tokens before and after: {'the same' if before == after else 'DIFFER'}: {before}")
    print(f"processes killed or refused: {len(killed)}" + (f": {killed[:3]}" if killed else ""))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "fs-smol.img"))
    ap.add_argument("--disk", default="ssd")
    ap.add_argument("--predict", type=int, default=16)
    ap.add_argument("--concurrent", action="store_true", help="N = 1, 2, 4, 8 processes, read() against mmap")
    ap.add_argument("--pressure", action="store_true",
                    help="the Qwen-shape bundle (721 MiB) read and mapped beside SMOL in 1 GiB (build/vm-pressure.img)")
    args = ap.parse_args()
    if args.pressure:
        return pressure(args)
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
        # `sleep 1;` first: it ends on a timer tick, so the program starts
        # (and execs from the disk) at the same phase of the tick grid in
        # every run, not when the host delivered the command line.
        cmds = [f"sleep 1; {c}" for _, c in b]
        _, secs = boot(args, cmds, append)
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
