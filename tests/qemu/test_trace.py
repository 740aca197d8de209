"""The AI service's trace ring (kernel/ai/trace.cpp, /bin/aitrace,
tools/trace.py) on the tiny llama model in exact mode:
  - the trace agrees with the results: for every request, the tokens, TTFT,
    end-to-end time, finish reason and iteration count derived from the trace
    equal what ai_wait reported (through `ai --timing`), with batching,
    chunked prefill, preemption and a prefix-cache hit in the workload;
  - no iteration exceeds the budget or max_batch, and its items add up to
    its tokens; Little's law holds over the trace's window;
  - the Chrome JSON loads and nests on every track; the PNG is drawn;
  - two boots running the same workload give the same trace, byte for byte
    (event numbers and instruction counts from the workload's first event;
    clock readings to within one 100 ns step of the time CSR);
  - the sampling profiler: `aitrace start samples` records only timer
    samples, and their kernel pcs fall in named kernel functions, the AI
    worker's among them (tools/hotspots.py); samples are off by default;
  - bad reads: EFAULT for bad pointers, a cursor behind the oldest event
    reports the drops (aitrace check); ai.trace=0 is refused at boot with a
    message, and then there is no ring to read; a bad aitrace command line
    names what is wrong."""
import importlib.util
import os
import re
import time

import pytest

from kai_boot import KERNEL, ROOT, make_image, need_built, need_model, programs, qemu_run, run_in_session
import hotspots  # noqa: E402  (tools/, on the path through kai_boot)

WORK = os.path.join(ROOT, "build", "test-trace")
TOOL = os.path.join(ROOT, "tools", "trace.py")
_spec = importlib.util.spec_from_file_location("kai_trace", TOOL)   # stdlib has a `trace` too
kai_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kai_trace)

BUDGET, MAX_BATCH = 8, 4
# Eight KV blocks of 16 positions: the three concurrent requests' prompts fit
# (3 + 2 + 2 blocks) but not their whole contexts, so someone is preempted.
OPTIONS = f"ai.trace=8192 ai.max_batch={MAX_BATCH} ai.budget={BUDGET} ai.kv_block=16 ai.kv_blocks=8"


def prompt(n, base):
    return " ".join(str((base + 7 * i) % 300 + 1) for i in range(n))


A = prompt(40, 3)
B = prompt(30, 101)
C = prompt(20, 211)
D = " ".join(A.split()[:32] + [str(x) for x in range(305, 309)])   # A's first two blocks, then its own
E = " ".join(A.split()[:32] + [str(x) for x in range(310, 313)])   # the same two blocks, another tail
# --align-tick: each client sleeps three timer ticks before it submits, so
# the three requests arrive together and run side by side.
CONCURRENT = (f"ai --model LLAMA --align-tick --timing --int8 --predict 50 {A} > /a & "
              f"ai --model LLAMA --align-tick --timing --int8 --predict 60 {B} > /b & "
              f"ai --model LLAMA --align-tick --timing --predict 70 {C} > /c")
LATER = (f"ai --model LLAMA --timing --int8 --predict 4 {D} > /d; "
         f"ai --model LLAMA --timing --int8 --predict 4 {E} > /e")
TIMING = re.compile(r"timing model=LLAMA path=warm prompt=(\d+) gen=(\d+) queue_us=\d+ ttft_us=(\d+) "
                    r"prefill_us=\d+ tpot_us=\d+ total_us=(\d+) iterations=(\d+) mean_batch=[\d.]+ finish=(\w+)")


@pytest.fixture(scope="module")
def image():
    need_built("aitrace", "ai", "cat")
    llama = need_model("tiny-llama")
    os.makedirs(WORK, exist_ok=True)
    return make_image(os.path.join(WORK, "trace.img"),
                      programs("init", "sh", "ai", "aitrace", "cat", "halt"),
                      [("AI/LLAMA", llama)])


def boot(image, append):
    s = qemu_run.Session(image, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=180, append=append,
                         deterministic=True)
    assert s.booted, s.transcript
    return s


def wait_for_file(s, path, pattern, tries=60):
    for _ in range(tries):
        out = run_in_session(s, f"cat {path}", timeout=60)
        if re.search(pattern, out):
            return out
        time.sleep(0.5)
    raise AssertionError(f"{path} never showed {pattern}:\n{s.transcript[-3000:]}")


@pytest.fixture(scope="module")
def workload(image):
    """One boot: three requests at once (batched, chunked, one preempted),
    then two sharing a prefix with the first; their results and the trace."""
    with boot(image, OPTIONS) as s:
        assert s.wait_log(r"ai: model LLAMA ready", timeout=120), s.transcript
        assert re.search(r"ai: tracing 8192 events", s.transcript), s.transcript
        # Warm-up: /bin/ai and the model's files into the buffer cache, so
        # the three clients start quickly; then a fresh trace.
        run_in_session(s, "ai --model LLAMA --predict 1 1 2 3", timeout=120)
        run_in_session(s, "aitrace clear", timeout=60)
        run_in_session(s, CONCURRENT, timeout=300)
        results = [wait_for_file(s, f, r"timing model=") for f in ("/a", "/b", "/c")]
        run_in_session(s, LATER, timeout=120)
        results += [wait_for_file(s, f, r"timing model=") for f in ("/d", "/e")]
        text = run_in_session(s, "aitrace", timeout=300)
        check = run_in_session(s, "aitrace check", timeout=300)
        s.halt()
    assert not any(m in s.transcript for m in qemu_run.PANIC_MARKERS), s.transcript[-3000:]
    return results, text, check


def parse_result(out):
    lines = [l for l in out.strip().splitlines() if not l.startswith("[")]   # the shell's job reports
    m = TIMING.search(out)
    assert m, out
    at = next(i for i, l in enumerate(lines) if l.startswith("timing model="))
    tokens = [int(t) for t in lines[at - 1].split()]   # ai prints its tokens, then the timing line
    prompt_len, gen, ttft_us, total_us, iterations, finish = m.groups()
    return {"prompt": int(prompt_len), "tokens": tokens, "gen": int(gen), "ttft_us": int(ttft_us),
            "total_us": int(total_us), "iterations": int(iterations), "finish": finish}


def test_trace_agrees_with_every_result(workload):
    results, text, _ = workload
    tr = kai_trace.Trace(kai_trace.parse(text))
    by_prompt = {r.prompt: r for r in tr.complete_requests()}
    assert len(by_prompt) == 5, text[-3000:]
    for out in results:
        want = parse_result(out)
        r = by_prompt[want["prompt"]]
        got = {"prompt": r.prompt, "tokens": [t for _, t in r.tokens], "gen": r.generated,
               "ttft_us": r.ttft_ns // 1000, "total_us": r.e2e_ns // 1000, "iterations": r.iterations,
               "finish": r.reason_name}
        assert got == want, f"request {r.id}: trace says {got}, ai_wait said {want}"
    # The workload did what it was built for.
    assert any(r.preempts for r in by_prompt.values()), "no preemption in the trace"
    assert by_prompt[35].prefix_tokens == 32, "the last request did not reuse the cached prefix"
    assert max(it["requests"] for it in tr.iterations) >= 2, "no iteration ran two requests"
    assert any(i["phase"] == kai_trace.PHASE_PREFILL and i["count"] < 40 and i["request"] == by_prompt[40].id
               for it in tr.iterations for i in it["items"]), "the 40-token prompt was not chunked"


def test_iterations_respect_budget_and_batch(workload):
    _, text, _ = workload
    tr = kai_trace.Trace(kai_trace.parse(text))
    assert len(tr.iterations) > 10
    for it in tr.iterations:
        assert (it["budget"], it["max_batch"]) == (BUDGET, MAX_BATCH)
        assert 1 <= it["tokens"] <= BUDGET and 1 <= it["requests"] <= MAX_BATCH, it
        assert sum(i["count"] for i in it["items"]) == it["tokens"] and len(it["items"]) == it["requests"], it
        assert it["t0"] <= it["t1"]


def test_littles_law_over_the_window(workload):
    _, text, _ = workload
    tr = kai_trace.Trace(kai_trace.parse(text))
    L, lam, W = tr.littles_law()
    print(f"\nLittle's law over the trace (virtual time): L={L:.4f} lambda*W={lam * W:.4f}")
    assert L > 0 and L == pytest.approx(lam * W, rel=1e-9)
    # The counters never go negative and end empty.
    counters = tr.counters()
    assert all(q >= 0 and r >= 0 for _, q, r in counters) and counters[-1][1:] == (0, 0)


def test_json_nests_and_png_is_drawn(workload):
    _, text, _ = workload
    log = os.path.join(WORK, "workload.txt")
    with open(log, "w") as f:
        f.write(text)
    j, p = os.path.join(WORK, "workload.json"), os.path.join(WORK, "workload.png")
    for path in (j, p):
        if os.path.exists(path):
            os.remove(path)
    assert kai_trace.main([log, "--json", j, "--png", p]) == 0
    import json
    with open(j) as f:
        events = json.load(f)["traceEvents"]
    assert kai_trace.check_nesting(events) == []
    assert sum(1 for e in events if e.get("ph") == "X" and e["name"].startswith("iteration")) > 10
    with open(p, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_bad_reads(workload):
    _, _, check = workload
    assert "aitrace check: 17 passed, 0 failed" in check, check


def test_samples_are_off_unless_asked(workload):
    _, text, _ = workload
    events = kai_trace.parse(text)
    assert events and not any(e.name == "SAMPLE" for e in events)


def test_samples_name_where_the_harts_were(image):
    """Timer samples while the AI worker computes: only SAMPLE events (the
    class asked for), about one per tick, and every kernel pc of a running
    thread lies in a named function of kernel.elf, most of them in the
    model's code (lib/, namespace llm)."""
    with boot(image, "ai.trace=4096") as s:
        assert s.wait_log(r"ai: model LLAMA ready", timeout=120), s.transcript
        run_in_session(s, "ai --model LLAMA --predict 1 1 2 3", timeout=120)   # programs into the cache
        for cmd in ("aitrace stop", "aitrace clear", "aitrace start samples"):
            run_in_session(s, cmd, timeout=60)
        t0 = time.monotonic()
        out = run_in_session(s, f"ai --model LLAMA --timing --predict 50 {prompt(40, 5)}", timeout=300)
        run_in_session(s, "aitrace stop", timeout=60)
        text = run_in_session(s, "aitrace", timeout=300)
        s.halt()
    events = kai_trace.parse(text)
    assert {e.name for e in events} == {"STARTED", "SAMPLE"}, text[:2000]
    samples = [e for e in events if e.name == "SAMPLE"]
    m = re.search(r"total_us=(\d+)", out)
    assert m, out
    total_us = int(m.group(1))
    # Exact mode: the clock is virtual, 100 ticks per second of it.
    assert len(samples) >= total_us // 10_000 // 2, (len(samples), total_us, time.monotonic() - t0)
    kernel = hotspots.Symbols.from_elf(KERNEL)
    running = [kernel.name((e["pc_hi"] << 32) | e["pc_lo"]) for e in samples
               if e["pid"] != 0 and e["mode"] == 0]
    assert running and not [n for n in running if n.startswith("0x")], running
    in_model = [n for n in running if n.startswith("llm::") or "llm::" in n.split("(")[0]]
    assert len(in_model) * 2 > len(running), running


def test_zero_ring_is_refused_at_boot(image):
    with boot(image, "ai.trace=0") as s:
        assert s.wait_log(r"ai: model LLAMA ready", timeout=120), s.transcript
        out = run_in_session(s, "aitrace", timeout=60)
        bad = {cmd: run_in_session(s, cmd, timeout=60)
               for cmd in ("aitrace start bogus", "aitrace stop now", "aitrace --from x", "aitrace frobnicate")}
        s.halt()
    assert "ai: ai.trace=0: a trace ring needs room for at least one event; tracing stays off" in s.transcript
    assert "aitrace: read: " in out and "aitrace: end" not in out, out
    # A bad command line names what is wrong.
    assert "aitrace: start: 'bogus' is not a class" in bad["aitrace start bogus"]
    assert "aitrace: unexpected argument 'now'" in bad["aitrace stop now"]
    assert "aitrace: --from: 'x' is not an event number" in bad["aitrace --from x"]
    assert "aitrace: unknown command 'frobnicate'" in bad["aitrace frobnicate"]


# One request, its 20-token prompt in three chunks (ai.budget=8), then 12
# tokens. --align-tick: it is submitted right after a timer tick, so the
# ticks fall at the same instructions of the workload in every boot. (Several
# client processes would not do: each one's exec may wait for the disk, a
# real-time moment, and where the ticks then fall decides which client runs
# when.)
DET_WORKLOAD = f"ai --model LLAMA --align-tick --int8 --predict 12 {prompt(20, 17)}"


def relative_trace(image):
    """The workload's events as text, each field as aitrace prints it except
    that event numbers and instruction counts are counted from the
    workload's first event; and the times from that event. (The absolute
    clock starts when a person typed the command line, a real-time moment.)"""
    with boot(image, "ai.trace=4096 ai.max_batch=2 ai.budget=8 ai.kv_block=4") as s:
        assert s.wait_log(r"ai: model LLAMA ready", timeout=120), s.transcript
        time.sleep(0.5)
        run_in_session(s, DET_WORKLOAD, timeout=300)   # warm-up: programs into the buffer cache
        run_in_session(s, "aitrace clear", timeout=60)
        run_in_session(s, DET_WORKLOAD, timeout=300)
        text = run_in_session(s, "aitrace", timeout=120)
        s.halt()
    events = kai_trace.parse(text)
    assert events and events[0].name == "SUBMIT", text[:2000]
    first = events[0]
    lines = []
    for e in events:
        args = " ".join(f"{k}={v}" for k, v in e.args.items())
        lines.append(f"ev {e.seq - first.seq} {e.instret - first.instret} {e.hart} {e.name} req={e.req} {args}")
    return "\n".join(lines), [e.t - first.t for e in events]


def test_two_boots_give_the_same_trace(image):
    """Byte for byte, with instructions for time: the clock (the time CSR)
    steps every 100 instructions, and where those steps fall relative to
    the workload depends on the real-time moment the machine last woke up,
    so a clock reading may differ by one step between boots; the instruction
    counts may not."""
    (first, first_t), (second, second_t) = relative_trace(image), relative_trace(image)
    # The warm-up left the prompt's full blocks in the prefix cache: 16 of
    # its 20 tokens are found there, the other 4 are one chunk, then 11
    # decode iterations.
    assert first.count("FINISH") == 1 and first.count("PREFIX_HIT") == 1 and first.count("ITER_BEGIN") == 12
    assert first == second
    assert all(abs(a - b) <= 100 for a, b in zip(first_t, second_t)), (first_t, second_t)
