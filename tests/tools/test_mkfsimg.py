"""Tests of tools/mkfsimg.py: building, checking, corruption detection, errors."""
import hashlib
import os
import re
import struct
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "mkfsimg.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import mkfsimg as m  # noqa: E402

PY = "/usr/bin/python3"


def run(*args):
    return subprocess.run([PY, TOOL, *map(str, args)], capture_output=True, text=True)


def deterministic_file(path, size):
    """Content that differs in every 8-byte word: an offset-tagged pattern."""
    chunk_words = 1 << 17   # 1 MiB
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for start in range(0, size, chunk_words * 8):
            n = min(chunk_words * 8, size - start)
            base = start // 8
            words = struct.pack("<%dQ" % chunk_words,
                                *((base + i) * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF
                                  for i in range(chunk_words)))
            f.write(words[:n])
            h.update(words[:n])
    return h.hexdigest()


def lookup(chk, path):
    """Inode number of path, walking directories like the kernel's namei."""
    ino = m.ROOT_INO
    for part in [p for p in path.split("/") if p]:
        ip = chk.inode(ino)
        blocks = chk.file_blocks(ino, ip, bytearray(chk.geo.nblocks))
        data = chk.read_file(blocks, ip["size"])
        for k in range(0, len(data), m.DIRENT_SIZE):
            cino, raw = struct.unpack_from("<I60s", data, k)
            if cino and raw.split(b"\0", 1)[0].decode() == part:
                ino = cino
                break
        else:
            raise FileNotFoundError(path)
    return ino


def open_checker(img):
    chk = m.Checker(str(img))
    chk.read_super()
    chk.read_log()
    return chk


def file_hash(img, path):
    chk = open_checker(img)
    ino = lookup(chk, path)
    ip = chk.inode(ino)
    blocks = chk.file_blocks(ino, ip, bytearray(chk.geo.nblocks))
    h = hashlib.sha256()
    left = ip["size"]
    for b in blocks:
        data = chk.block(b) if b else bytes(m.BSIZE)
        h.update(data[:min(left, m.BSIZE)])
        left -= m.BSIZE
    return h.hexdigest(), ip["size"], blocks


@pytest.fixture
def tree(tmp_path):
    host = tmp_path / "host"
    (host / "sub" / "deeper").mkdir(parents=True)
    (host / "a.txt").write_text("hello kai\n")
    (host / "sub" / "b.bin").write_bytes(bytes(range(256)) * 100)
    (host / "sub" / "deeper" / "empty").write_bytes(b"")
    prog = tmp_path / "init"
    prog.write_bytes(b"\x7fELF" + b"\0" * 5000)
    return tmp_path, host, prog


@pytest.fixture
def image(tree):
    tmp, host, prog = tree
    img = tmp / "fs.img"
    r = run("--out", img, "--add-dir", f"AI/SMOL={host}", prog)
    assert r.returncode == 0, r.stderr
    return img


def test_build_and_check_lists_tree(image):
    r = run("--check", image)
    assert r.returncode == 0, r.stdout + r.stderr
    for path in ["/bin/init", "/dev", "/AI/SMOL/a.txt", "/AI/SMOL/sub/b.bin", "/AI/SMOL/sub/deeper/empty"]:
        assert path in r.stdout
    assert "ok" in r.stdout.splitlines()[-1]


def test_contents_round_trip(image, tree):
    _, host, _ = tree
    digest, size, _ = file_hash(image, "/AI/SMOL/sub/b.bin")
    assert size == 25600
    assert digest == hashlib.sha256((host / "sub" / "b.bin").read_bytes()).hexdigest()


def test_default_size_has_slack(image):
    chk = open_checker(image)
    # at least 64 MiB free for writing
    assert os.path.getsize(image) >= 64 << 20
    assert chk.geo.nblocks * m.BSIZE == os.path.getsize(image)


def test_programs_that_are_one_host_file_are_one_inode(tmp_path):
    """build/user/bin/aiprefix is a hard link to aitests (one program that
    dispatches on argv[0]): the image stores it once, with a link per name."""
    prog = tmp_path / "aitests"
    prog.write_bytes(b"\x7fELF" + bytes(range(256)) * 40)
    os.link(prog, tmp_path / "aiprefix")
    os.symlink("aitests", tmp_path / "aistorm")
    other = tmp_path / "init"
    other.write_bytes(prog.read_bytes())   # same bytes, another file: its own inode
    img = tmp_path / "fs.img"
    r = run("--out", img, "--size", "8M", prog, tmp_path / "aiprefix", tmp_path / "aistorm", other)
    assert r.returncode == 0, r.stderr
    r = run("--check", img)
    assert r.returncode == 0, r.stdout + r.stderr
    chk = open_checker(img)
    inos = {name: lookup(chk, f"/bin/{name}") for name in ["aitests", "aiprefix", "aistorm", "init"]}
    assert inos["aitests"] == inos["aiprefix"] == inos["aistorm"] != inos["init"]
    assert chk.inode(inos["aitests"])["nlink"] == 3
    assert chk.inode(inos["init"])["nlink"] == 1
    want = hashlib.sha256(prog.read_bytes()).hexdigest()
    assert file_hash(img, "/bin/aistorm")[0] == want == file_hash(img, "/bin/init")[0]
    # Stored once: with three copies instead, the image has two inodes and
    # two programs' blocks fewer free.
    copies = tmp_path / "copies"
    copies.mkdir()
    for name in ["aitests", "aiprefix", "aistorm"]:
        (copies / name).write_bytes(prog.read_bytes())
    img2 = tmp_path / "copies.img"
    r = run("--out", img2, "--size", "8M", *(copies / n for n in ["aitests", "aiprefix", "aistorm"]), other)
    assert r.returncode == 0, r.stderr

    def free(image):
        out = run("--check", image, "--quiet").stdout
        blocks, inodes = re.search(r"\((\d+) free\), \d+ inodes \((\d+) free\)", out).groups()
        return int(blocks), int(inodes)
    (b1, i1), (b2, i2) = free(img), free(img2)
    assert i1 - i2 == 2
    assert b1 - b2 == 2 * m.ceil_div(prog.stat().st_size, m.BSIZE)


def test_300mib_file(tmp_path):
    host = tmp_path / "models"
    host.mkdir()
    size = 300 * (1 << 20) + 12345          # not a block multiple
    want = deterministic_file(host / "big.bin", size)
    img = tmp_path / "fs.img"
    r = run("--out", img, "--add-dir", f"DATA={host}")
    assert r.returncode == 0, r.stderr
    r = run("--check", img)
    assert r.returncode == 0, r.stdout
    got, gsize, blocks = file_hash(img, "/DATA/big.bin")
    assert (got, gsize) == (want, size)
    # data blocks form one contiguous run (what the kernel's large reads need)
    assert blocks == list(range(blocks[0], blocks[0] + len(blocks)))
    # streamed into a sparse file: 64 MiB slack is not materialised
    assert os.stat(img).st_blocks * 512 < size + (32 << 20)


def test_big_sparse_image_over_4gib(tmp_path, tree):
    _, _, prog = tree
    img = tmp_path / "big.img"
    r = run("--out", img, "--size", "5G", prog)
    assert r.returncode == 0, r.stderr
    assert os.path.getsize(img) == 5 << 30
    r = run("--quiet", "--check", img)
    assert r.returncode == 0, r.stdout


def test_1gib_sparse_file(tmp_path):
    host = tmp_path / "h"
    host.mkdir()
    size = (1 << 30) + 3 * 4096 + 17
    with open(host / "huge", "wb") as f:
        f.write(b"head" * 1000)
        f.seek(size - 4)
        f.write(b"tail")
    img = tmp_path / "fs.img"
    r = run("--out", img, "--add-dir", f"D={host}")
    assert r.returncode == 0, r.stderr
    assert os.stat(img).st_blocks * 512 < 64 << 20      # zero chunks are not written
    r = run("--quiet", "--check", img)
    assert r.returncode == 0, r.stdout
    chk = open_checker(img)
    ino = lookup(chk, "/D/huge")
    ip = chk.inode(ino)
    assert ip["size"] == size and ip["dind"] != 0       # reaches the double-indirect map
    blocks = chk.file_blocks(ino, ip, bytearray(chk.geo.nblocks))
    assert chk.block(blocks[-1])[13:17] == b"tail"       # the last block holds 17 bytes
    assert chk.block(blocks[0])[:8] == b"headhead"


def test_max_file_size_reaches_4gib():
    assert m.MAXFILE_BLOCKS * m.BSIZE >= 4 << 30


# ------------------------------------------------------------ corruption
def patch(img, offset, data):
    with open(img, "r+b") as f:
        f.seek(offset)
        f.write(data)


def inode_offset(chk, ino):
    return (chk.geo.inodestart + ino // m.IPB) * m.BSIZE + (ino % m.IPB) * m.INODE_SIZE


def expect_problem(img, words):
    r = run("--check", img)
    assert r.returncode != 0, r.stdout
    out = (r.stdout + r.stderr).lower()
    assert any(w in out for w in words), out


def test_detects_bad_magic(image):
    patch(image, m.BSIZE, b"XXXX")
    expect_problem(image, ["bad magic"])


def test_detects_bad_version(image):
    patch(image, m.BSIZE + 4, struct.pack("<I", 99))
    expect_problem(image, ["bad version"])


def test_detects_bad_geometry(image):
    patch(image, m.BSIZE + 12, struct.pack("<I", 1 << 30))     # nblocks
    expect_problem(image, ["blocks", "range"])


def test_detects_cleared_bitmap_bit(image):
    chk = open_checker(image)
    _, _, blocks = file_hash(image, "/AI/SMOL/sub/b.bin")
    b = blocks[0]
    off = chk.geo.bmapstart * m.BSIZE + b // 8
    with open(image, "rb") as f:
        f.seek(off)
        byte = f.read(1)[0]
    patch(image, off, bytes([byte & ~(1 << (b % 8)) & 0xFF]))
    expect_problem(image, ["marked free"])


def test_detects_leaked_block(image):
    chk = open_checker(image)
    b = chk.geo.nblocks - 1
    off = chk.geo.bmapstart * m.BSIZE + b // 8
    patch(image, off, bytes([0xFF]))
    expect_problem(image, ["referenced by no inode"])


def test_detects_doubly_referenced_block(image):
    chk = open_checker(image)
    _, _, blocks = file_hash(image, "/AI/SMOL/sub/b.bin")
    ino = lookup(chk, "/AI/SMOL/a.txt")
    patch(image, inode_offset(chk, ino) + 16, struct.pack("<I", blocks[0]))
    expect_problem(image, ["referenced 2 times"])


def test_detects_wrong_link_count(image):
    chk = open_checker(image)
    ino = lookup(chk, "/AI/SMOL/a.txt")
    patch(image, inode_offset(chk, ino) + 6, struct.pack("<H", 5))
    expect_problem(image, ["nlink"])


def test_detects_entry_to_free_inode(image):
    chk = open_checker(image)
    ino = lookup(chk, "/AI/SMOL/a.txt")
    patch(image, inode_offset(chk, ino), bytes(m.INODE_SIZE))
    expect_problem(image, ["free or invalid inode"])


def test_detects_size_beyond_blocks(image):
    chk = open_checker(image)
    ino = lookup(chk, "/AI/SMOL/sub/b.bin")
    patch(image, inode_offset(chk, ino) + 8, struct.pack("<Q", 100))   # 25600 -> 100 bytes
    expect_problem(image, ["beyond its size"])


def test_detects_broken_dot_entry(image):
    chk = open_checker(image)
    ip = chk.inode(m.ROOT_INO)
    patch(image, ip["direct"][0] * m.BSIZE, struct.pack("<I", 3))
    expect_problem(image, ["'.'"])


# ------------------------------------------------------------ the log
def test_committed_log_is_replayed_virtually(image):
    chk = open_checker(image)
    ino = lookup(chk, "/AI/SMOL/a.txt")
    iblock = chk.geo.inodestart + ino // m.IPB
    blk = bytearray(chk.raw_block(iblock))
    # committed transaction: a.txt's nlink -> 7 (inconsistent once replayed)
    struct.pack_into("<H", blk, (ino % m.IPB) * m.INODE_SIZE + 6, 7)
    patch(image, (chk.geo.logstart + 1) * m.BSIZE, bytes(blk))
    hdr = struct.pack("<III", 1, m.log_checksum([iblock]), iblock)
    patch(image, chk.geo.logstart * m.BSIZE, hdr)
    r = run("--check", image)
    assert "committed transaction" in r.stdout
    assert r.returncode != 0 and "nlink 7" in r.stdout
    # a torn header (bad checksum) is ignored, as the kernel ignores it
    patch(image, chk.geo.logstart * m.BSIZE + 4, struct.pack("<I", 12345))
    r = run("--check", image)
    assert r.returncode == 0 and "torn" in r.stdout


# ------------------------------------------------------------ errors
def test_error_name_too_long(tree):
    tmp, host, prog = tree
    (host / ("n" * 60)).write_text("x")
    r = run("--out", tmp / "x.img", "--add-dir", f"D={host}", prog)
    assert r.returncode != 0
    assert "name too long" in r.stderr and "n" * 60 in r.stderr


def test_error_missing_host_dir(tree):
    tmp, _, prog = tree
    r = run("--out", tmp / "x.img", "--add-dir", f"D={tmp}/nope", prog)
    assert r.returncode != 0
    assert "does not exist" in r.stderr and "nope" in r.stderr


def test_error_image_too_small(tree):
    tmp, host, prog = tree
    (host / "big").write_bytes(b"\1" * (3 << 20))
    r = run("--out", tmp / "x.img", "--size", "2M", "--add-dir", f"D={host}", prog)
    assert r.returncode != 0
    assert "image too small" in r.stderr


def test_error_missing_program(tmp_path):
    r = run("--out", tmp_path / "x.img", tmp_path / "nope")
    assert r.returncode != 0 and "does not exist" in r.stderr


def test_check_missing_and_foreign_file(tmp_path):
    r = run("--check", tmp_path / "none.img")
    assert r.returncode != 0 and "does not exist" in r.stderr
    junk = tmp_path / "junk.img"
    junk.write_bytes(os.urandom(1 << 16))
    r = run("--check", junk)
    assert r.returncode != 0 and "bad magic" in r.stderr
