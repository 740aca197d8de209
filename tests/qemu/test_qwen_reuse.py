"""Prefix reuse for a model with linear-attention layers (the tiny hybrid
Qwen: Gated DeltaNet layers and a gated-attention layer), through
recurrent-state checkpoints kept in the KV pool (kernel/ai/kv_checkpoint.h):

- the same prompt again resumes one position before its end, a prompt that
  shares a prefix resumes at the end of the shared prefix's last whole
  block, and the tokens, greedy and seeded, float and int8, are exactly
  those of the host runner computing each request alone from position 0
  (build/host/llmrun: no kernel, no batch, no KV pool, no reuse);
- aistat shows the checkpoints' count and bytes; no KV block stays in use;
- a preempted request (a pool too small for all of them) resumes from a
  checkpoint of its own prompt and still gets its solo tokens;
- a pool too small for one checkpoint beside a full-length request serves
  anyway, without reuse, and says so at boot;
- the context: by default 1024 positions for Qwen (the bundle's ROP.BIN has
  64 rows, the rest are computed), so requests of more than 64 positions
  run, with the host runner's tokens (its default context is the same);
  `ai.context=64` brings the bundle's length back, and a request longer than
  the context is refused with a message naming it;
- a finished request leaves a checkpoint at the end of its prompt and
  output (less the last token): a prompt that continues it resumes there;
- checkpoints stay in their session domain, as prefix blocks do;
- chat-like turns (each prompt the previous prompt and answer plus new
  tokens) in a pool with room for few checkpoints: every turn resumes at
  the previous turn's final checkpoint, which replaced older checkpoints.

What each request is compared with: the host runner alone, never an output
of the kernel under test."""
import os
import re
import subprocess

import pytest

from kai_boot import KERNEL, ROOT, all_programs, make_image, need_built, need_model, qemu_run, run_in_session

WORK = os.path.join(ROOT, "build", "test-qwen-reuse")
HOST_LLMRUN = os.path.join(ROOT, "build", "host", "llmrun")
B = 16   # ai.kv_block's default: positions per KV block
# Blocks for the preemption test: four 60-position requests (4 blocks each)
# do not fit, two 4-block checkpoints beside them often do.
POOL = 15


@pytest.fixture(scope="module")
def image():
    need_built("aiprefix", "aipreempt", "aistat")
    qwen = need_model("tiny-qwen")
    if not os.path.exists(HOST_LLMRUN):
        pytest.fail("build/host/llmrun not built: run `make`")
    os.makedirs(WORK, exist_ok=True)
    return make_image(os.path.join(WORK, "qwen.img"), all_programs(), [("AI/QWEN", qwen)]), qwen


def boot(img, append="", deterministic=False):
    s = qemu_run.Session(img, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=180, append=append,
                         deterministic=deterministic)
    s.__enter__()
    assert s.booted, s.transcript
    assert s.wait_log(r"ai: model QWEN (ready|failed)", timeout=180), s.transcript[-2000:]
    return s


_host = {}


def host_run(bundle, prompt, predict, int8, seed):
    key = (tuple(prompt), predict, int8, seed)
    if key not in _host:
        cmd = [HOST_LLMRUN, "--asset-dir", bundle, "--predict", str(predict)]
        if len(prompt) > 255:   # the course's limit; with --context, the service's (1024)
            cmd += ["--context", "1024"]
        if int8:
            cmd.append("--int8")
        if seed is not None:
            cmd += ["--temp", "0.9", "--top-k", "40", "--seed", str(seed)]
        out = subprocess.run(cmd + [str(t) for t in prompt], capture_output=True, text=True, check=True).stdout
        line = next(l for l in out.splitlines() if re.fullmatch(r"\d+( \d+)*", l.strip()))
        _host[key] = [int(t) for t in line.split()]
    return _host[key]


def check_aiprefix(cmd, out, bundle):
    """Every request present once, with exactly its solo tokens; returns
    {request index: cached tokens}."""
    opt = lambda name, default=None: int(m.group(1)) if (m := re.search(rf"--{name} (\d+)", cmd)) else default
    prefix, tail, predict, requests, seed = opt("prefix"), opt("tail"), opt("predict"), opt("requests"), opt("seed")
    vocab = int(re.search(r"^aiprefix: model \w+ vocab (\d+)$", out, re.M).group(1))
    lines = re.findall(r"^request (\d+): ttft_us=\d+ cached=(\d+) tokens:([\d ]*)$", out, re.M)
    assert sorted(int(i) for i, _, _ in lines) == list(range(requests)), out
    cached = {}
    for i, c, ids in lines:
        i = int(i)
        prompt = [(t * 7 + 3) % vocab for t in range(prefix)] + [(i * 31 + t * 11 + 5) % vocab for t in range(tail)]
        got = [int(t) for t in ids.split()]
        want = host_run(bundle, prompt, predict, "--int8" in cmd, seed)
        assert len(got) == predict and got == want, f"{cmd}: request {i}: kernel {got}, host runner alone {want}"
        cached[i] = int(c)
    assert re.search(rf"^aiprefix: {requests} requests, 0 failed$", out, re.M), out
    return cached


def prefix_tokens(stat):
    return int(re.search(r"prefix_tokens=(\d+)", stat).group(1))


def test_checkpoints_reuse_prefixes_exactly(image):
    img, bundle = image
    s = boot(img)
    try:
        assert re.search(r"ai: model QWEN: KV cache \d+ blocks .*prefix cache on, checkpoints of \d+ blocks",
                         s.transcript), s.transcript[-2000:]
        # The same 48-token prompt three times: the later ones resume at 47.
        # Float and int8 states differ, so they never share a checkpoint; a
        # sampled run finds the greedy run's (the state does not depend on
        # how tokens are drawn), so its first request resumes at 47 too.
        for extra, first in [("", 0), (" --int8", 0), (" --seed 7", 47), (" --int8 --seed 11", 47)]:
            cmd = f"aiprefix --model QWEN --prefix 48 --tail 0 --predict 8 --requests 3{extra}"
            cached = check_aiprefix(cmd, run_in_session(s, cmd, 120), bundle)
            assert cached == {0: first, 1: 47, 2: 47}, (cmd, cached)
        # A shared 40-token prefix, different 7-token tails: they resume at
        # 32, the end of the prefix's last whole block (none of the 48-token
        # prompt's checkpoints, at 47 and 48, fits). Request i's tail is the
        # same in both runs, so in the second each resumes one before its
        # end, at 46, from its own checkpoint of the first run.
        for extra, want in [("", {0: 0, 1: 32, 2: 32, 3: 32}), (" --seed 3", {0: 46, 1: 46, 2: 46, 3: 46})]:
            cmd = f"aiprefix --model QWEN --prefix 40 --tail 7 --predict 10 --requests 4{extra}"
            cached = check_aiprefix(cmd, run_in_session(s, cmd, 120), bundle)
            assert cached == want, (cmd, cached)
        # Longer than the bundle's 64 positions: 110 and 269, greedy and
        # seeded. The prompts start like the ones above, so request 0 finds
        # their checkpoints; request 1 resumes from request 0's (at 49, one
        # before the end of the same prompt; at 192, the last whole block of
        # the shared 200 tokens, as its 5-token tail differs).
        assert re.search(r"^  QWEN .* seq=1024 ", run_in_session(s, "aistat", 30), re.M)
        # Prompts past the course's 255 tokens (the service takes up to
        # KAI_AI_MAX_PROMPT = 1024 within the context): 600 shared, resumed
        # at 592, the shared part's last whole block.
        for cmd, want in [("aiprefix --model QWEN --prefix 50 --tail 0 --predict 60 --requests 2", 49),
                          ("aiprefix --model QWEN --prefix 200 --tail 5 --predict 64 --requests 2 --seed 5", 192),
                          ("aiprefix --model QWEN --prefix 600 --tail 5 --predict 16 --requests 2", 592)]:
            cached = check_aiprefix(cmd, run_in_session(s, cmd, 300), bundle)
            assert cached[1] == want, (cmd, cached)
        # A finished request leaves a checkpoint at the end of its whole
        # sequence, prompt and output, less the last token (a chat's next
        # turn continues it): a prompt that continues the sequence resumes
        # there, after the output's blocks, also cached.
        prompt = [(t * 5 + 2) % 384 for t in range(30)]
        answer = host_run(bundle, prompt, 20, False, None)
        cont = prompt + answer + [7, 8, 9]
        tokens_before = prefix_tokens(run_in_session(s, "aistat", 30))
        for p, n in [(prompt, 20), (cont, 6)]:
            out = run_in_session(s, f"ai --model QWEN --predict {n} " + " ".join(map(str, p)), 60)
            got = next(l for l in out.splitlines() if re.fullmatch(r"\d+( \d+)*", l.strip()))
            assert [int(t) for t in got.split()] == host_run(bundle, p, n, False, None), (p, out)
        assert prefix_tokens(run_in_session(s, "aistat", 30)) - tokens_before == len(prompt) + len(answer) - 1
        # Concurrent requests of one prefix: whatever they find, the tokens hold.
        cmd = "aiprefix --model QWEN --prefix 33 --tail 5 --predict 12 --requests 5 --concurrent --int8"
        check_aiprefix(cmd, run_in_session(s, cmd, 120), bundle)
        stat = run_in_session(s, "aistat", 30)
        m = re.search(r"^checkpoints: count=(\d+) kib=(\d+)$", stat, re.M)
        assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, stat
        assert "in_flight=0" in stat and re.search(r"kv: .* used=0 ", stat), stat
    finally:
        s.__exit__(None, None, None)


def test_preempted_requests_resume_from_checkpoints(image):
    """A pool of POOL blocks: three requests outgrow it, the younger ones
    are preempted (their blocks go back) and come back at the checkpoint
    their prompt left (cached > 0: the prompts share no prefix, so only a
    request's own checkpoint can supply it), with exactly the tokens the
    host runner gives each alone."""
    img, bundle = image
    # Exact mode: the same interleaving (and so the same preemptions) on every run.
    s = boot(img, f"ai.context=64 ai.kv_blocks={POOL}", deterministic=True)
    try:
        out = run_in_session(s, "aipreempt --model QWEN --requests 3 --prompt 40 --predict 20", 300)
        assert re.search(r"aipreempt: 3 requests, [1-9]\d* preemptions, oldest preempted 0, ok", out), out
        vocab = 384
        resumed = 0
        for i, preemptions, cached, ids in re.findall(
                r"^request (\d+): .*preemptions (\d+) .* cached (\d+) tokens:([\d ]*)$", out, re.M):
            prompt = [(int(i) * 37 + t * 13 + 1) % vocab for t in range(40)]
            want = host_run(bundle, prompt, 20, False, None)
            assert [int(t) for t in ids.split()] == want, f"request {i}: {ids} vs host runner alone {want}"
            resumed += int(preemptions) > 0 and int(cached) > 0
        assert resumed > 0, out
    finally:
        s.__exit__(None, None, None)


def test_a_pool_too_small_for_a_checkpoint_serves_without_reuse(image):
    img, bundle = image
    s = boot(img, "ai.context=64 ai.kv_blocks=5")
    try:
        # The bundle's own context again: a request of 66 positions is refused.
        out = run_in_session(s, "ai --model QWEN --predict 60 1 2 3 4 5 6", 60)
        assert "exceeds model QWEN's runtime_seq_len 64" in out, out
        assert re.search(r"^  QWEN .* seq=64 ", run_in_session(s, "aistat", 30), re.M)
        assert re.search(r"ai: model QWEN: 5 KV blocks leave no room for a recurrent-state checkpoint "
                         r"\(\d+ blocks\) beside a full-length request; prefix reuse off", s.transcript), \
            s.transcript[-2000:]
        cmd = "aiprefix --model QWEN --prefix 40 --tail 7 --predict 10 --requests 3"
        assert check_aiprefix(cmd, run_in_session(s, cmd, 120), bundle) == {0: 0, 1: 0, 2: 0}
        stat = run_in_session(s, "aistat", 30)
        assert re.search(r"^checkpoints: count=0 kib=0$", stat, re.M), stat
    finally:
        s.__exit__(None, None, None)


def test_checkpoints_stay_in_their_session_domain(image):
    """Checkpoints follow the prefix cache's domain rules (sharing.h; by
    default a Unix session): the same prompt from a process in another
    session (setsid) finds none of the shell session's checkpoints, and the
    shell's session then finds its own. A 40-token prompt (checkpoints at 32
    and 39, anchored on its blocks) and a 10-token one (at 9, below the
    first block: only the domain's tag keys it)."""
    img, bundle = image
    s = boot(img)
    try:
        hits = 0
        for prefix in (40, 10):
            cmd = f"aiprefix --model QWEN --prefix {prefix} --tail 0 --predict 4 --requests 1"
            cached = [check_aiprefix(cmd, run_in_session(s, c, 120), bundle)[0] for c in (cmd, f"setsid {cmd}", cmd)]
            assert cached == [0, 0, prefix - 1], (cmd, cached)
            hits += 1
        assert re.search(rf"prefix_hits={hits} ", run_in_session(s, "aistat", 30))
    finally:
        s.__exit__(None, None, None)


def test_turns_in_a_full_pool_resume_at_the_previous_answer(image):
    """Five turns, each prompt the previous prompt and answer plus 5 new
    tokens, in a pool of 22 blocks (ai.context=256: 16 blocks for one
    request, 4 per checkpoint). Every prompt leaves checkpoints (its last
    whole block, one before its end) that fill the pool; a finished
    request's final checkpoint then replaces the least recently used of
    them (kv_final_checkpoint), so each turn resumes after the whole
    previous answer: aistat's prefix_tokens grows by exactly the previous
    prompt and answer less the last token, and the tokens are the host
    runner's alone."""
    img, bundle = image
    s = boot(img, "ai.context=256 ai.kv_blocks=22")
    try:
        prompt, answer = [(t * 3 + 1) % 384 for t in range(30)], []
        for turn in range(5):
            if turn > 0:
                resumed_at = len(prompt) + len(answer) - 1
                prompt = prompt + answer + [(turn * 50 + t) % 384 for t in range(5)]
            before = prefix_tokens(run_in_session(s, "aistat", 30))
            out = run_in_session(s, "ai --model QWEN --predict 10 " + " ".join(map(str, prompt)), 60)
            got = next(l for l in out.splitlines() if re.fullmatch(r"\d+( \d+)*", l.strip()))
            answer = [int(t) for t in got.split()]
            assert answer == host_run(bundle, prompt, 10, False, None), (turn, prompt, out)
            stat = run_in_session(s, "aistat", 30)
            if turn > 0:
                assert prefix_tokens(stat) - before == resumed_at, (turn, resumed_at, stat)
        assert re.search(r"^checkpoints: count=[1-9]\d* ", stat, re.M), stat
    finally:
        s.__exit__(None, None, None)
