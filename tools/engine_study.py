#!/usr/bin/python3
"""The serving-engine study (docs/experiments.md, "The engine"): what
iteration-level batching, scheduling policies and chunked prefill do, on
the SmolLM2-135M-shape model with int8 activations.

Three experiments, each in its own boots of kai:
  1. batching: closed-loop clients (aibench) with ai.max_batch=1 (one
     request at a time, the service before batching) and ai.max_batch=8;
     throughput and latency against the number of clients;
  2. policies: a mixed workload of short and long requests (two aibench
     runs at once) under fcfs, sjf and priority; p50/p95 TTFT and
     end-to-end per class, and the longest wait of a long request;
  3. head-of-line blocking: running requests' inter-token gaps while a
     255-token prompt is admitted (aihol), chunked (small ai.budget) and
     whole (ai.budget=256);
  4. paging: how many short requests run at once in the same KV memory as
     full-length reservations or as 16-position blocks, and the TTFT of
     requests sharing a long prompt prefix (aiprefix).

With --trace DIR (`make trace`) every boot also records the AI service's
trace ring (ai.trace=N) and leaves in DIR, per boot, the aitrace transcript
(LABEL.log), Chrome trace-event JSON (LABEL.json) and a PNG timeline
(LABEL.png), made by tools/trace.py.

By default every boot runs in exact mode (QEMU -icount, one hart: "virtual
time, 1 instruction = 1 ns"), so the figures repeat exactly from run to run
and do not depend on how busy the host is; --real-time uses the host clock.

    engine_study.py --out results/engine [--quick] [--image IMG --model NAME] [--trace DIR]
Writes report.md and results.json there; prints one line per point.
"""
import argparse
import importlib.util
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import qemu_run  # noqa: E402

KERNEL = os.path.join(ROOT, "build", "kernel", "kernel.elf")

# --trace: where each boot's trace goes (None: no trace) and the ring's size.
TRACE = {"dir": None, "events": 65536}


def save_trace(session, label, timeout):
    """Prints the trace ring in the guest and turns it into LABEL.log,
    LABEL.json and LABEL.png under TRACE["dir"]."""
    start = session.mark()
    if not session.command("aitrace", timeout=timeout):
        raise RuntimeError("aitrace did not finish:\n" + session.transcript[start:][-2000:])
    base = os.path.join(TRACE["dir"], label)
    with open(base + ".log", "w") as f:
        f.write(session.transcript[start:])
    spec = importlib.util.spec_from_file_location("kai_trace", os.path.join(HERE, "trace.py"))
    kai_trace = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kai_trace)
    tr = kai_trace.Trace(kai_trace.parse(session.transcript[start:]))
    kai_trace.write_json(tr, base + ".json")
    kai_trace.write_png(tr, base + ".png", title=label)


def boot_and_run(image, model, append, commands, deterministic, timeout, label=None):
    """Boots with kernel options `append`, waits for the model, runs the
    commands; returns {command: output}. With --trace, records the boot's
    trace under `label`."""
    outputs = {}
    tracing = TRACE["dir"] is not None and label is not None
    if tracing:
        append = f"{append} ai.trace={TRACE['events']}".strip()
    with qemu_run.Session(image, KERNEL, smp=1 if deterministic else 2, memory="1G", snapshot=True,
                          boot_timeout=300, append=append, deterministic=deterministic) as s:
        if not s.booted:
            raise RuntimeError("boot failed:\n" + s.transcript[-2000:])
        if not s.wait_log(rf"ai: model {model} (ready|failed)", timeout=300):
            raise RuntimeError(f"model {model} never loaded:\n" + s.transcript[-2000:])
        for cmd in commands:
            start = s.mark()
            if not s.command(cmd, timeout=timeout):
                raise RuntimeError(f"`{cmd}` did not finish in {timeout} s:\n" + s.transcript[start:][-2000:])
            outputs[cmd] = s.transcript[start:]
        if tracing:
            save_trace(s, label, timeout)
        s.halt()
    return outputs


STAT = re.compile(r"^(end-to-end|queue wait|TTFT|TPOT)\s+mean\s+(\d+)\s+p50\s+(\d+)\s+p95\s+(\d+)\s+max\s+(\d+) us",
                  re.M)


def parse_aibench(text):
    """The summary of one aibench run: throughput and the latency table (ms)."""
    out = {}
    m = re.search(r"throughput: ([\d.]+) req/s, ([\d.]+) tokens/s", text)
    if m:
        out["req_per_s"], out["tokens_per_s"] = float(m.group(1)), float(m.group(2))
    for name, mean, p50, p95, mx in STAT.findall(text):
        key = name.replace(" ", "_").replace("-", "_").lower()
        out[key] = {"mean_ms": int(mean) / 1000, "p50_ms": int(p50) / 1000, "p95_ms": int(p95) / 1000,
                    "max_ms": int(mx) / 1000}
    m = re.search(r"requests: (\d+) done", text)
    out["done"] = int(m.group(1)) if m else 0
    return out


def experiment_batching(a, log):
    rows = []
    for max_batch in (1, 8):
        for clients in a.clients:
            cmd = (f"aibench --model {a.model} --clients {clients} --requests {a.requests} "
                   f"--prompt {a.prompt} --predict {a.predict} --int8")
            t0 = time.monotonic()
            out = boot_and_run(a.image, a.model, f"ai.max_batch={max_batch}", [cmd], a.exact, a.timeout,
                               label=f"batching-max_batch{max_batch}-clients{clients}")[cmd]
            r = parse_aibench(out)
            r.update(max_batch=max_batch, clients=clients, wall_s=round(time.monotonic() - t0, 1))
            rows.append(r)
            log(f"batching: max_batch={max_batch} clients={clients}: {r.get('tokens_per_s', 0):.2f} tokens/s, "
                f"p50 end-to-end {r.get('end_to_end', {}).get('p50_ms', 0):.0f} ms")
    return rows


def experiment_policies(a, log):
    rows = []
    short = (f"aibench --model {a.model} --clients {a.short_clients} --requests {a.requests} "
             f"--prompt 8 --predict 4 --int8 --seed 11")
    long_ = (f"aibench --model {a.model} --clients {a.long_clients} --requests 1 "
             f"--prompt {a.long_prompt} --predict {a.long_predict} --int8 --seed 12 --priority 5")
    for policy in ("fcfs", "sjf", "priority"):
        # The long class starts first (it is what blocks the short ones
        # under fcfs); the short class runs in the foreground; then the
        # long class's report is read from its file.
        # The long class starts first and has the queue to itself for a
        # moment (one second) before the short class arrives.
        cmds = [f"{long_} > /long.txt &", "sleep 1", short, "wait", "cat /long.txt"]
        append = f"ai.max_batch={a.policy_batch} ai.policy={policy} ai.aging_ms={a.aging_ms}"
        outs = boot_and_run(a.image, a.model, append, cmds, a.exact, a.timeout, label=f"policies-{policy}")
        r = {"policy": policy, "short": parse_aibench(outs[short]), "long": parse_aibench(outs["cat /long.txt"])}
        rows.append(r)
        log(f"policies: {policy}: short p50 TTFT {r['short'].get('ttft', {}).get('p50_ms', 0):.0f} ms, "
            f"long max queue wait {r['long'].get('queue_wait', {}).get('max_ms', 0):.0f} ms")
    return rows


def experiment_hol(a, log):
    rows = []
    for budget in a.budgets:
        cmd = f"aihol --model {a.model} --clients {a.hol_clients} --predict {a.hol_predict} --long {a.long_len} --int8"
        # max_batch <= budget (every running request's decode token must fit).
        append = f"ai.max_batch={min(4, budget)} ai.budget={budget}"
        out = boot_and_run(a.image, a.model, append, [cmd], a.exact, a.timeout, label=f"hol-budget{budget}")[cmd]
        m = re.search(r"aihol: (.*)", out)
        if not m:
            raise RuntimeError(f"aihol printed no summary:\n{out}")
        r = {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", m.group(1))}
        rows.append(r)
        log(f"head-of-line: budget={budget}: running requests' p95 gap {r['during_p95_us'] / 1000:.0f} ms during "
            f"the long prefill vs {r['solo_p50_us'] / 1000:.0f} ms alone ({r['ratio_p95']:.2f}x)")
    return rows


def experiment_paging(a, log):
    """The same KV memory as full-length reservations (one block of
    runtime_seq_len positions per request) and as 16-position blocks; then
    requests sharing a long prompt prefix."""
    out = {"concurrency": []}
    cmd = (f"aibench --model {a.model} --clients {a.page_clients} --requests 1 --prompt 8 "
           f"--predict 4 --int8")
    for label, block in (("full-length reservations", a.full_block), ("paged", 16)):
        append = f"ai.max_batch=16 ai.kv_mb={a.kv_mb} ai.kv_block={block}"
        outs = boot_and_run(a.image, a.model, append, [cmd, "aistat"], a.exact, a.timeout,
                            label=f"paging-block{block}")
        stat = outs["aistat"]
        total = int(re.search(r"blocks_total=(\d+)", stat).group(1))
        mean = float(re.search(r"mean_batch=([\d.]+)", stat).group(1))
        r = {"layout": label, "block": block, "blocks": total, "mean_batch": mean,
             "at_once": min(total, 16) if block == a.full_block else min(total, 16, a.page_clients)}
        r.update(parse_aibench(outs[cmd]))
        out["concurrency"].append(r)
        log(f"paging: {label}: {total} blocks of {block}, mean batch {mean:.2f}, "
            f"{r.get('tokens_per_s', 0):.2f} tokens/s")
    pcmd = (f"aiprefix --model {a.model} --requests 8 --prefix {a.prefix_len} --tail 8 --predict 1 --int8")
    text = boot_and_run(a.image, a.model, "", [pcmd], a.exact, a.timeout, label="paging-prefix")[pcmd]
    m = re.search(r"aiprefix: first_ttft_us=(\d+) later_ttft_p50_us=(\d+) ratio=([\d.]+) cached_tokens=(\d+)", text)
    if not m:
        raise RuntimeError(f"aiprefix printed no summary:\n{text}")
    out["prefix"] = {"first_ms": int(m.group(1)) / 1000, "later_p50_ms": int(m.group(2)) / 1000,
                     "ratio": float(m.group(3)), "cached_tokens": int(m.group(4))}
    log(f"paging: shared {a.prefix_len}-token prefix: TTFT {out['prefix']['first_ms']:.0f} ms first, "
        f"{out['prefix']['later_p50_ms']:.0f} ms later ({out['prefix']['ratio']:.2f}x)")
    return out


def report(a, res):
    clock = "virtual time (QEMU -icount, one hart): 1 instruction = 1 ns" if a.exact else "real time (host clock)"
    lines = ["# The engine study", "", f"Command: `{' '.join(sys.argv)}`", "", f"Clock: {clock}.", ""]
    if "batching" in res:
        lines += ["## Batching: throughput against clients", "",
                  "| max_batch | clients | tokens/s | req/s | p50 end-to-end ms | p95 end-to-end ms | p50 TTFT ms |",
                  "|---|---|---|---|---|---|---|"]
        for r in res["batching"]:
            e2e, ttft = r.get("end_to_end", {}), r.get("ttft", {})
            lines.append(f"| {r['max_batch']} | {r['clients']} | {r.get('tokens_per_s', 0):.2f} | "
                         f"{r.get('req_per_s', 0):.3f} | {e2e.get('p50_ms', 0):.0f} | {e2e.get('p95_ms', 0):.0f} | "
                         f"{ttft.get('p50_ms', 0):.0f} |")
        top = max(a.clients)
        t1 = next((r.get("tokens_per_s", 0) for r in res["batching"] if r["max_batch"] == 1 and r["clients"] == top), 0)
        t8 = next((r.get("tokens_per_s", 0) for r in res["batching"] if r["max_batch"] == 8 and r["clients"] == top), 0)
        if t1:
            lines += ["", f"At {top} clients, batching gives {t8 / t1:.2f}x the throughput of one request at a time."]
        lines.append("")
    if "policies" in res:
        lines += ["## Policies under a mixed workload", "",
                  f"Short: {a.short_clients} clients x {a.requests} requests, prompt 8, 4 tokens. "
                  f"Long: {a.long_clients} clients x 1 request, prompt {a.long_prompt}, {a.long_predict} tokens, "
                  f"priority 5. ai.max_batch={a.policy_batch}, ai.aging_ms={a.aging_ms}.", "",
                  "| policy | short p50 TTFT ms | short p95 TTFT ms | short p50 end-to-end ms | long max queue wait ms | long p50 end-to-end ms |",
                  "|---|---|---|---|---|---|"]
        for r in res["policies"]:
            s, l_ = r["short"], r["long"]
            lines.append(f"| {r['policy']} | {s.get('ttft', {}).get('p50_ms', 0):.0f} | {s.get('ttft', {}).get('p95_ms', 0):.0f} | "
                         f"{s.get('end_to_end', {}).get('p50_ms', 0):.0f} | {l_.get('queue_wait', {}).get('max_ms', 0):.0f} | "
                         f"{l_.get('end_to_end', {}).get('p50_ms', 0):.0f} |")
        lines.append("")
    if "hol" in res:
        lines += ["## Head-of-line blocking: a long prompt arrives while others generate", "",
                  f"{a.hol_clients} streaming clients generating {a.hol_predict} tokens each; a {a.long_len}-token prompt "
                  "arrives. Gaps between two tokens of the running requests, from the kernel's timestamps.", "",
                  "| ai.budget | gap alone p50 ms | gap during prefill p50 ms | p95 ms | max ms | p95 / alone | long prefill ms |",
                  "|---|---|---|---|---|---|---|"]
        for r in res["hol"]:
            lines.append(f"| {int(r['budget'])} | {r['solo_p50_us'] / 1000:.0f} | {r['during_p50_us'] / 1000:.0f} | "
                         f"{r['during_p95_us'] / 1000:.0f} | {r['during_max_us'] / 1000:.0f} | {r['ratio_p95']:.2f}x | "
                         f"{r['long_prefill_us'] / 1000:.0f} |")
        lines.append("")
    if "paging" in res:
        pg = res["paging"]
        lines += ["## The KV cache as paged memory", "",
                  f"{a.page_clients} clients, prompt 8, 4 tokens, ai.max_batch=16, ai.kv_mb={a.kv_mb} either way.", "",
                  "| layout | blocks | requests at once (at most) | mean batch | tokens/s |", "|---|---|---|---|---|"]
        for r in pg["concurrency"]:
            lines.append(f"| {r['layout']} (blocks of {r['block']}) | {r['blocks']} | {r['at_once']} | "
                         f"{r['mean_batch']:.2f} | {r.get('tokens_per_s', 0):.2f} |")
        p = pg["prefix"]
        lines += ["", f"8 requests sharing a {a.prefix_len}-token prefix, different 8-token tails: first TTFT "
                  f"{p['first_ms']:.0f} ms, later ones {p['later_p50_ms']:.0f} ms ({p['ratio']:.2f}x; "
                  f"{p['cached_tokens']} prompt tokens taken from the cache).", ""]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "results", "engine"))
    p.add_argument("--image", default=os.path.join(ROOT, "build", "fs-smol.img"))
    p.add_argument("--model", default="SMOL")
    p.add_argument("--quick", action="store_true", help="fewer points and shorter requests")
    p.add_argument("--real-time", action="store_true", help="host clock instead of exact mode")
    p.add_argument("--only", choices=["batching", "policies", "hol", "paging"], action="append")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--budgets", dest="hol_budgets", help="head-of-line: the ai.budget values, comma-separated (default 4,8,256)")
    p.add_argument("--trace", metavar="DIR", help="record each boot's AI trace; JSON and PNG timelines in DIR")
    p.add_argument("--trace-events", type=int, default=TRACE["events"], metavar="N",
                   help="trace ring size (ai.trace=N), 1..1048576")
    a = p.parse_args(argv)
    if not 1 <= a.trace_events <= 1 << 20:
        p.error(f"--trace-events: {a.trace_events} is not a number of events from 1 to 1048576")
    if a.trace:
        os.makedirs(a.trace, exist_ok=True)
        TRACE["dir"], TRACE["events"] = a.trace, a.trace_events
    a.exact = not a.real_time
    if not os.path.exists(a.image) or not os.path.exists(KERNEL):
        p.error(f"{a.image} or {KERNEL} missing: run `make all build/fs-smol.img`")
    if a.quick:
        a.clients, a.requests, a.prompt, a.predict = [1, 4], 1, 4, 4
        a.short_clients, a.long_clients, a.long_prompt, a.long_predict = 3, 1, 48, 8
        a.policy_batch, a.aging_ms = 1, 60000
        a.budgets, a.hol_clients, a.hol_predict, a.long_len = [8, 256], 2, 60, 32
        a.page_clients, a.kv_mb, a.full_block, a.prefix_len = 8, 1, 96, 32
    else:
        a.clients, a.requests, a.prompt, a.predict = [1, 8], 1, 8, 8
        # Three long requests, one admitted at a time: while one runs, the
        # other two wait in the queue with the short ones, so each admission
        # is a real choice between a long and a short request.
        a.short_clients, a.long_clients, a.long_prompt, a.long_predict = 4, 3, 64, 8
        a.policy_batch, a.aging_ms = 1, 600000
        # Two clients keep generating through the whole long prefill (255
        # tokens: 64 iterations at budget 4 with two decode tokens each).
        a.budgets, a.hol_clients, a.hol_predict, a.long_len = [4, 8, 256], 2, 80, 255
        a.page_clients, a.kv_mb, a.full_block, a.prefix_len = 16, 48, 256, 128
    if a.hol_budgets:
        try:
            a.budgets = [int(b) for b in a.hol_budgets.split(",")]
        except ValueError:
            p.error(f"--budgets: '{a.hol_budgets}' is not a comma-separated list of numbers")
        if not all(1 <= b <= 256 for b in a.budgets):
            p.error(f"--budgets: every budget must be from 1 to 256, not {a.budgets}")
    os.makedirs(a.out, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    res = {}
    for name, fn in (("batching", experiment_batching), ("policies", experiment_policies), ("hol", experiment_hol),
                     ("paging", experiment_paging)):
        if a.only and name not in a.only:
            continue
        res[name] = fn(a, log)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(report(a, res))
    log(f"engine study: report in {os.path.join(a.out, 'report.md')}")


if __name__ == "__main__":
    main()
