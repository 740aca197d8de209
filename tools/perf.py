#!/usr/bin/python3
"""`make perf`: what a student waits for, and the work behind it, on the
SmolLM2-135M-shape model with int8 activations.

    perf.py [--image IMG] [--kernel ELF] [--memory SIZE] [--repeat R] [--out FILE]
            [--timeout S] [--no-exact] [--no-real] [--full-perfbench]

Two kinds of figures (docs/runtime.md, "Measured: make perf"):

Exact mode (qemu_run --deterministic, QEMU -icount, one hart): the guest clock
counts instructions, 1 ns each, so a time in this boot IS an instruction
count, the same on any host. One boot runs
  perfbench --quick   instructions per multiply-add of the batched forward
                      pass (decode@1, decode@8, prefill@64);
  coldwarm --runs 1   instructions of the cold path (llmrun) and the warm path
                      (also those of one request, `ai --timing`, below);
  aibench 8 clients   instructions per token with 8 requests batched.

Real time (the wall clock of the host), one boot per configuration, each
case repeated R times (default 5), reported as median [min..max]. What is
compared is measured in the same boot, run against run, wherever it can be:
a host that slows down for a while then slows both sides of a pair.
  -smp 1            coldwarm --runs 1, R times: cold and warm, one pair per
                    run (the pairs give the warm/cold ratios); then aibench
                    with 8 clients R times, each run after one at
                    `aictl max_batch 1` (one request at a time on one hart:
                    the baseline that batching and harts are compared with,
                    in tokens/s); then QEMU's `info jit`;
  -smp 2 ai.harts=2 one request (ai --timing) R times at `aictl harts 1`
                    and at `aictl harts 2`, alternately (the pairs give the
                    harts ratio); then aibench with 8 clients R times at
                    `aictl max_batch 1` + `aictl harts 1` and at the default
                    engine, alternately;
  -smp 2 / -smp 4   -smp 4 (ai.harts=3) against -smp 2 (ai.harts=2) cannot
                    share a boot, so R rounds of two short boots,
                    alternately: each boot one request, then SMP_RUNS
                    (3) more; per round the ratio of the two boots'
                    medians.
In every -smp 2 and -smp 4 boot one request runs first, outside the medians,
and is shown on a row of its own: the first request after a boot is the one
in which QEMU translates the code and a row team settles its width (at
-smp 4 on 2 host cores 2 threads are faster than 3; the team's survey after
the model has loaded finds that, kernel/ai/width_survey.h).
Each case also gets nanoseconds of real time per counted instruction (its
real time over its exact-mode instruction count): a case that runs slow for
its work stands out (code that crosses pages, a hand-off that waits). The
cold launch TTFT (from fork, docs/timing.md) includes reading the model's files, time in which the guest waits
for the disk and runs no instructions; so the table also has the cold
prefill alone (llmrun's own ttft_us), and the spread of the one-hart cases
is printed with and without the cold TTFT, naming the case furthest off;
then again from each case's fastest run (a slow stretch of the host only
adds time, and may fall into one case's median and not another's). A case
can also cost more per instruction because it runs dearer instructions:
batched passes run more multiplies and float operations per instruction
(`opcost` times each kind, tools/instr_mix.py charges an exact-mode
profile's instructions those times: docs/runtime.md).
After each boot's measurements `aistat` prints the engine's row team,
`harts=H harts_in_use=W`: the width control (kernel/ai/width_control.h) may
have settled on fewer harts than ai.harts, and the table's last column shows
it next to each warm case of that boot.
Every real-time boot runs `calib` (a fixed integer loop, some 13 ms; with
several harts, one loop per hart at once, up to the host's cores) first,
last and after each pair of runs; a boot whose readings spread, or whose
slowest ran slower than the median of all the boots' readings, by more than
15% is flagged as run on a noisy host (tools/benchlib/noise.py). Each paired
ratio is also given over the *steady* pairs alone, those whose readings just
before and just after agree within 15% and lie within 15% of the run's fastest
reading: a pair during which the host changed speed compares two hosts, not
two configurations, and a host that is slow throughout a pair has usually
taken part of a core, which slows a two-hart run more than a one-hart one.

Prints one table, dated, with the host's load (uptime) before and after,
ready to paste into docs/runtime.md. A benchmark, not a test: it asserts
nothing. About 10 minutes on a quiet 2-core host. Standard library only.
"""
import argparse
import contextlib
import datetime
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import qemu_run  # noqa: E402
from benchlib import noise  # noqa: E402
from benchlib.output import qemu_version, uptime  # noqa: E402
from benchlib.parse import parse_ai_timing, parse_aibench, parse_calib, parse_coldwarm  # noqa: E402

PROMPT_IDS = "504 3575 282 4649 314"   # "The capital of France is" in SmolLM2's tokenizer
PREDICT = 16
MODEL = "SMOL"
# Boots that run coldwarm keep the service's private copy of the model: by
# default the service's weights are the bundle's page-cache pages
# (docs/virtual-memory.md, "One copy of a model"), and the cold path would
# then never read the disk.
PRIVATE_COPY = "mem.share_models=0"
COLDWARM = f"coldwarm --model {MODEL} --int8 --csv --predict {PREDICT} --runs {{runs}} {PROMPT_IDS}"
ONE_REQUEST = f"ai --model {MODEL} --int8 --timing --predict {PREDICT} {PROMPT_IDS}"
BATCH_CLIENTS = 8
# --align-tick: the 8 clients start on a tick, so that the exact-mode run of
# this row repeats from boot to boot (tools/engine_study.py, ALIGN, says why).
BATCH = (f"aibench --model {MODEL} --int8 --clients {BATCH_CLIENTS} --requests 1 --prompt 4 "
         f"--predict {PREDICT} --align-tick")
CALIB = "calib"

PERF_LINE = re.compile(r"^perf case=(\w+) batch=(\d+) tokens=(\d+) macs=(\d+) ns=(\d+)", re.M)
AISTAT_TEAM = re.compile(r"^engine: .*?\b(harts=\d+ harts_in_use=\d+)", re.M)
JIT = {"tbs": re.compile(r"^TB count\s+(\d+)", re.M),
       "cross_page": re.compile(r"^cross page TB count\s+(\d+) \((\d+)%\)", re.M),
       "direct": re.compile(r"^direct jump count\s+(\d+) \((\d+)%\)", re.M)}


class Boot:
    """One QEMU session: run a command, get what it printed."""

    def __init__(self, args, smp, append="", exact=False, monitor=None):
        self.label = f"-smp {smp}" + (f" {append}" if append else "") + (" (exact)" if exact else "")
        self.calibs = []
        # As many calib loops at once as the boot's measurements keep harts
        # busy (up to the host's cores): a host that takes one of two cores
        # slows a two-hart run, and one calib loop alone would still find a
        # free core and read as fast as ever.
        busy = min(smp, os.cpu_count() or 1)
        self.calib_command = CALIB if busy <= 1 or exact else f"{CALIB} --harts {busy}"
        self.monitor = monitor
        self.session = qemu_run.Session(args.image, args.kernel, smp, args.memory, snapshot=True,
                                        boot_timeout=300, append=append, deterministic=exact,
                                        monitor=monitor)
        if not self.session.booted:
            self.fail("boot failed")

    def fail(self, why):
        sys.stderr.write(self.session.transcript[-3000:])
        self.session.close()
        raise SystemExit(f"perf: {self.label}: {why}")

    def run(self, command, timeout):
        start = self.session.mark()
        if not self.session.command(command, timeout):
            self.fail(f"'{command}' did not finish in {timeout:.0f} s")
        text = self.session.since(start)
        if any(m in text for m in qemu_run.PANIC_MARKERS):
            self.fail("kernel panic")
        return text

    def calib(self):
        """One `calib` reading (us), also kept in self.calibs: a boot reads it
        first, last and between its pairs, because the host can slow down
        for a few seconds in the middle of a boot and be fast again by its
        end (the readings before and after alone then look calm)."""
        us = parse_calib(self.run(self.calib_command, 600))
        if us:
            self.calibs.append(us)
        return us

    def row_team(self):
        """aistat's 'harts=H harts_in_use=W' (the row team now), or None."""
        return row_team_of(self.run("aistat", 120))

    def info_jit(self):
        """QEMU's translation statistics from the monitor (HMP), or {}."""
        try:
            with qemu_run.Monitor(self.monitor, timeout=10) as m:
                text = m.command("info jit", until=b"TB hash buckets")
        except OSError as e:
            return {"error": str(e)}
        out = {}
        for key, rx in JIT.items():
            m = rx.search(text)
            if m:
                out[key] = tuple(int(g) for g in m.groups())
        return out

    def close(self):
        try:
            self.session.halt()
        finally:
            self.session.close()


def spread(values):
    """'median [min..max] (n)' of a list of numbers, in the unit given."""
    return statistics.median(values), min(values), max(values), len(values)


def coldwarm_runs(text):
    """coldwarm --csv's runs that have both halves: [{cold: {...}, warm: {...}}]."""
    runs = {}
    for r in parse_coldwarm(text)[0]:
        runs.setdefault(r["run"], {})[r["path"]] = {k: r[f"{k}_us"] for k in ("tpot", "e2e", "load", "prefill")}
        runs[r["run"]][r["path"]]["ttft"] = r["launch_ttft_us"]   # from fork or ai_submit (docs/timing.md)
    return [r for _, r in sorted(runs.items()) if "cold" in r and "warm" in r]


def row_team_of(text):
    """'harts=H harts_in_use=W' from aistat's engine line, or None."""
    m = AISTAT_TEAM.search(text)
    return m.group(1) if m else None


def batch_cost_us(text):
    """Microseconds of wall time per generated token of one aibench run."""
    s = parse_aibench(text)[2]
    if s["done"] != BATCH_CLIENTS or s["wall_s"] is None:
        return None
    return s["wall_s"] * 1e6 / (BATCH_CLIENTS * PREDICT)


def one_request(text):
    t = parse_ai_timing(text)
    return {"ttft": t["ttft_us"], "tpot": t["tpot_us"]} if t else None


def exact_boot(args):
    """Instruction counts (exact mode, one hart)."""
    out = {}
    b = Boot(args, 1, append=PRIVATE_COPY, exact=True)
    try:
        text = b.run("perfbench" if args.full_perfbench else "perfbench --quick", args.timeout)
        out["perfbench"] = {f"{m.group(1)}@{m.group(2)}": (int(m.group(4)), int(m.group(5)))
                            for m in PERF_LINE.finditer(text)}
        runs = coldwarm_runs(b.run(COLDWARM.format(runs=1), args.timeout))
        if runs:
            for path in ("cold", "warm"):
                for k in ("ttft", "tpot"):
                    out[f"{path} {k}"] = runs[0][path][k] * 1000   # us of virtual time -> instructions
            out["cold prefill"] = runs[0]["cold"]["prefill"] * 1000
        cost = batch_cost_us(b.run(BATCH, args.timeout))
        if cost:
            out["batch8"] = cost * 1000
        # One request (ai --timing) is coldwarm's warm run: the same instructions.
        if "warm ttft" in out:
            out["one ttft"], out["one tpot"] = out["warm ttft"], out["warm tpot"]
    finally:
        b.close()
    return out


def aictl(b, setting, args):
    """`aictl SETTING` in boot b; fails the boot if the kernel refused it."""
    text = b.run(f"aictl {setting}", args.timeout)
    if "aictl:" in text:
        b.fail(f"aictl {setting}: {text.strip()[-200:]}")


def paired(b, args, *runs):
    """R rounds in boot b, each running `runs` in turn, with `calib` after
    each round. A run is (aictl settings, command, parse). Returns the rounds
    (a tuple of parsed results) in which every run parsed, and the calib
    readings (before, after) around each."""
    rounds, around = [], []
    before = b.calibs[-1] if b.calibs else b.calib()
    for _ in range(args.repeat):
        got = []
        for settings, command, parse in runs:
            for setting in settings:
                aictl(b, setting, args)
            got.append(parse(b.run(command, args.timeout)))
        after = b.calib()
        if all(got):
            rounds.append(tuple(got))
            around.append((before, after))
        before = after
    return rounds, around


def warm_up(b, args):
    """The first request of a boot, outside the medians: [its TPOT] (or [])."""
    first = one_request(b.run(ONE_REQUEST, args.timeout))
    return [first["tpot"]] if first else []


@contextlib.contextmanager
def measured_boot(args, boots, smp, append="", monitor=None):
    """A real-time boot: `calib` first; its readings (every loop inside ends
    with one, the last reading) go to `boots` when the block ends."""
    b = Boot(args, smp, append=append, monitor=monitor)
    try:
        # Nothing is measured while the model loads, nor, with a row team,
        # while the team times its widths right after (kernel/ai/
        # width_survey.h, a few hundred ms): a `calib` beside either read
        # 17-20 ms instead of 13 and flagged every such boot as noisy.
        if not b.session.wait_log(rf"ai: model {MODEL} ready", timeout=300):
            b.fail(f"model {MODEL} not ready")
        if smp > 1:
            b.run("sleep 1", args.timeout)
        b.calib()
        yield b
        boots.append((b.label, *b.calibs))
    finally:
        b.close()


def first_pair(text):
    """The one cold/warm pair of `coldwarm --runs 1`, or None."""
    runs = coldwarm_runs(text)
    return runs[0] if runs else None


def real_boots(args):
    """Real-time figures, one boot per configuration."""
    cases, boots, jit = {}, [], {}
    # The row team after each boot's measurements (aistat), by the cases
    # that boot measured. Not the cold path: llmrun is one process on one hart.
    team = cases["row team"] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            measured_boot(args, boots, 1, append=PRIVATE_COPY, monitor=os.path.join(tmp, "monitor.sock")) as b:
        rounds, cases["pairs calib"] = paired(b, args, ([], COLDWARM.format(runs=1), first_pair))
        pairs = [p for (p,) in rounds]
        for path in ("cold", "warm"):
            for k in ("ttft", "tpot"):
                cases[f"{path} {k}"] = [p[path][k] for p in pairs]
        cases["cold prefill"] = [p["cold"]["prefill"] for p in pairs]
        cases["pairs"] = pairs
        # Batching against one request at a time, alternately.
        batch_pairs, cases["batch pairs smp1 calib"] = paired(
            b, args, (["max_batch 1"], BATCH, batch_cost_us), (["max_batch 8"], BATCH, batch_cost_us))
        cases["batch8 max_batch1"] = [a for a, _ in batch_pairs]
        cases["batch8"] = [t for _, t in batch_pairs]
        cases["batch pairs smp1"] = batch_pairs
        team.update(dict.fromkeys(("warm ttft", "warm tpot", "batch8", "batch8 max_batch1"), b.row_team()))
        jit = b.info_jit()
    # One hart against two, and the 8 clients batched on two harts against
    # one request at a time on one, alternately in one -smp 2 boot.
    with measured_boot(args, boots, 2, append="ai.harts=2") as b:
        cases["smp2 harts2 first tpot"] = warm_up(b, args)
        b.calib()
        harts_pairs, cases["harts pairs calib"] = paired(
            b, args, (["harts 1"], ONE_REQUEST, one_request), (["harts 2"], ONE_REQUEST, one_request))
        for h, k in ((1, 0), (2, 1)):
            cases[f"smp2 harts{h} ttft"] = [p[k]["ttft"] for p in harts_pairs]
            cases[f"smp2 harts{h} tpot"] = [p[k]["tpot"] for p in harts_pairs]
        cases["harts pairs"] = harts_pairs
        batch_pairs, cases["batch pairs smp2 calib"] = paired(
            b, args, (["max_batch 1", "harts 1"], BATCH, batch_cost_us),
            (["max_batch 8", "harts 2"], BATCH, batch_cost_us))
        cases["smp2 alone batch8"] = [a for a, _ in batch_pairs]
        cases["smp2 harts2 batch8"] = [t for _, t in batch_pairs]
        cases["batch pairs smp2"] = batch_pairs
        team.update(dict.fromkeys(("smp2 harts2 ttft", "smp2 harts2 tpot", "smp2 harts2 batch8"), b.row_team()))
        team.update(dict.fromkeys(("smp2 harts1 ttft", "smp2 harts1 tpot", "smp2 alone batch8"),
                                  "limited to 1 (aictl harts 1)"))
    smp_rounds(args, cases, boots, team)
    return cases, boots, jit


SMP_RUNS = 3     # requests per boot after its first


def smp_rounds(args, cases, boots, team):
    """-smp 4 against -smp 2: args.repeat rounds of two boots, alternately.
    Why not one long boot each: this host changes speed by half for seconds
    at a time, and a ratio of two boots minutes apart measured that (1.28,
    0.88, ...); boots next to each other see more of the same host. Each
    round gives one ratio of medians, with the calib readings before the
    first boot and after the second (a steady round: within 15%). As many
    rounds as every other case has runs: three rounds gave 1.03-1.06 in
    three make perf runs, with single rounds from 0.97 to 1.40."""
    configs = ((2, 2), (4, 3))
    for _ in range(args.repeat):
        medians, around = {}, []
        for smp, harts in configs:
            key = f"smp{smp} harts{harts}"
            with measured_boot(args, boots, smp, append=f"ai.harts={harts}") as b:
                cases.setdefault(f"{key} first tpot", []).extend(warm_up(b, args))
                runs = [one_request(b.run(ONE_REQUEST, args.timeout)) for _ in range(SMP_RUNS)]
                runs = [r for r in runs if r]
                b.calib()
                around.append(b.calibs[0] if smp == 2 else b.calibs[-1])
                cases.setdefault(f"{key} boots tpot", []).extend(r["tpot"] for r in runs)
                if runs:
                    medians[smp] = statistics.median(r["tpot"] for r in runs)
                team[f"{key} boots tpot"] = team[f"{key} first tpot"] = b.row_team()
        if len(medians) == 2:
            cases.setdefault("smp rounds", []).append((medians[2], medians[4]))
            cases.setdefault("smp rounds calib", []).append(tuple(around))


# Cases whose real time includes waiting for the disk: cold TTFT reads the
# model's files (135 MB) after fork and exec, and while the device works the
# guest runs no instructions, so its time per instruction is not a measure
# of how fast its code runs. The summary gives the spread with and without
# them; the cold prefill row is the same request's computation alone.
DISK_WAIT_ROWS = {"cold launch TTFT (llmrun)"}

# (row label, real-time case, exact-mode case, smp, harts)
ROWS = [
    ("cold launch TTFT (llmrun)", "cold ttft", "cold ttft", 1, 1),
    ("cold prefill (llmrun's ttft_us: no fork, exec, loading)", "cold prefill", "cold prefill", 1, 1),
    ("cold TPOT (llmrun)", "cold tpot", "cold tpot", 1, 1),
    ("warm TTFT", "warm ttft", "warm ttft", 1, 1),
    ("warm TPOT", "warm tpot", "warm tpot", 1, 1),
    (f"warm per token, {BATCH_CLIENTS} clients", "batch8", "batch8", 1, 1),
    (f"warm per token, {BATCH_CLIENTS} clients, ai.max_batch=1", "batch8 max_batch1", None, 1, 1),
    (f"warm per token, {BATCH_CLIENTS} clients, ai.max_batch=1", "smp2 alone batch8", None, 2, 1),
    (f"warm per token, {BATCH_CLIENTS} clients", "smp2 harts2 batch8", "batch8", 2, 2),
    ("one request TPOT", "smp2 harts1 tpot", "one tpot", 2, 1),
    ("one request TPOT", "smp2 harts2 tpot", "one tpot", 2, 2),
    ("one request TPOT (alternating boots)", "smp2 harts2 boots tpot", "one tpot", 2, 2),
    ("one request TPOT (alternating boots)", "smp4 harts3 boots tpot", "one tpot", 4, 3),
    ("first request after boot, TPOT (not in the medians)", "smp2 harts2 first tpot", "one tpot", 2, 2),
    ("first request after boot, TPOT (not in the medians)", "smp4 harts3 first tpot", "one tpot", 4, 3),
    ("one request TTFT", "smp2 harts1 ttft", "one ttft", 2, 1),
    ("one request TTFT", "smp2 harts2 ttft", "one ttft", 2, 2),
]


def steady_pair(calib_around, full_speed_us=None, threshold_pct=noise.DEFAULT_THRESHOLD_PCT):
    """Whether the host kept its full speed through one pair of runs: the
    calib readings just before and just after it within threshold_pct of
    each other and, given the run's fastest reading (full_speed_us), of that
    too. Why both: a host that is steadily slow has usually taken part of a
    core for itself, and a two-hart run then slows more than the one-hart
    run beside it (docs/notebook/2026-12-runtime-tuning.md, "Night of
    2026-12-05")."""
    before, after = calib_around
    if not (before and after) or abs(after - before) / min(before, after) * 100 > threshold_pct:
        return False
    return full_speed_us is None or max(before, after) * 100 <= full_speed_us * (100 + threshold_pct)


def ratio_line(name, num, den, calib_around=None, unit="", full_speed_us=None):
    """'NAME = median [min..max]' of the pairs' ratios num/den; with the calib
    readings around each pair, also the same over the pairs run on a steady
    host at full speed (a pair during which the host changed speed compares
    two hosts; one on a host that is slow throughout, a host short of a core)."""
    if not num or not den or len(num) != len(den):
        return None
    r = [a / b for a, b in zip(num, den)]
    text = f"{name} = {statistics.median(r):.3f} [{min(r):.3f}..{max(r):.3f}]{unit}"
    if calib_around and len(calib_around) == len(r):
        steady = [x for x, c in zip(r, calib_around) if steady_pair(c, full_speed_us)]
        text += (f"; steady host, {len(steady)} of {len(r)} pairs: {statistics.median(steady):.3f} "
                 f"[{min(steady):.3f}..{max(steady):.3f}]{unit}" if steady else
                 f"; steady host: none of {len(r)} pairs")
    return text


def report(exact, real, boots, jit, repeat, started, up_before, up_after):
    lines = [f"make perf, {started:%Y-%m-%d %H:%M} UTC, {qemu_version().replace('QEMU emulator version', 'QEMU').strip() or 'QEMU ?'}, {os.cpu_count()} host cores",
             f"host load before: {up_before}",
             f"host load after:  {up_after}",
             f"model {MODEL} (SmolLM2-135M shape), int8 activations, prompt of 5 tokens, "
             f"{PREDICT} generated; real time: median [min..max] of {repeat} runs",
             "",
             f"| case | -smp | ai.harts | real time, ms | instructions (exact) | ns per instruction "
             f"| row team after the boot (aistat) |",
             "|---|---|---|---|---|---|---|"]
    per_instr, per_instr_fastest = {}, {}
    team = real.get("row team") or {}
    for label, rcase, ecase, smp, harts in ROWS:
        vals = real.get(rcase) or []
        ins = exact.get(ecase) if ecase else None
        if vals:
            med, lo, hi, n = spread(vals)
            rt = f"{med / 1000:.1f} [{lo / 1000:.1f}..{hi / 1000:.1f}]"
        else:
            rt, med = "-", None
        nspi = med * 1000 / ins if med and ins else None
        if nspi:
            per_instr[(label, smp, harts)] = nspi
            per_instr_fastest[(label, smp, harts)] = lo * 1000 / ins
        lines.append(f"| {label} | {smp} | {harts} | {rt} | {f'{ins / 1e6:.1f} M' if ins else '-'} | "
                     f"{f'{nspi:.3f}' if nspi else '-'} | {team.get(rcase) or '-'} |")
    lines.append("")
    # The run's fastest calib reading: the host at full speed (steady_pair).
    readings = [t for _, *rs in boots for t in rs if t] if boots else []
    full = min(readings) if readings else None
    pairs = real.get("pairs") or []
    around = real.get("pairs calib")
    for text in (ratio_line("warm/cold TPOT (paired runs, -smp 1)",
                            [p["warm"]["tpot"] for p in pairs], [p["cold"]["tpot"] for p in pairs], around,
                            full_speed_us=full),
                 ratio_line("warm/cold launch TTFT (paired runs, -smp 1)",
                            [p["warm"]["ttft"] for p in pairs], [p["cold"]["ttft"] for p in pairs], around,
                            full_speed_us=full)):
        if text:
            lines.append(text)
    hp = real.get("harts pairs") or []
    text = ratio_line("one request TPOT, 2 harts / 1 hart at -smp 2 (paired runs, aictl harts)",
                      [two["tpot"] for _, two in hp], [one["tpot"] for one, _ in hp], real.get("harts pairs calib"),
                      full_speed_us=full)
    if text:
        lines.append(text)
    rounds = real.get("smp rounds") or []
    text = ratio_line(f"one request TPOT, -smp 4 (3 harts) / -smp 2 (2 harts) (alternating boots, "
                      f"medians of {SMP_RUNS} requests each)",
                      [four for _, four in rounds], [two for two, _ in rounds], real.get("smp rounds calib"),
                      full_speed_us=full)
    if text:
        lines.append(text)
    base, best = real.get("batch8 max_batch1"), real.get("smp2 harts2 batch8")
    if base and best:
        lines.append(f"{BATCH_CLIENTS} clients, tokens/s at -smp 2 ai.harts=2 (batching) / at -smp 1 "
                     f"ai.max_batch=1 = {statistics.median(base) / statistics.median(best):.2f}x (medians)")
    # tokens/s ratios: the time per token of one-at-a-time over batched.
    for name, key in ((f"{BATCH_CLIENTS} clients, tokens/s batched / one at a time at -smp 1 "
                       f"(paired runs, aictl max_batch)", "batch pairs smp1"),
                      (f"{BATCH_CLIENTS} clients, tokens/s batched on 2 harts / one at a time on 1 hart at -smp 2 "
                       f"(paired runs, aictl)", "batch pairs smp2")):
        bp = real.get(key) or []
        text = ratio_line(name, [a for a, _ in bp], [t for _, t in bp], real.get(key + " calib"), unit="x",
                          full_speed_us=full)
        if text:
            lines.append(text)
    def one_hart(table, disk_waits):
        return {f"{label}, -smp {smp}": v for (label, smp, harts), v in table.items()
                if harts == 1 and (disk_waits or label not in DISK_WAIT_ROWS)}
    # The same figure from each case's fastest run too: the host's slow
    # stretches only ever add time, so a median can carry them into one
    # case and not another (cold TPOT 0.368 against warm 0.294 ns per
    # instruction in one run whose paired warm/cold ratio was 0.97); the
    # fastest runs show which case is slow for its work.
    for name, values in (("one-hart cases", one_hart(per_instr, True)),
                         ("one-hart cases without disk waits (all but cold TTFT)", one_hart(per_instr, False)),
                         ("one-hart cases without disk waits, each case's fastest run",
                          one_hart(per_instr_fastest, False))):
        if values:
            med = statistics.median(values.values())
            worst = max(values, key=lambda k: abs(values[k] / med - 1))
            lines.append(f"ns per instruction, {name}: median {med:.3f}, furthest off "
                         f"{(values[worst] / med - 1) * 100:+.0f}% ({worst})")
    if per_instr:
        # What a spread means: batched passes run more multiplies and float
        # operations per instruction, each dearer than an add under QEMU.
        lines.append("(ns per instruction follows the mix of kinds of instruction: opcost and "
                     "tools/instr_mix.py, docs/runtime.md)")
    if jit:
        if "error" in jit:
            lines.append(f"info jit: monitor unavailable ({jit['error']})")
        else:
            tbs = jit.get("tbs", (0,))[0]
            cp, cpp = jit.get("cross_page", (0, 0))
            dj, djp = jit.get("direct", (0, 0))
            lines.append(f"info jit after the -smp 1 boot: {tbs} translation blocks, {cp} cross a page "
                         f"({cpp}%), direct jumps {dj} ({djp}%)")
    if boots:
        # A boot is (label, first reading, ..., last reading): judged by the
        # fastest and slowest of them, so a slow stretch in the middle shows.
        calibs = [t for _, *readings in boots for t in readings if t]
        ref = statistics.median(calibs) if calibs else None
        for label, *readings in boots:
            readings = [t for t in readings if t]
            before, after = (readings[0], readings[-1]) if readings else (None, None)
            lo, hi = (min(readings), max(readings)) if readings else (None, None)
            flags, _ = noise.calibration_flags(lo, hi, ref)
            between = f" (all {len(readings)} readings {lo}..{hi} us)" if len(readings) > 2 else ""
            lines.append(f"calib {label}: {before} -> {after} us{between}" +
                         (f"  NOISY HOST: {'; '.join(flags)}" if flags else ""))
    pb = exact.get("perfbench") or {}
    if pb:
        lines.append("instr/MAC (exact, perfbench): " +
                     " ".join(f"{k}={ns / macs:.2f}" for k, (macs, ns) in pb.items()))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "fs-smol.img"))
    ap.add_argument("--kernel", default=os.path.join(ROOT, "build", "kernel", "kernel.elf"))
    ap.add_argument("--memory", default="1G")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per guest command")
    ap.add_argument("--repeat", type=int, default=5, help="real-time runs per case (default 5)")
    ap.add_argument("--no-real", action="store_true", help="skip the real-time boots")
    ap.add_argument("--no-exact", action="store_true", help="skip the exact-mode boot")
    ap.add_argument("--full-perfbench", action="store_true",
                    help="all perfbench cases (decode@1..16, prefill@16..255), not --quick")
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error(f"--repeat: {args.repeat} is not a count of at least 1")

    started = datetime.datetime.now(datetime.timezone.utc)
    up_before = uptime()
    t0 = time.monotonic()
    exact = {} if args.no_exact else exact_boot(args)
    real, boots, jit = ({}, [], {}) if args.no_real else real_boots(args)
    text = report(exact, real, boots, jit, args.repeat, started, up_before, uptime())
    text += f"({time.monotonic() - t0:.0f} s)\n"
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
