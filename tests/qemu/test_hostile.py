"""What a hostile or careless client cannot do to kai (issue: "The AI service
never freezes the machine"):

- a kernel worker computing a request never keeps its hart: on one hart, the
  shell answers `echo` well within a second while a SmolLM2-shape request is
  mid-way, and a process waking every 10 ms is never late by more than a few
  timer ticks while requests run back to back for a minute (after a phase of
  random system calls);
- 10,000 random system calls with hostile arguments (sysfuzz) return, leak
  no memory, and leave the kernel and the AI service answering;
- a storm of 100 clients killed at random moments (aistorm) leaves nothing in
  flight; a killed owner's id is unknown at once; a cancel lands within one
  token of a long prefill;
- the fuzzer and the storm do the same with the fair policy and with
  priority preemption on.
Figures (calls, clients, lateness) are printed with -s for the issue notes."""
import os
import re
import time

import pytest

from kai_boot import KERNEL, ROOT, all_programs, make_image, need_built, need_model, qemu_run, run_in_session

SMOL_IMG = os.path.join(ROOT, "build", "fs-smol.img")
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
    assert s.console.wait_for(lambda t: FREE_MEMORY.search(t[start:]) is not None, 30)
    return int(FREE_MEMORY.search(s.transcript[start:]).group(1))


def assert_no_panic(s):
    assert not any(m in s.transcript for m in qemu_run.PANIC_MARKERS), s.transcript[-3000:]


# The sharing policies (docs/ai-service.md, "Sharing the model among
# processes") must survive the same abuse: the fair policy, and priority
# with preemption at the smallest gap.
SHARING = ["ai.policy=fair", "ai.policy=priority ai.preempt_gap=1"]


@pytest.mark.parametrize("smp,sharing", [(1, ""), (4, "")] + [(4, x) for x in SHARING])
def test_sysfuzz_leaves_kernel_answering(tiny_image, smp, sharing):
    with qemu_run.Session(tiny_image, KERNEL, smp=smp, memory="1G", snapshot=True,
                          boot_timeout=180, append=sharing) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model LLAMA (ready|failed)", timeout=120)
        before = run_in_session(s, "ai --model LLAMA 1 2 3", 120).splitlines()[0]
        # The first run creates /fz and its files; the second must not use
        # any more memory than the first left in use (no leak per run).
        first = run_in_session(s, f"sysfuzz --calls 10000 --seed {smp}", 400)
        pages_1 = free_pages(s)
        second = run_in_session(s, f"sysfuzz --calls 10000 --seed {smp + 100}", 400)
        pages_2 = free_pages(s)
        print(f"\nsysfuzz smp={smp}: {first.strip()} | {second.strip()} | free pages {pages_1} -> {pages_2}")
        for out in (first, second):
            assert "10000 calls" in out and "all returned; kernel answers: yes" in out, out
        assert pages_2 == pages_1, f"free pages {pages_1} -> {pages_2} after a second fuzz run"
        after = run_in_session(s, "ai --model LLAMA 1 2 3", 120).splitlines()[0]
        assert after == before, (before, after)   # same tokens from the AI service
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
        assert "6 passed, 0 failed" in out, out
        stat = run_in_session(s, "aistat", 30)
        assert "in_flight=0" in stat, stat
        assert_no_panic(s)


def test_shell_answers_while_a_request_runs_on_one_hart():
    img = smol_image()
    with qemu_run.Session(img, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=180) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model SMOL (ready|failed)", timeout=240)
        for attempt in range(3):
            # Eight int8 tokens of the SmolLM2 shape: several seconds of work.
            run_in_session(s, "ai --model SMOL --int8 --predict 8 504 3575 282 4649 314 > /out &", 30)
            time.sleep(1.0)   # the request is in its prefill or decode now
            start = s.mark()
            t0 = time.monotonic()
            s.send("echo marker-answered; aistat\n")
            seen = s.wait_text("marker-answered\n", start=start + len("echo marker-answered; aistat\n"),
                               timeout=60)
            latency = time.monotonic() - t0
            assert s.wait_prompt(start, timeout=60, skip_echo=True)
            stat = s.transcript[start:]
            print(f"\necho answered after {latency * 1000:.0f} ms (attempt {attempt})")
            assert seen and latency < 1.0, f"echo took {latency:.2f} s\n" + stat
            # ... while the request's tokens were still to come.
            assert re.search(r"running=1", stat), stat
            # Let it finish (its client collects it) before the next attempt.
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
