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

from kai_boot import KERNEL, ROOT, all_programs, make_image, need_built, qemu_run

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
