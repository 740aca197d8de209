#!/usr/bin/python3
"""How a conversation's turns reuse their KV cache: `chat --timing` in exact
mode (virtual time), with the prefix cache on and off.

    chat_turns.py [--model DIR] [--name NAME] [--turns N] [--predict N] [--int8] [--out FILE]

Boots kai with the bundle DIR (default build/models/tiny-chat, which
`make test-models` builds; any bundle with CHAT.TXT and TOK.BIN works) at
/AI/NAME, feeds `chat` N user messages of equal length, and prints each
turn's `turn N prompt=P cached=C ttft_us=T tpot_us=U` line for both boots,
then TTFT of the last turn over the first. With the prefix cache a turn
computes only the previous answer and the new message, so TTFT stays flat;
without it TTFT grows with the history. One hart, QEMU -icount: the figures
are virtual time and repeat exactly from run to run.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_run  # noqa: E402
from benchlib.boots import build_image  # noqa: E402
from benchlib.parse import parse_chat_turns  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def messages(n):
    """n messages of the same length in characters and (every tokenizer here
    splits digits) the same number of tokens; short, so that five turns fit
    in the 255-token prompt even with tiny-chat's small vocabulary."""
    return [f"Cat fact {i}?" for i in range(1, n + 1)]


def run(img, name, predict, int8, prefix_cache, timeout):
    cmd = f"chat --model {name} --timing --predict {predict}{' --int8' if int8 else ''} < /etc/turns.txt"
    res = qemu_run.run([cmd], image=img, smp=1, memory="2G", timeout=timeout, boot_timeout=600,
                       snapshot=True, deterministic=True, append=f"ai.prefix_cache={prefix_cache}")
    if not res.ok:
        raise SystemExit(f"chat_turns: boot failed: {res.error}\n{res.transcript[-2000:]}")
    return parse_chat_turns(res.transcript)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "build", "models", "tiny-chat"))
    ap.add_argument("--name", default="CHAT")
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--predict", type=int, default=12)
    ap.add_argument("--int8", action="store_true")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", help="also write the report here")
    a = ap.parse_args(argv)
    for f in ("CHAT.TXT", "TOK.BIN", "CFG.BIN"):
        if not os.path.exists(os.path.join(a.model, f)):
            print(f"chat_turns: {a.model}/{f} missing (make test-models builds build/models/tiny-chat)",
                  file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        etc = os.path.join(tmp, "etc")
        os.makedirs(etc)
        with open(os.path.join(etc, "turns.txt"), "w") as f:
            f.write("\n".join(messages(a.turns)) + "\n")
        img = build_image(a.model, a.name, tmp, programs=("init", "sh", "chat", "halt"), dirs=(f"etc={etc}",),
                          image="chat.img")
        lines = []
        for cache in (1, 0):
            rows = run(img, a.name, a.predict, a.int8, cache, a.timeout)
            lines.append(f"prefix cache {'on' if cache else 'off'} (exact mode, virtual time):")
            lines += [f"  turn {t} prompt={p} cached={c} ttft_us={ttft} tpot_us={tpot}" for t, p, c, ttft, tpot in rows]
            if len(rows) >= 2:
                lines.append(f"  TTFT turn {rows[-1][0]} / turn 1 = {rows[-1][3] / rows[0][3]:.2f}")
    report = "\n".join(lines)
    print(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
