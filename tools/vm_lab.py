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

Columns: load (ms; for the children of (f), fork() to the child's start),
TTFT and TPOT (ms, from the request's start), start-to-first-token (load +
init + TTFT), total, major/minor faults, bytes the page cache read from the
disk, and the process's resident and shared memory (MiB). The tokens of
every row must be the same (checked: exit status 1 otherwise).

Three boots (a cold cache needs a fresh boot); each waits a second of
virtual time first, so the AI service has loaded SMOL (its loads bypass the
page cache) before anything is measured.

    /usr/bin/python3 tools/vm_lab.py [--image build/fs-smol.img] [--disk ssd] [--predict 16]
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


def boot(args, commands):
    argv = ["/usr/bin/python3", os.path.join(ROOT, "tools", "qemu_run.py"), "--image", args.image, "--snapshot",
            "--deterministic", "--smp", "1", "--disk", args.disk, "--timeout", "900"]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "fs-smol.img"))
    ap.add_argument("--disk", default="ssd")
    ap.add_argument("--predict", type=int, default=16)
    args = ap.parse_args()
    if not os.path.exists(args.image):
        raise SystemExit(f"vm_lab: {args.image} missing: run `make build/fs-smol.img`")
    run = f"llmrun --int8 --timing --align-tick --predict {args.predict}"
    boots = [
        [("a", f"{run} {PROMPT}"), ("b", f"{run} {PROMPT}"), ("d", f"{run} --mmap {PROMPT}"),
         ("g", f"ai --int8 --timing --align-tick --predict {args.predict} {PROMPT}")],
        [("c", f"{run} --mmap {PROMPT}"), ("f", f"{run} --mmap --forks 2 {PROMPT}")],
        [("e", f"{run} --populate {PROMPT}")],
    ]
    rows = {}
    for b in boots:
        cmds = [c for _, c in b]
        out = boot(args, cmds)
        secs = sections(out, cmds)
        for i, (row, _) in enumerate(b):
            t = fields(secs[i])
            if not t:
                raise SystemExit(f"vm_lab: no timing line for ({row}):\n{secs[i][-2000:]}")
            rows[row] = (t[-1], tokens(secs[i]))
    names = {"a": "read() cold", "b": "read() warm", "c": "mmap cold", "d": "mmap warm",
             "e": "mmap cold + populate", "f": "forked child of a mapper", "g": "resident service"}
    ms = lambda us: f"{int(us) / 1000:.1f}"
    print(f"# vm-lab: SMOL int8, predict {args.predict}, prompt {PROMPT}; exact mode, disk {args.disk}")
    print("| row | load ms | TTFT ms | start->1st ms | TPOT ms | total ms | major | minor | disk MiB | resident MiB | shared MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    want = rows["a"][1]
    for k in "abcdefg":
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
    for k in "abcdefg":
        if rows[k][1] != want:
            print(f"  ({k}): {rows[k][1]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
