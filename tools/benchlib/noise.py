"""The host-noise check. In real-time mode each guest hart is a host thread,
so a busy host slows the guest and a sweep point cannot tell "the service
got slower" from "the host was busy". bench.py runs `calib` (a fixed integer
loop, user/bench/calib.cpp) in the guest just before and just after each point,
in the same boot, with the service idle. The point is flagged if

- its calibration *moved*: after and before differ by more than the
  threshold (the host's speed changed during the point), or
- it ran on a *slow host*: before or after is more than the threshold
  slower than the study's median calibration.

A flagged point is not thrown away: its numbers are shown, marked, so a
student can see what host noise does. Exact mode needs no such check (its
clock counts instructions, whatever the host does).
"""

DEFAULT_THRESHOLD_PCT = 15.0


def calibration_flags(before_us, after_us, reference_us, threshold_pct=DEFAULT_THRESHOLD_PCT):
    """The reasons to distrust one point ([] if none) and its figures."""
    if not before_us or not after_us:
        return ["no calibration"], {}
    moved = abs(after_us - before_us) / min(before_us, after_us) * 100
    slower = (max(before_us, after_us) / reference_us - 1) * 100 if reference_us else 0.0
    flags = []
    if moved > threshold_pct:
        flags.append(f"calibration moved {moved:.0f}% during the point")
    if slower > threshold_pct:
        flags.append(f"host {slower:.0f}% slower than the study's median calibration")
    return flags, {"moved_pct": round(moved, 1), "slower_pct": round(slower, 1)}
