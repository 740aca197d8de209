"""Command lines: the console keeps a 2 KiB line sent in one write whole, the
shell and exec take 260 arguments (a 255-token prompt with options fits),
and every program rejects a bad command line naming the argument and the
value, with a non-zero exit status, before it sends anything to the kernel:
bad numbers and ids, extra arguments, a missing or failed model (named, with
the cause). `ai`, `coldwarm` and `aibench` read prompts from a file (text or
PMT.BIN) and from standard input with the same tokens as on the command
line; a missing file, a bad token, an empty prompt or an id outside the
vocabulary is named and nothing is submitted (the service's counters do not
move)."""
import os
import re
import shutil
import struct

import pytest

from kai_boot import KERNEL, ROOT, all_programs, make_image, need_built, need_model, qemu_run, run_in_session

WORK = os.path.join(ROOT, "build", "test-cli")


PROMPTS = {"good.txt": "5 6\n7, 8\n", "bad.txt": "5 x7 9", "empty.txt": " \n", "big.txt": "1 99999",
           "huge.txt": "1 4294967296"}


def prompt_dir():
    """The prompt files of /p, and a PMT.BIN-style binary one."""
    d = os.path.join(WORK, "p")
    os.makedirs(d, exist_ok=True)
    for name, text in PROMPTS.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    with open(os.path.join(d, "PMT.BIN"), "wb") as f:
        f.write(struct.pack("<5I", 4, 5, 6, 7, 8))
    return d


def broken_model(llama):
    """A copy of the tiny model with a truncated layer: the kernel fails to load it."""
    d = os.path.join(WORK, "bad")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(llama, d)
    with open(os.path.join(d, "L00.BIN"), "r+b") as f:
        f.truncate(100)
    return d


@pytest.fixture(scope="module")
def session():
    need_built("ai", "aibench", "coldwarm", "llmrun", "tok", "aistat")
    llama = need_model("tiny-llama")
    os.makedirs(WORK, exist_ok=True)
    # BAD comes first under /AI: a program without --model must skip it.
    img = make_image(os.path.join(WORK, "cli.img"), all_programs(),
                     [("AI/BAD", broken_model(llama)), ("AI/LLAMA", llama), ("p", prompt_dir())])
    with qemu_run.Session(img, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=180) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model LLAMA (ready|failed)", timeout=120)
        assert s.wait_log(r"ai: model BAD (ready|failed)", timeout=120)
        yield s
        s.halt()


def counters(session):
    """The service's submitted and rejected counts (aistat)."""
    out = run_in_session(session, "aistat")
    m = re.search(r"submitted=(\d+) completed=\d+ failed=\d+ cancelled=\d+ rejected=(\d+)", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def refused(session, cmd, needle, timeout=60):
    """Runs cmd, which must fail naming needle, exit non-zero and submit nothing."""
    before = counters(session)
    out = run_in_session(session, f"{cmd} || echo EXIT-NONZERO", timeout=timeout)
    assert needle in out, out
    assert "EXIT-NONZERO" in out, out
    assert counters(session) == before, f"`{cmd}` reached the AI service:\n{out}"
    return out


def test_a_2kib_line_arrives_whole(session):
    word = "".join(chr(ord("a") + i % 26) for i in range(2048))
    out = run_in_session(session, f"echo {word}")   # sent in one write by Session.command
    assert out.strip() == word, f"{len(out.strip())} of {len(word)} characters arrived"


def test_260_arguments_reach_a_program(session):
    args = " ".join(str(i) for i in range(260))
    out = run_in_session(session, f"echo {args} | wc")   # lines, words, bytes
    assert out.split()[:2] == ["1", "260"], out


@pytest.mark.parametrize("cmd,needle", [
    ("ai --model LLAMA 1 abc 3", "prompt token 1: 'abc' is not a token id"),
    ("ai --model LLAMA 1 4294967296", "prompt token 1: '4294967296' is not a token id (larger than 32 bits)"),
    ("ai --model LLAMA --predict abc 1", "--predict: 'abc' is not a number"),
    ("ai --model LLAMA --predict -1 1", "--predict: '-1' is not a number"),
    ("ai --model LLAMA --priority 99 1", "--priority: '99' is not a number from 0 to 15"),
    ("ai --model LLAMA 1 2 100000", "prompt token 2: id 100000 out of range"),
    ("ai --model LLAMA --predict 4000 1", "exceeds model LLAMA's runtime_seq_len"),
])
def test_ai_names_the_bad_argument(session, cmd, needle):
    out = refused(session, cmd, needle)
    assert not re.search(r"^\d+( \d+)*$", out, re.M), out   # nothing was generated


def tokens_of(out):
    """The generated ids: the first line of output that is only numbers."""
    m = re.search(r"^(\d+(?: \d+)*)\s*$", out, re.M)
    assert m, out
    return m.group(1)


def test_ai_reads_the_same_prompt_from_a_file_and_standard_input(session):
    want = tokens_of(run_in_session(session, "ai --model LLAMA --predict 6 5 6 7 8"))
    assert tokens_of(run_in_session(session, "ai --model LLAMA --predict 6 --prompt-file /p/good.txt")) == want
    assert tokens_of(run_in_session(session, "ai --model LLAMA --predict 6 --prompt-file /p/PMT.BIN")) == want
    assert tokens_of(run_in_session(session, "echo 5 6 7 8 | ai --model LLAMA --predict 6 --stdin")) == want


def test_coldwarm_and_aibench_read_prompt_files(session):
    out = run_in_session(session, "coldwarm --model LLAMA --runs 1 --predict 4 --prompt-file /p/good.txt",
                         timeout=120)
    assert "prompt 4 tokens" in out and "tokens identical: yes" in out, out
    out = run_in_session(session, "echo 5 6 7 | coldwarm --model LLAMA --runs 1 --predict 4 --stdin", timeout=120)
    assert "prompt 3 tokens" in out and "tokens identical: yes" in out, out
    out = run_in_session(session, "aibench --model LLAMA --clients 2 --requests 2 --predict 3 --prompt-file /p/PMT.BIN",
                         timeout=120)
    assert "prompt 4, predict 3" in out and "requests: 4 done" in out, out
    out = run_in_session(session, "echo 9 8 | aibench --model LLAMA --clients 1 --requests 1 --predict 3 --stdin",
                         timeout=120)
    assert "prompt 2, predict 3" in out and "requests: 1 done" in out, out


@pytest.mark.parametrize("prog", ["ai --model LLAMA --predict 4", "coldwarm --model LLAMA --runs 1 --predict 4",
                                  "aibench --model LLAMA --requests 1 --predict 4"])
@pytest.mark.parametrize("how,needle", [
    ("--prompt-file /p/nosuch.txt", "/p/nosuch.txt: cannot open"),
    ("--prompt-file /p/bad.txt", "/p/bad.txt: prompt token 1: 'x7' is not a token id (not a number)"),
    ("--prompt-file /p/huge.txt", "/p/huge.txt: prompt token 1: '4294967296' is not a token id (larger than 32 bits)"),
    ("--prompt-file /p/empty.txt", "/p/empty.txt: empty prompt"),
    ("--prompt-file /p/big.txt", "prompt token 1: id 99999 out of range (model LLAMA has 320 tokens)"),
    ("--stdin < /p/bad.txt", "standard input: prompt token 1: 'x7' is not a token id"),
    ("--stdin < /p/empty.txt", "standard input: empty prompt"),
    ("--prompt-file", "--prompt-file needs a value"),
])
def test_bad_prompt_files_are_named_and_nothing_is_submitted(session, prog, how, needle):
    name = prog.split()[0]
    refused(session, f"{prog} {how}", f"{name}: {needle}" if not needle.startswith("--") else needle)


@pytest.mark.parametrize("cmd,needle", [
    # sampling and stopping
    ("ai --model LLAMA --seed 18446744073709551616 1", "--seed: '18446744073709551616' is not a number"),
    ("ai --model LLAMA --predict 4 --stop 99999 1", "--stop: id 99999 out of range (model LLAMA has 320 tokens)"),
    ("ai --model LLAMA --repeat-last-n 5000 1", "--repeat-last-n: '5000' is not a number of tokens from 0 to 256"),
    ('ai --model LLAMA --text ""', "--text: empty prompt"),
    ("ai --model LLAMA --stop-text end 1", "ai: --stop-text: LLAMA has no TOK.BIN (no tokenizer: use token ids)"),
    ('ai --model LLAMA --stop-text "" 1', "ai: --stop-text: empty text"),
    ("ai --model LLAMA --stop 1 --stop 2 --stop-text a --stop-text b --stop-text c 1",
     "ai: --stop-text: 'c': at most 4 --stop and --stop-text options"),
    ("llmrun --asset-dir /AI/LLAMA --stop-text end 1", "--stop-text: /AI/LLAMA has no TOK.BIN"),
    ("llmrun --asset-dir /AI/LLAMA --stop 1 --stop-text a --stop-text b --stop-text c --stop 2 1",
     "--stop: '2' is not accepted: at most 4 --stop and --stop-text options"),
    ("ai --model LLAMA --prompt-file /p/good.txt 5", "give the prompt one way"),
    ("ai --model LLAMA --bogus 1", "unknown option --bogus"),
    ("ai --model LLAMA --predict", "--predict needs a value"),
    ("ai --model ABCDEFGHIJKLMNOPQRSTUVWXYZ 1", "--model: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' is longer than 15 characters"),
    # models: missing, failed
    ("ai --model NOSUCH 1", "ai: model NOSUCH: no such model under /AI"),
    ("ai --model BAD 1", "ai: model BAD: failed to load"),
    ("coldwarm --model NOSUCH 1", "coldwarm: model NOSUCH: no such model under /AI"),
    ("aibench --model NOSUCH", "aibench: model NOSUCH: no such model under /AI"),
    ("aibatch NOSUCH", "aibatch: model NOSUCH: no such model under /AI"),
    ("tok NOSUCH info", "tok: no model NOSUCH under /AI"),
    # coldwarm and llmrun: which option, which value
    ("coldwarm --model LLAMA --predict 0 1", "--predict: '0' is not a number from 1 to 1024"),
    ("coldwarm --model LLAMA --predict 99999 1", "--predict: '99999' is not a number from 1 to 1024"),
    ("coldwarm --model LLAMA --runs 0 1", "--runs: '0' is not a number from 1 to 32"),
    ("coldwarm --model LLAMA --runs 99999 1", "--runs: '99999' is not a number from 1 to 32"),
    ("coldwarm --model LLAMA 99999", "prompt token 0: id 99999 out of range (model LLAMA has 320 tokens)"),
    ("coldwarm --model LLAMA 1 x", "prompt token 1: 'x' is not a token id"),
    ("llmrun --asset-dir /AI/LLAMA 99999", "token 0 out of range (id 99999; model LLAMA has 320 tokens)"),
    # aibench
    ("aibench --model LLAMA --clients 0", "--clients: '0' is not a number from 1 to 64"),
    ("aibench --model LLAMA --prompt 60 --predict 60", "exceeds model LLAMA's runtime_seq_len 96"),
    ("aibench --model LLAMA --long-predict 8", "--long-predict and --long-share go together"),
    # extra arguments and bad values in the other programs
    ("aistat extra junk", "aistat: unexpected argument 'extra'"),
    ("df now", "df: unexpected argument 'now'"),
    ("halt now", "halt: unexpected argument 'now'"),
    ("sleep abc", "sleep: 'abc' is not a number of seconds"),
    ("sleep 1 2", "sleep: unexpected argument '2'"),
    ("crash boom", "crash: unexpected argument 'boom'"),
    ("kill abc", "kill: abc: not a process id"),
    ("fstest -x", "fstest: unexpected argument '-x'"),
    ("tok LLAMA bogus", "tok: unknown command 'bogus'"),
    ("tok LLAMA info extra", "tok: unexpected argument 'extra'"),
    ("aitest LLAMA extra", "aitest: unexpected argument 'extra'"),
    ("aictl aging 0", "aictl: bad argument '0'"),
    ("aictl harts 0", "aictl: bad argument '0'"),
    ("aictl max_batch 17", "aictl: bad argument '17'"),
    ("aictl harts 9", "aictl: harts 9: "),
    ("aihol --model LLAMA --clients 0", "aihol: --clients: '0' is not a number"),
    ("aiprefix --model LLAMA --requests 0", "aiprefix: --requests: '0' is not a number"),
    ("aiprefix --model LLAMA --tail 3x", "aiprefix: --tail: '3x' is not a number"),
    ("aipreempt --model LLAMA --prompt abc", "aipreempt: --prompt: 'abc' is not a number"),
    ("aipreempt --model LLAMA --requests 1", "aipreempt: --requests: '1' is not a number from 2 to 8"),
    ("aipriority --model LLAMA --predict x", "aipriority: --predict: 'x' is not a number"),
    ("aipriority --model LLAMA --requests 99999999999", "aipriority: --requests: '99999999999' is not a number"),
    ("aipreempt --model ABCDEFGHIJKLMNOPQRSTUVWXYZ", "aipreempt: --model: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' is longer than 15"),
    ("aipriority --model ABCDEFGHIJKLMNOPQRSTUVWXYZ", "aipriority: --model: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' is longer than 15"),
    ("aibatch LLAMA --clients 0", "aibatch: --clients: '0' is not a number"),
    # one parser (user/lib/kai_options.h): the same words in every AI program
    ("aibench --model LLAMA --bogus", "aibench: unknown option --bogus"),
    ("aihol --model LLAMA extra", "aihol: unexpected argument 'extra'"),
    ("aipreempt --model LLAMA --requests", "aipreempt: --requests needs a value"),
    ("aibench --model ABCDEFGHIJKLMNOPQRSTUVWXYZ", "aibench: --model: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' is longer than 15"),
    ("lateness --load ABCDEFGHIJKLMNOPQRSTUVWXYZ", "lateness: --load: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' is longer than 15"),
    ("aisched LLAMA extra", "aisched: unexpected argument 'extra'"),
    ("aibatch LLAMA --speculate", "aibatch: --speculate needs a value"),
    ("ai --model LLAMA --speculate bogus 1", "ai: --speculate: 'bogus' is not ngram:K"),
    ("ai --model LLAMA --stream", "usage: ai [--model NAME]"),
    ("ai --model LLAMA --timing --regex", "ai: --regex needs a value"),
    ("chat --model LLAMA --bogus", "chat: unknown option --bogus"),
    ("chat --model LLAMA hello", "chat: unexpected argument 'hello'"),
    ("chat --model ABCDEFGHIJKLMNOPQRSTUVWXYZ", "chat: --model: 'ABCDEFGHIJKLMNOPQRSTUVWXYZ' is longer than 15"),
    ("chat --model LLAMA --predict", "chat: --predict needs a value"),
    ("chat --model LLAMA --predict 0", "chat: --predict: '0' is not a number from 1 to"),
    ("chat --model LLAMA --stop-eos", "chat: --stop-eos is always on"),
    ("chat --model LLAMA --regex a", "chat: unknown option --regex"),
    ("llmrun --asset-dir /AI/LLAMA --bogus 1", "llmrun: unknown option --bogus"),
    ("llmrun --asset-dir /AI/LLAMA --forks 0 1", "llmrun: --forks: '0' is not a number from 1 to 64"),
    ("llmrun --asset-dir /AI/LLAMA --context x 1", "llmrun: --context: 'x' is not a number from 1 to"),
    ("llmrun --asset-dir /AI/LLAMA --predict", "llmrun: --predict needs a value"),
    ("llmrun --asset-dir /AI/LLAMA --speculate bogus 1", "llmrun: --speculate: 'bogus' is not ngram:K"),
    # aitests (user/aitests): a topic by name, as /bin/aiprefix runs it
    ("aitests aiprefix --model LLAMA --requests 0", "aiprefix: --requests: '0' is not a number from 1 to 12"),
    ("aitests nosuch", "aitests: unknown topic 'nosuch'"),
    ("aistorm --model LLAMA --clients 0", "aistorm: --clients: '0' is not a number"),
    ("lateness --seconds 0", "lateness: --seconds: '0' is not a number from 1 to 3600"),
    ("perfbench --repeat 0", "perfbench: --repeat: '0' is not a number from 1 to 1000"),
    ("readbench /bin/ai 4096 0", "readbench: PASSES: '0' is not a number from 1 to 1000"),
    ("sysfuzz --calls abc", "sysfuzz: --calls: 'abc' is not a number"),
    ("fswrite_loop -n x", "fswrite_loop: -n: 'x' is not a number"),
    ("calib --iterations 0", "calib: --iterations 0"),
    ("calib --harts 9", "calib: --harts 9"),
    ("perfbench --case decode@17", "perfbench: --case: 'decode@17' is not decode@B (B = 1..16) or prefill@N"),
    ("perfbench --case warm@1", "perfbench: --case: 'warm@1' is not decode@B"),
    ("opcost --passes 0", "opcost: --passes 0"),
    ("opcost --passes", "opcost: unknown argument --passes"),
    ("opcost fcvt", "opcost: unknown argument fcvt"),
])
def test_every_program_names_the_bad_argument(session, cmd, needle):
    refused(session, cmd, needle)


def test_calib_on_two_harts_does_the_same_work_and_reports_the_slowest(session):
    one = run_in_session(session, "calib --iterations 200000")
    two = run_in_session(session, "calib --iterations 200000 --harts 2 && echo EXIT-ZERO")
    m1 = re.search(r"calib: 200000 iterations in \d+ us \(checksum (-?\d+)\)", one)
    m2 = re.search(r"calib: 200000 iterations in \d+ us \(checksum (-?\d+), slowest of 2\)", two)
    assert m1 and m2, (one, two)
    assert m1.group(1) == m2.group(1)
    assert "EXIT-ZERO" in two


# The rows opcost must print: each kind of instruction docs/runtime.md's
# table of costs names.
OPCOST_ROWS = ["add", "mul", "lw", "bnez", "fsgnjx.s", "fadd.s", "fmul.s", "fmadd.s", "fdiv.s", "fadd.d", "fmul.d", "fmadd.d",
               "flt.s", "fcvt.d.s", "fcvt.s.w", "fcvt.s.l", "fcvt.s.d", "fcvt.w.s", "fcvt.l.d",
               "float_of_double", "int_of_double"]


def test_opcost_times_every_kind_of_instruction_against_an_add(session):
    out = run_in_session(session, "opcost --passes 2000 && echo EXIT-ZERO")
    assert "opcost: ns per instruction, fastest of 3 runs of 2000 passes x 32 copies (real time)" in out, out
    rows = dict(re.findall(r"^(\S+) +\d+\.\d\d ns +(\d+\.\d)x add ", out, re.M))
    assert list(rows) == OPCOST_ROWS, out
    assert rows["add"] == "1.0", out
    assert "EXIT-ZERO" in out


def test_perfbench_runs_one_case_and_samples_only_its_timed_passes(session):
    """--case runs that case alone; --profile turns the trace's timer samples
    on for each timed pass and off after it, so the request after perfbench
    adds no event."""
    run_in_session(session, "aitrace stop")
    run_in_session(session, "aitrace clear")
    out = run_in_session(session, "perfbench --asset-dir /AI/LLAMA --case decode@2 --repeat 3 --profile", timeout=120)
    assert re.findall(r"^perf case=(\w+) batch=(\d+) ", out, re.M) == [("decode", "2")], out
    run_in_session(session, "ai --model LLAMA --predict 2 5 6", timeout=120)
    text = run_in_session(session, "aitrace")
    names = re.findall(r"^ev \d+ \d+ \d+ \d+ (\w+)", text, re.M)
    assert set(names) <= {"STARTED", "SAMPLE"}, text
    assert re.findall(r"STARTED capacity=\d+ classes=(\S+)", text) == ["64"] * 3, text


def test_without_a_model_name_the_first_ready_model_is_used(session):
    """BAD failed to load and comes first under /AI: programs that take any
    model must use LLAMA, not report BAD's failure."""
    out = run_in_session(session, "aibench --clients 1 --requests 1 --predict 2", timeout=120)
    assert "aibench: model LLAMA" in out and "requests: 1 done" in out, out
    out = run_in_session(session, "ai --predict 2 5 6", timeout=120)
    assert "model LLAMA:" in out, out


@pytest.mark.parametrize("cmd,usage", [
    ("ai --help", "usage: ai [--model NAME] [--predict N]"),
    ("chat -h", "usage: chat [--model NAME] [--system TEXT]"),
    ("llmrun --help", "usage: llmrun [--asset-dir D] [--predict N]"),
    ("llmrun_smol --help", "usage: llmrun [--asset-dir D] [--predict N]"),
])
def test_help_prints_the_usage_on_standard_output_and_exits_zero(session, cmd, usage):
    """--help and -h (user/lib/option_parser.h): the usage on standard output
    (the file below gets it, the console nothing) and exit status 0, before
    anything reaches the service."""
    before = counters(session)
    out = run_in_session(session, f"{cmd} > /help.txt && echo EXIT-ZERO")
    assert out.strip() == "EXIT-ZERO", out
    text = run_in_session(session, "cat /help.txt")
    assert text.startswith(usage), text
    assert counters(session) == before


def test_llmrun_smol_and_llmrun_qwen_are_llmrun_itself(session):
    """One program under three names (Makefile, LLMRUN_LINKS: hard links that
    the image keeps as one inode), not three copies of it."""
    out = run_in_session(session, "ls /bin/llmrun /bin/llmrun_smol /bin/llmrun_qwen /bin/ai")
    files = {name: (int(ino), int(size)) for kind, ino, size, name in
             (line.split() for line in out.splitlines() if line.startswith("file "))}
    assert set(files) == {"/bin/llmrun", "/bin/llmrun_smol", "/bin/llmrun_qwen", "/bin/ai"}, out
    assert files["/bin/llmrun_smol"] == files["/bin/llmrun_qwen"] == files["/bin/llmrun"], out
    assert files["/bin/ai"][0] != files["/bin/llmrun"][0], out
