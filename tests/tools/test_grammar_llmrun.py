"""Constrained decoding on the cold path (build/host/llmrun --regex / --json-schema,
lib/grammar.h) with the tiny test models (build/models, `make test-models`):
thousands of requests with random patterns and seeds, each output's bytes (read
from TOK.BIN here, not from the runtime) checked with Python's re.fullmatch: a
request that finished (EOS, or "grammar": nothing may follow) matches, and the
runner's grammar=match/prefix agrees with Python for every request; \\C* (every
output allowed) gives exactly the unconstrained tokens, greedy and seeded (the
byte-level vocabulary; llama2.c's, greedy: its <s> is never allowed); a
JSON schema gives parseable JSON; bad grammars are refused with their reason."""
import json
import os
import random
import re
import struct
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from test_grammar import random_pattern  # noqa: E402

LLMRUN = os.path.join(ROOT, "build", "host", "llmrun")
MODELS = os.environ.get("KAI_TEST_MODELS", os.path.join(ROOT, "build", "models"))
BUNDLES = ["stories260K", "tiny-chat"]   # SentencePiece with byte fallback; byte-level BPE


def token_bytes(bundle):
    """Each id's bytes as the output shows them, and the EOS ids, read from TOK.BIN."""
    data = open(os.path.join(MODELS, bundle, "TOK.BIN"), "rb").read()
    words = struct.unpack_from("<32I", data, 0)
    n, n_eos = words[5], words[7]
    eos = set(words[8:8 + n_eos])
    offsets = struct.unpack_from(f"<{n + 1}I", data, 128)
    flags = data[128 + 4 * (n + 1):128 + 4 * (n + 1) + n]
    blob_len = offsets[-1]
    blob = data[len(data) - blob_len - (-blob_len % 4):][:blob_len]
    out = []
    for i in range(n):
        b = blob[offsets[i]:offsets[i + 1]]
        if flags[i] & 2:      # "<0xXX>"
            b = bytes([int(b[3:5], 16)])
        elif flags[i] & 1:    # decodes to nothing
            b = b""
        out.append(b)
    return out, eos


@pytest.fixture(scope="module")
def built():
    r = subprocess.run(["make", "-s", "build/host/llmrun"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for b in BUNDLES:
        if not os.path.exists(os.path.join(MODELS, b, "TOK.BIN")):
            pytest.skip(f"{MODELS}/{b}/TOK.BIN missing (make test-models)")


def run_requests(bundle, args, requests):
    """One llmrun process, one request per line; returns [(ids, timing fields) or error text]."""
    text = "".join(f"{predict} {' '.join(map(str, prompt))}\n" for predict, prompt in requests) + "exit\n"
    r = subprocess.run([LLMRUN, "--asset-dir", os.path.join(MODELS, bundle), "--timing"] + args,
                       input=text, capture_output=True, text=True, timeout=300)
    outs = [list(map(int, line.split())) for line in r.stdout.splitlines()]
    results = []
    for line in r.stderr.splitlines():
        if line.startswith("timing "):
            fields = dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)
            results.append((outs.pop(0), fields))
        else:
            results.append(line)
    assert not outs
    return results


def output_bytes(ids, pieces, eos, finish):
    if finish == "eos":
        assert ids[-1] in eos
        ids = ids[:-1]
    return b"".join(pieces[i] for i in ids)


def test_every_finished_output_matches(built):
    rng = random.Random(2026)
    requests = finished = 0
    for bundle in BUNDLES:
        pieces, eos = token_bytes(bundle)
        n = len(pieces)
        for k in range(80):
            p = random_pattern(rng)
            compiled = re.compile(p, re.ASCII)
            sampling = [] if k % 4 == 0 else ["--temp", rng.choice(["0.7", "1", "1.5"]), "--seed", str(rng.randrange(1 << 30)),
                                              "--top-k", rng.choice(["0", "5", "40"]), "--top-p", rng.choice(["1", "0.9"])]
            if k % 5 == 1:
                sampling += ["--repeat-penalty", "1.3", "--min-p", "0.05"]
            reqs = [(rng.randint(1, 24), [rng.randrange(3, n) for _ in range(rng.randint(1, 6))]) for _ in range(20)]
            results = run_requests(bundle, ["--regex", p] + sampling, reqs)
            if results and isinstance(results[0], str) and "more than 4096 DFA states" in results[0]:
                continue
            assert len(results) == len(reqs), (p, results[:3])
            for res in results:
                assert not isinstance(res, str), (bundle, p, res)
                ids, f = res
                out = output_bytes(ids, pieces, eos, f["finish"])
                try:
                    text = out.decode()
                    py_match = compiled.fullmatch(text) is not None
                except UnicodeDecodeError:
                    py_match = False   # a prefix that stops inside a character
                assert (f["grammar"] == "match") == py_match, (bundle, p, out, f["finish"])
                if f["finish"] in ("eos", "grammar"):
                    assert py_match, (bundle, p, out)
                    finished += 1
                requests += 1
    assert requests >= 2000 and finished >= 200, (requests, finished)


@pytest.mark.parametrize("bundle", BUNDLES)
def test_all_allowing_grammar_changes_nothing(built, bundle):
    rng = random.Random(5)
    n = len(token_bytes(bundle)[0])
    reqs = [(24, [rng.randrange(3, n) for _ in range(4)]) for _ in range(8)]
    samplings = [[], ["--temp", "0.9", "--seed", "17", "--top-k", "20"], ["--temp", "1.2", "--seed", "3", "--top-p", "0.8"]]
    if bundle == "stories260K":
        # <s> prints nothing, so no grammar allows it (lib/grammar_mask.h): a sampled
        # request then draws from slightly different mass. Greedy never picks it here.
        samplings = samplings[:1]
    for sampling in samplings:
        plain = run_requests(bundle, ["--stop-eos"] + sampling, reqs)
        allowing = run_requests(bundle, ["--regex", "\\C*"] + sampling, reqs)
        assert [r[0] for r in allowing] == [r[0] for r in plain], sampling
        assert all(r[1]["grammar"] == "match" for r in allowing)


def test_json_schema_gives_parseable_json(built, tmp_path):
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]},
                                               "count": {"type": "integer", "minimum": 0, "maximum": 20},
                                               "words": {"type": "array", "items": {"type": "string", "maxLength": 6},
                                                         "maxItems": 3}}}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    pieces, eos = token_bytes("stories260K")
    reqs = [(200, [1] + [random.Random(i).randrange(3, 512) for _ in range(3)]) for i in range(20)]
    results = run_requests("stories260K", ["--json-schema", str(path), "--temp", "1", "--seed", "9"], reqs)
    parsed = 0
    for ids, f in results:
        if f["finish"] == "length":
            continue
        assert f["finish"] in ("eos", "grammar") and f["grammar"] == "match", f
        parsed += 1
        v = json.loads(output_bytes(ids, pieces, eos, f["finish"]).decode())
        assert list(v) == ["answer", "count", "words"]
        assert v["answer"] in ("yes", "no") and 0 <= v["count"] <= 20 and len(v["words"]) <= 3
    assert parsed >= 10


def test_bad_grammars_are_refused(built, tmp_path):
    def run(args):
        r = subprocess.run([LLMRUN, "--asset-dir", os.path.join(MODELS, "stories260K")] + args + ["1"],
                           capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout, r.stderr.strip()

    assert run(["--regex", "a(b"]) == (2, "", "--regex: regex: unbalanced ( at 1")
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "strnig"}')
    assert run(["--json-schema", str(bad)]) == (2, "", "--json-schema: json-schema: unknown type at 9")
    assert run(["--json-schema", str(tmp_path / "none.json")])[2] == f"--json-schema: {tmp_path}/none.json: cannot open"
    assert run(["--regex", "a", "--regex", "b"]) == (2, "", "give one grammar: --regex or --json-schema, once")
    code, _, msg = run(["--regex", "a", "--speculate", "ngram:2"])
    assert code == 2 and msg.startswith("--speculate cannot be combined with --regex")
    # A byte the vocabulary cannot spell (tiny-chat-gaps has no token that starts with 0x01):
    # the request fails with the grammar's reason, not a hang, and prints no token.
    gaps = os.path.join(MODELS, "tiny-chat-gaps")
    if not os.path.exists(os.path.join(gaps, "TOK.BIN")):
        pytest.skip(f"{gaps}/TOK.BIN missing (make test-models)")
    pieces, _ = token_bytes("tiny-chat-gaps")
    assert not any(p.startswith(b"\x01") for p in pieces) and any(p.startswith(b"\x03") for p in pieces)
    r = subprocess.run([LLMRUN, "--asset-dir", gaps, "--regex", "a?\\x01", "--predict", "4", "1"],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout, r.stderr.strip()) == (1, "", (
        "grammar: no token can continue the match (the vocabulary cannot spell what the grammar needs)"))
    # The same with a byte it has: a token, and the match.
    r = subprocess.run([LLMRUN, "--asset-dir", gaps, "--regex", "\\x03", "--predict", "4", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.split() and r.stderr == "", r
