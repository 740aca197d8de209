"""The row team's width control seen through the trace: every forward pass of
a SmolLM2-sized model closes one measuring window (a decode step is 135 M
multiply-adds, a window the first 100 M of a pass), and its WIDTH event says
the width it ran at, its speed, the reference and the verdict
(kernel/ai/width_control.h). Before that, once the model has loaded, the
team surveys its widths (kernel/ai/width_survey.h): three rounds of one
window per width, then its choice. Real time decides the verdicts and the
choice, so the test checks what holds whatever the host did: the survey's
order, its choice worked out here from its own windows, no survey window
inside a pass; one window per iteration, inside it; widths within the team;
the first window after the survey a reference at the chosen width, and no
probe for the 32 windows after it; every probe at a width other than the
settled one; and each verdict followed by what the rule says comes next."""
import os
import re

import pytest

from kai_boot import KERNEL, ROOT, qemu_run, run_in_session

SMOL_IMG = os.path.join(ROOT, "build", "fs-smol.img")
EVENT = re.compile(r"^ev (\d+) (\d+) \d+ \d+ (ITER_BEGIN|ITER_END|WIDTH)((?: [a-z_]+=\d+)*)", re.M)
REFERENCE, WON, ADOPTED, LOST, UNJUDGED, SURVEY, SURVEYED = 1, 2, 3, 4, 5, 6, 7
MAX_PROBE_WINDOWS = 32   # kQuickProbeWindows: the wait before the first probe after the survey


def events(text):
    out = []
    for m in EVENT.finditer(text):
        args = dict((k, int(v)) for k, v in re.findall(r"([a-z_]+)=(\d+)", m.group(4)))
        out.append((int(m.group(1)), m.group(3), args))
    return sorted(out)


def survey_choice(survey):
    """The survey's rule (width_survey.h), worked out from its own windows:
    per width the median of its rounds; from 1 thread up, a wider width
    replaces the choice only if it is more than 5% faster."""
    medians = {}
    for width in sorted({a["width"] for a in survey}):
        ps = sorted(a["ps_per_mac"] for a in survey if a["width"] == width)
        medians[width] = ps[len(ps) // 2]
    best = 1
    for width in sorted(medians):
        if width > 1 and medians[width] + medians[width] // 20 < medians[best]:
            best = width
    return best, medians


def test_each_pass_closes_one_window_and_each_verdict_follows_the_rule():
    if not os.path.exists(SMOL_IMG) or not os.path.exists(KERNEL):
        pytest.skip("build/fs-smol.img not built: run `make fsimg-smol`")
    # Traced from boot, so that the survey (once the model has loaded) is in the trace.
    with qemu_run.Session(SMOL_IMG, KERNEL, smp=2, memory="1G", snapshot=True, boot_timeout=180,
                          append="ai.harts=2 ai.trace=20000") as s:
        assert s.booted, s.transcript
        assert s.wait_log(r"ai: model SMOL ready", timeout=300), s.transcript
        for _ in range(2):
            out = run_in_session(s, "ai --model SMOL --int8 --timing --predict 12 504 3575 282 4649 314", 600)
            assert "finish=length" in out, out
        text = run_in_session(s, "aitrace", 300)
        s.halt()
    evs = events(text)
    iterations = sum(1 for _, name, _ in evs if name == "ITER_BEGIN")
    assert iterations == 24, text[-3000:]

    # The survey: never inside a pass; its windows in order, then its choice.
    inside = False
    for _, name, a in evs:
        if name in ("ITER_BEGIN", "ITER_END"):
            inside = name == "ITER_BEGIN"
        elif name == "WIDTH" and a["verdict"] in (SURVEY, SURVEYED):
            assert not inside, f"a survey window inside a pass: {a}"
    all_widths = [a for _, name, a in evs if name == "WIDTH"]
    survey = [a for a in all_widths if a["verdict"] == SURVEY]
    assert [a["width"] for a in survey] == [1, 2, 2, 1, 1, 2], survey
    assert all(a["reference_ps"] == 0 and a["ps_per_mac"] > 0 and a["worker"] == 0 for a in survey), survey
    chosen = [k for k, a in enumerate(all_widths) if a["verdict"] == SURVEYED]
    assert len(chosen) == 1, all_widths
    at = chosen[0]
    assert [a["verdict"] for a in all_widths[at - 6:at]] == [SURVEY] * 6, all_widths[:at + 1]
    best, medians = survey_choice(survey)
    assert all_widths[at]["width"] == best, (all_widths[at], medians)
    assert all_widths[at]["ps_per_mac"] == medians[best], (all_widths[at], medians)

    # The measuring windows: exactly one per pass, closed inside it.
    widths = []
    inside = None
    for _, name, a in evs:
        if name == "ITER_BEGIN":
            inside = 0
        elif name == "WIDTH" and a["verdict"] == SURVEYED:
            widths.append(a)   # kept in order: the settled width changes here
        elif name == "WIDTH" and a["verdict"] != SURVEY:
            assert inside == 0, f"a window closed outside a pass, or two in one: {a}"
            inside = 1
            widths.append(a)
        elif name == "ITER_END":
            assert inside == 1, "a pass closed no window"
            inside = None
    assert sum(1 for a in widths if a["verdict"] != SURVEYED) == iterations

    # Before the survey (if a request came first) the team is settled at its
    # full width; from the survey's choice on, at that width, with no probe
    # for MAX_PROBE_WINDOWS windows.
    settled = 2
    since_survey = None
    for k, w in enumerate(widths):
        if w["verdict"] == SURVEYED:
            settled = w["width"]
            since_survey = 0
            nxt = widths[k + 1] if k + 1 < len(widths) else None
            if nxt is not None:
                assert nxt["width"] == settled and nxt["verdict"] == REFERENCE, (w, nxt)
                assert nxt["reference_ps"] == nxt["ps_per_mac"] > 0, nxt   # a fresh reference
            continue
        if since_survey is not None:
            since_survey += 1
            if since_survey <= MAX_PROBE_WINDOWS:
                assert w["verdict"] == REFERENCE and w["width"] == settled, (since_survey, w)
        if k == 0:
            assert w["width"] == 2 and w["verdict"] == REFERENCE, w
            assert w["reference_ps"] == w["ps_per_mac"] > 0, w
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
            elif nxt is not None and nxt["verdict"] != SURVEYED:
                # Won, lost or unjudged: the next window is back at the settled width.
                assert nxt["width"] == settled and nxt["verdict"] == REFERENCE, (k, w, nxt)
