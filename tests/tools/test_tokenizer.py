"""tools/tokenizer.py and tools/translate_llm_io.py against the real tokenizers in
the real-model directory (KAI_SHARED_MODELS, models/README.md)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import tokenizer as T  # noqa: E402

PY = "/usr/bin/python3"
SHARED = os.environ.get("KAI_SHARED_MODELS", os.path.join(ROOT, "..", "shared", "models"))
SMOL_TOK = os.path.join(SHARED, "smollm2-tokenizer", "tokenizer.json")
TOK512 = os.path.join(SHARED, "stories260K", "tok512.bin")
TOK105 = os.path.join(SHARED, "babyllama-tok105", "tok105.bin")


def need(path):
    if not os.path.exists(path):
        pytest.skip(f"{path} not found (set KAI_SHARED_MODELS to the shared models directory)")


@pytest.fixture(scope="module")
def smol():
    need(SMOL_TOK)
    return T.load(SMOL_TOK)


@pytest.fixture(scope="module")
def tok512():
    need(TOK512)
    return T.load(TOK512)


def test_smol_known_encoding(smol):
    assert smol.encode("The capital of France is") == [504, 3575, 282, 4649, 314]
    assert smol.decode([504, 3575, 282, 4649, 314]) == "The capital of France is"


def test_smol_digits_are_single_tokens(smol):
    ids = smol.encode("In 2024")
    pieces = [smol.decode([i]) for i in ids]
    assert pieces[-4:] == ["2", "0", "2", "4"]
    assert "".join(pieces) == "In 2024"


def test_smol_special_tokens(smol):
    ids = smol.encode("<|im_start|>user\nHi<|im_end|>")
    assert ids[0] == 1 and ids[-1] == 2
    assert smol.decode(ids) == "<|im_start|>user\nHi<|im_end|>"
    assert smol.decode(ids, skip_special=True) == "user\nHi"


@pytest.mark.parametrize("text", [
    "Once upon a time, there was a little girl named Lily.",
    "I'll say it's   spaced\tout\n\nand   done  ",
    "café naïve 東京 emoji 🙂 x²+y²",
    "def f(x):\n    return x**2  # comment",
    "$3.50, 1,000,000 and 12:45!",
])
def test_smol_round_trip(smol, text):
    ids = smol.encode(text)
    assert all(0 <= i < 49152 for i in ids)
    assert smol.decode(ids) == text


def test_smol_contractions_and_spaces_split_like_gpt2(smol):
    # "'ll" is its own piece and trailing spaces keep the last one for the next word
    ids = smol.encode("we'll  go")
    pieces = [smol.decode([i]) for i in ids]
    assert "'ll" in pieces
    assert pieces[-1] == " go"


def test_llama2c_known_encoding(tok512):
    ids = tok512.encode("Once upon a time")
    assert ids == [403, 407, 261, 378]
    assert tok512.encode("Once upon a time", bos=True) == [1, 403, 407, 261, 378]
    assert tok512.decode([1] + ids) == "Once upon a time"


@pytest.mark.parametrize("text", [
    "Once upon a time, there was a little girl named Lily.",
    "She said: \"Wow!\" and ran away.",
    "Zebras, émigrés and 🙂 need byte fallback",
])
def test_llama2c_round_trip(tok512, text):
    ids = tok512.encode(text)
    assert all(0 <= i < 512 for i in ids)
    assert tok512.decode(ids) == text


def test_llama2c_byte_fallback(tok512):
    ids = tok512.encode("\U0001F642")
    # ' ' dummy prefix then the four UTF-8 bytes as <0xF0> <0x9F> <0x99> <0x82> (ids 3 + byte)
    assert ids[-4:] == [3 + b for b in "\U0001F642".encode()]
    assert tok512.decode(ids) == "\U0001F642"


def test_char_level_llama2c_tokenizer():
    need(TOK105)
    tok = T.load(TOK105)
    text = "once upon a time there was a cat"
    ids = tok.encode(text)
    assert tok.decode(ids) == text


def test_cli_encode_decode():
    need(SMOL_TOK)
    out = subprocess.run([PY, os.path.join(ROOT, "tools", "tokenizer.py"), "encode", "--tokenizer",
                          SMOL_TOK, "--text", "The capital of France is"],
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["504", "3575", "282", "4649", "314"]
    out = subprocess.run([PY, os.path.join(ROOT, "tools", "tokenizer.py"), "decode", "--tokenizer",
                          SMOL_TOK, "--tokens", "504 3575 282 4649 314"],
                         capture_output=True, text=True, check=True).stdout
    assert out == "The capital of France is\n"


def test_translate_llm_io_course_spelling():
    need(SMOL_TOK)
    need(TOK512)
    tool = os.path.join(ROOT, "tools", "translate_llm_io.py")
    env = dict(os.environ, KAI_SHARED_MODELS=SHARED)
    out = subprocess.run([PY, tool, "encode", "--model", "smol", "--text", "The capital of France is"],
                         capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == ["504", "3575", "282", "4649", "314"]
    out = subprocess.run([PY, tool, "decode", "--model", "stories", "--tokens", "1 403 407 261 378"],
                         capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == "Once upon a time"
    r = subprocess.run([PY, tool, "encode", "--model", "qwen", "--text", "hi",
                        "--tokenizer", "/nonexistent/tokenizer.json"],
                       capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "tokenizer" in r.stderr


QWEN_STYLE_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
                    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def test_split_regex_pretokenizer_like_qwen(tmp_path):
    """A Qwen-style tokenizer.json (NFC, Split regex with \\p{..} classes, ByteLevel
    without regex): pieces split as the regex says, merges apply inside pieces only."""
    b2u = T.bytes_to_unicode()
    alphabet = sorted(set(b2u.values()))
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    merges = [("Ġ", "t"), ("Ġt", "h"), ("Ġth", "e"), ("'", "S")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    j = {"model": {"type": "BPE", "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
         "added_tokens": [{"id": len(vocab), "content": "<|im_end|>", "special": True}],
         "normalizer": {"type": "NFC"},
         "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
             {"type": "Split", "pattern": {"Regex": QWEN_STYLE_SPLIT}, "behavior": "Isolated",
              "invert": False},
             {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}}
    p = tmp_path / "tokenizer.json"
    p.write_text(__import__("json").dumps(j))
    tok = T.load(str(p))
    raw = "IT'S the 123 e\u0301t\u00e9!!\n\n  x"
    pieces = [tok.decode(tok._bpe(x)) for x in tok._pretokenize(tok._normalize(raw))]
    # exact pieces: letters with an optional leading non-letter, digits one by one
    assert pieces[:4] == ["IT", "'S", " the", " "]
    assert pieces[4:7] == ["1", "2", "3"]
    assert pieces[7:] == [" \u00e9t\u00e9", "!!\n\n", " ", " x"]   # NFC joined e + combining acute
    text = "IT'S the 123 \u00e9t\u00e9!!\n\n  x<|im_end|>"
    ids = tok.encode(text)
    assert ids[-1] == len(vocab)
    assert vocab["Ġthe"] in ids and vocab["'S"] in ids
    assert tok.decode(ids) == text
