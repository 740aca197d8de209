"""Speculative decoding per request (kai_ai_submit.spec; docs/ai-service.md,
"N scheduled, k accepted"): whatever the proposer (ngram, the client's
prediction, the lab's oracle at acceptance 0, 0.5 and 1) and however many
drafts, every token is the one plain decoding gives: greedy and sampled,
one request alone (`ai`, and `llmrun`: the cold path) and four clients
batched (`aibatch`, against its own solo runs and the host runner), on the
test models, the hybrid
tiny-qwen included (its rollback goes through a recurrent checkpoint).
The oracle's acceptance is checked too: all drafts kept at A = 1, none at
A = 0. Bad speculation options are refused, naming themselves."""
import os
import re

import pytest

from test_ai import KERNEL, check_aibatch, image, models_of, qemu_run  # noqa: F401 (image: a fixture)

SPECS = ["ngram:4", "predicted:3", "oracle:4:0", "oracle:4:0.5", "oracle:8:1"]
# One request alone also with adaptive drafts (KAI_AI_SPEC_ADAPTIVE; aibatch has no --adaptive).
SPECS_ONE = SPECS + ["oracle:8:0.5 --adaptive", "ngram:8 --adaptive"]
# A prompt that repeats itself, so ngram and predicted (the prompt, below) find something.
PROMPT = "1 2 3 4 1 2 3 4 1 2"
SAMPLED = "--temp 0.8 --seed 7"


def _timing(out):
    m = re.search(r"drafted=(\d+) accepted=(\d+)", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def _check_same(cmd, out, want):
    """A speculating run's ids are the plain ones; the oracle's acceptance
    is exact at its ends: A = 1 keeps every draft, A = 0 none."""
    assert _ids(out) == want, f"{cmd}: {out} vs plain {want}"
    drafted, accepted = _timing(out)
    if "oracle:8:1" in cmd:
        assert drafted > 0 and accepted == drafted, out
    if "oracle:4:0 " in cmd:
        assert drafted > 0 and accepted == 0, out


def _ids(out):
    for line in out.splitlines():
        if re.fullmatch(r"\d+( \d+)*", line.strip()):
            return line.strip()
    raise AssertionError(out)


def _llmrun(model, how, spec):
    """The cold path's command: llmrun in the guest, the bundle read from /AI."""
    pred = "--prediction /pred.txt " if spec.startswith("predicted") else ""
    return f"llmrun --asset-dir /AI/{model} --predict 20 --timing {how}--speculate {spec} {pred}{PROMPT}"


@pytest.fixture(scope="module")
def session_outputs(image):
    """One boot runs every command of this module; {command: output}."""
    img, bundles = image
    models = [m for m in ("LLAMA", "QWEN") if m in bundles]
    commands = []
    for m in models:
        commands += [f"aibatch {m} --clients 4 --speculate {s}" for s in SPECS]
        for how in ("", SAMPLED + " "):
            base = f"ai --model {m} --predict 20 --timing {how}"
            commands.append(base + PROMPT)
            commands += [f"{base}--speculate {s} {PROMPT}" for s in SPECS_ONE if s != "predicted:3"]
            commands.append(f"{base}--speculate predicted:3 --prediction /pred.txt {PROMPT}")
            commands += [_llmrun(m, how, spec) for spec in SPECS_ONE]
    bad = ["ai --model LLAMA --speculate ngram:9 1 2", "ai --model LLAMA --speculate oracle:4:1.5 1 2",
           "ai --model LLAMA --speculate predicted:2 1 2", "ai --model LLAMA --prediction /pred.txt 1 2",
           "ai --model LLAMA --adaptive 1 2", "aitest LLAMA"]
    outputs = {}
    with qemu_run.Session(img, KERNEL, smp=2, memory="1G", snapshot=True, boot_timeout=180,
                          append="ai.workers=1 ai.max_batch=8 ai.budget=32") as s:
        assert s.booted, s.transcript
        for name in models_of(bundles):
            assert s.wait_log(rf"ai: model {name} (ready|failed)", timeout=180), s.transcript
        assert s.command("echo 1 2 3 4 1 2 3 4 > /pred.txt"), s.transcript
        for cmd in commands + bad:
            start = s.mark()
            assert s.command(cmd, timeout=300), s.since(start)
            outputs[cmd] = s.since(start)
        assert not any(m in s.transcript for m in qemu_run.PANIC_MARKERS), s.transcript
        s.halt()
    return models, bundles, outputs


def test_batched_speculation_keeps_every_token(session_outputs):
    """Four clients at once, each speculating, against their solo runs
    without speculation and the host runner: bit for bit."""
    models, bundles, outputs = session_outputs
    host_cache = {}
    for m in models:
        drafted = {}
        for spec in SPECS:
            out = outputs[f"aibatch {m} --clients 4 --speculate {spec}"]
            check_aibatch(out, bundles[m], 4, True, host_cache)
            counts = re.findall(r"drafted (\d+), accepted (\d+)", out)
            assert len(counts) == 4, out
            drafted[spec] = tuple(sum(int(c[i]) for c in counts) for i in (0, 1))
        assert drafted["oracle:8:1"][0] > 0 and drafted["oracle:8:1"][0] == drafted["oracle:8:1"][1], drafted
        assert drafted["oracle:4:0"][0] > 0 and drafted["oracle:4:0"][1] == 0, drafted
        assert 0 < drafted["oracle:4:0.5"][1] < drafted["oracle:4:0.5"][0], drafted


@pytest.mark.parametrize("how", ["greedy", "sampled"])
def test_one_request_same_tokens_with_every_proposer(session_outputs, how):
    """`ai` alone: the same ids with and without --speculate, and the
    oracle's acceptance where it is known exactly (A = 1 keeps every draft,
    A = 0 none); --timing says drafted= accepted=."""
    models, _, outputs = session_outputs
    for m in models:
        base = f"ai --model {m} --predict 20 --timing {'' if how == 'greedy' else SAMPLED + ' '}"
        plain = outputs[base + PROMPT]
        assert _timing(plain) == (0, 0), plain
        want = _ids(plain)
        for spec in SPECS_ONE:
            cmd = (f"{base}--speculate {spec} {PROMPT}" if spec != "predicted:3"
                   else f"{base}--speculate predicted:3 --prediction /pred.txt {PROMPT}")
            _check_same(cmd, outputs[cmd], want)


@pytest.mark.parametrize("how", ["greedy", "sampled"])
def test_cold_path_speculation_same_tokens(session_outputs, how):
    """llmrun (the cold path: Session::verify, rewind and checkpoints)
    speculating with every proposer gives the warm path's plain tokens."""
    models, _, outputs = session_outputs
    for m in models:
        flags = "" if how == "greedy" else SAMPLED + " "
        want = _ids(outputs[f"ai --model {m} --predict 20 --timing {flags}{PROMPT}"])
        for spec in SPECS_ONE:
            cmd = _llmrun(m, flags, spec)
            _check_same(cmd, outputs[cmd], want)


def test_bad_speculation_options_name_themselves(session_outputs):
    _, _, outputs = session_outputs
    assert "ai: --speculate: 'ngram:9' is not" in outputs["ai --model LLAMA --speculate ngram:9 1 2"]
    assert "ai: --speculate: 'oracle:4:1.5' is not" in outputs["ai --model LLAMA --speculate oracle:4:1.5 1 2"]
    assert "needs --prediction FILE" in outputs["ai --model LLAMA --speculate predicted:2 1 2"]
    assert "--prediction needs --speculate predicted:K" in outputs["ai --model LLAMA --prediction /pred.txt 1 2"]
    assert "--adaptive needs --speculate" in outputs["ai --model LLAMA --adaptive 1 2"]
    out = outputs["aitest LLAMA"]
    assert "FAIL" not in out and re.search(r"^\d+ passed, 0 failed$", out, re.M), out
