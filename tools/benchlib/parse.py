"""Reading what the guest printed, for every driver in tools/: aibench's
CSV and summary lines, coldwarm's runs, `ai --timing` and `chat --timing`,
aistat's per-process counters, the kernel's model-load line and calib's
time."""
import re

COLDWARM_FIELDS = ["run", "path", "e2e_us", "load_us", "launch_ttft_us", "tpot_us", "prefill_us"]
PROMPT = "$ "


# aibench's latency table: "TTFT  mean N  p50 N  p95 N  max N us".
STAT = re.compile(r"^(end-to-end|queue wait|TTFT|TPOT)\s+mean\s+(\d+)\s+p50\s+(\d+)\s+p95\s+(\d+)\s+max\s+(\d+) us",
                  re.M)


def parse_aibench(text):
    """Everything one aibench run printed: (rows, samples, summary).

    rows: the per-request lines of --csv, a dict each, keyed by aibench's
    header (values as printed, strings); samples: the sampler's (t_ns,
    queued, running) of --samples; summary: the figures of its summary
    lines. Every caller reads the same summary: the bench sweep and the open
    loop take Little's law and the load meter from it, the engine study
    (engine_study.py) the throughput line and the latency table:
      done                  requests done (0 if aibench printed no count)
      wall_s                the run's wall time, s (None if not printed)
      req_per_s, tokens_per_s
                            the throughput line (absent if not printed)
      end_to_end, queue_wait, ttft, tpot
                            {mean_ms, p50_ms, p95_ms, max_ms} of the latency
                            table (each absent if not printed)
      L_measured ... never_reported
                            Little's law, the load meter and the sampler
                            process (None if not printed)
    """
    rows, samples, header = [], [], None
    for line in text.splitlines():
        if line.startswith("csv,client,"):
            header = line.split(",")[1:]
        elif line.startswith("csv,") and header:
            rows.append(dict(zip(header, line.split(",")[1:])))
        elif line.startswith("sample,") and not line.startswith("sample,t_ns"):
            _, t, q, r = line.split(",")
            samples.append((int(t), int(q), int(r)))
    m = re.search(r"little: L_measured=([\d.]+) lambda=([\d.]+) W=([\d.]+) lambdaW=([\d.]+)", text)
    meter = re.search(r"mean queue length ([\d.]+), mean in system ([\d.]+) \(load meter: (\d+) samples", text)
    q = re.search(r"sampler process: mean queue length ([\d.]+), mean in system ([\d.]+) \((\d+) samples over "
                  r"([\d.]+)% of the run, largest gap (\d+) ms\)", text)
    d = re.search(r"requests: (\d+) done, (\d+) failed or cancelled, (\d+) never reported, (\d+) clients died"
                  r"(?:; wall ([\d.]+) s)?", text)
    summary = {
        "done": int(d.group(1)) if d else 0,
        "wall_s": float(d.group(5)) if d and d.group(5) else None,
        "L_measured": float(m.group(1)) if m else None,
        "throughput_rps": float(m.group(2)) if m else None,
        "mean_latency_s": float(m.group(3)) if m else None,
        "lambda_W": float(m.group(4)) if m else None,
        # The kernel's load meter (hart 0's timer): the L that Little's law checks.
        "mean_queue_length": float(meter.group(1)) if meter else None,
        "samples": int(meter.group(3)) if meter else 0,
        # The sampler process, shown beside it (it reads low: docs/experiments.md).
        "sampler_L": float(q.group(2)) if q else None,
        "sampled_pct": float(q.group(4)) if q else 0.0,
        "largest_gap_ms": int(q.group(5)) if q else None,
        "clients_died": int(d.group(4)) if d else None,
        "never_reported": int(d.group(3)) if d else None,
    }
    t = re.search(r"throughput: ([\d.]+) req/s, ([\d.]+) tokens/s", text)
    if t:
        summary["req_per_s"], summary["tokens_per_s"] = float(t.group(1)), float(t.group(2))
    for name, mean, p50, p95, mx in STAT.findall(text):
        key = name.replace(" ", "_").replace("-", "_").lower()
        summary[key] = {"mean_ms": int(mean) / 1000, "p50_ms": int(p50) / 1000, "p95_ms": int(p95) / 1000,
                        "max_ms": int(mx) / 1000}
    return rows, samples, summary


def parse_coldwarm(text):
    """coldwarm's runs, whether the tokens were identical, and llmrun's
    timing line of the first cold run (None if coldwarm did not print it)."""
    runs = []
    for line in text.splitlines():
        if line.startswith("coldwarm,"):
            f = line.split(",")
            runs.append({"run": int(f[1]), "path": f[2], **{k: int(v) for k, v in zip(COLDWARM_FIELDS[2:], f[3:])}})
    m = re.search(r"^llmrun-timing: (.*)$", text, re.M)
    return runs, "tokens identical: yes" in text, (m.group(1) if m else None)


def parse_boot_load(transcript, name):
    """The kernel's loading time of model name at boot, in ms (or None)."""
    # The shell's first prompt may have landed inside the line.
    m = re.search(rf"ai: model {re.escape(name)} ready: .*loaded in (\d+) ms", transcript.replace(PROMPT, ""))
    return int(m.group(1)) if m else None


def parse_calib(text):
    """calib's time in microseconds (or None)."""
    m = re.search(r"calib: (\d+) iterations in (\d+) us", text)
    return int(m.group(2)) if m else None


def parse_ai_timing(text):
    """The fields of `ai --timing`'s line ("timing model=SMOL path=warm
    prompt=5 ... ttft_us=N ... tpot_us=N total_us=N ..."): whole numbers as
    int, the rest as printed; None if there is no such line."""
    m = re.search(r"^timing model=\S+ path=warm .*$", text, re.M)
    if not m:
        return None
    return {k: int(v) if v.isdigit() else v for k, v in re.findall(r"(\w+)=(\S+)", m.group(0))}


CHAT_TURN = re.compile(r"^turn (\d+) prompt=(\d+) cached=(\d+) ttft_us=(\d+) tpot_us=(\d+)\r?$", re.M)


def parse_chat_turns(text):
    """`chat --timing`'s lines, one (turn, prompt, cached, ttft_us, tpot_us) a turn."""
    return [tuple(int(x) for x in m.groups()) for m in CHAT_TURN.finditer(text)]


def parse_aistat_clients(text):
    """aistat's per-process counters: {pid: (served, prompt tokens, output tokens)}."""
    return {int(pid): (int(sv), int(pt), int(ot)) for pid, sv, pt, ot in
            re.findall(r"client: pid=(\d+) served=(\d+) prompt_tokens=(\d+) output_tokens=(\d+)", text)}
