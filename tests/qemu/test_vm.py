"""Virtual memory under memory pressure (docs/virtual-memory.md): on a
160 MiB machine, reading and mapping the SMOL-shape bundle (135 MB, more than
the page cache may hold there) evicts clean pages and completes; every file's
checksum through read() and through a map (`cksum --mmap`) equals the host's,
before and after eviction; the kernel neither panics nor loses memory.
(The system-call tests of the page cache, mmap and copy-on-write fork are
usertests' vm group, run by test_kernel.py.)"""
import os
import re
import subprocess

import pytest

from kai_boot import KERNEL, PYTHON as PY, ROOT, all_programs, make_image, need_built, qemu_run

SMOL = os.path.join(ROOT, "build", "assets", "SMOL")
WORK = os.path.join(ROOT, "build", "test-vm")
FREE = re.compile(r"^memory: total=(\d+) free=(\d+) .*\n.*\npage cache: pages=(\d+) mapped=(\d+) hits=(\d+) "
                  r"misses=(\d+) evictions=(\d+) disk_bytes=(\d+)", re.M)


def test_bundle_bigger_than_the_cache_reads_back_equal():
    need_built("cksum", "free")
    if not os.path.exists(os.path.join(SMOL, "EMB.BIN")):
        pytest.skip("build/assets/SMOL missing: run `make build/fs-smol.img`")
    os.makedirs(WORK, exist_ok=True)
    # Not under /AI: the AI service would load it and take the memory.
    img = make_image(os.path.join(WORK, "vm.img"), all_programs(), [("BIG", SMOL)])
    names = sorted(f for f in os.listdir(SMOL) if f.endswith(".BIN"))
    host = subprocess.run(["cksum"] + names, cwd=SMOL, capture_output=True, text=True, check=True).stdout
    want = [line.split()[:2] for line in host.splitlines()]
    files = " ".join(f"/BIG/{n}" for n in names)
    # The first mapped pass starts the prefetch kernel thread (its stack
    # stays): do that before the first `free`.
    cmds = ["cksum --mmap /BIG/L00.BIN", "free", f"cksum {files}", "free", f"cksum --mmap {files}",
            f"cksum {files}", "free"]
    res = qemu_run.run(cmds, image=img, kernel=KERNEL, memory="160M", smp=1, timeout=600)
    assert res.ok, f"{res.error}\n{res.transcript[-3000:]}"
    assert "panic" not in res.transcript
    sums = [m for m in re.findall(r"^(\d+) (\d+) /BIG/", res.transcript, re.M)]
    sums = sums[1:]   # the warm-up
    assert len(sums) == 3 * len(names), res.transcript[-3000:]
    for k, how in enumerate(("read()", "mmap", "read() again")):
        got = [list(s) for s in sums[k * len(names):(k + 1) * len(names)]]
        assert got == want, f"pass {k} ({how}) differs from the host's cksum"
    stats = [tuple(map(int, m)) for m in FREE.findall(res.transcript)]
    assert len(stats) == 3, res.transcript[-3000:]
    (_, free0, *_), (_, free1, pages1, _, _, _, ev1, disk1), (_, free2, pages2, _, _, _, ev2, disk2) = stats
    total_bytes = sum(int(w[1]) for w in want)
    assert ev1 > 0 and pages1 * 4096 < total_bytes, "the whole bundle fit in the cache: no pressure"
    assert disk1 >= total_bytes * 0.9, disk1          # the first pass read it from the disk
    assert ev2 > ev1                                 # and the later passes evicted again
    assert free0 == free1 == free2, (free0, free1, free2)   # every page back (cached ones count as free)


HUGE_MIB = 160   # more than a 160 MiB machine has free (about 130 MiB after the kernel)


def test_file_larger_than_free_memory_through_read_and_map():
    """One file larger than the free memory: summed through read() and
    through a map (cksum --mmap lets go of each window behind it: kai never
    evicts a mapped page), before and after its pages were evicted; then
    copied with write() (cp) and the copy summed both ways, before and
    after eviction. Every sum equals the host's; no panic, no page lost."""
    need_built("cksum", "free", "cp")
    import numpy
    big = os.path.join(WORK, "huge")
    os.makedirs(big, exist_ok=True)
    path = os.path.join(big, "HUGE.BIN")
    if not os.path.exists(path) or os.path.getsize(path) != HUGE_MIB << 20:
        data = numpy.random.default_rng(40).integers(0, 256, HUGE_MIB << 20, dtype=numpy.uint8).tobytes()
        with open(path, "wb") as f:
            f.write(data)
    img = os.path.join(WORK, "huge.img")
    subprocess.check_call([PY, os.path.join(ROOT, "tools", "mkfsimg.py"), "--out", img, "--size",
                           f"{2 * HUGE_MIB + 96}M", "--add-dir", f"BIG={big}"] + all_programs(),
                          stdout=subprocess.DEVNULL)
    want = subprocess.run(["cksum", "HUGE.BIN"], cwd=big, capture_output=True, text=True,
                          check=True).stdout.split()[:2]
    # The first mapped pass starts the prefetch kernel thread (its stack
    # stays): the first `free` comes after it.
    cmds = ["cksum /BIG/HUGE.BIN", "cksum --mmap /BIG/HUGE.BIN", "free", "cksum /BIG/HUGE.BIN",
            "cp /BIG/HUGE.BIN /copy", "cksum --mmap /copy", "cksum /BIG/HUGE.BIN", "cksum /copy",
            "cksum --mmap /copy", "free"]
    res = qemu_run.run(cmds, image=img, kernel=KERNEL, memory="160M", smp=1, timeout=600)
    assert res.ok, f"{res.error}\n{res.transcript[-3000:]}"
    assert "panic" not in res.transcript and "killed" not in res.transcript, res.transcript[-3000:]
    sums = re.findall(r"^(\d+) (\d+) (/\S+)$", res.transcript, re.M)
    assert [s[2] for s in sums] == ["/BIG/HUGE.BIN"] * 3 + ["/copy", "/BIG/HUGE.BIN", "/copy", "/copy"], sums
    for crc, size, name in sums:
        assert [crc, size] == want, f"{name}: {crc} {size}, the host's cksum says {want}"
    stats = [tuple(map(int, m)) for m in FREE.findall(res.transcript)]
    assert len(stats) == 2, res.transcript[-3000:]
    (_, free0, *_), (_, free1, pages1, mapped1, _, _, ev1, disk1) = stats
    assert pages1 * 4096 < (HUGE_MIB << 20), "the file fit in the cache: no pressure"
    assert ev1 * 4096 >= 2 * (HUGE_MIB << 20), ev1     # each pass after the first evicted what it read
    assert mapped1 == 0 and free0 == free1, (free0, free1, mapped1)   # every page back
