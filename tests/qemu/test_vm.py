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

from kai_boot import KERNEL, PYTHON as PY, ROOT, all_programs, make_image, need_built, need_model, qemu_run

SMOL = os.path.join(ROOT, "build", "assets", "SMOL")
WORK = os.path.join(ROOT, "build", "test-vm")
FREE = re.compile(r"^memory: total=(\d+) free=(\d+) .*\n.*\npage cache: pages=(\d+) mapped=(\d+) hits=(\d+) "
                  r"misses=(\d+) evictions=(\d+) disk_bytes=(\d+)", re.M)


DF_DISK = re.compile(r"^disk: +reads=(\d+) read_bytes=(\d+) ", re.M)


def test_bundle_bigger_than_the_cache_reads_back_equal():
    """The SMOL bundle (130 MiB) on a 160 MiB machine, summed through read(),
    a map and read() again: every sum equals the host's, pages are evicted
    and all come back. Then at the memory floor (`oomtest hold &` takes all
    a process may: the page cache and read-ahead get nothing), a big read
    still reaches the disk in multi-block requests: the large-read path's
    segment table comes from the kernel's reserve (mem::For::Kernel), not
    from the floor it would share with the cache (then: one 4 KiB block per
    request, 1.2 MB/s)."""
    need_built("cksum", "free", "oomtest", "df")
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
            f"cksum {files}", "free", "oomtest hold &", "sleep 1", "df", "cksum /BIG/L00.BIN", "df"]
    res = qemu_run.run(cmds, image=img, kernel=KERNEL, memory="160M", smp=1, timeout=600)
    assert res.ok, f"{res.error}\n{res.transcript[-3000:]}"
    assert "panic" not in res.transcript
    sums = [m for m in re.findall(r"^(\d+) (\d+) /BIG/", res.transcript, re.M)]
    sums = sums[1:]   # the warm-up
    floor_sum = sums.pop()   # the read at the floor
    assert list(floor_sum) == want[names.index("L00.BIN")], "the read at the floor differs from the host's cksum"
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
    at = res.transcript.index("$ cksum /BIG/L00.BIN\n", res.transcript.index("$ oomtest hold &"))
    assert "oomtest: holding" in res.transcript[:at], "oomtest hold had not taken the memory before the read"
    (reads0, bytes0), (reads1, bytes1) = [tuple(map(int, m)) for m in DF_DISK.findall(res.transcript)]
    size = int(want[names.index("L00.BIN")][1])
    assert bytes1 - bytes0 >= size, (bytes1 - bytes0, size)   # from the disk: nothing was cached
    per_request = (bytes1 - bytes0) / (reads1 - reads0)
    assert per_request >= 64 * 1024, f"{per_request / 1024:.1f} KiB a disk request at the memory floor"


BCACHE = re.compile(r"^buffer cache: blocks=(\d+) disk_reads=(\d+)$", re.M)


def test_drop_caches_makes_the_next_run_cold():
    """`free --drop-caches` leaves nothing warm: the page cache's unmapped
    pages go, and so do the buffer cache's blocks nobody holds (directories,
    inodes, small files), so the next run reads them from the disk again;
    without a drop the same run reads nothing. (A cold start that found the
    metadata cached made the throttled-disk bound of test_bench.py pass or
    fail by chance.)"""
    need_built("free", "cat")
    os.makedirs(os.path.join(WORK, "note"), exist_ok=True)
    text = "".join(f"line {i} of a small file read block by block\n" for i in range(200))
    with open(os.path.join(WORK, "note", "NOTE.TXT"), "w") as f:
        f.write(text)
    img = make_image(os.path.join(WORK, "note.img"), all_programs(), [("D", os.path.join(WORK, "note"))])
    cmds = ["cat /D/NOTE.TXT", "free", "cat /D/NOTE.TXT", "free", "free --drop-caches", "cat /D/NOTE.TXT", "free"]
    res = qemu_run.run(cmds, image=img, kernel=KERNEL, snapshot=True, smp=1, timeout=120)
    assert res.ok, f"{res.error}\n{res.transcript[-3000:]}"
    assert "panic" not in res.transcript
    assert res.transcript.count("line 199 of a small file") == 3, res.transcript[-3000:]
    stats = [tuple(map(int, m)) for m in BCACHE.findall(res.transcript)]
    assert len(stats) == 4, res.transcript[-3000:]
    (blocks1, reads1), (blocks2, reads2), (blocks3, reads3), (_, reads4) = stats
    assert blocks1 > 0 and reads2 == reads1, stats        # warm: `cat` and `free` again read nothing
    assert blocks3 < blocks2 and reads3 == reads2, stats  # the drop forgets blocks, reads none
    # Cold: /bin/cat, /D and NOTE.TXT (about 8 blocks) come from the disk again.
    assert reads4 - reads3 >= len(text) // 4096, stats


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


PROMPT = "504 3575 282"
LLMRUN_MAP = re.compile(r" major_faults=(\d+) minor_faults=(\d+) disk_bytes=(\d+) resident_kib=(\d+) "
                        r"shared_kib=(\d+)")
PINNED = re.compile(r"^ai service: pinned=(\d+) pages", re.M)


def loaded_files(bundle):
    """The files the AI service reads into its region (engine.cpp's
    bundle_files, for a Llama bundle): CFG, EMB, NRM, ROP and every layer."""
    return [f for f in os.listdir(bundle) if re.fullmatch(r"(CFG|EMB|NRM|ROP|L\d\d)\.BIN", f)]


AISTAT_MODEL = re.compile(r"^  (\w+) .* ready .* pinned_pages=(\d+) pinned_bytes=(\d+)$", re.M)


def pages_of(bundle):
    """The pages the AI service pins for a bundle: each loaded file on pages of its own."""
    return sum((os.path.getsize(os.path.join(bundle, f)) + 4095) // 4096 for f in loaded_files(bundle))


def test_one_copy_of_a_loaded_model():
    """One copy of a model (docs/virtual-memory.md): the AI service's weights
    are the bundles' page-cache pages, pinned. One boot of SMOL and a tiny
    model (TINY, loaded after SMOL): a write through a descriptor of one of
    TINY's files opened while TINY was still loading is refused (EBUSY) once
    it is loaded; every page of every file the service loaded is pinned
    (free's pinned= is exactly their page count, and aistat's per-model
    pinned pages and bytes are each bundle's and add up to it); `llmrun
    --mmap` of SMOL reads nothing from the disk and maps the service's pages
    (minor faults only), also after `free --drop-caches` (the pinned pages
    are not evicted); read() of the bundle adds no second copy to the cache;
    every run gives the service's tokens; a fork or sbrk that would need the
    pinned pages is refused (ENOMEM, oomtest pinned); writing or truncating a
    loaded file is refused (EBUSY); deleting one is allowed, unpins only its
    pages, the service still answers the same, and a new file of that name
    is writable."""
    need_built("free", "llmrun", "ai", "rm", "echo", "aistat", "oomtest", "modelwrite")
    if not os.path.exists(os.path.join(SMOL, "L00.BIN")):
        pytest.skip("build/assets/SMOL missing: run `make build/fs-smol.img`")
    tiny = need_model("tiny-llama")
    os.makedirs(WORK, exist_ok=True)
    img = make_image(os.path.join(WORK, "two-models.img"), all_programs(), [("AI/SMOL", SMOL), ("AI/TINY", tiny)])
    sizes = {f: os.path.getsize(os.path.join(SMOL, f)) for f in loaded_files(SMOL)}
    smol_pages, tiny_pages = pages_of(SMOL), pages_of(tiny)
    bundle_pages = smol_pages + tiny_pages
    last = max(f for f in sizes if f.startswith("L"))
    tiny_last = max(f for f in loaded_files(tiny) if f.startswith("L"))   # pinned last of all
    run = f"llmrun --int8 --timing --predict 6 {PROMPT}"
    ask = f"ai --model SMOL --int8 --predict 6 {PROMPT}"
    # modelwrite first, while the loader is still busy with SMOL; then `ai`,
    # which waits for SMOL to be loaded.
    cmds = [f"modelwrite /AI/TINY/{tiny_last} TINY", ask, "free", "aistat", f"{run} --mmap", f"{run} --mmap",
            "free --drop-caches", f"{run} --mmap", run, run, "free", "echo x > /AI/SMOL/CFG.BIN",
            f"echo x >> /AI/SMOL/{last}", "oomtest pinned", f"rm /AI/SMOL/{last}", "free", ask,
            f"echo new > /AI/SMOL/{last}", f"cat /AI/SMOL/{last}"]
    res = qemu_run.run(cmds, image=img, kernel=KERNEL, snapshot=True, smp=2, timeout=300, boot_timeout=120)
    assert res.ok, f"{res.error}\n{res.transcript[-3000:]}"
    out = res.transcript
    assert "panic" not in out and "killed" not in out, out[-3000:]

    # The transcript's sections, one per command, in order.
    parts, at = [], 0
    for c in cmds:
        at = out.index("$ " + c, at)
        end = out.find("\n$ ", at + 2)
        parts.append(out[at:end if end > 0 else len(out)])
        at += 2
    # Opened before the load (the loader had not reached TINY), refused after it.
    assert re.search(rf"modelwrite: opened /AI/TINY/{tiny_last} while TINY was (loading|not listed yet)",
                     parts[0]), f"the open did not come before TINY's load:\n{parts[0]}"
    assert "modelwrite: write after the load: Device or resource busy" in parts[0], parts[0]
    assert "modelwrite: shared writable map after the load: Device or resource busy" in parts[0], parts[0]
    want = [line for line in parts[1].splitlines() if re.fullmatch(r"\d+( \d+)+", line)]
    assert len(want) == 1, parts[1]
    for i in (4, 5, 7, 8, 9, 16):
        assert want[0] in parts[i].splitlines(), f"{cmds[i]}: not the service's tokens\n{parts[i]}"
    pinned = [int(m) for p in (parts[2], parts[6], parts[10], parts[15]) for m in PINNED.findall(p)]
    assert pinned[:3] == [bundle_pages] * 3, (pinned, bundle_pages)   # every loaded page, pinned, kept
    # aistat: each model's pinned pages (the service's count, at load) are
    # its bundle's, in pages and bytes, and they add up to free's line (the
    # page cache's count).
    stat = {name: (int(p), int(b)) for name, p, b in AISTAT_MODEL.findall(parts[3])}
    assert stat == {"SMOL": (smol_pages, smol_pages * 4096), "TINY": (tiny_pages, tiny_pages * 4096)}, parts[3]
    assert sum(p for p, _ in stat.values()) == pinned[0], (stat, pinned)
    for i in (4, 5, 7):   # mmap: the service's pages, no disk, no major fault
        m = LLMRUN_MAP.search(parts[i])
        assert m, parts[i]
        major, minor, disk, resident, shared = map(int, m.groups())
        assert major == 0 and disk == 0 and minor > 0, f"{cmds[i]}: {m.group(0)}"
        assert shared * 1024 >= sum(sizes.values()) * 0.98, f"{cmds[i]}: the weights are not shared: {m.group(0)}"
    # read() of the bundle twice: served from the service's pages, so the
    # cache holds nothing of the bundle beyond them (no second copy).
    cache = FREE.search(parts[10])
    assert cache, parts[10]
    assert int(cache.group(3)) - bundle_pages < smol_pages // 20, (cache.groups(), bundle_pages)
    assert "sh: /AI/SMOL/CFG.BIN: Device or resource busy" in parts[11], parts[11]
    assert f"sh: /AI/SMOL/{last}: Device or resource busy" in parts[12], parts[12]
    # The memory policy does not count pinned pages as reclaimable.
    assert "oomtest: PASS" in parts[13], parts[13]
    assert re.search(r"oomtest: fork of a \d+ MiB process: Out of memory", parts[13]), parts[13]
    assert re.search(r"oomtest: sbrk of \d+ MiB more: Out of memory", parts[13]), parts[13]
    # Deleted: the cache lets go of that file's pages, the service keeps them.
    assert pinned[3] == bundle_pages - (sizes[last] + 4095) // 4096, pinned
    assert "new" in parts[18].splitlines(), parts[18]
