"""Booting kai for a measurement, and bench.py's boots.

For every study (bench.py, its --open-loop sweep, chat_turns.py):
build_image() packs the user programs and a model bundle into a file-system
image; run_command() runs one shell command in a booted guest, with a
timeout and progress lines; progress() prints one.

What bench.py runs in QEMU and collects:
cold_warm(): exact mode (one hart, virtual time), one boot per disk model,
    `coldwarm` K runs of each path.
sweep(): real time, one boot per (worker count, repeat) in a seeded random
    order; in each boot the client counts in random order, each point
    bracketed by `calib` runs (the host-noise check); in exact mode
    (args.deterministic) on one hart.
Both return plain data; analysis.py summarises it.
"""
import os
import random
import re
import subprocess
import sys
import time

import qemu_run

from .latency import derive, point_stats
from .parse import parse_aibench, parse_boot_load, parse_calib, parse_coldwarm

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
PYTHON = "/usr/bin/python3"
KERNEL = qemu_run.DEFAULT_KERNEL
BIN = os.path.join(ROOT, "build", "user", "bin")
COMMAND_TIMEOUT_S = 3600
STUDY_START = time.monotonic()


def progress(msg):
    el = int(time.monotonic() - STUDY_START)
    print(f"[bench {el // 60:02d}:{el % 60:02d}] {msg}", file=sys.stderr, flush=True)


def build_image(bundle, name, out_dir, programs=None, dirs=(), image="bench.img"):
    """out_dir/image: the user programs (every one built, or those named) in
    /bin, the bundle directory at /AI/name and more directories as
    "GUEST=HOST" (mkfsimg's --add-dir)."""
    img = os.path.join(out_dir, image)
    if programs is None:
        programs = sorted(p for p in os.listdir(BIN) if os.path.isfile(os.path.join(BIN, p)) and "." not in p)
    adds = [a for d in (f"AI/{name}={bundle}", *dirs) for a in ("--add-dir", d)]
    subprocess.check_call([PYTHON, os.path.join(HERE, "mkfsimg.py"), "--out", img,
                           *(os.path.join(BIN, p) for p in programs), *adds], stdout=subprocess.DEVNULL)
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
            raise RuntimeError(f"`{command}` did not finish in {timeout} s:\n{session.since(start)}")
        done = re.findall(r"aibench: progress (\d+)/(\d+)", session.since(start))
        shown = f"{done[-1][0]}/{done[-1][1]} requests" if done else (f"0/{total} requests" if total else "running")
        if shown != last_shown or now - last_time >= 30:
            progress(f"{label}: {shown}, {now - t0:.0f} s")
            last_shown, last_time = shown, now
    text = session.since(start)
    text = text[text.find("\n") + 1:]                # drop the echoed command line
    if text.endswith(qemu_run.PROMPT):
        text = text[:-len(qemu_run.PROMPT)]
    if any(m in text for m in qemu_run.PANIC_MARKERS):
        raise RuntimeError(f"kernel panic during `{command}`:\n{text}")
    return text.replace("\r", "")


def kernel_command_line(args, workers):
    """ai.workers=W, and ai.max_batch=N when --max-batch was given (else the
    kernel's default: a worker runs up to that many requests together)."""
    line = f"ai.workers={workers}"
    if args.max_batch:
        line += f" ai.max_batch={args.max_batch}"
    return line


def _boot(img, args, smp, workers, deterministic, disk, extra=""):
    append = kernel_command_line(args, workers) + (" " + extra if extra else "")
    s = qemu_run.Session(img, KERNEL, smp=smp, memory=args.memory, snapshot=True, boot_timeout=300,
                         append=append, deterministic=deterministic, disk=disk)
    if not s.booted:
        s.close()
        sys.exit("bench: boot failed:\n" + s.transcript)
    # The model's load line comes while the shell starts: wait for it, or it
    # may interleave with a command's output. Not fatal: console output from
    # init or the shell can split the line beyond recognition.
    if not s.wait_log(rf"ai: model {re.escape(args.name)} (ready|failed)", timeout=600):
        progress(f"model {args.name}'s load line not recognised on the console; going on")
    return s


def cold_warm(args, img, disks, logs):
    """{disk: {"runs", "tokens_identical", "timing_line", "boot_load_ms"}}:
    coldwarm in exact mode, one boot per disk model."""
    int8 = "" if args.float else " --int8"
    prompt = " ".join(str(1 + i) for i in range(args.prompt))
    out = {}
    for d in disks:
        progress(f"cold vs warm on disk model {d}: booting in exact mode (one hart)")
        # The service keeps a private copy of the model (mem.share_models=0):
        # by default its pages are the bundle's page-cache pages, and the
        # cold runs would read them from memory, not from the disk.
        s = _boot(img, args, 1, 1, True, d, extra="mem.share_models=0")
        try:
            text = run_command(s, f"coldwarm --model {args.name} --runs {args.cold_runs} --predict {args.predict}"
                                  f"{int8} --csv --disk {d} {prompt}", COMMAND_TIMEOUT_S,
                               f"cold vs warm on {d}, {args.cold_runs} runs of each")
            runs, identical, timing = parse_coldwarm(text)
            if not runs:
                sys.exit(f"bench: coldwarm printed no results on disk {d}:\n" + text)
            out[d] = {"runs": runs, "tokens_identical": identical, "timing_line": timing,
                      "boot_load_ms": parse_boot_load(s.transcript, args.name)}
            c = [r["launch_ttft_us"] for r in runs if r["path"] == "cold"]
            progress(f"cold vs warm on {d}: cold launch TTFT {min(c) / 1e3:.0f}-{max(c) / 1e3:.0f} ms (virtual time)")
            s.halt()
        finally:
            logs[f"coldwarm-{d}"] = s.transcript.replace("\r", "")
            s.close()
    return out


def sweep(args, img, workers, clients, logs):
    """A list of runs, one per (workers, clients, repeat), each with its
    request rows, samples, aibench summary and calibration times."""
    rng = random.Random(args.seed)
    boots = [(w, k) for w in workers for k in range(args.repeat)]
    rng.shuffle(boots)
    int8 = "" if args.float else " --int8"
    calib = f"calib --iterations {args.calib_iterations}"
    runs = []
    total = len(boots) * len(clients)
    for b, (w, k) in enumerate(boots):
        order = list(clients)
        rng.shuffle(order)
        clock = "exact mode" if args.deterministic else "real time"
        progress(f"boot {b + 1}/{len(boots)} ({clock}): {w} worker(s), repeat {k + 1}/{args.repeat}, "
                 f"-smp {args.smp}, clients in the order {order}")
        s = _boot(img, args, args.smp, w, args.deterministic, args.sweep_disk)
        try:
            for c in order:
                label = f"point {len(runs) + 1}/{total}: {w} worker(s), {c} client(s), repeat {k + 1}"
                before = parse_calib(run_command(s, calib, 600, "calibration"))
                text = run_command(s, f"aibench --model {args.name} --clients {c} --requests {args.requests} "
                                      f"--prompt {args.prompt} --predict {args.predict}{int8} --csv --progress",
                                   COMMAND_TIMEOUT_S, label, c * args.requests)
                after = parse_calib(run_command(s, calib, 600, "calibration"))
                rows, samples, little = parse_aibench(text)
                rows = [derive({"workers": w, "clients": c, "repeat": k, **r}) for r in rows]
                stats = point_stats(rows)
                runs.append({"workers": w, "clients": c, "repeat": k, "boot": b, "rows": rows,
                             "samples": samples, "little": little, "stats": stats,
                             "calib_before_us": before, "calib_after_us": after,
                             "host_load": round(os.getloadavg()[0], 1)})
                progress(f"{label}: {stats['done']}/{stats['requests']} done, {stats['throughput_rps']:.3f} req/s, "
                         f"p50 {stats['e2e_us']['p50'] / 1e3:.0f} ms; calib {before} -> {after} us")
            s.halt()
        finally:
            logs[f"sweep-boot{b}-w{w}"] = s.transcript.replace("\r", "")
            s.close()
    return runs
