"""The row team's width control seen through the trace: every forward pass of
a SmolLM2-sized model closes one measuring window (a decode step is 135 M
multiply-adds, a window the first 100 M of a pass), and its WIDTH event says
the width it ran at, its speed, the reference and the verdict
(kernel/ai/width_control.h). Real time decides the verdicts, so the test
checks what holds whatever the host did: one window per iteration, inside
it; widths within the team; the first window a reference at the full width;
every probe at a width other than the settled one; and each verdict followed
by what the rule says comes next."""
import os
import re

import pytest

from kai_boot import KERNEL, ROOT, qemu_run, run_in_session

SMOL_IMG = os.path.join(ROOT, "build", "fs-smol.img")
EVENT = re.compile(r"^ev (\d+) (\d+) \d+ \d+ (ITER_BEGIN|ITER_END|WIDTH)((?: [a-z_]+=\d+)*)", re.M)
REFERENCE, WON, ADOPTED, LOST, UNJUDGED = 1, 2, 3, 4, 5


def events(text):
    out = []
    for m in EVENT.finditer(text):
        args = dict((k, int(v)) for k, v in re.findall(r"([a-z_]+)=(\d+)", m.group(4)))
        out.append((int(m.group(1)), m.group(3), args))
    return sorted(out)


def test_each_pass_closes_one_window_and_each_verdict_follows_the_rule():
    if not os.path.exists(SMOL_IMG) or not os.path.exists(KERNEL):
        pytest.skip("build/fs-smol.img not built: run `make fsimg-smol`")
    with qemu_run.Session(SMOL_IMG, KERNEL, smp=2, memory="1G", snapshot=True, boot_timeout=180,
                          append="ai.harts=2") as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model SMOL ready", timeout=300), s.transcript
        run_in_session(s, "aitrace start", 60)
        for _ in range(2):
            out = run_in_session(s, "ai --model SMOL --int8 --timing --predict 12 504 3575 282 4649 314", 600)
            assert "finish=length" in out, out
        text = run_in_session(s, "aitrace", 300)
        s.halt()
    evs = events(text)
    widths = [a for _, name, a in evs if name == "WIDTH"]
    iterations = sum(1 for _, name, _ in evs if name == "ITER_BEGIN")
    assert iterations == 24, text[-3000:]
    # Exactly one window per pass, closed inside it.
    inside = None
    for _, name, a in evs:
        if name == "ITER_BEGIN":
            inside = 0
        elif name == "WIDTH":
            assert inside == 0, f"a window closed outside a pass, or two in one: {a}"
            inside = 1
        elif name == "ITER_END":
            assert inside == 1, "a pass closed no window"
            inside = None
    assert len(widths) == iterations
    first = widths[0]
    assert first["width"] == 2 and first["verdict"] == REFERENCE, first
    assert first["reference_ps"] == first["ps_per_mac"] > 0, first
    settled = 2
    for k, w in enumerate(widths):
        assert w["worker"] == 0 and 1 <= w["width"] <= 2 and w["ps_per_mac"] > 0, w
        assert w["verdict"] in (REFERENCE, WON, ADOPTED, LOST, UNJUDGED), w
        nxt = widths[k + 1] if k + 1 < len(widths) else None
        if w["verdict"] == REFERENCE:
            assert w["width"] == settled, (k, w, settled)
        else:
            # A probe runs at the neighbour of the settled width.
            assert w["width"] != settled, (k, w, settled)
            if w["verdict"] == ADOPTED:
                settled = w["width"]
                assert w["reference_ps"] == w["ps_per_mac"], w   # its own window is the new reference
            elif nxt is not None:
                # Won, lost or unjudged: the next window is back at the settled width.
                assert nxt["width"] == settled and nxt["verdict"] == REFERENCE, (k, w, nxt)
