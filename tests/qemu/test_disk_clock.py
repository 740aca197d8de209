"""The disk clock (kernel/drivers/disk_clock.h, boot option disk.clock=B,IOPS;
docs/experiments.md, "Exact mode"): in exact mode with the ssd model, a cold
read of a 28.5 MB file takes the same virtual time, to the microsecond, in two
boots, although the host finishes the requests at different real moments;
and that time is the model's (bytes / 550 MB/s) plus the work a warm read
does too. Two boots of a small image (the file is not under /AI: the AI
service loads nothing)."""
import os
import re
import shutil
import subprocess

import pytest

from kai_boot import KERNEL, ROOT, all_programs, make_image, need_built, qemu_run

import disk_models

SMOL = os.path.join(ROOT, "build", "assets", "SMOL")
WORK = os.path.join(ROOT, "build", "test-disk-clock")
FILE = "EMB.BIN"
REAL = re.compile(r"^real (\d+\.\d+) ms$", re.M)
CLOCK = re.compile(r"^clock: +(\d+) bytes/s, (\d+) IOPS in virtual time; (\d+) stalls hid (\d+) us", re.M)
# `sleep 1` first: it ends on a timer tick, so the measurement starts at the
# same phase of the tick grid in every boot (a command typed at the console
# starts when the host delivers it: a few instructions either way).
COMMANDS = ["free --drop-caches", f"sleep 1; time cksum /D/{FILE}", f"sleep 1; time cksum /D/{FILE}", "df"]


def boot(img):
    """One exact-mode boot with the ssd disk clock; idle waits warp to the
    next timer deadline (qemu_run.ICOUNT_IDLE_WARPS), as vm_lab's runs do.
    Returns the transcript."""
    with qemu_run.Session(img, KERNEL, smp=1, snapshot=True, boot_timeout=120, deterministic=True,
                          disk="ssd", idle_warps=True) as s:
        assert s.booted, s.transcript[-3000:]
        for c in COMMANDS:
            assert s.command(c, timeout=300), f"`{c}` timed out\n{s.transcript[-3000:]}"
        s.halt()
        return s.transcript


def test_cold_read_repeats_to_the_microsecond_and_follows_the_model():
    need_built("cksum", "free", "df", "time")
    src = os.path.join(SMOL, FILE)
    if not os.path.exists(src):
        pytest.skip("build/assets/SMOL missing: run `make build/fs-smol.img`")
    data = os.path.join(WORK, "data")
    os.makedirs(data, exist_ok=True)
    if not os.path.exists(os.path.join(data, FILE)) or \
            os.path.getmtime(os.path.join(data, FILE)) < os.path.getmtime(src):
        shutil.copyfile(src, os.path.join(data, FILE))
    img = make_image(os.path.join(WORK, "clock.img"), all_programs(), [("D", data)])
    size = os.path.getsize(src)
    host_sum = subprocess.run(["cksum", FILE], cwd=data, capture_output=True, text=True,
                              check=True).stdout.split()[:2]
    ssd = disk_models.disk_model("ssd")

    runs = []
    for _ in range(2):
        t = boot(img)
        assert "panic" not in t
        assert f"disk clock on: {ssd.bandwidth_bps} bytes/s, {ssd.iops} IOPS" in t, t[-3000:]
        # The device's interrupt is suppressed: one would land at a host-dependent instruction.
        assert "interrupt despite the disk clock" not in t
        sums = re.findall(rf"^(\d+) (\d+) /D/{FILE}$", t, re.M)
        assert [list(s) for s in sums] == [host_sum, host_sum], t[-3000:]
        times = REAL.findall(t)
        assert len(times) == 2, t[-3000:]
        clock = CLOCK.search(t)
        assert clock, t[-3000:]
        assert int(clock.group(3)) > 0 and int(clock.group(4)) > 0, "no stall was counted"
        runs.append((float(times[0]), float(times[1]), int(clock.group(4))))

    (cold1, warm1, _), (cold2, warm2, _) = runs
    # The same virtual time to the microsecond (the figures' last digit),
    # whatever the host did meanwhile (each run's stolen time differs).
    assert cold1 == cold2, f"cold read took {cold1} ms, then {cold2} ms: the disk clock does not repeat"
    assert warm1 == warm2
    # The cold read costs the warm read's work plus the model's transfer
    # time (requests wait for the device; little of it overlaps the copy).
    model_ms = size / ssd.bandwidth_bps * 1000
    extra = cold1 - warm1
    assert 0.9 * model_ms <= extra <= 1.5 * model_ms + 5, \
        f"the cold read cost {extra:.3f} ms more than the warm one; the ssd model says {model_ms:.3f} ms"
