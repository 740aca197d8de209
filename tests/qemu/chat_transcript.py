"""Reading `chat --show-ids --timing` transcripts: the turns' prompts,
answers, finish reasons and prefix-cache figures (test_chat.py and
test_qwen_chat.py). Not named chat_turns.py: that is tools/chat_turns.py, the chat
benchmark, which shadows it when tools/ comes first on the path."""
import re


def turns_of(out):
    """{turn: dict(prompt, answer, finish, cached, n_prompt)} from --show-ids and --timing lines."""
    t = {}
    for m in re.finditer(r"^turn (\d+) (prompt|answer):((?: \d+)*)$", out, re.M):
        t.setdefault(int(m[1]), {})[m[2]] = [int(x) for x in m[3].split()]
    for m in re.finditer(r"^turn (\d+) finish=(\w+)$", out, re.M):
        t[int(m[1])]["finish"] = m[2]
    for m in re.finditer(r"^turn (\d+) prompt=(\d+) cached=(\d+) ttft_us=(\d+) tpot_us=(\d+)$", out, re.M):
        t[int(m[1])].update(n_prompt=int(m[2]), cached=int(m[3]))
    return t


def common_prefix(a, b):
    """How many leading items a and b share."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n
