"""Integration tests of the cold path: /bin/llmrun (user/llmrun/llmrun.cpp with
platform_kai.cpp) reads a bundle from the file system on every run.

One image holds the tiny synthetic Llama and Qwen3.5 bundles (q8 and f32),
stories260K when `make test-models` could export it, and broken copies for
the error paths. Checks: tokens equal the reference (EXP.BIN and
tools/llm_reference.py on other prompts), the host runner (stories260K) and
the warm path (`ai`) of the same boot; every error the course names is
reported with a non-zero exit and the shell survives; interactive mode;
the --timing line; not enough memory on a small machine."""
import os
import re
import shutil
import struct
import subprocess

import pytest

from kai_boot import KERNEL, MODELS, ROOT, all_programs, make_image, need_built, qemu_run
import bundle as B  # noqa: E402  (tools/, on the path through kai_boot)

HOST_LLMRUN = os.path.join(ROOT, "build", "host", "llmrun")
WORK = os.path.join(ROOT, "build", "test-cold")

# Guest name -> bundle directory under build/models (made by `make test-models`).
BUNDLES = {"LLAMA": "tiny-llama", "LLAMAF": "tiny-llama-f32",
           "QWEN": "tiny-qwen", "QWENF": "tiny-qwen-f32", "STORIES": "stories260K"}
TINY = ("LLAMA", "LLAMAF", "QWEN", "QWENF")
# The kernel's AI service loads at most KAI_AI_MAX_MODELS (4) bundles from
# /AI, so only the warm path's models go there; llmrun reads the others from
# /M (more models) and /B (broken bundles).
WARM = ("LLAMA", "QWEN", "STORIES")


def guest_dir(name):
    if name in WARM:
        return f"/AI/{name}"
    return f"/B/{name}" if name in ("NOLTY", "BADCFG", "BIG") else f"/M/{name}"
IDS = re.compile(r"[\d ]+")


def read_tokens(path):
    with open(path, "rb") as f:
        data = f.read()
    (count,) = struct.unpack_from("<I", data)
    return list(struct.unpack_from(f"<{count}I", data, 4))


def config(path):
    with open(os.path.join(path, "CFG.BIN"), "rb") as f:
        return B.parse_cfg(f.read())


@pytest.fixture(scope="module")
def image():
    need_built("llmrun")
    bundles = {name: os.path.join(MODELS, d) for name, d in BUNDLES.items()
               if os.path.exists(os.path.join(MODELS, d, "CFG.BIN"))}
    if any(n not in bundles for n in TINY):
        pytest.skip("tiny test models missing: run `make test-models`")
    os.makedirs(WORK, exist_ok=True)
    extra = {}
    # A Qwen bundle without LTY.BIN.
    nolty = extra["NOLTY"] = os.path.join(WORK, "NOLTY")
    shutil.rmtree(nolty, ignore_errors=True)
    shutil.copytree(bundles["QWEN"], nolty)
    os.unlink(os.path.join(nolty, "LTY.BIN"))
    # A Llama bundle whose CFG.BIN says n_kv_heads = 0.
    badcfg = extra["BADCFG"] = os.path.join(WORK, "BADCFG")
    shutil.rmtree(badcfg, ignore_errors=True)
    shutil.copytree(bundles["LLAMA"], badcfg)
    with open(os.path.join(badcfg, "CFG.BIN"), "r+b") as f:
        f.seek(4 * 6)                       # v1: n_kv_heads
        f.write(struct.pack("<I", 0))
    # A consistent header with the largest vocabulary: EMB.BIN is ~68 MiB,
    # more than a 64 MiB machine can give a process (test_not_enough_memory).
    big = extra["BIG"] = os.path.join(WORK, "BIG")
    shutil.rmtree(big, ignore_errors=True)
    os.makedirs(big)
    with open(os.path.join(bundles["LLAMA"], "CFG.BIN"), "rb") as f:
        cfg = bytearray(f.read())
    vocab, dim = 1 << 20, struct.unpack_from("<I", cfg, 8)[0]
    struct.pack_into("<I", cfg, 4 * 7, vocab)
    with open(os.path.join(big, "CFG.BIN"), "wb") as f:
        f.write(cfg)
    with open(os.path.join(big, "EMB.BIN"), "wb") as f:
        f.truncate(vocab * (4 + dim))
    # Prompt files: PMT.BIN style and too many tokens.
    prompts = os.path.join(WORK, "P")
    shutil.rmtree(prompts, ignore_errors=True)
    os.makedirs(prompts)
    with open(os.path.join(prompts, "LONG.BIN"), "wb") as f:
        f.write(B.ids_bytes([1] * 300))
    with open(os.path.join(prompts, "REQ.TXT"), "w") as f:
        f.write("4 1 17 42\n\n3 5 6 7 8\nexit\n5 1 2\n")
    dirs = [(guest_dir(name)[1:], path) for name, path in list(bundles.items()) + list(extra.items())]
    img = make_image(os.path.join(WORK, "cold.img"), all_programs(), dirs + [("P", prompts)])
    return img, bundles


class Guest:
    """One boot; commands run after the AI service has reported every model,
    so its log lines cannot interleave with command output."""

    def __init__(self, img, names, memory="1G"):
        # The AI service's log lines may follow the first prompt, so the
        # Session's own "ends with a prompt" boot check cannot be used.
        self.s = qemu_run.Session(image=img, kernel=KERNEL, smp=2, memory=memory, snapshot=True,
                                  boot_timeout=0.01)
        assert self.s.wait_text("init: starting sh", timeout=60), self.s.transcript
        for n in names:
            # wait_log: the shell's first prompt may land inside the line.
            assert self.s.wait_log(rf"ai: model {n} (ready|failed)", 60), \
                f"model {n} never reported\n{self.s.transcript}"
        self.run("echo synced")

    def run(self, command, timeout=120):
        """Output of one command line (without the echo and the prompt)."""
        start = self.s.mark()
        assert self.s.command(command, timeout), f"timed out: {command}\n{self.s.transcript}"
        out = self.s.since(start)
        out = out[out.index("\n") + 1:]                  # the echoed command line
        assert out.endswith(qemu_run.PROMPT), out
        assert not any(m in out for m in qemu_run.PANIC_MARKERS), out
        return out[:-len(qemu_run.PROMPT)].replace("\r", "")

    def ids(self, command, timeout=120):
        out = self.run(command + " && echo rc=0", timeout)
        lines = [l for l in out.splitlines() if IDS.fullmatch(l.strip())]
        assert lines and "rc=0" in out, f"{command}:\n{out}"
        return [int(t) for t in lines[0].split()], out

    def fails(self, command, timeout=120):
        """Output of a command that must fail; the shell must still answer."""
        out = self.run(command + " || echo rc=nonzero", timeout)
        assert "rc=nonzero" in out, f"{command} did not fail:\n{out}"
        assert "alive" in self.run("echo alive")
        return out

    def close(self):
        ok = self.s.halt()
        self.s.close()
        return ok


@pytest.fixture(scope="module")
def guest(image):
    img, bundles = image
    g = Guest(img, [n for n in bundles if n in WARM])
    yield g, bundles
    assert g.close(), "QEMU did not exit after halt"


@pytest.mark.parametrize("name", TINY)
def test_sample_prompt_equals_expected(guest, name):
    g, bundles = guest
    want = read_tokens(os.path.join(bundles[name], "EXP.BIN"))
    d = guest_dir(name)
    got, _ = g.ids(f"llmrun --asset-dir {d} --predict {len(want)} --prompt-file {d}/PMT.BIN")
    assert got == want


@pytest.mark.parametrize("name", TINY)
def test_other_prompts_equal_reference(guest, name):
    import llm_reference
    g, bundles = guest
    ref = llm_reference.Reference.load(bundles[name])
    vocab = config(bundles[name]).vocab_size
    for prompt in ([3], [5, 9, 200 % vocab, 77, 31, 2, 250 % vocab, 11, 0, 64, 19, 123]):
        want = [int(t) for t in ref.generate(prompt, 10)]
        got, _ = g.ids(f"llmrun --asset-dir {guest_dir(name)} --predict 10 " + " ".join(map(str, prompt)))
        assert got == want, f"{name} {prompt}: guest {got}, reference {want}"


def test_stories260k_equals_host_runner(guest):
    g, bundles = guest
    if "STORIES" not in bundles:
        pytest.skip("build/models/stories260K missing (make test-models exports it only when "
                    "$KAI_SHARED_MODELS/stories260K exists; models/README.md)")
    if not os.path.exists(HOST_LLMRUN):
        pytest.skip("build/host/llmrun not built: run `make host`")
    for prompt, n in (([1], 40), ([1, 403, 407, 261], 24)):
        toks = " ".join(map(str, prompt))
        host = subprocess.run([HOST_LLMRUN, "--asset-dir", bundles["STORIES"], "--predict", str(n)] + toks.split(),
                              capture_output=True, text=True, check=True).stdout.split()
        got, _ = g.ids(f"llmrun --asset-dir /AI/STORIES --predict {n} {toks}")
        assert got == [int(t) for t in host]


@pytest.mark.parametrize("name", ["LLAMA", "QWEN", "STORIES"])
@pytest.mark.parametrize("int8", [False, True])
def test_cold_equals_warm(guest, name, int8):
    g, bundles = guest
    if name not in bundles:
        pytest.skip(f"{name} bundle missing (make test-models; stories260K needs KAI_SHARED_MODELS, models/README.md)")
    flag = " --int8" if int8 else ""
    toks = "1 17 42 99 7"
    cold, _ = g.ids(f"llmrun --asset-dir /AI/{name} --predict 12{flag} {toks}")
    warm, _ = g.ids(f"ai --model {name} --predict 12{flag} {toks}")
    assert cold == warm


@pytest.mark.parametrize("name", ["LLAMA", "QWEN"])
def test_mmap_equals_read(guest, name):
    """llmrun --mmap uses the bundle's files in place through mmap (kernel/mmap.h):
    the same tokens as read(), float and int8, with and without --populate;
    its timing line says so and counts the faults that mapped the weights."""
    g, _ = guest
    toks = "1 17 42 99 7"
    for flag in ("", " --int8"):
        want, _ = g.ids(f"llmrun --asset-dir /AI/{name} --predict 12{flag} {toks}")
        for how in ("--mmap", "--populate"):
            got, out = g.ids(f"llmrun --asset-dir /AI/{name} {how} --timing --predict 12{flag} {toks}")
            assert got == want, f"{how}{flag}: {got} != read()'s {want}"
            m = re.search(r" bytes_read=(\d+) .* load=(\S+) major_faults=(\d+) minor_faults=(\d+) disk_bytes=(\d+) ",
                          out, re.M)
            assert m, out
            assert int(m.group(1)) == 0, out                        # nothing read() into private memory
            assert m.group(2) == ("mmap" if how == "--mmap" else "mmap+populate"), out
            assert int(m.group(3)) + int(m.group(4)) > 0, out         # the weights came in by faults
            assert int(m.group(5)) == 0, out                        # read() above left them cached


def test_default_asset_dir_from_program_name(guest):
    g, _ = guest
    # /bin/llmrun_qwen reads /AI/QWEN, /bin/llmrun_smol (and llmrun) /AI/SMOL.
    got, _ = g.ids("llmrun_qwen --predict 4 1 2 3")
    want, _ = g.ids("llmrun --asset-dir /AI/QWEN --predict 4 1 2 3")
    assert got == want
    out = g.fails("llmrun_smol --predict 4 1 2 3")
    assert "CFG.BIN: missing (bundle /AI/SMOL)" in out, out


def test_timing_line(guest):
    g, bundles = guest
    size = sum(os.path.getsize(os.path.join(bundles["QWEN"], f))
               for f in os.listdir(bundles["QWEN"]) if re.fullmatch(r"(CFG|LTY|EMB|NRM|ROP|L\d\d)\.BIN", f))
    for flag, kernel in (("", "float"), (" --int8", "int8")):
        _, out = g.ids(f"llmrun --asset-dir /AI/QWEN --predict 6 --timing{flag} 1 17 42")
        m = re.search(r"^timing model=QWEN load_us=(\d+) init_us=(\d+) prompt=3 ttft_us=(\d+) prefill_us=\d+ gen=6 "
                      r"tpot_us=(\d+) total_us=(\d+) bytes_read=(\d+) matvec=(\S+) prefill_macs=(\d+) .*"
                      r"decode_macs=(\d+) .*$", out, re.M)
        assert m, out
        load, init, ttft, tpot, total, nbytes = map(int, m.groups()[:6])
        assert nbytes == size                    # every bundle file, once
        assert m.group(7).startswith(kernel), out
        assert load > 0 and ttft > 0 and tpot > 0
        assert ttft + 5 * tpot <= total + 5      # rounding of the mean
        assert total < 60_000_000
        assert int(m.group(8)) > 0 and int(m.group(9)) > 0   # the runtime's work counts


def test_coldwarm_parses_llmrun(guest):
    g, _ = guest
    out = g.run("coldwarm --model LLAMA --runs 1 --predict 4 1 17 42", timeout=120)
    assert "coldwarm: llmrun failed" not in out, out
    assert "tokens identical: yes" in out, out


def test_missing_lty(guest):
    g, _ = guest
    out = g.fails("llmrun --asset-dir /B/NOLTY --predict 4 1 2 3")
    assert "LTY.BIN: missing" in out, out


def test_token_out_of_range(guest):
    g, bundles = guest
    vocab = config(bundles["LLAMA"]).vocab_size
    out = g.fails(f"llmrun --asset-dir /AI/LLAMA --predict 4 1 2 {vocab}")
    assert "token 2 out of range" in out, out
    got, _ = g.ids(f"llmrun --asset-dir /AI/LLAMA --predict 2 1 2 {vocab - 1}")
    assert len(got) == 2


def test_request_too_long(guest):
    g, bundles = guest
    n = config(bundles["LLAMA"]).runtime_seq_len
    out = g.fails(f"llmrun --asset-dir /AI/LLAMA --predict {n - 2} 1 2 3")
    assert f"request too long for runtime_seq_len={n}" in out, out
    got, _ = g.ids(f"llmrun --asset-dir /AI/LLAMA --predict {n - 3} 1 2 3", timeout=120)
    assert len(got) == n - 3                      # exactly fills the context
    out = g.fails("llmrun --asset-dir /AI/LLAMA --predict 4 --prompt-file /P/LONG.BIN")
    assert "prompt too long: 300 tokens, at most 255" in out, out


def test_corrupt_cfg(guest):
    g, _ = guest
    out = g.fails("llmrun --asset-dir /B/BADCFG --predict 4 1 2 3")
    assert "CFG.BIN: n_kv_heads" in out and "/B/BADCFG" in out, out


def test_missing_directory(guest):
    g, _ = guest
    out = g.fails("llmrun --asset-dir /AI/NOPE --predict 4 1 2 3")
    assert "CFG.BIN: missing (bundle /AI/NOPE)" in out, out


def test_bad_arguments(guest):
    g, _ = guest
    assert "bad token 'x1'" in g.fails("llmrun --asset-dir /AI/LLAMA x1")
    assert "llmrun: unknown option --frobnicate" in g.fails("llmrun --frobnicate")
    assert "empty prompt" in g.fails("echo | llmrun --asset-dir /AI/LLAMA --stdin")


def test_sampling_and_stop_limits_and_the_stop_rule(guest):
    """Both paths refuse what could not take effect (a penalty window above
    256 tokens, a stop id outside the vocabulary) and accept the boundary;
    llmrun stops where a stop sequence appears, as the kernel does."""
    g, bundles = guest
    vocab = config(bundles["LLAMA"]).vocab_size
    out = g.fails("llmrun --asset-dir /AI/LLAMA --predict 4 --repeat-penalty 1.1 --repeat-last-n 257 1 2")
    assert "--repeat-last-n: '257' is not a window of 0 to 256 tokens" in out, out
    got, _ = g.ids("llmrun --asset-dir /AI/LLAMA --predict 4 --repeat-penalty 1.1 --repeat-last-n 256 1 2")
    assert len(got) == 4
    out = g.fails("ai --model LLAMA --predict 4 --repeat-penalty 1.1 --repeat-last-n 257 1 2")
    assert "--repeat-last-n: '257' is not a number of tokens from 0 to 256" in out, out
    got, _ = g.ids("ai --model LLAMA --predict 4 --repeat-penalty 1.1 --repeat-last-n 256 1 2")
    assert len(got) == 4

    out = g.fails(f"llmrun --asset-dir /AI/LLAMA --predict 4 --stop {vocab} 1 2")
    assert f"--stop: a token id is not below the vocabulary size {vocab}" in out, out
    out = g.fails(f"ai --model LLAMA --predict 4 --stop {vocab} 1 2")
    assert not any(IDS.fullmatch(l.strip()) for l in out.splitlines() if l.strip()), out   # nothing generated
    got, _ = g.ids(f"llmrun --asset-dir /AI/LLAMA --predict 4 --stop {vocab - 1} 1 2")
    assert 1 <= len(got) <= 4

    greedy, _ = g.ids("llmrun --asset-dir /AI/LLAMA --predict 24 1 2 3")
    stop = greedy[5:7]
    cut = next(i for i in range(1, len(greedy)) if greedy[i - 1:i + 1] == stop) + 1
    got, out = g.ids(f"llmrun --asset-dir /AI/LLAMA --predict 24 --timing --stop '{stop[0]} {stop[1]}' 1 2 3")
    assert got == greedy[:cut], (got, greedy, stop)
    assert "finish=stop" in out, out


def test_stdin_prompt(guest):
    g, _ = guest
    a, _ = g.ids("echo 1 17 42 | llmrun --asset-dir /AI/QWEN --predict 5 --stdin")
    b, _ = g.ids("llmrun --asset-dir /AI/QWEN --predict 5 1 17 42")
    assert a == b


def test_interactive_from_file(guest):
    g, _ = guest
    # "4 1 17 42", an empty line, "3 5 6 7 8", then exit: the line after
    # exit is never read.
    out = g.run("llmrun --asset-dir /AI/LLAMA < /P/REQ.TXT && echo rc=0")
    lines = [l for l in out.splitlines() if IDS.fullmatch(l.strip())]
    a, _ = g.ids("llmrun --asset-dir /AI/LLAMA --predict 4 1 17 42")
    b, _ = g.ids("llmrun --asset-dir /AI/LLAMA --predict 3 5 6 7 8")
    assert [list(map(int, l.split())) for l in lines] == [a, b], out
    assert "rc=0" in out


def test_interactive_console(guest):
    g, _ = guest
    s = g.s
    a, _ = g.ids("llmrun --asset-dir /AI/QWEN --predict 3 9 8 7")
    start = s.mark()
    s.send("llmrun --asset-dir /AI/QWEN\n")
    s.send("3 9 8 7\n")
    assert s.wait_text(" ".join(map(str, a)) + "\n", start, timeout=60), s.since(start)
    s.send("2 1 400000\n")                        # an error keeps the session going
    assert s.wait_text("token 1 out of range", start, timeout=60), s.since(start)
    s.send("quit\n")
    assert s.wait_prompt(start, timeout=60), s.since(start)
    assert "alive" in g.run("echo alive")


def test_not_enough_memory(image):
    img, bundles = image
    # 64 MiB of RAM: BIG's EMB.BIN (68 MiB) cannot be allocated.
    g = Guest(img, [n for n in bundles if n in WARM], memory="64M")
    try:
        out = g.fails("llmrun --asset-dir /B/BIG --predict 2 1 2")
        assert re.search(r"not enough memory: EMB.BIN needs \d+ bytes \(ENOMEM\)\ncannot load bundle /B/BIG\n", out), out
        got, _ = g.ids("llmrun --asset-dir /AI/LLAMA --predict 3 1 17 42")
        assert len(got) == 3
    finally:
        g.close()
