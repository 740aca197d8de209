"""What a hostile or careless client cannot do to kai; the AI service never
freezes the machine:

- a kernel worker computing a request never keeps its hart: on one hart, the
  shell answers `echo` while a SmolLM2-shape request is still running (the
  service says so in the same breath), and in exact mode a process waking
  every 10 ms is never late by more than a few timer ticks while requests
  run back to back (after a phase of random system calls);
- 10,000 random system calls with hostile arguments (sysfuzz) return, give
  the answers known in advance (ENOSYS for unknown numbers, an error for
  unusable pointers), reach both successes and errors, leak no memory, and
  leave the kernel and the AI service answering with the same tokens as the
  host runner;
- a storm of 100 clients killed at random moments (aistorm), which must hit
  queued, running and finished requests, leaves nothing in flight; a killed
  owner's id is unknown at once; a cancel lands within one iteration of a
  long prefill (counted in iterations, not in time);
- with two workers and a KV pool too small for what runs, the victim of a
  preemption is the youngest running request (never the oldest), and the
  timestamps of a preempted request stay ordered (aipreempt);
- the fuzzer and the storm do the same with the fair policy and with
  priority preemption on.
Figures (calls, clients, lateness) are printed with -s."""
import os
import re
import subprocess
import time

import pytest

from kai_boot import KERNEL, ROOT, all_programs, make_image, need_built, need_model, qemu_run, run_in_session

SMOL_IMG = os.path.join(ROOT, "build", "fs-smol.img")
HOST_LLMRUN = os.path.join(ROOT, "build", "host", "llmrun")
PROBE = "ai --model LLAMA --predict 8 1 2 3"
WORK = os.path.join(ROOT, "build", "test-hostile")
FREE_MEMORY = re.compile(r"free memory: (\d+) of (\d+) pages")


@pytest.fixture(scope="module")
def tiny_image():
    need_built("sysfuzz")
    llama = need_model("tiny-llama")
    os.makedirs(WORK, exist_ok=True)
    return make_image(os.path.join(WORK, "hostile.img"), all_programs(), [("AI/LLAMA", llama)])


def smol_image():
    if not os.path.exists(SMOL_IMG) or not os.path.exists(KERNEL):
        pytest.skip("build/fs-smol.img not built: run `make fsimg-smol`")
    return SMOL_IMG


def free_pages(s):
    """Free pages from the kernel's ^P process dump."""
    start = s.mark()
    s.send("\x10")
    assert s.wait_for(FREE_MEMORY.search, start, timeout=30)
    return int(FREE_MEMORY.search(s.since(start)).group(1))


def token_ids(text):
    """The first line of token ids in a command's output, or None."""
    for line in text.splitlines():
        if re.fullmatch(r"\d+( \d+)*", line.strip()):
            return [int(t) for t in line.split()]
    return None


def host_tokens(bundle, predict, prompt):
    """The same request on the host runner: no kernel, one request alone."""
    if not os.path.exists(HOST_LLMRUN):
        pytest.skip("build/host/llmrun not built: run `make host`")
    r = subprocess.run([HOST_LLMRUN, "--asset-dir", bundle, "--predict", str(predict)] + [str(t) for t in prompt],
                       capture_output=True, text=True, check=True)
    return token_ids(r.stdout)


def assert_no_panic(s):
    assert not any(m in s.transcript for m in qemu_run.PANIC_MARKERS), s.transcript[-3000:]


# The sharing policies (docs/sharing.md) must survive the same abuse: the fair policy, and priority
# with preemption at the smallest gap.
SHARING = ["ai.policy=fair", "ai.policy=priority ai.preempt_gap=1"]


@pytest.mark.parametrize("smp,sharing", [(1, ""), (4, "")] + [(4, x) for x in SHARING])
def test_sysfuzz_leaves_kernel_answering(tiny_image, smp, sharing):
    with qemu_run.Session(tiny_image, KERNEL, smp=smp, memory="1G", snapshot=True,
                          boot_timeout=180, append=sharing) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model LLAMA (ready|failed)", timeout=120)
        want = host_tokens(need_model("tiny-llama"), 8, [1, 2, 3])
        assert want and len(want) == 8, want
        before = run_in_session(s, PROBE, 120)
        assert token_ids(before) == want, before
        # The first run creates /fz and its files; the second must not use
        # any more memory than the first left in use (no leak per run).
        first = run_in_session(s, f"sysfuzz --calls 10000 --seed {smp}", 400)
        pages_1 = free_pages(s)
        second = run_in_session(s, f"sysfuzz --calls 10000 --seed {smp + 100}", 400)
        pages_2 = free_pages(s)
        print(f"\nsysfuzz smp={smp}: {first.strip()} | {second.strip()} | free pages {pages_1} -> {pages_2}")
        for out in (first, second):
            assert "10000 calls" in out and "all returned; wrong answers: 0; successes and errors: both; " \
                "kernel answers: yes" in out, out
        assert pages_2 == pages_1, f"free pages {pages_1} -> {pages_2} after a second fuzz run"
        after = run_in_session(s, PROBE, 120)
        assert token_ids(after) == want, after    # all 8 tokens, the same as the host runner's
        assert "alive" in run_in_session(s, "echo alive", 30)
        # An unknown system call is logged once per process, not per call.
        assert len(re.findall(r"unknown system call", s.transcript)) <= 2, s.transcript[-3000:]
        assert_no_panic(s)


@pytest.mark.parametrize("smp,workers,sharing",
                         [(1, 1, ""), (4, 1, ""), (1, 2, ""), (4, 2, "")] + [(4, 2, x) for x in SHARING])
def test_kill_storm(tiny_image, smp, workers, sharing):
    with qemu_run.Session(tiny_image, KERNEL, smp=smp, memory="1G", snapshot=True,
                          boot_timeout=180, append=f"ai.workers={workers} {sharing}") as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model LLAMA (ready|failed)", timeout=120)
        out = run_in_session(s, "aistorm --model LLAMA --clients 100", 600)
        print(f"\naistorm smp={smp} workers={workers}:\n{out}")
        assert "FAIL" not in out, out
        assert re.search(r"^7 passed, 0 failed$", out, re.M), out
        stat = run_in_session(s, "aistat", 30)
        assert "in_flight=0" in stat, stat
        assert_no_panic(s)


@pytest.mark.parametrize("max_batch,requests", [(1, 2), (2, 4)])
def test_kv_pressure_with_two_workers(tiny_image, max_batch, requests):
    """A KV pool too small for the running requests, shared by two workers
    on four harts: the victim of every preemption is the youngest running
    request, whichever worker runs it, so the oldest is never preempted;
    timestamps keep their order through preemption (queue wait + service =
    end to end); tokens equal each request alone; afterwards no block is in
    use and nothing is in flight (aipreempt checks each)."""
    append = f"ai.workers=2 ai.max_batch={max_batch} ai.kv_blocks=8 ai.kv_block=16"
    with qemu_run.Session(tiny_image, KERNEL, smp=4, memory="1G", snapshot=True,
                          boot_timeout=180, append=append) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model LLAMA (ready|failed)", timeout=120)
        out = run_in_session(s, f"aipreempt --model LLAMA --requests {requests} --prompt 40 --predict 50", 600)
        print(f"\naipreempt {append}:\n{out}")
        assert "FAIL" not in out, out
        assert re.search(rf"aipreempt: {requests} requests, [1-9]\d* preemptions, oldest preempted 0, ok", out), out
        # With ai.max_batch=1 the requests that ran together ran on different
        # workers (a result names the worker of its last admission only).
        stat = run_in_session(s, "aistat", 30)
        assert "in_flight=0" in stat and re.search(r"kv: .* used=0 ", stat), stat
        assert_no_panic(s)


def test_shell_answers_while_a_request_runs_on_one_hart():
    img = smol_image()
    with qemu_run.Session(img, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=180) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model SMOL (ready|failed)", timeout=240)
        # Whether the shell got the hart is read from the service itself:
        # `aistat`, run in the same command line right after `echo`, must still
        # see the request running. A worker that kept the hart until the end
        # would let the shell run only once the request was done. The real
        # time the echo took is printed, not judged (a busy host decides it).
        for attempt in range(3):
            # 160 int8 tokens of the SmolLM2 shape: about 20 s of work at some
            # 120 ms per token, so even a host several times faster is still
            # generating when aistat runs (with 8 tokens, about 1.1 s, a fast
            # host had finished before in a CI dry run). The client
            # is killed after the check: its request is cancelled at the
            # worker's next iteration.
            launched = run_in_session(s, "ai --model SMOL --int8 --predict 160 504 3575 282 4649 314 > /out &", 30)
            pid = re.search(r"\[(\d+)\]", launched)
            assert pid, launched
            time.sleep(1.0)   # the request is in its prefill or decode now
            start = s.mark()
            t0 = time.monotonic()
            s.send("echo marker-answered; aistat\n")
            seen = s.wait_text("marker-answered\n", start=start + len("echo marker-answered; aistat\n"),
                               timeout=60)
            latency = time.monotonic() - t0
            assert s.wait_prompt(start, timeout=60, skip_echo=True)
            stat = s.since(start)
            print(f"\necho answered after {latency * 1000:.0f} ms (attempt {attempt})")
            assert seen, "echo never answered\n" + stat
            # ... while the request's tokens were still to come.
            assert re.search(r"running=1", stat), stat
            run_in_session(s, f"kill {pid.group(1)}", 30)
            deadline = time.monotonic() + 120
            while "in_flight=0" not in run_in_session(s, "aistat", 30):
                assert time.monotonic() < deadline, s.transcript[-2000:]
                time.sleep(1.0)
        assert_no_panic(s)


def test_wakeup_lateness_under_load_on_one_hart():
    """In exact mode (QEMU -icount: the guest clock counts instructions), so
    that what is measured is kai's scheduling and not how often the shared
    host deschedules QEMU: on a busy host, real-time lateness shows the
    host's stalls (hundreds of ms) whatever the kernel does. A worker that
    kept its hart would still show up, as whole requests of virtual time."""
    img = smol_image()
    with qemu_run.Session(img, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=300,
                          deterministic=True) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model SMOL (ready|failed)", timeout=300)
        fuzz = run_in_session(s, "sysfuzz --calls 5000 --seed 7", 400)
        assert "all returned" in fuzz, fuzz
        out = run_in_session(s, "lateness --seconds 30 --load SMOL --int8 --predict 8", 900)
        print(f"\n{out.strip()}")
        m = re.search(r"lateness: samples=(\d+) max_us=(\d+) p99_us=(\d+) mean_us=(\d+) "
                      r"over_2_ticks=(\d+) requests=(\d+)", out)
        assert m, out
        samples, max_us, p99_us, mean_us, over, requests = map(int, m.groups())
        assert requests >= 3, out             # the load really ran back to back
        assert samples >= 1000, out           # ~one sample per 20 ms over 30 s
        # A few timer ticks (10 ms each) at most; a hart kept by a worker
        # would show whole requests (seconds).
        assert max_us <= 50000, out
        assert_no_panic(s)
