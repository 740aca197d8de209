"""Text on the image a fresh clone builds (build/fs-smol.img: the synthetic
SmolLM2-shape SMOL bundle with kai's own tokenizer, tools/make_tokenizer.py):
`ai --text`, `llmrun --text` and `chat` run without error and print text,
and `--stop-text` stops exactly where `--stop` with the text's ids would.

What the output is compared with: the same request sent as token ids, its
ids decoded on the host by tools/tokenizer.py from the tokenizer.json the
bundle's TOK.BIN was written from (checked byte for byte here), an
implementation independent of the guest's lib/llm_tokenizer.cpp. The weights
are random, so the text is noise; that it is the right noise is the point."""
import os
import re
import sys

import pytest

from kai_boot import KERNEL, ROOT, qemu_run, run_in_session

sys.path.insert(0, os.path.join(ROOT, "tools"))
import tokbin  # noqa: E402
import tokenizer as T  # noqa: E402

SMOL_IMG = os.path.join(ROOT, "build", "fs-smol.img")
SMOL_TOK = os.path.join(ROOT, "build", "assets", "SMOL", "TOK.BIN")
KAI_BPE = os.path.join(ROOT, "build", "tokenizer", "kai-bpe", "tokenizer.json")
PROMPT = "Once upon a time"
PREDICT = 6


@pytest.fixture(scope="module")
def smol():
    for path in (SMOL_IMG, KERNEL, KAI_BPE):
        if not os.path.exists(path):
            pytest.skip(f"{path} not built: run `make all build/fs-smol.img`")
    if not os.path.exists(SMOL_TOK):
        pytest.skip(f"{SMOL_TOK} missing: build/assets/SMOL is not the synthetic bundle (a course zip?)")
    # The host's reference is the tokenizer the image's TOK.BIN was made from.
    with open(SMOL_TOK, "rb") as f:
        assert f.read() == tokbin.pack(tokbin.describe(KAI_BPE)), "TOK.BIN is not from kai-bpe/tokenizer.json"
    tok = T.load(KAI_BPE)
    with qemu_run.Session(SMOL_IMG, KERNEL, smp=2, memory="1G", snapshot=True, boot_timeout=180) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model SMOL ready", timeout=300), s.transcript[-3000:]
        s.tok = tok
        # The reference answer: the same request as token ids, greedy, stopping at EOS as --text does.
        prompt = " ".join(map(str, tok.encode(PROMPT)))
        s.warm_ids = ids_line(output(s, f"ai --int8 --stop-eos --predict {PREDICT} {prompt}"))
        assert 1 <= len(s.warm_ids) <= PREDICT
        yield s
        s.halt()


def output(s, cmd, timeout=600):
    out = run_in_session(s, f"{cmd} || echo EXIT-NONZERO", timeout).replace("\r\n", "\n")
    assert "EXIT-NONZERO" not in out, out
    return out


def ids_line(out):
    m = re.search(r"^(\d+(?: \d+)*)$", out, re.M)
    assert m, out
    return [int(x) for x in m.group(1).split()]


def test_ai_text_prints_the_decoded_answer(smol):
    out = output(smol, f'ai --int8 --predict {PREDICT} --text "{PROMPT}"')
    assert out.startswith(PROMPT + smol.tok.decode(smol.warm_ids) + "\n"), (out, smol.warm_ids)
    assert "model SMOL: queue wait" in out and "ai:" not in out, out


def test_llmrun_text_gives_the_same_text(smol):
    out = output(smol, f'llmrun --asset-dir /AI/SMOL --int8 --predict {PREDICT} --text "{PROMPT}"')
    assert out.startswith(PROMPT + smol.tok.decode(smol.warm_ids) + "\n"), out


def test_stop_text_stops_like_stop_ids(smol):
    ids = smol.warm_ids
    # A later token of the answer whose text is plain and encodes back to that one id.
    k = next((k for k in range(1, len(ids)) if ids[k] not in ids[:k]
              and re.fullmatch(r" ?[A-Za-z]+", smol.tok.decode([ids[k]]))
              and smol.tok.encode(smol.tok.decode([ids[k]])) == [ids[k]]), None)
    if k is None:
        pytest.skip(f"no plain-text token after the first in {ids}")
    stop = smol.tok.decode([ids[k]])
    prompt = " ".join(map(str, smol.tok.encode(PROMPT)))
    for cmd in (f'ai --int8 --timing --predict {PREDICT} --stop-text "{stop}" {prompt}',
                f'llmrun --asset-dir /AI/SMOL --int8 --timing --predict {PREDICT} --stop-text "{stop}" {prompt}'):
        out = output(smol, cmd)
        assert ids_line(out) == ids[:k + 1], (cmd, out)
        assert "finish=stop" in out, out
        by_ids = output(smol, cmd.replace(f'--stop-text "{stop}"', f"--stop {ids[k]}"))
        assert ids_line(by_ids) == ids[:k + 1] and "finish=stop" in by_ids, by_ids
    out = output(smol, f'ai --int8 --predict {PREDICT} --text "{PROMPT}" --stop-text "{stop}"')
    assert out.startswith(PROMPT + smol.tok.decode(ids[:k + 1]) + "\n"), out


def test_chat_answers_on_the_default_image(smol):
    out = output(smol, "echo Hello! | chat --model SMOL --int8 --predict 4")
    assert "chat: model SMOL, template chatml" in out, out
    answer = re.search(r"^> (.+)$", out, re.M)
    assert answer and answer.group(1).strip(), out


def test_ai_help_states_what_text_implies(smol):
    out = output(smol, "ai --help")
    assert "--text implies --stream and --stop-eos" in out and "--stop-text" in out, out
