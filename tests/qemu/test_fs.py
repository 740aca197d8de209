"""The file system keeps its promises: Unix semantics and a full disk
(fstest); files of 300 MiB and 1 GiB (sparse) read back with the right
checksum; sequential reads of 128 MiB in large and small buffers return
every byte (their bandwidth against memcpy is printed and recorded, a
benchmark figure that no verdict depends on); a machine killed while writing leaves an
image that mounts and checks clean (the log); and a corrupt image is refused
with a message naming what is wrong, never a panic."""
import os
import re
import shutil
import struct
import subprocess
import sys

import pytest

from kai_boot import KERNEL, MKFS, PYTHON, ROOT, all_programs, need_built, output_of, qemu_run

sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from test_mkfsimg import deterministic_file  # noqa: E402

RESULTS = os.path.join(ROOT, "build", "test-results")
HUGE = (1 << 30) + 12345
NEEDED = ["init", "sh", "ls", "cksum", "readbench", "fswrite_loop", "fstest", "df"]


def programs():
    need_built(*NEEDED)
    return all_programs()


def mkfs(out, *args):
    r = subprocess.run([PYTHON, MKFS, "--out", str(out), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def check_image(img):
    r = subprocess.run([PYTHON, MKFS, "--quiet", "--check", str(img)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


@pytest.fixture(scope="module")
def small_image(tmp_path_factory):
    img = tmp_path_factory.mktemp("fs") / "small.img"
    mkfs(img, *programs())
    res = qemu_run.run([], image=str(img), kernel=KERNEL, snapshot=True, boot_timeout=90)
    # The kernel under test not booting is a failure of every test here, not
    # missing data: report it as such.
    if not res.booted:
        pytest.fail("the kernel does not boot to a shell: " + (res.error or "") +
                    "\n" + res.transcript[-1500:])
    return img


@pytest.fixture(scope="module")
def big_image(tmp_path_factory, small_image):
    d = tmp_path_factory.mktemp("big")
    data = d / "data"
    data.mkdir()
    deterministic_file(data / "big300", 300 * (1 << 20) + 12345)
    deterministic_file(data / "f128", 128 * (1 << 20))
    with open(data / "huge", "wb") as f:      # 1 GiB, sparse on the host and in the image
        f.write(b"head" * 100000)
        f.seek(HUGE - 4)
        f.write(b"tail")
    img = mkfs(d / "big.img", "--add-dir", f"D={data}", *programs())
    return img, data


def test_unix_semantics_and_full_disk(small_image, tmp_path):
    img = shutil.copy(small_image, tmp_path / "sem.img")
    res = qemu_run.run(["fstest -nospace"], image=str(img), kernel=KERNEL, timeout=600)
    assert res.ok, f"{res.error}\n{res.transcript[-3000:]}"
    out = output_of(res.transcript, "fstest -nospace")
    assert "fstest: " in out and " 0 failed" in out, out
    rc, report = check_image(img)
    assert rc == 0, report


def test_read_300mib_file_checksum(big_image):
    img, data = big_image
    host = subprocess.run(["cksum", "big300"], cwd=data, capture_output=True, text=True, check=True)
    want_crc, want_size = host.stdout.split()[:2]
    res = qemu_run.run(["cksum /D/big300"], image=str(img), kernel=KERNEL, snapshot=True, timeout=600)
    assert res.ok, f"{res.error}\n{res.transcript[-2000:]}"
    out = output_of(res.transcript, "cksum /D/big300").split()
    assert out[:2] == [want_crc, want_size], out


def test_read_1gib_file(big_image):
    img, data = big_image
    host = subprocess.run(["cksum", "huge"], cwd=data, capture_output=True, text=True, check=True)
    res = qemu_run.run(["stat /D/huge", "cksum /D/huge"], image=str(img), kernel=KERNEL,
                       snapshot=True, timeout=900)
    assert res.ok, f"{res.error}\n{res.transcript[-2000:]}"
    assert f"size {HUGE}" in output_of(res.transcript, "stat /D/huge")
    out = output_of(res.transcript, "cksum /D/huge").split()
    assert out[:2] == host.stdout.split()[:2], out


def test_readbench_128mib(big_image):
    """Sequential reads of a 128 MiB file with 1 MiB and 64 KiB buffers read
    every byte and end. Their bandwidth against the guest's memcpy (the
    design target is half of memcpy with 1 MiB reads, docs/fs.md) depends
    on how busy the host is, so it is printed and recorded in
    build/test-results/readbench.txt, never asserted: speed is measured by
    benchmarks, not decided by tests."""
    img, _ = big_image
    cmds = ["readbench /D/f128 1M 5", "readbench /D/f128 64K"]
    # Not a snapshot: reads then go to the raw image, as with `make qemu`.
    res = qemu_run.run(cmds, image=str(img), kernel=KERNEL, timeout=600)
    assert res.ok, f"{res.error}\n{res.transcript[-2000:]}"
    ratios = {}
    lines = []
    for cmd in cmds:
        out = output_of(res.transcript, cmd)
        lines.append(out.strip())
        m = re.search(r"134217728 bytes in \d+ ms with a (\d+)-byte buffer: ([\d.]+) MiB/s", out)
        assert m, out
        ratio = re.search(r"ratio: ([\d.]+)", out)
        memcpy = re.search(r"memcpy of 64 MiB: ([\d.]+) MiB/s", out)
        assert ratio and memcpy and float(m.group(2)) > 0, out
        size = int(m.group(1))
        ratios[size] = max(ratios.get(size, 0.0), float(ratio.group(1)))
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "readbench.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    assert sorted(ratios) == [1 << 16, 1 << 20], lines


def test_crash_while_writing_leaves_consistent_image(small_image, tmp_path):
    img = shutil.copy(small_image, tmp_path / "crash.img")
    # The loop never ends: run() times out and kills QEMU mid-write.
    res = qemu_run.run(["fswrite_loop"], image=str(img), kernel=KERNEL, timeout=15, halt=False)
    assert res.booted, res.transcript[-2000:]
    assert res.timed_out_command == "fswrite_loop", res.transcript[-2000:]
    assert not res.panicked, res.transcript[-2000:]
    assert "fswrite_loop: round" in res.transcript, "the loop made no progress before the kill"
    rc, report = check_image(img)
    assert rc == 0, report
    res = qemu_run.run(["fswrite_loop -v", "ls /w"], image=str(img), kernel=KERNEL, timeout=120)
    assert res.ok, f"{res.error}\n{res.transcript[-2000:]}"
    out = output_of(res.transcript, "fswrite_loop -v")
    assert re.search(r"verified [1-9]\d* files, 0 damaged: ok", out), out
    rc, report = check_image(img)
    assert rc == 0, report


def test_disk_write_error_in_a_commit_makes_the_fs_read_only(small_image, tmp_path, monkeypatch):
    # QEMU's read-only drive fails every write: the first commit fails, the
    # kernel says so once, and from then on changes are refused with EROFS
    # while reads still work (docs/fs.md, "The log").
    img = shutil.copy(small_image, tmp_path / "ro.img")
    monkeypatch.setattr(qemu_run.disk_models, "drive_options", lambda name: ",readonly=on")
    res = qemu_run.run(["mkdir /ro1", "mkdir /ro2", "echo hi > /ro3", "ls /bin/sh"],
                       image=str(img), kernel=KERNEL, timeout=30)
    assert res.ok and not res.panicked, f"{res.error}\n{res.transcript[-2000:]}"
    assert res.transcript.count("fs: disk write failed during a log commit") == 1, res.transcript[-2000:]
    assert "the file system is read-only from now on" in res.transcript
    for command in ("mkdir /ro1", "mkdir /ro2", "echo hi > /ro3"):
        assert "Read-only file system" in output_of(res.transcript, command), res.transcript[-2000:]
    assert re.search(r"file +\d+ +\d+ .*sh", output_of(res.transcript, "ls /bin/sh")), res.transcript[-2000:]
    rc, report = check_image(img)
    assert rc == 0, report


@pytest.mark.parametrize("offset,value,message", [
    (4096, b"JUNK", "bad magic"),
    (4096 + 4, struct.pack("<I", 7), "bad version"),
    (4096 + 12, struct.pack("<I", 1 << 22), "the disk has only"),
    (4096 + 32, struct.pack("<I", 9999), "inconsistent layout"),
])
def test_corrupt_image_is_refused_without_panic(small_image, tmp_path, offset, value, message):
    img = shutil.copy(small_image, tmp_path / "bad.img")
    with open(img, "r+b") as f:
        f.seek(offset)
        f.write(value)
    res = qemu_run.run([], image=str(img), kernel=KERNEL, snapshot=True, boot_timeout=25)
    assert not res.panicked, res.transcript[-2000:]
    assert "fs: cannot mount: " in res.transcript and message in res.transcript, res.transcript[-2000:]
