"""tools/make_tokenizer.py: kai's own BPE tokenizer for the synthetic SMOL bundle.

What each check compares with:
- the merge learner against a deliberately naive learner written here (recount
  every pair after every merge) and a hand-computed case;
- the special tokens against SmolLM2-135M's published ids (written out below;
  also against its tokenizer.json when the real-model directory has it);
- round trips through two implementations: tools/tokenizer.py and the runtime's
  lib/llm_tokenizer.cpp (build/host/toktool on the TOK.BIN), which must also
  agree with each other id for id;
- determinism: two builds give the same bytes, and a different corpus does not.
"""
import json
import os
import random
import sys
from collections import Counter

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle as B  # noqa: E402
import make_model as M  # noqa: E402
import make_tokenizer as MT  # noqa: E402
import tokbin  # noqa: E402
import tokenizer as T  # noqa: E402
from test_tokbin import SHARED, run, toktool  # noqa: E402,F401  (toktool is a fixture)

# SmolLM2-135M's added tokens and their ids, from its published tokenizer.json.
SMOLLM2_SPECIALS = {0: "<|endoftext|>", 1: "<|im_start|>", 2: "<|im_end|>", 3: "<repo_name>",
                    4: "<reponame>", 5: "<file_sep>", 6: "<filename>", 7: "<gh_stars>", 8: "<issue_start>",
                    9: "<issue_comment>", 10: "<issue_closed>", 11: "<jupyter_start>", 12: "<jupyter_text>",
                    13: "<jupyter_code>", 14: "<jupyter_output>", 15: "<jupyter_script>", 16: "<empty_output>"}

TEXTS = [
    "Once upon a time",
    "The end.",
    "kai is a teaching OS; ai --text \"Once upon a time\" --stop-text \"The end\"",
    "  runs   of spaces\tand\nnew\n\nlines  \r\n",
    "café naïve 東京 🙂 x²+y² ½ Ⅻ 👩‍👩‍👧 🇫🇷",
    "In 2024, 1,000,000 people paid $3.50 at 12:45; ٣٤٥ and ５６",
    "\x00\x01\x7f control bytes and \u200b zero width",
    "<|im_start|>user\nHi<|im_end|>\n<|endoftext|>",
    "xqzjv wkpf: words the docs never used",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(tokenizer.json path, tools/tokenizer.py tokenizer, TOK.BIN path) of the default build."""
    d = tmp_path_factory.mktemp("kai-bpe")
    path, learnt = MT.write(str(d), MT.default_corpus())
    tb = str(d / "TOK.BIN")
    tokbin.write_tokbin(path, tb)
    return path, T.load(path), tb, learnt


def naive_merges(counts, limit):
    """The textbook learner: count every pair of every word again after each merge."""
    words = {w: list(w) for w in counts}
    out = []
    while len(out) < limit:
        pairs = Counter()
        for w, syms in words.items():
            for p in zip(syms, syms[1:]):
                pairs[p] += counts[w]
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        out.append(best)
        for w, syms in words.items():
            new, i = [], 0
            while i < len(syms):
                if i + 1 < len(syms) and (syms[i], syms[i + 1]) == best:
                    new.append(syms[i] + syms[i + 1])
                    i += 2
                else:
                    new.append(syms[i])
                    i += 1
            words[w] = new
    return out


def test_learner_hand_computed_case():
    # low x5, lower x2, newest x6, widest x3: "es" (9) and "st" (9) tie, "es" < "st";
    # then "est" (9), "lo" (7), "low" (7); then "ew", "ne" and "west" all count 6:
    # ("e", "w") is the smallest pair.
    counts = Counter({"low": 5, "lower": 2, "newest": 6, "widest": 3})
    assert MT.learn_merges(counts, 5) == [("e", "s"), ("es", "t"), ("l", "o"), ("lo", "w"), ("e", "w")]


def test_learner_matches_naive_learner_on_real_text():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()[:6000]
    counts = MT.word_counts([text])
    want = naive_merges(counts, 400)
    assert len(want) == 400
    assert MT.learn_merges(counts, 400) == want
    # and to exhaustion: every word a single token, the same merge list
    small = MT.word_counts([text[:1500]])
    assert MT.learn_merges(small, 10**6) == naive_merges(small, 10**6)


def test_vocabulary_layout(built):
    path, tok, tb, learnt = built
    with open(path, encoding="utf-8") as f:
        j = json.load(f)
    vocab = j["model"]["vocab"]
    assert len(vocab) == 49152 == M.PRESETS["smol135m"]["vocab_size"]
    assert sorted(vocab.values()) == list(range(49152))
    assert {t["id"]: t["content"] for t in j["added_tokens"]} == SMOLLM2_SPECIALS
    assert all(t["special"] for t in j["added_tokens"])
    assert {vocab[s] for s in SMOLLM2_SPECIALS.values()} == set(range(17))
    b2u = T.bytes_to_unicode()
    assert sorted(vocab[b2u[b]] for b in range(256)) == list(range(17, 273))   # every byte has a token
    assert learnt > 5000                      # merges learnt from the docs, the rest filled
    assert len(j["model"]["merges"]) >= 49152 - 273
    hdr = tokbin.read_header(open(tb, "rb").read())
    assert hdr["vocab_size"] == 49152 and hdr["n_eos"] == 1 and hdr["eos0"] == 0
    assert hdr["n_added"] == 17


def test_specials_match_the_real_smollm2_tokenizer(built):
    real = os.path.join(SHARED, "smollm2-tokenizer", "tokenizer.json")
    if not os.path.exists(real):
        pytest.skip(f"{real} not found (set KAI_SHARED_MODELS)")
    with open(real, encoding="utf-8") as f:
        r = json.load(f)
    with open(built[0], encoding="utf-8") as f:
        ours = json.load(f)
    assert ours["added_tokens"] == [{k: t[k] for k in ours["added_tokens"][0]} for t in r["added_tokens"]]
    assert ours["pre_tokenizer"] == r["pre_tokenizer"]
    assert len(ours["model"]["vocab"]) == len(r["model"]["vocab"])


def test_deterministic_and_depends_on_the_corpus(built, tmp_path):
    again, _ = MT.write(str(tmp_path / "a"), MT.default_corpus())
    with open(built[0], "rb") as f1, open(again, "rb") as f2:
        assert f1.read() == f2.read()
    tb = str(tmp_path / "TOK.BIN")
    tokbin.write_tokbin(again, tb)
    assert open(tb, "rb").read() == open(built[2], "rb").read()
    other, _ = MT.write(str(tmp_path / "b"), ["README.md"])
    assert open(other, "rb").read() != open(again, "rb").read()


def random_text(rng, n):
    cps = []
    while len(cps) < n:
        cp = rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0x7FF), rng.randint(0x800, 0xFFFF),
                         rng.randint(0x10000, 0x10FFFF)])
        if not 0xD800 <= cp <= 0xDFFF:     # surrogates are not UTF-8 text
            cps.append(cp)
    return "".join(map(chr, cps))


def test_round_trip_any_utf8_text(built, toktool):
    path, tok, tb, _ = built
    rng = random.Random(48)
    texts = TEXTS + [random_text(rng, rng.randint(1, 40)) for _ in range(40)]
    for text in texts:
        ids = tok.encode(text)
        assert tok.decode(ids) == text, text
        rc, out, err = run(toktool, tb, "encode", "-", stdin=text.encode())
        assert rc == 0, (text, err)
        assert [int(x) for x in out.split()] == ids, text          # the runtime agrees, id for id
        rc, out, err = run(toktool, tb, "decode", *map(str, ids))
        assert rc == 0 and out[:-1].decode() == text, (text, err)


def test_docs_text_compresses(built):
    _, tok, _, _ = built
    with open(os.path.join(ROOT, "docs", "userspace.md"), encoding="utf-8") as f:
        text = f.read()
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert len(ids) < len(text.encode()) / 3      # learnt merges are used (bytes alone: 1 per byte)
    assert len(tok.encode("Once upon a time")) <= 4


def test_encode_of_decode_is_sensible(built):
    """Every token whose bytes are whole UTF-8 characters encodes back to
    itself alone (so `--stop-text` of one generated token matches it); random
    ids (as the synthetic model emits) decode to text that encodes to ids
    decoding to the same text; filled ids decode to readable characters."""
    _, tok, _, _ = built
    whole = [i for i in range(17, 49152) if "\ufffd" not in tok.decode([i])]
    assert len(whole) > 48900                  # all but partial characters (bytes 0x80-0xFF and a few)
    assert [i for i in whole if tok.encode(tok.decode([i])) != [i]] == []
    rng = random.Random(7)
    for _ in range(200):
        ids = [rng.randrange(17, 49152) for _ in range(rng.randint(1, 12))]
        text = tok.decode(ids)
        assert tok.decode(tok.encode(text)) == text
    filled = tok.decode(list(range(40000, 40100)))
    assert filled.isprintable() and "\ufffd" not in filled


def test_pairs_only_synthetic_bundles(built, tmp_path):
    path = built[0]
    cfg = B.pack_cfg(M.make_config("smol135m", "q8"))
    for name, source in (("synth", "synthetic preset smol135m, seed 2 (tools/make_model.py)"),
                         ("real", "SmolLM2-135M from the course's smol.zip"), ("noinfo", None)):
        d = tmp_path / name
        d.mkdir()
        (d / "CFG.BIN").write_bytes(cfg)
        if source:
            (d / "INFO.TXT").write_text(json.dumps({"source": source}))
        msg = MT.pair_with_bundle(path, str(d))
        if name == "synth":
            assert (d / "TOK.BIN").read_bytes() == open(built[2], "rb").read()
            chat = (d / "CHAT.TXT").read_text()
            assert "<|im_start|>" in chat
            info = json.loads((d / "INFO.TXT").read_text())
            assert "make_tokenizer" in info["tokenizer"] and "chatml" in info["chat_template"]
        else:
            assert "not a synthetic bundle" in msg
            assert not (d / "TOK.BIN").exists() and not (d / "CHAT.TXT").exists()


def test_cli_lists_corpus_and_refuses_bad_arguments(capsys):
    assert MT.main(["--list-corpus"]) == 0
    listed = capsys.readouterr().out.split()
    assert "README.md" in listed and "docs/userspace.md" in listed and listed == sorted(listed)
    with pytest.raises(SystemExit):
        MT.main(["--tokenizer", "x.json"])           # pairing needs --bundle
