"""Chat turns on a recurrent (Qwen-shaped) model resume from the previous
turn's state: tiny-qwen-chat (tiny-qwen's Gated DeltaNet + gated attention
shape with tiny-chat's ChatML tokenizer and template) holds a five-turn
conversation twice, with the prefix cache on and off (`ai.prefix_cache=0`):

- every turn's prompt and answer are the same in both boots (reuse changes
  no token);
- with reuse on, turn n resumes at exactly the deepest checkpoint that an
  earlier turn left and that turn n's prompt still matches: the ones of
  each prompt (its last whole block, one before its end) and the final one
  of each finished request (its whole sequence, prompt and answer, less the
  last token: kernel/ai/kv_checkpoint.h, kv_final_checkpoint); turns 2-5
  resume, and past the previous turn's prompt whenever the answer's text
  encodes to the same tokens again;
- aistat counts the hits (prefix_hits) and shows the checkpoints; with reuse
  off, none.

The conversation goes past the bundle's 64-row RoPE table (the default Qwen
context is 1024): the tokens still agree, since both boots compute the
same rows. What the reference is: the same conversation without reuse,
never a figure of the run under test."""
import os
import re

import pytest

from kai_boot import KERNEL, ROOT, make_image, need_built, need_model, programs, qemu_run, run_in_session
from chat_transcript import common_prefix, turns_of

WORK = os.path.join(ROOT, "build", "test-qwen-chat")
B = 16   # ai.kv_block's default
PREDICT = 12
MESSAGES = ["Hello!", "How are you?", "Tell me a story.", "What is the capital of France?", "Thank you, that is all."]
CHAT = f"chat --model QCHAT --timing --show-ids --predict {PREDICT} < /etc/five.txt"


@pytest.fixture(scope="module")
def image():
    need_built("chat", "aistat")
    qchat = need_model("tiny-qwen-chat")
    os.makedirs(os.path.join(WORK, "etc"), exist_ok=True)
    with open(os.path.join(WORK, "etc", "five.txt"), "w") as f:
        f.write("\n".join(MESSAGES) + "\n")
    return make_image(os.path.join(WORK, "qchat.img"), programs("init", "sh", "chat", "aistat", "halt"),
                      [("AI/QCHAT", qchat), ("etc", os.path.join(WORK, "etc"))])


def converse(img, append=""):
    s = qemu_run.Session(img, KERNEL, smp=1, memory="1G", snapshot=True, boot_timeout=180, append=append)
    s.__enter__()
    try:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model QCHAT (ready|failed)", timeout=180), s.transcript[-2000:]
        out = run_in_session(s, CHAT, 600)
        return out, run_in_session(s, "aistat", 30)
    finally:
        s.__exit__(None, None, None)


def expected_resume(earlier, cur):
    """The deepest checkpoint of the earlier turns that cur matches, leaving
    cur's last position to compute: (sequence, position) candidates are each
    prompt at its last whole block and one before its end, and each prompt
    plus answer one before its end."""
    best = 0
    for t in earlier:
        p, seq = t["prompt"], t["prompt"] + t["answer"]
        for s, pos in [(p, len(p) // B * B), (p, len(p) - 1), (seq, len(seq) - 1)]:
            if 0 < pos <= common_prefix(s, cur) and pos < len(cur):
                best = max(best, pos)
    return best


def test_chat_turns_resume_from_the_previous_turns_state(image):
    on, stat_on = converse(image)
    off, stat_off = converse(image, "ai.prefix_cache=0")
    t_on, t_off = turns_of(on), turns_of(off)
    assert sorted(t_on) == sorted(t_off) == [1, 2, 3, 4, 5], (on, off)
    for n in t_on:
        assert t_on[n]["prompt"] == t_off[n]["prompt"], (n, on, off)
        assert t_on[n]["answer"] == t_off[n]["answer"], f"turn {n}: reuse on {t_on[n]['answer']}, off {t_off[n]['answer']}"
        assert t_off[n]["cached"] == 0
    # The conversation outgrows the bundle's 64 RoPE rows.
    assert len(t_on[5]["prompt"]) + len(t_on[5]["answer"]) > 64, t_on[5]
    for n in range(2, 6):
        want = expected_resume([t_on[i] for i in range(1, n)], t_on[n]["prompt"])
        assert want >= len(t_on[n - 1]["prompt"]) - 1 and t_on[n]["cached"] == want, (n, t_on[n]["cached"], want)
    hits = lambda stat: int(re.search(r"prefix_hits=(\d+)", stat).group(1))
    assert hits(stat_on) == 4 and hits(stat_off) == 0, (stat_on, stat_off)
    m = re.search(r"^checkpoints: count=(\d+) kib=(\d+)$", stat_on, re.M)
    assert m and int(m.group(1)) > 0, stat_on
    assert re.search(r"^checkpoints: count=0 kib=0$", stat_off, re.M), stat_off
