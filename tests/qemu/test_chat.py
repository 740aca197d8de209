"""`chat` (user/bin/chat.cpp) holds a conversation with tiny-chat, the test
model whose bundle carries a ChatML template (CHAT.TXT) and its special
tokens: a scripted three-turn conversation streams an answer per turn, each
turn's prompt is the previous prompt continued (checked against the host's
rendering of the same conversation), the prefix cache serves the previous
turn's full blocks from the second turn on, a turn ends at the end-of-turn id
<|im_end|>, and every turn's answer equals a one-shot `ai` request of the same
prompt in a boot without the prefix cache. An outgrown context drops the
oldest turns and says so; /reset forgets; a model without a template, an
unknown model and a model that failed to load each get one line and a
non-zero exit status."""
import os
import re
import shutil
import sys

import pytest

from kai_boot import KERNEL, MODELS, ROOT, make_image, need_built, need_model, programs, qemu_run
from chat_transcript import common_prefix, turns_of

sys.path.insert(0, os.path.join(ROOT, "tools"))
import chat_template as CT  # noqa: E402
import tokenizer as T  # noqa: E402

WORK = os.path.join(ROOT, "build", "test-chat")
SOURCE = os.path.join(ROOT, "build", "model-sources", "tiny-chat")
KV_BLOCK = 16            # ai.kv_block's default
PREDICT = 24
MESSAGES = ["Hello!", "How are you?", "Tell me a story."]
END = "@@end-of-command@@"
CHAT = f"chat --model CHAT --timing --show-ids --predict {PREDICT} < /etc/three.txt"


@pytest.fixture(scope="module")
def image():
    need_built("chat", "ai", "echo")
    chat = need_model("tiny-chat")
    llama = need_model("tiny-llama")
    if not os.path.exists(os.path.join(SOURCE, "tokenizer.json")):
        pytest.skip(f"{SOURCE} missing: run `make test-models`")
    os.makedirs(WORK, exist_ok=True)
    etc = os.path.join(WORK, "etc")
    os.makedirs(etc, exist_ok=True)
    with open(os.path.join(etc, "three.txt"), "w") as f:
        f.write("\n".join(MESSAGES) + "\n")
    with open(os.path.join(etc, "long.txt"), "w") as f:
        f.write("".join(f"This is message number {i} of a long talk.\n" for i in range(12)))
    with open(os.path.join(etc, "reset.txt"), "w") as f:
        f.write("Hello!\n/reset\nHello!\n/quit\nnever read\n")
    broken = os.path.join(WORK, "broken")
    shutil.rmtree(broken, ignore_errors=True)
    shutil.copytree(chat, broken)
    with open(os.path.join(broken, "L01.BIN"), "r+b") as f:
        f.truncate(100)
    img = make_image(os.path.join(WORK, "chat.img"),
                     programs("init", "sh", "chat", "ai", "echo", "halt"),
                     [("AI/CHAT", chat), ("AI/LLAMA", llama), ("AI/BROKEN", broken), ("etc", etc)])
    return img


def boot(img, commands, append=""):
    """{command: its output} of commands run one after another in one boot,
    once every model has loaded (so no loader message cuts into an output)."""
    outputs = {}
    with qemu_run.Session(img, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=180,
                          append=append) as s:
        assert s.booted, s.transcript
        for name in ("CHAT", "LLAMA", "BROKEN"):
            assert s.wait_log(rf"ai: model {name} (ready|failed)", timeout=120), s.transcript
        for cmd in commands:
            # The model's answers are arbitrary text, "$ " included: the end
            # of a command is a marker line, not the shell's prompt. since()
            # cuts at the mark in bytes (the answers need not be ASCII).
            start = s.mark()
            s.send(f"{cmd}; echo {END}\n")
            assert s.wait_text("\n" + END, start, timeout=600), s.since(start)
            assert s.wait_for(lambda t: t.endswith(qemu_run.PROMPT), start, timeout=60)
            text = s.since(start).replace("\r\n", "\n")
            text = text[text.index(f"; echo {END}\n") + len(END) + 8:]
            outputs[cmd] = text[:text.index("\n" + END) + 1]
        s.halt()
    return outputs


@pytest.fixture(scope="module")
def conversation(image):
    out = boot(image, [CHAT])[CHAT]
    return out, turns_of(out)


def test_three_turns_reuse_the_cache_and_stop_at_end_of_turn(conversation):
    out, turns = conversation
    assert sorted(turns) == [1, 2, 3], out
    tok = T.load(os.path.join(SOURCE, "tokenizer.json"))
    with open(os.path.join(MODELS, "tiny-chat", "CHAT.TXT"), encoding="utf-8") as f:
        form = CT.loads(f.read())
    # Turn 1's prompt is the template's rendering of the first message (the
    # host's Jinja-checked form, encoded by tools/tokenizer.py).
    assert turns[1]["prompt"] == tok.encode(CT.render(form, [("user", MESSAGES[0])], True))
    assert turns[1]["cached"] == 0
    for n in (2, 3):
        prev, cur = turns[n - 1]["prompt"], turns[n]["prompt"]
        assert turns[n]["n_prompt"] == len(cur)
        # The new prompt continues the old one up to the answer's text, then
        # carries the new message and the generation prompt.
        assert common_prefix(prev, cur) >= len(prev) - 1, (prev, cur)
        assert tok.decode(cur).endswith(f"<|im_start|>user\n{MESSAGES[n - 1]}<|im_end|>\n<|im_start|>assistant\n")
        # The prefix cache gives the full blocks of what the turns share
        # (never the last prompt position: its logits give the first token).
        shared = min(common_prefix(prev, cur), len(cur) - 1)
        assert turns[n]["cached"] == shared // KV_BLOCK * KV_BLOCK > 0, turns[n]
    # tiny-chat's <|im_end|> is a likely token: some turn ends at it, and
    # then it is the last id, and it is not printed.
    ends = [n for n in turns if turns[n]["finish"] in ("eos", "stop")]
    assert ends, out
    for n in ends:
        assert turns[n]["answer"][-1] == form["end_of_turn"][0]
    for n in turns:
        if turns[n]["finish"] == "length":
            assert len(turns[n]["answer"]) == PREDICT
    assert "<|im_end|>" not in out


def test_every_turn_equals_a_one_shot_request(image, conversation):
    _, turns = conversation
    cmds = [f"ai --model CHAT --predict {PREDICT} --stop 2 --stop-eos " + " ".join(map(str, turns[n]["prompt"]))
            for n in sorted(turns)]
    outputs = boot(image, cmds, append="ai.prefix_cache=0")
    for n, cmd in zip(sorted(turns), cmds):
        out = outputs[cmd]
        ids = [ln for ln in out.splitlines() if re.fullmatch(r"\d+( \d+)*", ln.strip())]
        assert len(ids) == 1, out
        assert [int(x) for x in ids[0].split()] == turns[n]["answer"], (n, out)


def test_outgrown_context_drops_oldest_turns_and_reset_forgets(image):
    long_cmd = f"chat --model CHAT --timing --show-ids --predict {PREDICT} < /etc/long.txt"
    reset_cmd = "chat --model CHAT --timing --show-ids --predict 8 < /etc/reset.txt"
    outputs = boot(image, [long_cmd, reset_cmd])
    out = outputs[long_cmd]
    turns = turns_of(out)
    assert len(turns) == 12, out
    # (after the "> " prompt: with input from a file nothing echoes a newline)
    m = re.search(r"chat: the conversation no longer fits in (\d+) tokens: dropped the oldest (\d+) turns?$",
                  out, re.M)
    assert m, out
    context = int(m[1])
    assert all(t["n_prompt"] <= context for t in turns.values())
    # After a drop the prompt no longer starts with the whole previous one.
    dropped = [n for n in range(2, 13) if common_prefix(turns[n - 1]["prompt"], turns[n]["prompt"])
               < len(turns[n - 1]["prompt"]) - 1]
    assert dropped, out
    out = outputs[reset_cmd]
    turns = turns_of(out)
    assert "chat: conversation cleared" in out
    assert sorted(turns) == [1, 2], out                   # /quit: "never read" is not a turn
    assert turns[1].get("prompt") == turns[2].get("prompt"), out   # after /reset, the same first prompt
    assert turns[2]["cached"] > 0                         # and its blocks are still cached


def test_missing_template_unknown_model_and_failed_model(image):
    cmds = ["chat --model LLAMA < /etc/three.txt || echo EXIT-NONZERO",
            "chat --model NOPE < /etc/three.txt || echo EXIT-NONZERO",
            "chat --model BROKEN < /etc/three.txt || echo EXIT-NONZERO",
            "chat --model CHAT --predict 0 || echo EXIT-NONZERO",
            "chat --model CHAT --temp hot || echo EXIT-NONZERO"]
    outputs = boot(image, cmds)
    want = ["chat: model LLAMA has no chat template (/AI/LLAMA/CHAT.TXT missing",
            "chat: no model named 'NOPE'",
            "chat: model BROKEN failed to load: ",
            "chat: --predict: '0' is not a number from 1 to",
            "chat: --temp: 'hot'"]
    for cmd, w in zip(cmds, want):
        out = outputs[cmd]
        lines = [ln for ln in out.splitlines() if ln.strip()]
        assert len(lines) == 2 and lines[0].startswith(w), out
        assert lines[1] == "EXIT-NONZERO", out
