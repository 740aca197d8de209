#!/usr/bin/python3
"""The serving-engine study (docs/engine-lab.md, "The engine"): what
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
     requests sharing a long prompt prefix (aiprefix);
  5. sharing: one process flooding the service (aibench --inflight) and
     three light ones, under fcfs and fair (arriving together, or one at a
     time with --light-spread); a prompt prefix sent again from
     the same Unix session and from another one (setsid); a priority-0
     request arriving into a full batch of priority-10 requests, with and
     without priority preemption (ai.preempt_gap).

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
import concurrent.futures
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import qemu_run  # noqa: E402
from benchlib.latency import median  # noqa: E402
from benchlib.parse import parse_aibench, parse_aistat_clients  # noqa: E402

KERNEL = qemu_run.DEFAULT_KERNEL

# --trace: where each boot's trace goes (None: no trace) and the ring's size.
TRACE = {"dir": None, "events": 65536}


def save_trace(session, label, timeout):
    """Prints the trace ring in the guest and turns it into LABEL.log,
    LABEL.json and LABEL.png under TRACE["dir"]."""
    start = session.mark()
    if not session.command("aitrace", timeout=timeout):
        raise RuntimeError("aitrace did not finish:\n" + session.since(start)[-2000:])
    base = os.path.join(TRACE["dir"], label)
    with open(base + ".log", "w") as f:
        f.write(session.since(start))
    spec = importlib.util.spec_from_file_location("kai_trace", os.path.join(HERE, "trace.py"))
    kai_trace = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kai_trace)
    tr = kai_trace.Trace(kai_trace.parse(session.since(start)))
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
    # Exact mode with idle warps (qemu_run.ICOUNT_IDLE_WARPS): an idle guest's
    # clock jumps to its next timer deadline, so the tick that --align-tick
    # waits for ends the wait exactly, not a host-dependent moment later. And
    # with the nvme disk clock (docs/kernel.md, "The disk clock"): a disk
    # request mid-run (an exec, the policy experiment's report file) then
    # finishes at a modelled moment of virtual time, not when the host's disk
    # thread is done, so those runs repeat too.
    with qemu_run.Session(image, KERNEL, smp=1 if deterministic else 2, memory="1G", snapshot=True,
                          boot_timeout=300, append=append, deterministic=deterministic,
                          idle_warps=deterministic, disk="nvme" if deterministic else "ram") as s:
        if not s.booted:
            raise RuntimeError("boot failed:\n" + s.transcript[-2000:])
        if not s.wait_log(rf"ai: model {model} (ready|failed)", timeout=300):
            raise RuntimeError(f"model {model} never loaded:\n" + s.transcript[-2000:])
        for cmd in commands:
            start = s.mark()
            if not s.command(cmd, timeout=timeout):
                raise RuntimeError(f"`{cmd}` did not finish in {timeout} s:\n" + s.since(start)[-2000:])
            outputs[cmd] = s.since(start)
        if tracing:
            save_trace(s, label, timeout)
        s.halt()
    return outputs


# The closed-loop runs start on a timer tick (aibench --align-tick). The
# console command reaches the guest at a moment of the host's real time, so
# without it every boot starts its clients at another phase of the tick grid;
# the clients' time slices then end at other points of their work, requests
# join the batch in another order, and 8 clients' tokens/s moved by about 2%
# from boot to boot of one kernel. Aligned, they repeat to the digit.
ALIGN = " --align-tick"


def aibench_summary(text):
    """The summary of one aibench run (throughput, the latency table in ms,
    requests done): benchlib.parse.parse_aibench's, the one reader of
    aibench's output."""
    return parse_aibench(text)[2]


def experiment_batching(a, log):
    rows = []
    for max_batch in (1, 8):
        for clients in a.clients:
            cmd = (f"aibench --model {a.model} --clients {clients} --requests {a.requests} "
                   f"--prompt {a.prompt} --predict {a.predict} --int8{ALIGN}")
            t0 = time.monotonic()
            out = boot_and_run(a.image, a.model, f"ai.max_batch={max_batch}", [cmd], a.exact, a.timeout,
                               label=f"batching-max_batch{max_batch}-clients{clients}")[cmd]
            r = aibench_summary(out)
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
        # under fcfs) and has the queue to itself for a moment (one second)
        # before the short class arrives in the foreground; then the long
        # class's report is read from its file. One command line, so that the
        # guest's own clock decides when the short class arrives (a second
        # console command would arrive at a moment of the host's real time);
        # it starts with `sleep 1`, which returns right after a tick, so that
        # every boot starts the classes at the same phase of the tick grid.
        line = f"sleep 1; {long_} > /long.txt & sleep 1; {short}; wait"
        # cksum first reads the two programs into the page cache, so that
        # the line measures the scheduler, not the disk: the execs in it find
        # their programs cached. (It was first added because such a read
        # ended at a real-time moment; the nvme disk clock of boot_and_run
        # now makes that part exact as well.)
        cmds = ["cksum /bin/aibench /bin/sleep", line, "cat /long.txt"]
        append = f"ai.max_batch={a.policy_batch} ai.policy={policy} ai.aging_ms={a.aging_ms}"
        outs = boot_and_run(a.image, a.model, append, cmds, a.exact, a.timeout, label=f"policies-{policy}")
        r = {"policy": policy, "short": aibench_summary(outs[line]),
             "long": aibench_summary(outs["cat /long.txt"])}
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
           f"--predict 4 --int8{ALIGN}")
    for label, block in (("full-length reservations", a.full_block), ("paged", 16)):
        append = f"ai.max_batch=16 ai.kv_mb={a.kv_mb} ai.kv_block={block}"
        outs = boot_and_run(a.image, a.model, append, [cmd, "aistat"], a.exact, a.timeout,
                            label=f"paging-block{block}")
        stat = outs["aistat"]
        total = int(re.search(r"blocks_total=(\d+)", stat).group(1))
        mean = float(re.search(r"mean_batch=([\d.]+)", stat).group(1))
        r = {"layout": label, "block": block, "blocks": total, "mean_batch": mean,
             "at_once": min(total, 16) if block == a.full_block else min(total, 16, a.page_clients)}
        r.update(aibench_summary(outs[cmd]))
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


def _ttft_p50(r):
    return r.get("ttft", {}).get("p50_ms", 0)


def aibench_requests(text):
    """aibench --csv's per-request lines (parse_aibench's rows) as numbers:
    the kernel's timestamps (ns since boot, one clock for every process) of
    submission, admission, first token and end."""
    return [{"client": int(r["client"]), "index": int(r["index"]), "state": r["state"],
             "prompt": int(r["prompt"]), "generated": int(r["generated"]),
             "t_submit": int(r["t_submit_ns"]), "t_start": int(r["t_start_ns"]),
             "t_first": int(r["t_first_ns"]), "t_finish": int(r["t_finish_ns"])}
            for r in parse_aibench(text)[0]]


def _aiprefix_line(text):
    m = re.search(r"request 0: ttft_us=(\d+) cached=(\d+)", text)
    if not m:
        raise RuntimeError(f"aiprefix printed no request line:\n{text}")
    return {"ttft_ms": int(m.group(1)) / 1000, "cached": int(m.group(2))}


def _prefix_hits(text):
    m = re.search(r"prefix_hits=(\d+)", text)
    return int(m.group(1)) if m else -1


def experiment_sharing(a, log):
    """Three ways processes share one model; every boot is independent, so
    they run side by side (--jobs)."""
    flood = (f"aibench --model {a.model} --clients 1 --inflight 8 --requests {a.flood_requests} "
             f"--prompt {a.flood_prompt} --predict {a.flood_predict} --int8 --seed 21 --csv")
    light = f"aibench --model {a.model} --clients 3 --requests 1 --prompt 8 --predict 4 --int8 --seed 22 --csv"
    prefix = (f"aiprefix --model {a.model} --requests 1 --prefix {a.prefix_len} --tail 8 --predict 1 --int8")
    low = (f"aibench --model {a.model} --clients 1 --inflight 8 --requests 8 --prompt {a.low_prompt} "
           f"--predict {a.low_predict} --int8 --priority 10 --seed 31")
    urgent = f"aibench --model {a.model} --clients 1 --requests 1 --prompt 8 --predict 4 --int8 --priority 0 --seed 32"

    def flood_run(policy):
        # The flood has the service to itself for a second, then the three
        # light processes (one request each) arrive; aistat then shows every
        # process's service counter.
        cmds = [f"{flood} > /flood.txt &"] + ([f"sleep {a.light_after}"] if a.light_after else []) + \
            [light, "aistat", "wait", "cat /flood.txt"]
        outs = boot_and_run(a.image, a.model, f"ai.max_batch=4 ai.policy={policy}", cmds, a.exact, a.timeout)
        return {"policy": policy, "light": aibench_summary(outs[light]),
                "flood": aibench_summary(outs["cat /flood.txt"]),
                "clients": parse_aistat_clients(outs["aistat"]), "light_requests": aibench_requests(outs[light]),
                "flood_requests": aibench_requests(outs["cat /flood.txt"])}

    def spread_run(policy):
        # The same flood, but the three light processes arrive one by one,
        # --light-spread seconds apart (the first --light-after seconds in),
        # as independent users would: spread over the flood's first round
        # rather than all just after the batch filled.
        lights = [light.replace("--clients 3", "--clients 1").replace("--seed 22", f"--seed {22 + i}")
                  for i in range(3)]
        cmds = [f"{flood} > /flood.txt &"] + ([f"sleep {a.light_after}"] if a.light_after else [])
        for i, cmd in enumerate(lights[:-1]):
            cmds += [f"{cmd} > /light{i}.txt &", f"sleep {a.light_spread}"]
        cmds += [lights[-1], "aistat", "wait", "cat /light0.txt", "cat /light1.txt", "cat /flood.txt"]
        outs = boot_and_run(a.image, a.model, f"ai.max_batch=4 ai.policy={policy}", cmds, a.exact, a.timeout)
        texts = [outs["cat /light0.txt"], outs["cat /light1.txt"], outs[lights[-1]]]
        each = [aibench_summary(t) for t in texts]
        reqs = [r for t in texts for r in aibench_requests(t)]
        # One request per light process: the p50 over the three processes.
        light_sum = {"done": sum(e.get("done", 0) for e in each)}
        for key in ("ttft", "queue_wait", "end_to_end"):
            vals = [e[key]["p50_ms"] for e in each if key in e]
            light_sum[key] = {"p50_ms": median(vals), "max_ms": max(vals, default=0)}
        return {"policy": policy, "spread_s": float(a.light_spread), "light": light_sum, "light_each": each,
                "flood": aibench_summary(outs["cat /flood.txt"]), "clients": parse_aistat_clients(outs["aistat"]),
                "light_requests": reqs, "flood_requests": aibench_requests(outs["cat /flood.txt"])}

    def prefix_run():
        # First the prefix is computed (nothing cached yet); then the same
        # prompt from another session (setsid), then from the same session
        # as the first (the shell's).
        # (Three different aistat lines, all printing its kv: line, for the
        # same reason.)
        # The third run is the first one's command with its options in
        # another order, because outputs are kept by command line.
        again = prefix.replace("aiprefix --model", "aiprefix --requests 1 --model").replace(" --requests 1 --prefix",
                                                                                          " --prefix")
        cmds = [prefix, "aistat | grep kv:", f"setsid {prefix}", "aistat | grep prefix_hits", again,
                "aistat | grep prefix_cache"]
        outs = boot_and_run(a.image, a.model, "", cmds, a.exact, a.timeout)
        return {"uncached": _aiprefix_line(outs[cmds[0]]), "other_session": _aiprefix_line(outs[cmds[2]]),
                "same_session": _aiprefix_line(outs[cmds[4]]),
                "hits_after": [_prefix_hits(outs[cmds[1]]), _prefix_hits(outs[cmds[3]]), _prefix_hits(outs[cmds[5]])]}

    def priority_run(gap):
        # Eight priority-10 requests fill the batch (ai.max_batch=8); a few
        # seconds later a priority-0 request arrives.
        cmds = [f"{low} > /low.txt &"] + ([f"sleep {a.urgent_after}"] if a.urgent_after else []) + \
            [urgent, "wait", "cat /low.txt", "aistat | grep sharing:"]
        append = f"ai.max_batch=8 ai.policy=priority ai.preempt_gap={gap}"
        outs = boot_and_run(a.image, a.model, append, cmds, a.exact, a.timeout)
        m = re.search(r"preemptions_memory=(\d+) preemptions_priority=(\d+)", outs[cmds[-1]])
        return {"preempt_gap": gap, "urgent": aibench_summary(outs[urgent]),
                "low": aibench_summary(outs["cat /low.txt"]),
                "preemptions_memory": int(m.group(1)) if m else -1, "preemptions_priority": int(m.group(2)) if m else -1}

    jobs = {}
    if "flood" in a.sharing_parts and a.light_spread is None:
        jobs.update(fcfs=lambda: flood_run("fcfs"), fair=lambda: flood_run("fair"))
    if "flood" in a.sharing_parts and a.light_spread is not None:
        jobs.update(spread_fcfs=lambda: spread_run("fcfs"), spread_fair=lambda: spread_run("fair"))
    if "prefix" in a.sharing_parts:
        jobs["prefix"] = prefix_run
    if "priority" in a.sharing_parts or "preempt" in a.sharing_parts:
        jobs["preempt"] = lambda: priority_run(5)
    if "priority" in a.sharing_parts or "no-preempt" in a.sharing_parts:
        jobs["no_preempt"] = lambda: priority_run(16)
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {name: pool.submit(fn) for name, fn in jobs.items()}
        done = {name: f.result() for name, f in futures.items()}
    out = {}
    if "fcfs" in done:
        out["flood"] = [done["fcfs"], done["fair"]]
        fcfs_l, fair_l = _ttft_p50(done["fcfs"]["light"]), _ttft_p50(done["fair"]["light"])
        log(f"sharing: light processes' p50 TTFT {fcfs_l:.0f} ms under fcfs, {fair_l:.0f} ms under fair "
            f"({fair_l / fcfs_l if fcfs_l else 0:.2f}x); the flood finished {done['fair']['flood'].get('done', 0)} "
            "requests")
    if "spread_fcfs" in done:
        out["flood_spread"] = [done["spread_fcfs"], done["spread_fair"]]
        fcfs_l, fair_l = _ttft_p50(done["spread_fcfs"]["light"]), _ttft_p50(done["spread_fair"]["light"])
        log(f"sharing: light processes {a.light_spread} s apart: p50 TTFT {fcfs_l:.0f} ms under fcfs, "
            f"{fair_l:.0f} ms under fair ({fair_l / fcfs_l if fcfs_l else 0:.2f}x); the flood finished "
            f"{done['spread_fair']['flood'].get('done', 0)} requests")
    if "prefix" in done:
        out["prefix"] = px = done["prefix"]
        log(f"sharing: {a.prefix_len}-token prefix: uncached {px['uncached']['ttft_ms']:.0f} ms, other session "
            f"{px['other_session']['ttft_ms']:.0f} ms (cached {px['other_session']['cached']}), same session "
            f"{px['same_session']['ttft_ms']:.0f} ms (cached {px['same_session']['cached']})")
    runs = [done[k] for k in ("preempt", "no_preempt") if k in done]
    if runs:
        out["priority"] = runs
        for r in runs:
            log(f"sharing: ai.preempt_gap={r['preempt_gap']}: urgent request's TTFT {_ttft_p50(r['urgent']):.0f} ms, "
                f"{r['preemptions_priority']} preemptions for priority")
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
    if "sharing" in res:
        lines += sharing_report(a, res["sharing"])
    return "\n".join(lines)


def sharing_report(a, sh):
    lines = ["## Sharing the model among processes", ""]
    if "flood" in sh:
        lines += flood_report(a, sh)
    if "flood_spread" in sh:
        lines += spread_report(a, sh)
    if "prefix" in sh:
        lines += prefix_report(a, sh)
    if "priority" in sh:
        lines += priority_report(a, sh)
    return lines


def _light_vs_flood(intro, runs):
    """The table of a flood experiment (fcfs and fair), the light processes'
    TTFT ratio and when their requests arrived and were admitted."""
    lines = [intro, "",
             "| policy | light p50 TTFT ms | light max TTFT ms | flood requests done | flood tokens/s | flood p50 TTFT ms |",
             "|---|---|---|---|---|---|"]
    for r in runs:
        li, fl = r["light"], r["flood"]
        lines.append(f"| {r['policy']} | {_ttft_p50(li):.0f} | {li.get('ttft', {}).get('max_ms', 0):.0f} | "
                     f"{fl.get('done', 0)} | {fl.get('tokens_per_s', 0):.2f} | {_ttft_p50(fl):.0f} |")
    fc, fa = _ttft_p50(runs[0]["light"]), _ttft_p50(runs[1]["light"])
    if fc:
        lines += ["", f"Under fair the light processes' p50 TTFT is {fa / fc:.2f}x that under fcfs."]
    timing = [t for t in (_arrivals_and_rounds(r) for r in runs) if t]
    if timing:
        lines += [""] + [f"- {t}" for t in timing]
    lines.append("")
    return lines


def flood_report(a, sh):
    return _light_vs_flood(
        f"Flood: one process keeping 8 requests in flight ({a.flood_requests} in all, prompt {a.flood_prompt}, "
        f"{a.flood_predict} tokens); light: three processes arriving {a.light_after or 0} s later, one request "
        "each (prompt 8, 4 tokens). ai.max_batch=4.", sh["flood"])


def _arrivals_and_rounds(r):
    """When the light requests arrived and were admitted, and when the
    flood's first requests ended (their slots are the first to free), in
    seconds from the flood's first submission (from aibench --csv)."""
    fl = r.get("flood_requests", [])
    if not fl:
        return ""
    t0 = min(x["t_submit"] for x in fl)

    def at(ts):
        return ", ".join(f"{(t - t0) / 1e9:.1f}" for t in sorted(ts))

    light = r.get("light_requests", [])
    first = sorted(fl, key=lambda x: x["t_start"])[:4]
    return (f"{r['policy']}: light requests submitted at {at(x['t_submit'] for x in light)} s, admitted at "
            f"{at(x['t_start'] for x in light)} s; the flood's first four requests ended at "
            f"{at(x['t_finish'] for x in first)} s")


def spread_report(a, sh):
    return _light_vs_flood(
        f"The same flood; the three light processes arrive one at a time, {sh['flood_spread'][0]['spread_s']:g} s "
        f"apart, the first {a.light_after or 0} s after the flood started.", sh["flood_spread"])


def prefix_report(a, sh):
    lines = []
    px = sh["prefix"]
    u = px["uncached"]["ttft_ms"]
    lines += ["", f"The same {a.prefix_len + 8}-token prompt ({a.prefix_len}-token prefix) three times, the default "
              "ai.prefix_share=session:", "",
              "| sent | TTFT ms | / uncached | prompt tokens from the cache | prefix hits (ai_info) after it |",
              "|---|---|---|---|---|"]
    for label, key, hits in (("first (nothing cached)", "uncached", px["hits_after"][0]),
                             ("again, from another session (setsid)", "other_session", px["hits_after"][1]),
                             ("again, from the first one's session", "same_session", px["hits_after"][2])):
        r = px[key]
        lines.append(f"| {label} | {r['ttft_ms']:.0f} | {r['ttft_ms'] / u if u else 0:.3f} | {r['cached']} | {hits} |")
    lines.append("")
    return lines


def priority_report(a, sh):
    lines = [f"Eight priority-10 requests (prompt {a.low_prompt}, {a.low_predict} tokens) fill the batch "
              f"(ai.max_batch=8, ai.policy=priority); a priority-0 request (prompt 8, 4 tokens) arrives "
              f"{a.urgent_after or 0} s later.", "",
              "| ai.preempt_gap | urgent TTFT ms | preemptions for priority | for memory | priority-10 p50 end-to-end ms |",
              "|---|---|---|---|---|"]
    for r in sh["priority"]:
        lines.append(f"| {r['preempt_gap']} | {_ttft_p50(r['urgent']):.0f} | {r['preemptions_priority']} | "
                     f"{r['preemptions_memory']} | {r['low'].get('end_to_end', {}).get('p50_ms', 0):.0f} |")
    by_gap = {r["preempt_gap"]: _ttft_p50(r["urgent"]) for r in sh["priority"]}
    up, un = by_gap.get(5, 0), by_gap.get(16, 0)
    if un:
        lines += ["", f"With preemption the urgent request's TTFT is {up / un:.2f}x that without."]
    lines.append("")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "results", "engine"))
    p.add_argument("--image", default=os.path.join(ROOT, "build", "fs-smol.img"))
    p.add_argument("--model", default="SMOL")
    p.add_argument("--quick", action="store_true", help="fewer points and shorter requests")
    p.add_argument("--real-time", action="store_true", help="host clock instead of exact mode")
    p.add_argument("--only", choices=["batching", "policies", "hol", "paging", "sharing"], action="append")
    p.add_argument("--jobs", type=int, default=2, help="boots of the sharing experiment run side by side")
    p.add_argument("--light-after", help="sharing: seconds (guest `sleep`) before the light processes arrive")
    p.add_argument("--light-spread", metavar="SECONDS",
                   help="sharing, flood: the light processes arrive one at a time, SECONDS apart (the first "
                        "--light-after seconds in) instead of together")
    p.add_argument("--urgent-after", help="sharing: seconds before the priority-0 request arrives")
    p.add_argument("--sharing-parts", default="flood,prefix,priority",
                   help="which parts of the sharing experiment (comma-separated: flood, prefix, priority)")
    p.add_argument("--merge", nargs="+", metavar="RESULTS_JSON",
                   help="write the report of these results.json files together (no boot)")
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
    a.sharing_parts = [x for x in a.sharing_parts.split(",") if x]
    if set(a.sharing_parts) - {"flood", "prefix", "priority", "preempt", "no-preempt"}:
        p.error(f"--sharing-parts: {a.sharing_parts}: each must be flood, prefix, priority, preempt or no-preempt")
    if a.light_spread is not None:
        try:
            ok = 0 < float(a.light_spread) <= 3600
        except ValueError:
            ok = False
        if not ok:
            p.error(f"--light-spread: '{a.light_spread}' is not a number of seconds from 0 to 3600")
    if not os.path.exists(a.image) or not os.path.exists(KERNEL):
        p.error(f"{a.image} or {KERNEL} missing: run `make all build/fs-smol.img`")
    if a.quick:
        a.clients, a.requests, a.prompt, a.predict = [1, 4], 1, 4, 4
        a.short_clients, a.long_clients, a.long_prompt, a.long_predict = 3, 1, 48, 8
        a.policy_batch, a.aging_ms = 1, 60000
        a.budgets, a.hol_clients, a.hol_predict, a.long_len = [8, 256], 2, 60, 32
        a.page_clients, a.kv_mb, a.full_block, a.prefix_len = 8, 1, 96, 32
        a.flood_requests, a.flood_prompt, a.flood_predict = 8, 16, 8
        a.low_prompt, a.low_predict, default_after = 16, 16, ("1", "1")
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
        a.flood_requests, a.flood_prompt, a.flood_predict = 16, 32, 16
        a.low_prompt, a.low_predict, default_after = 64, 64, ("1", "5")
    a.light_after = a.light_after if a.light_after is not None else default_after[0]
    a.urgent_after = a.urgent_after if a.urgent_after is not None else default_after[1]
    if a.light_after == "0":
        a.light_after = ""
    if a.urgent_after == "0":
        a.urgent_after = ""
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

    if a.merge:
        res = {}
        for path in a.merge:
            with open(path) as f:
                for key, value in json.load(f).items():
                    if isinstance(value, dict) and isinstance(res.get(key), dict):
                        for k, v in value.items():
                            if k == "priority":   # rows per gap may come from several files
                                v = res[key].get(k, []) + v
                            res[key][k] = v
                    else:
                        res[key] = value
        if "priority" in res.get("sharing", {}):   # one row per gap (the last file's wins)
            res["sharing"]["priority"] = sorted({r["preempt_gap"]: r for r in res["sharing"]["priority"]}.values(),
                                                key=lambda r: r["preempt_gap"])
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(a.out, "report.md"), "w") as f:
            f.write(report(a, res))
        log(f"engine study: report in {os.path.join(a.out, 'report.md')}")
        return
    res = {}
    for name, fn in (("batching", experiment_batching), ("policies", experiment_policies), ("hol", experiment_hol),
                     ("paging", experiment_paging), ("sharing", experiment_sharing)):
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
