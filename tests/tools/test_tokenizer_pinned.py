"""kai's tokenizers against ids recorded from independent implementations
(tests/data/tokenizer_ids/pinned.json): Hugging Face's JavaScript tokenizers
for SmolLM2's byte-level BPE tokenizer.json, Google's SentencePiece for the
tok105 model. Both the Python tokenizer (tools/tokenizer.py) and the
runtime's (lib/llm_tokenizer.cpp through build/host/toktool, on a TOK.BIN
written by tools/tokbin.py) must give exactly those ids and decode them back
to the text. The other tokenizer tests compare kai's two tokenizers with each
other; this one is the outside anchor. pin.py in that directory says how the
ids were made."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import tokbin  # noqa: E402
import tokenizer as T  # noqa: E402

SHARED = os.environ.get("KAI_SHARED_MODELS", os.path.join(ROOT, "..", "shared", "models"))
PINNED = os.path.join(ROOT, "tests", "data", "tokenizer_ids", "pinned.json")
TOKTOOL = os.path.join(ROOT, "build", "host", "toktool")

with open(PINNED, encoding="utf-8") as f:
    DOC = json.load(f)
CASES = [(tok, case) for tok in DOC["tokenizers"] for case in tok["cases"]]


def case_id(tc):
    tok, case = tc
    return f"{os.path.basename(tok['file'])}:{case['text'][:24]!r}"


@pytest.fixture(scope="module")
def toktool():
    r = subprocess.run(["make", "-s", "build/host/toktool"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return TOKTOOL


_loaded = {}


def kai_tokenizer(tok, tmp_path_factory):
    """(tools/tokenizer.py tokenizer, TOK.BIN path) for the file kai reads:
    the tokenizer.json itself, or for SentencePiece its llama2.c export."""
    path = os.path.join(SHARED, tok.get("kai_file", tok["file"]))
    if not os.path.exists(path):
        pytest.skip(f"{path} not found (set KAI_SHARED_MODELS to the shared models directory)")
    if path not in _loaded:
        out = tmp_path_factory.mktemp("pinned") / "TOK.BIN"
        tokbin.write_tokbin(path, str(out))
        _loaded[path] = (T.load(path), str(out))
    return _loaded[path]


def test_corpus_covers_what_it_claims():
    """The pinned corpus is not a handful of English words: it holds the
    cases tokenizers get wrong (checked on the texts, so a shrunken corpus fails)."""
    bpe = [c["text"] for t, c in CASES if t["kind"] == "byte-level BPE"]
    sp = [c["text"] for t, c in CASES if t["kind"] == "SentencePiece"]
    joined = "".join(bpe)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in joined)            # CJK
    assert any(ord(ch) > 0xFFFF for ch in joined)                        # emoji (4-byte UTF-8)
    assert "\u0301" in joined                                           # a combining mark
    assert "2024" in joined and "3.14159" in joined                     # runs of digits
    assert "'ll" in joined.lower() and "'re" in joined.lower()          # contractions
    assert "   " in joined and "\t" in joined and "\r\n" in joined     # runs of spaces, tabs, CRLF
    assert "<|im_start|>" in joined and "" in bpe                       # specials, the empty text
    assert len(bpe) >= 20 and len(sp) >= 10
    assert any(c.get("kai_refuses") for t, c in CASES)                   # a character the model lacks


@pytest.mark.parametrize("tc", CASES, ids=[case_id(tc) for tc in CASES])
def test_python_tokenizer_gives_pinned_ids(tc, tmp_path_factory):
    tok, case = tc
    py, _ = kai_tokenizer(tok, tmp_path_factory)
    if case.get("kai_refuses"):
        with pytest.raises(ValueError):
            py.encode(case["text"])
        return
    text = case.get("kai_text", case["text"])
    assert py.encode(text) == case["ids"], f"{tok['by']} gives {case['ids']}"
    assert py.decode(case["ids"]) == text


@pytest.mark.parametrize("tc", CASES, ids=[case_id(tc) for tc in CASES])
def test_runtime_tokenizer_gives_pinned_ids(tc, toktool, tmp_path_factory):
    tok, case = tc
    _, tokbin_path = kai_tokenizer(tok, tmp_path_factory)
    text = case.get("kai_text", case["text"])
    r = subprocess.run([toktool, tokbin_path, "encode", "-"], input=text.encode(), capture_output=True)
    if case.get("kai_refuses"):
        assert r.returncode != 0 and b"no token for byte" in r.stderr, (r.stdout, r.stderr)
        return
    assert r.returncode == 0, r.stderr
    assert [int(x) for x in r.stdout.split()] == case["ids"], f"{tok['by']} gives {case['ids']}"
    if case["ids"]:
        r = subprocess.run([toktool, tokbin_path, "decode", *map(str, case["ids"])], capture_output=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.decode() == text + "\n"   # toktool ends the text with a newline
