"""Constrained decoding on the warm path (kai_ai_submit.grammar; `ai --regex`,
`ai --json-schema`, `chat --json-schema`; docs/constrained-decoding.md, "The
warm path"), in one boot with the tiny test models (`make test-models`):
stories260K (SentencePiece with byte fallback) and tiny-chat (byte-level BPE).

- every finished output's bytes (read from TOK.BIN here, not from the kernel)
  match the pattern with Python's re.fullmatch, and a JSON schema's output
  parses with json and has the schema's properties;
- the warm path gives the cold path's tokens (`llmrun --regex` in the same
  boot), greedy and seeded;
- \\C* (every output allowed) gives the unconstrained tokens, greedy and seeded;
- constrained and unconstrained requests submitted at once (one worker
  batches them) give the tokens each gives alone (`aigrammar`);
- a refused grammar is named with its position and nothing runs; a request cut
  by --predict before a match says finish=prefix; --speculate is refused;
- a grammar the vocabulary cannot spell (tiny-chat-gaps has no token for byte
  0x01) fails with finish=no-token and EINVAL's message, not a hang, and the
  service serves the next request;
- aistat's grammar line: no grammar memory left after the runs, every
  constrained submission counted, and a peak at least one request's region
  (`aigrammar` prints each request's grammar bytes from kai_ai_result: the
  same alone and batched, DFA and mask cache both there);
- grammarcost (make bench-grammar) never allows a padding id, and names a bad
  count."""
import json
import os
import re
import sys

import pytest

from test_ai import KERNEL, MODELS, qemu_run  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from test_grammar_llmrun import output_bytes, token_bytes  # noqa: E402

BIN = os.path.join(ROOT, "build", "user", "bin")
WORK = os.path.join(ROOT, "build", "test-grammar")
GUEST = {"STORIES": "stories260K", "CHAT": "tiny-chat"}
GAPS = "tiny-chat-gaps"   # /AI/GAPS: tiny-chat without the bytes 01 02 04 7f
SAMPLED = "--temp 0.8 --seed 11"
# (model, pattern, prompt): patterns the shell passes as they are (single quotes).
CASES = [
    ("STORIES", r" upon a (time|day), [a-z ]+\.", "--text Once"),
    ("STORIES", r"(yes|no)", "1 2 3"),
    ("STORIES", r"[0-9]{1,4}( [0-9]{1,4})*", "1 2 3"),
    ("CHAT", r"(yes|no)", "1 2 3"),
    ("CHAT", r"[a-z]+( [a-z]+){2,}\.", "1 2 3"),
    ("CHAT", r"n=[0-9]{1,3};", "4 5"),
]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                            "age": {"type": "integer", "minimum": 0, "maximum": 120},
                                            "ok": {"type": "boolean"}},
          "required": ["name", "age", "ok"]}
BATCH = ["(yes|no)", "-", "[a-z ]{3,12}", "-", r"\C*", "[0-9]+"]
BAD_REGEX = "ai --model STORIES --regex 'a(b' 1"
BAD_SCHEMA = "ai --model STORIES --json-schema /bad.json 1"
PREFIX = "ai --model STORIES --predict 3 --timing --regex '[a-z]{30}' 1"
SPECULATE = "ai --model STORIES --regex a --speculate ngram:2 1"
CHAT = "echo hi | chat --model CHAT --predict 60 --show-ids --json-schema /s.json"
CHAT_BAD = "echo hi | chat --model CHAT --json-schema /bad.json"
# After one "a" (the only token the grammar allows first) no token can spell 0x01.
NO_TOKEN = "ai --model GAPS --predict 6 --timing --regex 'a?\\x01' 1 2"
AFTER_NO_TOKEN = "ai --model GAPS --predict 6 --timing --regex '\\x03[a-z]+' 1 2"
# The benchmark's own checks on a tiny vocabulary: 80 padding ids (320..399) never allowed.
COST = "grammarcost CHAT 400 320"
COST_BAD = "grammarcost CHAT 10"


def warm(model, pattern, prompt, how):
    return f"ai --model {model} --predict 40 --timing {how}--regex '{pattern}' {prompt}"


def cold(model, pattern, prompt, how):
    return f"llmrun --asset-dir /AI/{model} --predict 40 --timing {how}--regex '{pattern}' {prompt}"


def allow_all(model, how, constrained):
    grammar = "--regex '\\C*'" if constrained else "--stop-eos"
    return f"ai --model {model} --predict 30 --timing {how}{grammar} 7 8 9"


def batch_cmd(model):
    return f"aigrammar {model} 24 " + " ".join(p if p == "-" else "'" + p + "'" for p in BATCH)


def schema_cmd(how):
    return f"ai --model CHAT --predict 60 --timing {how}--json-schema /s.json 1 2"


@pytest.fixture(scope="module")
def outputs():
    for d in list(GUEST.values()) + [GAPS]:
        if not os.path.exists(os.path.join(MODELS, d, "TOK.BIN")):
            pytest.skip(f"{MODELS}/{d}/TOK.BIN missing (make test-models)")
    if not os.path.exists(KERNEL) or not os.path.exists(os.path.join(BIN, "aigrammar")):
        pytest.skip("kernel or /bin/aigrammar not built: run `make`")
    os.makedirs(WORK, exist_ok=True)
    img = os.path.join(WORK, "warm.img")
    progs = [os.path.join(BIN, p) for p in sorted(os.listdir(BIN)) if "." not in p]
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "tools", "mkfsimg.py"), "--out", img] + progs
    for name, d in list(GUEST.items()) + [("GAPS", GAPS)]:
        cmd += ["--add-dir", f"AI/{name}={os.path.join(MODELS, d)}"]
    import subprocess
    subprocess.check_call(cmd, stdout=subprocess.DEVNULL)
    commands = []
    for how in ("", SAMPLED + " "):
        for m, p, prompt in CASES:
            commands += [warm(m, p, prompt, how), cold(m, p, prompt, how)]
        for m in GUEST:
            if m == "STORIES" and how:
                continue   # <s> prints nothing, so no grammar allows it: a draw sees other mass
            commands += [allow_all(m, how, True), allow_all(m, how, False)]
        commands.append(schema_cmd(how))
    commands += [batch_cmd("CHAT"), batch_cmd("STORIES"),
                 BAD_REGEX, BAD_SCHEMA, PREFIX, SPECULATE, CHAT, CHAT_BAD, NO_TOKEN, AFTER_NO_TOKEN, COST, COST_BAD, "aistat"]
    out = {}
    with qemu_run.Session(img, KERNEL, smp=2, memory="1G", snapshot=True, boot_timeout=180,
                          append="ai.workers=1 ai.max_batch=8 ai.budget=32") as s:
        assert s.booted, s.transcript
        for name in list(GUEST) + ["GAPS"]:
            assert s.wait_log(rf"ai: model {name} (ready|failed)", timeout=180), s.transcript
        schema = json.dumps(SCHEMA, separators=(",", ":"))
        assert s.command(f"echo '{schema}' > /s.json"), s.transcript
        assert s.command("echo '{\"type\":\"object\",\"pattern\":\"x\"}' > /bad.json"), s.transcript
        for c in commands:
            start = s.mark()
            assert s.command(c, timeout=300), s.since(start)
            text = s.since(start)
            echo = text.find(c + "\n")
            out[c] = text[echo + len(c) + 1:] if echo >= 0 else text
        assert not any(m in s.transcript for m in qemu_run.PANIC_MARKERS), s.transcript
        s.halt()
    return out


def ids_and_finish(text):
    """The generated ids (a line of numbers, or the streamed text's absence) and finish=."""
    m = re.search(r"finish=(\S+)", text)
    assert m, text
    lines = [ln.strip() for ln in text.splitlines() if re.fullmatch(r"\d+( \d+)*", ln.strip())]
    return (lines[0] if lines else None), m.group(1)


def check_match(model, pattern, ids, finish):
    pieces, eos = token_bytes(GUEST[model])
    data = output_bytes([int(i) for i in ids.split()], pieces, eos, finish)
    try:
        matched = re.fullmatch(pattern, data.decode(), re.ASCII) is not None
    except UnicodeDecodeError:
        matched = False
    if finish in ("grammar", "eos", "length"):
        assert matched, (model, pattern, data, finish)
    else:
        assert finish == "prefix" and not matched, (model, pattern, data, finish)
    return data


@pytest.mark.parametrize("how", ["greedy", "sampled"])
def test_warm_output_matches_and_equals_cold(outputs, how):
    flags = "" if how == "greedy" else SAMPLED + " "
    finished = 0
    for m, p, prompt in CASES:
        w, c = outputs[warm(m, p, prompt, flags)], outputs[cold(m, p, prompt, flags)]
        if prompt.startswith("--text"):
            # Text mode streams text: compare the text and the finish reason.
            wt, ct = w.splitlines()[0], c.splitlines()[0]
            assert wt == ct and wt.startswith("Once upon a "), (w, c)
            assert re.fullmatch(p, wt[len("Once"):]), wt
            assert re.search(r"finish=(\w+)", w).group(1) == re.search(r"finish=(\w+)", c).group(1)
            continue
        wids, wfin = ids_and_finish(w)
        cids, cfin = ids_and_finish(c)
        assert wids == cids and wids, (m, p, w, c)
        check_match(m, p, wids, wfin)
        finished += wfin in ("grammar", "eos")
    assert finished >= 3, outputs


@pytest.mark.parametrize("how", ["greedy", "sampled"])
def test_allow_everything_changes_no_token(outputs, how):
    flags = "" if how == "greedy" else SAMPLED + " "
    for m in GUEST:
        if m == "STORIES" and how == "sampled":
            continue
        constrained = ids_and_finish(outputs[allow_all(m, flags, True)])[0]
        plain = ids_and_finish(outputs[allow_all(m, flags, False)])[0]
        assert constrained == plain and plain, (m, how)


@pytest.mark.parametrize("how", ["greedy", "sampled"])
def test_json_schema_output_parses(outputs, how):
    text = outputs[schema_cmd("" if how == "greedy" else SAMPLED + " ")]
    ids, finish = ids_and_finish(text)
    assert finish in ("grammar", "prefix"), text
    pieces, eos = token_bytes("tiny-chat")
    data = output_bytes([int(i) for i in ids.split()], pieces, eos, finish)
    if finish == "grammar":
        obj = json.loads(data)
        assert list(obj) == ["name", "age", "ok"] and isinstance(obj["ok"], bool), data
        assert isinstance(obj["age"], int) and 0 <= obj["age"] <= 120 and len(obj["name"]) <= 8, data


@pytest.mark.parametrize("model", ["CHAT", "STORIES"])
def test_batched_constrained_and_plain_equal_alone(outputs, model):
    text = outputs[batch_cmd(model)]
    solo = dict(re.findall(r"^solo (\d+) (finish=.*)$", text, re.M))
    batch = dict(re.findall(r"^batch (\d+) (finish=.*)$", text, re.M))
    assert len(solo) == len(BATCH) and solo == batch, text
    widths = [int(w) for w in re.findall(r"mean_batch_x100=(\d+)", text)]
    assert max(widths) > 100, text   # they really ran together
    for i, p in enumerate(BATCH):
        finish, _, ids = solo[str(i)].partition(" ")
        if p not in ("-", r"\C*"):   # \C is not Python's: any byte
            check_match(model, p, ids, finish[len("finish="):])


def test_refusals_and_prefix(outputs):
    assert outputs[BAD_REGEX].splitlines()[0] == "ai: --regex: regex: unbalanced ( at 1", outputs[BAD_REGEX]
    assert outputs[BAD_SCHEMA].splitlines()[0] == "ai: --json-schema: json-schema: unsupported keyword at 17", outputs[BAD_SCHEMA]
    assert "--speculate cannot be combined with --regex" in outputs[SPECULATE]
    ids, finish = ids_and_finish(outputs[PREFIX])
    assert finish == "prefix" and len(ids.split()) == 3, outputs[PREFIX]
    check_match("STORIES", "[a-z]{30}", ids, finish)


def test_chat_answers_in_json(outputs):
    """chat --json-schema: the answer is the schema's JSON (or, cut by
    --predict, a prefix of it); a refused schema is named before any turn."""
    text = outputs[CHAT]
    finish = re.search(r"turn 1 finish=(\S+)", text)
    assert finish and finish.group(1) in ("grammar", "eos", "prefix"), text
    ids = re.search(r"answer.*?: ([\d ]+)$", text, re.M)
    assert ids, text
    pieces, eos = token_bytes("tiny-chat")
    data = output_bytes([int(i) for i in ids.group(1).split()], pieces, eos, finish.group(1))
    if finish.group(1) != "prefix":
        obj = json.loads(data)
        assert list(obj) == ["name", "age", "ok"], data
    else:
        assert data.startswith(b'{"name":"'), data
    assert "chat: --json-schema: json-schema: unsupported keyword at 17\n" in outputs[CHAT_BAD], outputs[CHAT_BAD]


def test_unspellable_grammar_fails_and_service_goes_on(outputs):
    pieces, eos = token_bytes(GAPS)
    assert not any(p.startswith(b"\x01") for p in pieces)   # the premise: 0x01 cannot be spelt
    text = outputs[NO_TOKEN]
    assert ("ai: request failed: --regex: no token can continue the match "
            "(the vocabulary cannot spell what the grammar needs)") in text, text
    assert "timing " not in text, text   # failed: no result line
    ids = [ln for ln in text.splitlines() if re.fullmatch(r"\d+( \d+)*", ln.strip())]
    assert len(ids) <= 1 and all(pieces[int(i)] == b"a" for ln in ids for i in ln.split()), text
    ids, finish = ids_and_finish(outputs[AFTER_NO_TOKEN])
    assert finish in ("grammar", "eos", "length", "prefix") and ids, outputs[AFTER_NO_TOKEN]
    data = output_bytes([int(i) for i in ids.split()], pieces, eos, finish)
    assert re.fullmatch(rb"\x03[a-z]*", data) and (finish == "prefix") == (data == b"\x03"), (data, finish)


def constrained_submissions():
    """The requests with a grammar that the boot's commands submit (refused ones are not)."""
    n = 0
    for how in ("", SAMPLED + " "):
        n += sum(1 for _ in CASES)                                          # warm (llmrun is cold: not the service)
        n += sum(1 for m in GUEST if not (m == "STORIES" and how))         # allow_all with \C*
        n += 1                                                              # schema_cmd
    n += 2 * 2 * sum(1 for p in BATCH if p != "-")                          # aigrammar: solo + batch, two models
    return n + 1 + 1 + 2                                                    # PREFIX, CHAT, NO_TOKEN, AFTER_NO_TOKEN


def test_aistat_grammar_memory(outputs):
    m = re.search(r"^grammar: requests=(\d+) bytes=(\d+) peak_bytes=(\d+) compiled=(\d+)$", outputs["aistat"], re.M)
    assert m, outputs["aistat"]
    live, live_bytes, peak, compiled = map(int, m.groups())
    assert live == 0 and live_bytes == 0, outputs["aistat"]   # every grammar was freed
    assert compiled == constrained_submissions(), (compiled, constrained_submissions())
    for model in ("CHAT", "STORIES"):
        text = outputs[batch_cmd(model)]
        rows = {run: [tuple(map(int, r)) for r in re.findall(
            rf"^{run} \d+ grammar_bytes=(\d+) dfa_bytes=(\d+) mask_bytes=(\d+) masks=(\d+)$", text, re.M)]
            for run in ("solo", "batch")}
        assert len(rows["solo"]) == sum(1 for p in BATCH if p != "-") and rows["solo"] == rows["batch"], text
        for total, dfa, masks, computed in rows["batch"]:
            assert dfa > 0 and masks > 0 and total >= dfa + masks and computed >= 1, text
        assert peak >= max(r[0] for r in rows["batch"]), (peak, rows)


def test_grammarcost_never_allows_pads(outputs):
    rows = re.findall(r"^grammarcost logits=400 real=320 pattern=(.+?) states=(\d+) .* allowed_at_start=(\d+) "
                      r"pads_allowed=(\d+) live_states=(\d+)$", outputs[COST], re.M)
    assert len(rows) == 4, outputs[COST]
    pieces, eos = token_bytes("tiny-chat")
    for pattern, states, allowed, pads, live in rows:
        assert pads == "0" and live == states, (pattern, outputs[COST])
    # \C* allows every id that prints something, and EOS (its start accepts); nothing else.
    assert int(rows[3][2]) == sum(1 for i, p in enumerate(pieces) if p or i in eos), rows[3]
    assert outputs[COST_BAD].splitlines()[0] == "grammarcost: N_LOGITS '10': a count from 320 to 1000000", outputs[COST_BAD]
