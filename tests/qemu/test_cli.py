"""Command lines: the console keeps a 2 KiB line sent in one write whole, the
shell and exec take 260 arguments (a 255-token prompt with options fits),
and `ai` rejects bad numbers naming the argument and the value, with a
non-zero exit status, before it sends anything to the kernel."""
import os
import re

import pytest

from kai_boot import KERNEL, ROOT, make_image, need_built, need_model, programs, qemu_run, run_in_session

WORK = os.path.join(ROOT, "build", "test-cli")


@pytest.fixture(scope="module")
def session():
    need_built("ai")
    llama = need_model("tiny-llama")
    os.makedirs(WORK, exist_ok=True)
    img = make_image(os.path.join(WORK, "cli.img"), programs("init", "sh", "ai", "echo", "wc", "halt"),
                     [("AI/LLAMA", llama)])
    with qemu_run.Session(img, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=180) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model LLAMA (ready|failed)", timeout=120)
        yield s
        s.halt()


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
    out = run_in_session(session, f"{cmd} || echo EXIT-NONZERO")
    assert needle in out, out
    assert "EXIT-NONZERO" in out, out
    assert not re.search(r"^\d+( \d+)*$", out, re.M), out   # nothing was generated
