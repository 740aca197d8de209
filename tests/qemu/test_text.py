"""Text in the guest: `tok` (user/bin/tok.cpp, through user/lib/kai_text and
lib/llm_tokenizer) loads a bundle's TOK.BIN from kai's file system, encodes
exactly as tools/tokenizer.py does on the host and round-trips text, for the
stories260K bundle (llama2.c scores) and the SmolLM2 tokenizer (byte-level
BPE). Expected ids come from tools/tokenizer.py at test time, and for the
SmolLM2 tokenizer also from Hugging Face's own JavaScript tokenizers
(tests/data/tokenizer_ids/pinned.json), an implementation kai did not write.
A bundle without TOK.BIN is refused with a message that says so."""
import json
import os
import re
import sys

import pytest

from kai_boot import KERNEL, MODELS, ROOT, make_image, need_built, need_model, programs, qemu_run, run_in_session

sys.path.insert(0, os.path.join(ROOT, "tools"))
import tokbin  # noqa: E402
import tokenizer as T  # noqa: E402

STORIES = os.path.join(MODELS, "stories260K")
WORK = os.path.join(ROOT, "build", "test-text")
SHARED = os.environ.get("KAI_SHARED_MODELS", os.path.join(ROOT, "..", "shared", "models"))
TOK512 = os.path.join(SHARED, "stories260K", "tok512.bin")
SMOL_JSON = os.path.join(SHARED, "smollm2-tokenizer", "tokenizer.json")
PINNED = os.path.join(ROOT, "tests", "data", "tokenizer_ids", "pinned.json")

CORPUS = [
    "Once upon a time, there was a little girl named Lily.",
    "  runs   of spaces\tand\nnew\n\nlines  ",
    "café 東京 🙂 x²",
    "In 2024 we paid $3.50 for 12 eggs",
    "Zebras\u00e9 and \U0001F642 fall back to bytes",
]


@pytest.fixture(scope="module")
def session():
    need_built("tok")
    llama = need_model("tiny-llama")
    if not os.path.exists(os.path.join(STORIES, "TOK.BIN")) or not os.path.exists(TOK512):
        pytest.skip(f"{STORIES}/TOK.BIN or {TOK512} missing: run `make test-models` with KAI_SHARED_MODELS (models/README.md)")
    os.makedirs(WORK, exist_ok=True)
    dirs = [("AI/STORIES", STORIES), ("AI/LLAMA", llama)]
    if os.path.exists(SMOL_JSON):   # only the tokenizer, outside /AI: no model is loaded for it
        smol_dir = os.path.join(WORK, "smoltok")
        os.makedirs(smol_dir, exist_ok=True)
        tokbin.write_tokbin(SMOL_JSON, os.path.join(smol_dir, "TOK.BIN"))
        dirs.append(("tok/smol", smol_dir))
    img = make_image(os.path.join(WORK, "text.img"), programs("init", "sh", "tok", "echo", "halt"), dirs)
    with qemu_run.Session(img, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=180) as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model LLAMA (ready|failed)", timeout=120)
        assert s.wait_log(r"ai: model STORIES (ready|failed)", timeout=120)
        s.has_smol = len(dirs) == 3
        yield s
        s.halt()


def output_of(s, cmd):
    return run_in_session(s, cmd).replace("\r\n", "\n")


def ids_of(out):
    lines = [ln for ln in out.splitlines() if re.fullmatch(r"\d+( \d+)*", ln.strip())]
    assert len(lines) == 1, out
    return [int(x) for x in lines[0].split()]


def test_stories_info_and_known_prompt(session):
    assert output_of(session, "tok STORIES info").strip() == "kind 2 vocab 512 bos 1 adds_bos 1 eos 2"
    host = T.load(TOK512)
    assert ids_of(output_of(session, "tok STORIES encode Once upon a time")) == host.encode("Once upon a time")
    assert ids_of(output_of(session, "tok STORIES prompt Once upon a time")) == \
        host.encode("Once upon a time", bos=True)
    out = output_of(session, "tok STORIES decode " + " ".join(map(str, host.encode("Once upon a time", bos=True))))
    assert out.strip("\n") == "Once upon a time"


def check_corpus(session, model, host):
    for text in CORPUS:
        want = host.encode(text)
        got = ids_of(output_of(session, f"tok {model} encode -x {text.encode().hex()}"))
        assert got == want, text
        out = output_of(session, f"tok {model} decode -x " + " ".join(map(str, got))).strip()
        assert bytes.fromhex(out).decode() == host.decode(want) == text, text


def test_stories_corpus_matches_host_and_round_trips(session):
    check_corpus(session, "STORIES", T.load(TOK512))


def test_smol_corpus_matches_host_and_round_trips(session):
    if not session.has_smol:
        pytest.skip(f"{SMOL_JSON} not found (set KAI_SHARED_MODELS)")
    host = T.load(SMOL_JSON)
    assert ids_of(output_of(session, "tok /tok/smol encode The capital of France is")) == \
        [504, 3575, 282, 4649, 314]
    check_corpus(session, "/tok/smol", host)


def test_smol_gives_the_ids_of_an_independent_tokenizer(session):
    if not session.has_smol:
        pytest.skip(f"{SMOL_JSON} not found (set KAI_SHARED_MODELS)")
    with open(PINNED, encoding="utf-8") as f:
        pinned = next(t for t in json.load(f)["tokenizers"] if t["file"] == "smollm2-tokenizer/tokenizer.json")
    cases = [c for c in pinned["cases"] if c["text"]]   # `tok encode -x` needs at least one byte
    assert len(cases) >= 19
    for case in cases:
        got = ids_of(output_of(session, f"tok /tok/smol encode -x {case['text'].encode().hex()}"))
        assert got == case["ids"], f"{case['text']!r}: guest {got}, {pinned['by']} {case['ids']}"


def test_bundle_without_tokenizer_is_refused_clearly(session):
    out = output_of(session, "tok LLAMA encode hello || echo EXIT-NONZERO")
    assert "tok: LLAMA has no TOK.BIN (no tokenizer: use token ids)" in out
    assert "EXIT-NONZERO" in out
    out = output_of(session, "tok STORIES decode 1 512 || echo EXIT-NONZERO")
    assert "decode: token 512 >= vocab_size 512" in out and "EXIT-NONZERO" in out
