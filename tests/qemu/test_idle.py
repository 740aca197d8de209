"""Tickless idle (kernel/trap.cpp, clock_interrupt): a hart with nothing to
run masks its timer interrupt, and one hart keeps ticking to wake the
threads that sleep for time. Seen from outside the guest, through QEMU's
monitor: each hart's `mie` register (QEMU shows the machine-level register;
bit 5 is the supervisor timer enable, STIE, which the kernel sets and clears
as sie.STIE). The sampling profiler needs every hart's tick, so starting it
turns the idle harts' ticks back on, and after it stops they go quiet again.
"""
import contextlib
import os
import re
import tempfile
import time

import pytest

from kai_boot import IMAGE, KERNEL, need_built, qemu_run

STIE = 1 << 5
MIE = re.compile(r"\bmie\s+([0-9a-fA-F]+)")
# Eight harts, although tickless idle matters most at 4: the profiler check
# below needs harts that run no thread while the profiler starts, and with 4
# the few threads involved touched every hart in one boot of five.
HARTS = 8


def timer_enabled(monitor):
    """For each hart (QEMU's cpu index), whether its timer interrupt is enabled."""
    out = []
    with qemu_run.Monitor(monitor) as m:
        for cpu in range(HARTS):
            m.command(f"cpu {cpu}")
            mie = MIE.search(m.command("info registers"))
            assert mie, f"no mie in QEMU's registers of cpu {cpu}"
            out.append(bool(int(mie.group(1), 16) & STIE))
    return out


def settles(monitor, wanted, seconds=10.0):
    """Reads the harts' timer enables until wanted(reading) holds or
    `seconds` pass; returns the last reading. Each check below is a state
    the harts reach: how soon depends on when the host runs each hart's
    thread (8 harts on 2 host cores, a busy host: a tenth of a second was
    not always enough), and a kernel that never reaches it still fails."""
    deadline = time.monotonic() + seconds
    while True:
        reading = timer_enabled(monitor)
        if wanted(reading) or time.monotonic() > deadline:
            return reading
        time.sleep(0.1)


@contextlib.contextmanager
def quiet_boot(append=""):
    """An 8-hart boot with QEMU's monitor, handed over once it is quiet:
    half a second with nothing to run (the shell waits for a line; no thread
    sleeps for time, which would run at every tick), by when every hart has
    taken a tick while idle (ticks are 10 ms apart), and only one hart still
    ticks. Yields (session, monitor path); no panic by the end."""
    need_built("sleep", "aitrace")
    if not os.path.exists(IMAGE):
        pytest.skip("build/fs.img is missing: run `make`")
    with tempfile.TemporaryDirectory() as tmp:
        monitor = os.path.join(tmp, "monitor.sock")
        with qemu_run.Session(IMAGE, KERNEL, smp=HARTS, memory="1G", snapshot=True, boot_timeout=180,
                              append=("ai.trace=4096 " + append).strip(), monitor=monitor) as s:
            assert s.booted, s.transcript
            time.sleep(0.5)
            quiet = settles(monitor, lambda r: r.count(True) == 1)
            assert quiet.count(True) == 1, f"one hart keeps time, the others stop ticking: {quiet}"
            yield s, monitor
            assert "panic" not in s.transcript


def test_idle_harts_stop_their_tick_and_the_profiler_restarts_it():
    with quiet_boot() as (s, monitor):
        # The profiler samples at ticks, idle harts too. It starts after
        # a second of quiet: typing a command line runs the shell on
        # whichever hart takes each key's interrupt, and running a thread
        # restarts a hart's tick anyway. So the harts that run nothing
        # until the profiler starts have only its IPI to restart theirs.
        assert s.command("sleep 1; aitrace start samples", 60)
        sampling = settles(monitor, lambda r: all(r))
        assert sampling == [True] * HARTS, f"the profiler's IPI restarts every idle hart's tick: {sampling}"
        assert s.command("aitrace stop", 60)
        time.sleep(0.5)
        again = settles(monitor, lambda r: r.count(True) == 1)
        assert again.count(True) == 1, f"after the profiler, idle harts stop ticking again: {again}"
        # Time still passes for a sleeper, whose hart ticks while it runs.
        start = time.monotonic()
        assert s.command("sleep 0.3", 60)
        assert time.monotonic() - start >= 0.3


def test_profiler_restarts_a_tick_that_stopped_just_before_it_started():
    """The race the look before `wfi` closes (kernel/idle.cpp): a hart woken
    for a thread that another hart ran first goes back to idle with its tick
    stopped, and for a moment it is neither ticking nor flagged idle; a
    profiler that starts then sends it no IPI. `sched.idle_delay_ms=300`
    makes that moment 300 ms long. Stopping the profiler puts every idle
    hart but the timekeeper into it: within a tick each one's timer
    interrupt finds it idle, stops its tick, and the hart goes back to idle
    through the delay. A profiler started 50 ms later finds them all there.
    Without the look this fails in every boot (tests/mutate.py
    profiler-race-no-look-before-wfi); without the delay the window is a
    few instructions wide and was seen once in CI."""
    with quiet_boot("sched.idle_delay_ms=300") as (s, monitor):
        assert s.command("aitrace start samples; aitrace stop; sleep 0.05; aitrace start samples", 60)
        sampling = settles(monitor, lambda r: all(r))
        assert sampling == [True] * HARTS, f"every hart ticks while the profiler runs: {sampling}"
        assert s.command("aitrace stop", 60)
