"""TOK.BIN (tools/tokbin.py) and the runtime's tokenizer (lib/llm_tokenizer.cpp,
run through build/host/toktool) against tools/tokenizer.py on the real tokenizers
in the real-model directory (KAI_SHARED_MODELS, models/README.md): the expected ids and texts come from
tools/tokenizer.py at test time, never from the code under test."""
import json
import os
import random
import struct
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import tokbin  # noqa: E402
import tokenizer as T  # noqa: E402

SHARED = os.environ.get("KAI_SHARED_MODELS", os.path.join(ROOT, "..", "shared", "models"))
SOURCES = {
    "smol": os.path.join(SHARED, "smollm2-tokenizer", "tokenizer.json"),
    "tok512": os.path.join(SHARED, "stories260K", "tok512.bin"),
    "tok105": os.path.join(SHARED, "babyllama-tok105", "tok105.bin"),
}
TOKTOOL = os.path.join(ROOT, "build", "host", "toktool")

CORPUS = [
    "The capital of France is",
    "Once upon a time, there was a little girl named Lily.",
    "I'll say it's   spaced\tout\n\nand   done  ",
    "   leading spaces and trailing   ",
    "\n\n\nnewlines\r\nand CRLF\n",
    "café naïve 東京 emoji 🙂 x²+y² ½ Ⅻ",
    "日本語のテキストと中文混合。한국어도!",
    "👩‍👩‍👧 family, flags 🇫🇷🇩🇪 and ZWJ",
    "In 2024, 1,000,000 people paid $3.50 at 12:45; ٣٤٥ and ５６",
    "def f(x):\n    return x**2  # comment\n",
    "We'LL see: 'tis 're 's 've 'm 'd ''",
    "<|im_start|>user\nHi<|im_end|>\n<|endoftext|>",
    "Zebras, émigrés and Ωmega need byte fallback",
    "?!'s ... --- ***",
    "",
    " ",
    "a",
]


@pytest.fixture(scope="module")
def toktool():
    r = subprocess.run(["make", "-s", "build/host/toktool"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return TOKTOOL


def source(name):
    path = SOURCES[name]
    if not os.path.exists(path):
        pytest.skip(f"{path} not found (set KAI_SHARED_MODELS to the shared models directory)")
    return path


@pytest.fixture(scope="module", params=sorted(SOURCES))
def pair(request, tmp_path_factory):
    """(name, tools/tokenizer.py tokenizer, TOK.BIN path)."""
    path = source(request.param)
    out = tmp_path_factory.mktemp(request.param) / "TOK.BIN"
    tokbin.write_tokbin(path, str(out))
    return request.param, T.load(path), str(out)


def run(tool, *args, stdin=None):
    r = subprocess.run([tool, *args], input=stdin, capture_output=True)
    return r.returncode, r.stdout, r.stderr.decode()


def encodable(tok, text):
    try:
        return tok.encode(text)
    except ValueError:
        return None


def test_encode_agrees_with_host_tokenizer(toktool, pair):
    name, tok, path = pair
    checked = 0
    for text in CORPUS:
        want = encodable(tok, text)
        rc, out, err = run(toktool, path, "encode", "-", stdin=text.encode())
        if want is None:   # e.g. tok105 has no byte fallback: both must refuse
            assert rc == 1 and "no token for byte" in err, (text, out)
            continue
        assert rc == 0, (text, err)
        assert [int(x) for x in out.split()] == want, text
        checked += 1
    assert checked >= 5


def test_decode_agrees_with_host_tokenizer(toktool, pair):
    name, tok, path = pair
    for text in CORPUS:
        ids = encodable(tok, text)
        if not ids:
            continue
        rc, out, err = run(toktool, path, "decode", *map(str, ids))
        assert rc == 0, err
        assert out[:-1].decode() == tok.decode(ids), text


def test_known_encodings(toktool):
    smol = tokbin.write_tokbin(source("smol"), "/dev/null")
    assert smol["eos"] == [0]                      # tokenizer_config.json: eos_token <|endoftext|>
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "TOK.BIN")
        tokbin.write_tokbin(source("smol"), p)
        assert run(toktool, p, "encode", "The capital of France is")[1].split() == \
            b"504 3575 282 4649 314".split()
        assert run(toktool, p, "info")[1].decode().strip() == "kind 1 vocab 49152 bos -1 adds_bos 0 eos 0"
        tokbin.write_tokbin(source("tok512"), p)
        assert run(toktool, p, "prompt", "Once upon a time")[1].split() == b"1 403 407 261 378".split()
        assert run(toktool, p, "info")[1].decode().strip() == "kind 2 vocab 512 bos 1 adds_bos 1 eos 2"


@pytest.mark.parametrize("name", ["smol", "tok512"])     # tok105 has no byte tokens
def test_random_bytes_decode_like_python_replace(toktool, tmp_path, name):
    """Byte tokens in random order: ill-formed UTF-8 must become U+FFFD exactly
    as bytes.decode('utf-8', 'replace') does, whole and streamed."""
    tok = T.load(source(name))
    path = str(tmp_path / "TOK.BIN")
    tokbin.write_tokbin(source(name), path)
    if name == "smol":
        byte_tok = {b: tok.vocab[tok.b2u[b]] for b in range(256) if tok.b2u[b] in tok.vocab}
    else:
        byte_tok = dict(tok.byte_ids)
    rng = random.Random(15)
    pool = sorted(byte_tok)
    heavy = [b for b in pool if b >= 0x80]
    for _ in range(40):
        bs = bytes(rng.choice(heavy if rng.random() < 0.7 else pool) for _ in range(rng.randint(1, 12)))
        ids = [byte_tok[b] for b in bs]
        rc, out, err = run(toktool, path, "decode", *map(str, ids))
        assert rc == 0, err
        want = tok.decode(ids)
        assert out[:-1].decode() == want, bs.hex()
        rc, out, err = run(toktool, path, "stream", *map(str, ids))
        chunks = [bytes.fromhex(x) for x in out.decode().split("\n")[:-1]]
        assert len(chunks) == len(ids) + 1
        assert b"".join(chunks).decode() == want, bs.hex()


def test_stream_holds_split_characters(toktool):
    """Byte-level BPE splits an emoji over tokens: each streamed chunk is whole
    UTF-8 (nothing, or complete characters), and they add up to the text."""
    path = source("smol")
    tok = T.load(path)
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "TOK.BIN")
        tokbin.write_tokbin(path, p)
        text = "Smile 🙂 and 東京 👩‍👩‍👧!"
        ids = tok.encode(text)
        rc, out, err = run(toktool, p, "stream", *map(str, ids))
        assert rc == 0, err
        chunks = [bytes.fromhex(x) for x in out.decode().split("\n")[:-1]]
        for c in chunks:
            c.decode("utf-8")              # raises on a split character
        assert b"".join(chunks).decode() == text
        assert b"" in chunks[:-1]          # some token was held back: the split really happened


def test_runtime_rejects_bad_files_by_field(toktool, tmp_path):
    good = tmp_path / "good.bin"
    tokbin.write_tokbin(source("tok512"), str(good))
    data = bytearray(good.read_bytes())

    def err_of(mut):
        p = tmp_path / "bad.bin"
        p.write_bytes(bytes(mut))
        rc, out, err = run(toktool, str(p), "info")
        assert rc == 1
        return err

    m = bytearray(data); m[0] ^= 1
    assert "TOK.BIN: magic=" in err_of(m)
    m = bytearray(data); struct.pack_into("<I", m, 20, 0)
    assert "TOK.BIN: vocab_size=0" in err_of(m)
    m = bytearray(data); struct.pack_into("<I", m, 32, 600)
    assert "TOK.BIN: eos[0] out of range" in err_of(m)
    assert "TOK.BIN: size" in err_of(data[:-4])
    hdr = tokbin.read_header(data)
    n = hdr["vocab_size"]
    sorted_at = 128 + 4 * (n + 1) + n + 4 * n      # offsets, flags, scores
    m = bytearray(data); m[sorted_at:sorted_at + 8] = m[sorted_at + 4:sorted_at + 8] + m[sorted_at:sorted_at + 4]
    assert "TOK.BIN: sorted_ids[1] out of order" in err_of(m)


def test_writer_reads_eos_from_config_and_refuses_unsupported(tmp_path):
    path = source("smol")
    j = json.load(open(path, encoding="utf-8"))
    (tmp_path / "tokenizer.json").write_text(json.dumps(j))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 0]}))
    d = tokbin.write_tokbin(str(tmp_path / "tokenizer.json"), str(tmp_path / "TOK.BIN"))
    assert d["eos"] == [2, 0]
    hdr = tokbin.read_header((tmp_path / "TOK.BIN").read_bytes())
    assert (hdr["n_eos"], hdr["eos0"], hdr["eos1"]) == (2, 2, 0)
    j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581"}
    (tmp_path / "tokenizer.json").write_text(json.dumps(j))
    with pytest.raises(tokbin.TokBinError, match="pre-tokenizer Metaspace"):
        tokbin.write_tokbin(str(tmp_path / "tokenizer.json"), str(tmp_path / "TOK.BIN"))
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "tokbin.py"), "write",
                        "--tokenizer", str(tmp_path / "tokenizer.json"), "--out", str(tmp_path / "x")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "tokbin: error: pre-tokenizer Metaspace" in r.stderr


# ---------------------------------------------------------------- split rules on synthetic vocabularies

GPT2_SEQ = [{"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}]
SPLIT_CORPUS = [
    "IT'S the 123 e\u0301te\u0301!! we'LL  go\n\n  x",
    "(hello) [world]\t\tfoo  \r\n\r\n  end  ",
    "a  \n  x\n\n\nb...\n\nfoo $3.50!!\r\n",
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u092d\u093e\u0937\u093e and \u0301\u0301x",
    "x\u00b2+y\u00b2 \u00bd \u216b \u0663\u0664 \uff15",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \U0001F642\U0001F642 ok",
    "it'\u017f it'S 'Ve 'rE '' '",
    "  ", "\t\n", "a", " 1", "\n",
]


def chained_tokenizer(tmp_path, pre_tokenizer):
    """A byte-level tokenizer.json whose merges spell out every piece the host
    pre-tokenizer makes of SPLIT_CORPUS, so each correctly split piece is one
    token and any other split gives different ids."""
    b2u = T.bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    j = {"model": {"type": "BPE", "vocab": vocab, "merges": []}, "added_tokens": [],
         "normalizer": None, "pre_tokenizer": {"type": "Sequence", "pretokenizers": pre_tokenizer}}
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(j))
    tok = T.load(str(p))
    merges = []
    for text in SPLIT_CORPUS:
        for piece in tok._pretokenize(text):
            for k in range(1, len(piece)):
                if piece[:k + 1] not in vocab:
                    vocab[piece[:k + 1]] = len(vocab)
                    merges.append(f"{piece[:k]} {piece[k]}")
    j["model"]["merges"] = merges
    p.write_text(json.dumps(j))
    return T.load(str(p)), str(p)


@pytest.mark.parametrize("rule,pre", [
    ("gpt2", GPT2_SEQ),
    ("qwen2", [{"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
               for r, v in tokbin.KNOWN_SPLITS.items() if v == tokbin.SPLIT_QWEN2] +
     [{"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]),
    ("qwen35", [{"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
                for r, v in tokbin.KNOWN_SPLITS.items() if v == tokbin.SPLIT_QWEN35] +
     [{"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]),
])
def test_split_rules_agree_piece_for_piece(toktool, tmp_path, rule, pre):
    tok, path = chained_tokenizer(tmp_path, pre)
    out = tmp_path / "TOK.BIN"
    d = tokbin.write_tokbin(path, str(out))
    assert d["split_rule"] == {"gpt2": 1, "qwen2": 2, "qwen35": 3}[rule]
    pieces = tokens = 0
    for text in SPLIT_CORPUS:
        want = tok.encode(text)
        pieces += len(tok._pretokenize(text))
        tokens += len(want)
        rc, got, err = run(toktool, str(out), "encode", "-", stdin=text.encode())
        assert rc == 0, err
        assert [int(x) for x in got.split()] == want, (rule, text)
        rc, got, err = run(toktool, str(out), "decode", *map(str, want))
        assert got[:-1].decode() == text
    # most pieces are one token (merges from other pieces can cut a chain), so
    # the ids show where the host split: a different split gives other ids
    assert tokens <= 1.5 * pieces, (tokens, pieces)


def random_text(rng):
    """Mixed scripts, digits, spaces, punctuation, contractions and emoji."""
    pools = ["abcXYZ", "0123456789", "  ", "\t\n\r", ".,!?'\"()-$%", "éüßñ", "東京日本語",
             "\u0939\u093f\u0928\u094d", "\U0001F642\U0001F680", "\u00b2\u00bd\u0663", "'s'll'VE"]
    return "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 40)))


@pytest.mark.parametrize("name", ["smol", "tok512"])
def test_random_texts_agree(toktool, tmp_path, name):
    tok = T.load(source(name))
    path = str(tmp_path / "TOK.BIN")
    tokbin.write_tokbin(source(name), path)
    rng = random.Random(1515)
    texts = [random_text(rng) for _ in range(60)]
    for text in texts:
        rc, out, err = run(toktool, path, "encode", "-", stdin=text.encode())
        assert rc == 0, (text, err)
        assert [int(x) for x in out.split()] == tok.encode(text), repr(text)
