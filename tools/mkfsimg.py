#!/usr/bin/python3
"""Build or check a kai file-system image (format: docs/fs.md).

    mkfsimg.py --out IMG [--size SIZE] [--inodes N] [--add-dir GUEST=HOST ...] PROG...
    mkfsimg.py --check IMG

Building puts each PROG at /bin/<basename>, creates /dev, and copies each HOST
directory tree to /GUEST (intermediate directories are created). Every file's
data blocks are allocated as one contiguous run (its indirect blocks just in
front of it), so the kernel's large-read path can fetch it with few big device
requests. Files are streamed into a sparse image: nothing is built in memory
except metadata.

--check verifies the image (superblock geometry, every block referenced at most
once and the bitmap agreeing, sizes, link counts, directory structure), lists
the tree and exits non-zero if anything is wrong. A committed but not yet
installed log transaction is applied virtually first, as the kernel's mount
would do.
"""
import argparse
import os
import struct
import sys

# ---------------------------------------------------------------- format
BSIZE = 4096
MAGIC = 0x5346414B          # bytes "KAFS" on disk
VERSION = 1
SUPER_BLOCK = 1
LOG_START = 2
LOGSIZE = 256               # log data blocks; the log area is 1 header + LOGSIZE
NDIRECT = 26
NINDIRECT = BSIZE // 4      # block numbers per indirect block
MAXFILE_BLOCKS = NDIRECT + NINDIRECT + NINDIRECT * NINDIRECT
INODE_SIZE = 128
IPB = BSIZE // INODE_SIZE   # inodes per block
BPB = BSIZE * 8             # bitmap bits per block
DIRENT_SIZE = 64
NAME_MAX = 59
PATH_MAX = 256              # with its NUL
ROOT_INO = 1
MAX_BLOCKS = 1 << 23        # 32 GiB: the kernel's limit (see docs/fs.md)

T_DIR, T_FILE, T_DEVICE = 1, 2, 3
TYPE_NAMES = {T_DIR: "dir", T_FILE: "file", T_DEVICE: "dev"}

SUPER_FMT = "<12I"          # magic version bsize nblocks ninodes nlog logstart
                            # inodestart bmapstart datastart ndirect reserved
INODE_FMT = "<HHHHQ%dIII" % NDIRECT
assert struct.calcsize(INODE_FMT) == INODE_SIZE
LOGHDR_FMT = "<II"          # n, checksum; then n u32 block numbers


def log_checksum(blocks):
    """FNV-1a over n and the block list: a torn header is never replayed."""
    h = 0x811C9DC5
    for word in [len(blocks)] + list(blocks):
        for byte in struct.pack("<I", word):
            h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def ceil_div(a, b):
    return (a + b - 1) // b


def map_blocks(nblocks):
    """Indirect blocks needed to map a file of nblocks data blocks."""
    if nblocks <= NDIRECT:
        return 0
    rest = nblocks - NDIRECT
    if rest <= NINDIRECT:
        return 1
    rest -= NINDIRECT
    return 1 + 1 + ceil_div(rest, NINDIRECT)


class Geometry:
    def __init__(self, nblocks, ninodes, nlog=LOGSIZE + 1):
        self.nblocks = nblocks
        self.ninodes = ninodes
        self.nlog = nlog
        self.logstart = LOG_START
        self.inodestart = self.logstart + nlog
        self.ninodeblocks = ceil_div(ninodes, IPB)
        self.bmapstart = self.inodestart + self.ninodeblocks
        self.nbitmap = ceil_div(nblocks, BPB)
        self.datastart = self.bmapstart + self.nbitmap

    def pack(self):
        return struct.pack(SUPER_FMT, MAGIC, VERSION, BSIZE, self.nblocks, self.ninodes,
                           self.nlog, self.logstart, self.inodestart, self.bmapstart,
                           self.datastart, NDIRECT, 0)


class FsError(Exception):
    pass


# ---------------------------------------------------------------- building
class Node:
    def __init__(self, kind, host=None, size=0):
        self.kind = kind            # T_DIR or T_FILE
        self.host = host
        self.size = size
        self.children = {}          # name -> Node (directories)
        self.ino = 0
        self.nlink = 0


def parse_size(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().rstrip("B").rstrip("I")
    num, unit = t, ""
    if t and t[-1] in units and not t[-1].isdigit():
        num, unit = t[:-1], t[-1]
    try:
        value = int(float(num) * units[unit])
    except ValueError:
        raise FsError(f"bad size '{text}' (examples: 512M, 2G, 1048576)")
    if value <= 0:
        raise FsError(f"bad size '{text}'")
    return value


def check_name(name, where):
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) > NAME_MAX:
        raise FsError(f"name too long: '{where}' ({len(raw)} bytes, at most {NAME_MAX})")
    if not raw or b"/" in raw or b"\0" in raw or name in (".", ".."):
        raise FsError(f"bad name '{name}' in '{where}'")


def ensure_dir(root, parts, guest_path):
    node = root
    for i, part in enumerate(parts):
        check_name(part, "/" + "/".join(parts[: i + 1]))
        child = node.children.get(part)
        if child is None:
            child = Node(T_DIR)
            node.children[part] = child
        elif child.kind != T_DIR:
            raise FsError(f"/{'/'.join(parts[:i + 1])} is a file, but {guest_path} needs it to be a directory")
        node = child
    return node


def add_file(dirnode, name, host, guest_path):
    check_name(name, guest_path)
    if len(guest_path.encode("utf-8", "surrogateescape")) + 1 > PATH_MAX:
        raise FsError(f"path too long: '{guest_path}' (at most {PATH_MAX - 1} bytes)")
    if name in dirnode.children:
        raise FsError(f"{guest_path} given twice")
    size = os.path.getsize(host)
    if ceil_div(size, BSIZE) > MAXFILE_BLOCKS:
        raise FsError(f"{host} is too big for kai's file system ({size} bytes)")
    dirnode.children[name] = Node(T_FILE, host=host, size=size)


def add_tree(dirnode, host_dir, guest_prefix):
    with os.scandir(host_dir) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        guest = f"{guest_prefix}/{e.name}"
        if e.is_dir():
            check_name(e.name, guest)
            if len(guest.encode("utf-8", "surrogateescape")) + 1 > PATH_MAX:
                raise FsError(f"path too long: '{guest}' (at most {PATH_MAX - 1} bytes)")
            sub = dirnode.children.get(e.name)
            if sub is None:
                sub = dirnode.children[e.name] = Node(T_DIR)
            elif sub.kind != T_DIR:
                raise FsError(f"{guest} is both a file and a directory")
            add_tree(sub, e.path, guest)
        elif e.is_file():
            add_file(dirnode, e.name, e.path, guest)
        else:
            print(f"mkfsimg: skipping {e.path} (not a regular file or directory)", file=sys.stderr)


def walk(node, path="/"):
    """Yields (path, node) depth-first, parents before children."""
    yield path, node
    if node.kind == T_DIR:
        for name in sorted(node.children):
            child_path = path.rstrip("/") + "/" + name
            yield from walk(node.children[name], child_path)


def dir_size(node):
    return (2 + len(node.children)) * DIRENT_SIZE


def build_tree(progs, add_dirs):
    root = Node(T_DIR)
    bindir = ensure_dir(root, ["bin"], "/bin")
    ensure_dir(root, ["dev"], "/dev")
    # Programs that are one file on the host (hard links or symbolic links
    # to it, as build/user/bin/aiprefix is to aitests) are one inode in the
    # image too, with a directory entry per name: a program that dispatches
    # on argv[0] is stored once.
    same_file = {}
    for p in progs:
        if not os.path.isfile(p):
            raise FsError(f"program {p} does not exist")
        name = os.path.basename(p)
        st = os.stat(p)
        first = same_file.get((st.st_dev, st.st_ino))
        if first is not None:
            check_name(name, "/bin/" + name)
            if name in bindir.children:
                raise FsError(f"/bin/{name} given twice")
            bindir.children[name] = first
            continue
        add_file(bindir, name, p, "/bin/" + name)
        same_file[(st.st_dev, st.st_ino)] = bindir.children[name]
    for spec in add_dirs:
        if "=" not in spec:
            raise FsError(f"--add-dir wants GUEST=HOST, got '{spec}'")
        guest, host = spec.split("=", 1)
        if not os.path.isdir(host):
            raise FsError(f"host directory {host} (for --add-dir {spec}) does not exist")
        parts = [p for p in guest.split("/") if p]
        if not parts:
            raise FsError(f"--add-dir {spec}: empty guest path")
        target = ensure_dir(root, parts, "/" + "/".join(parts))
        add_tree(target, host, "/" + "/".join(parts))
    return root


def build(args):
    root = build_tree(args.progs, args.add_dir or [])
    # A node under several names (a hard link) is one inode: listed once.
    nodes = list({id(n): (p, n) for p, n in walk(root)}.values())
    ninodes_used = len(nodes)
    data_blocks = 0
    for _, n in nodes:
        size = dir_size(n) if n.kind == T_DIR else n.size
        nb = ceil_div(size, BSIZE)
        data_blocks += nb + map_blocks(nb)

    ninodes = args.inodes or max(1024, ninodes_used * 2 + 256)
    ninodes = ceil_div(ninodes + 1, IPB) * IPB     # inode 0 is never used
    if ninodes_used + 1 > ninodes:
        raise FsError(f"--inodes {args.inodes} is too few: the tree needs {ninodes_used}")

    def needed_blocks(nblocks):
        return Geometry(nblocks, ninodes).datastart + data_blocks

    if args.size:
        total = parse_size(args.size) // BSIZE
        need = needed_blocks(total)
        if need > total:
            raise FsError(f"image too small: the files need {need} blocks "
                          f"({ceil_div(need * BSIZE, 1 << 20)} MiB), --size {args.size} gives {total}")
    else:
        slack = (64 << 20) // BSIZE
        total = data_blocks + slack + 2048
        total = ceil_div(needed_blocks(total) + slack, 256) * 256   # whole MiB
    if total > MAX_BLOCKS:
        raise FsError(f"image of {total} blocks exceeds the kernel's limit of {MAX_BLOCKS} blocks (32 GiB)")

    geo = Geometry(total, ninodes)
    inodes = bytearray(geo.ninodeblocks * BSIZE)
    next_block = geo.datastart

    for i, (_, n) in enumerate(nodes):
        n.ino = i + ROOT_INO
    # link counts: one per naming entry, plus one per subdirectory (its ".."),
    # plus one for the root (it has no parent entry).
    root.nlink = 1
    for _, n in nodes:
        if n.kind == T_DIR:
            for c in n.children.values():
                c.nlink += 1
                if c.kind == T_DIR:
                    n.nlink += 1

    parent_of = {id(root): root}
    for _, n in nodes:
        for c in n.children.values():
            parent_of[id(c)] = n

    # Written beside the target and renamed over it at the end: a QEMU still
    # running the old image (a lab in the background, another test) keeps
    # reading the old file, never a half-written new one.
    partial = args.out + ".partial"
    with open(partial, "wb") as img:
        img.truncate(total * BSIZE)

        def write_block(bno, data):
            assert geo.datastart <= bno < total or bno < geo.datastart
            img.seek(bno * BSIZE)
            img.write(data)

        for path, n in nodes:
            if n.kind == T_DIR:
                ents = [(".", n.ino), ("..", parent_of[id(n)].ino)]
                ents += [(name, n.children[name].ino) for name in sorted(n.children)]
                content = b"".join(struct.pack("<I60s", ino, name.encode("utf-8", "surrogateescape"))
                                   for name, ino in ents)
                size = len(content)
            else:
                size = n.size
            nb = ceil_div(size, BSIZE)
            nmap = map_blocks(nb)
            map_start = next_block
            data_start = next_block + nmap
            next_block = data_start + nb
            blocks = list(range(data_start, data_start + nb))
            direct = blocks[:NDIRECT] + [0] * (NDIRECT - min(nb, NDIRECT))
            indirect = dindirect = 0
            maps = iter(range(map_start, map_start + nmap))
            rest = blocks[NDIRECT:]
            if rest:
                indirect = next(maps)
                write_block(indirect, struct.pack("<%dI" % NINDIRECT,
                            *(rest[:NINDIRECT] + [0] * (NINDIRECT - len(rest[:NINDIRECT])))))
                rest = rest[NINDIRECT:]
            if rest:
                dindirect = next(maps)
                level1 = []
                for k in range(0, len(rest), NINDIRECT):
                    chunk = rest[k:k + NINDIRECT]
                    ib = next(maps)
                    level1.append(ib)
                    write_block(ib, struct.pack("<%dI" % NINDIRECT, *(chunk + [0] * (NINDIRECT - len(chunk)))))
                write_block(dindirect, struct.pack("<%dI" % NINDIRECT, *(level1 + [0] * (NINDIRECT - len(level1)))))
            struct.pack_into(INODE_FMT, inodes, n.ino * INODE_SIZE, n.kind, 0, 0, n.nlink, size,
                             *direct, indirect, dindirect)
            if n.kind == T_DIR:
                img.seek(data_start * BSIZE)
                img.write(content)
            elif nb:
                img.seek(data_start * BSIZE)
                with open(n.host, "rb") as src:
                    left = size
                    while left > 0:
                        chunk = src.read(min(left, 4 << 20))
                        if not chunk:
                            raise FsError(f"{n.host} shrank while being copied")
                        if chunk.count(0) == len(chunk):
                            img.seek(len(chunk), os.SEEK_CUR)   # the fresh image reads as zeros: stay sparse
                        else:
                            img.write(chunk)
                        left -= len(chunk)

        write_block(SUPER_BLOCK, geo.pack())
        img.seek(geo.inodestart * BSIZE)
        img.write(inodes)
        bitmap = bytearray(geo.nbitmap * BSIZE)
        full, part = divmod(next_block, 8)
        bitmap[:full] = b"\xff" * full
        if part:
            bitmap[full] = (1 << part) - 1
        img.seek(geo.bmapstart * BSIZE)
        img.write(bitmap)
    os.replace(partial, args.out)
    used_mib = next_block * BSIZE / (1 << 20)
    print(f"mkfsimg: {args.out}: {total} blocks ({total * BSIZE >> 20} MiB), {ninodes} inodes, "
          f"{len(nodes)} used, {used_mib:.1f} MiB used")
    return 0


# ---------------------------------------------------------------- checking
class Checker:
    def __init__(self, path):
        self.path = path
        self.f = open(path, "rb")
        self.errors = []
        self.warnings = []
        self.overlay = {}

    def err(self, msg):
        self.errors.append(msg)

    def raw_block(self, bno):
        self.f.seek(bno * BSIZE)
        data = self.f.read(BSIZE)
        return data + bytes(BSIZE - len(data))

    def block(self, bno):
        return self.overlay.get(bno) or self.raw_block(bno)

    def read_super(self):
        size = os.path.getsize(self.path)
        if size < 2 * BSIZE:
            raise FsError(f"image is {size} bytes: too small to hold a superblock")
        sb = struct.unpack_from(SUPER_FMT, self.raw_block(SUPER_BLOCK))
        (magic, version, bsize, nblocks, ninodes, nlog, logstart, inodestart,
         bmapstart, datastart, ndirect, _) = sb
        if magic != MAGIC:
            raise FsError(f"bad magic 0x{magic:08x} (want 0x{MAGIC:08x}): not a kai image")
        if version != VERSION:
            raise FsError(f"bad version {version} (this tool knows {VERSION})")
        if bsize != BSIZE or ndirect != NDIRECT:
            raise FsError(f"block size {bsize} / ndirect {ndirect} not supported")
        if nblocks * BSIZE > size:
            raise FsError(f"superblock says {nblocks} blocks but the file holds {size // BSIZE}")
        if nblocks > MAX_BLOCKS or ninodes < 2 or ninodes > nblocks * IPB:
            raise FsError(f"sizes out of range: {nblocks} blocks, {ninodes} inodes")
        geo = Geometry(nblocks, ninodes, nlog)
        if nlog < 2 or (logstart, inodestart, bmapstart, datastart) != (
                geo.logstart, geo.inodestart, geo.bmapstart, geo.datastart) or datastart >= nblocks:
            raise FsError(f"inconsistent geometry: log {logstart}+{nlog}, inodes {inodestart}, "
                          f"bitmap {bmapstart}, data {datastart}, {nblocks} blocks")
        self.geo = geo

    def read_log(self):
        hdr = self.raw_block(self.geo.logstart)
        n, csum = struct.unpack_from(LOGHDR_FMT, hdr)
        if n == 0:
            return
        if n > self.geo.nlog - 1 or n > (BSIZE - 8) // 4:
            self.warnings.append(f"log header claims {n} blocks: ignored as torn (mount does the same)")
            return
        blocks = struct.unpack_from("<%dI" % n, hdr, 8)
        if log_checksum(blocks) != csum:
            self.warnings.append("log header checksum mismatch: torn header, ignored (mount does the same)")
            return
        for i, b in enumerate(blocks):
            if not (0 < b < self.geo.nblocks):
                self.err(f"committed log entry {i} names block {b} outside the image")
                continue
            self.overlay[b] = self.raw_block(self.geo.logstart + 1 + i)
        print(f"note: log holds a committed transaction of {n} blocks; checked as if replayed")

    def inode(self, ino):
        blk = self.block(self.geo.inodestart + ino // IPB)
        v = struct.unpack_from(INODE_FMT, blk, (ino % IPB) * INODE_SIZE)
        return {"type": v[0], "major": v[1], "minor": v[2], "nlink": v[3], "size": v[4],
                "direct": list(v[5:5 + NDIRECT]), "ind": v[5 + NDIRECT], "dind": v[6 + NDIRECT]}

    def file_blocks(self, ino, ip, refs):
        """Data block list (0 = hole) by file block index; counts every reference."""
        geo = self.geo

        def ref(b, what):
            if b == 0:
                return True
            if not (geo.datastart <= b < geo.nblocks):
                self.err(f"inode {ino}: {what} block {b} outside the data area")
                return False
            if refs[b] < 255:
                refs[b] += 1
            return True

        out = []
        for b in ip["direct"]:
            out.append(b if ref(b, "data") else 0)
        if ip["ind"] and ref(ip["ind"], "indirect"):
            for b in struct.unpack("<%dI" % NINDIRECT, self.block(ip["ind"])):
                out.append(b if ref(b, "data") else 0)
        else:
            out += [0] * NINDIRECT
        if ip["dind"] and ref(ip["dind"], "double-indirect"):
            for ib in struct.unpack("<%dI" % NINDIRECT, self.block(ip["dind"])):
                if ib and ref(ib, "indirect"):
                    for b in struct.unpack("<%dI" % NINDIRECT, self.block(ib)):
                        out.append(b if ref(b, "data") else 0)
                else:
                    out += [0] * NINDIRECT
        nb = ceil_div(ip["size"], BSIZE)
        if nb > MAXFILE_BLOCKS:
            self.err(f"inode {ino}: size {ip['size']} exceeds the largest file")
        beyond = [i for i, b in enumerate(out) if b and i >= nb]
        if beyond:
            self.err(f"inode {ino}: {len(beyond)} blocks mapped beyond its size {ip['size']}")
        return out[:nb]

    def read_file(self, blocks, size):
        data = bytearray()
        for b in blocks:
            data += self.block(b) if b else bytes(BSIZE)
        return bytes(data[:size])

    def run(self, quiet=False):
        self.read_super()
        geo = self.geo
        self.read_log()
        refs = bytearray(geo.nblocks)
        inodes = {}
        for ino in range(1, geo.ninodes):
            ip = self.inode(ino)
            if ip["type"] == 0:
                if ip["nlink"] or ip["size"]:
                    self.err(f"inode {ino}: free but has nlink {ip['nlink']} size {ip['size']}")
                continue
            if ip["type"] not in TYPE_NAMES:
                self.err(f"inode {ino}: bad type {ip['type']}")
                continue
            ip["blocks"] = self.file_blocks(ino, ip, refs)
            inodes[ino] = ip
        if ROOT_INO not in inodes or inodes[ROOT_INO]["type"] != T_DIR:
            raise FsError("root inode 1 is not a directory")

        links = {ino: 0 for ino in inodes}
        links[ROOT_INO] = 1
        listing = []
        seen_dirs = set()
        stack = [("/", ROOT_INO, ROOT_INO)]
        while stack:
            path, ino, parent = stack.pop()
            if ino in seen_dirs:
                self.err(f"{path}: directory reachable twice")
                continue
            seen_dirs.add(ino)
            ip = inodes[ino]
            if ip["size"] % DIRENT_SIZE:
                self.err(f"{path}: directory size {ip['size']} is not a multiple of {DIRENT_SIZE}")
            data = self.read_file(ip["blocks"], ip["size"])
            names = set()
            children = []
            for k in range(0, len(data) - DIRENT_SIZE + 1, DIRENT_SIZE):
                cino, rawname = struct.unpack_from("<I60s", data, k)
                idx = k // DIRENT_SIZE
                if cino == 0:
                    if idx < 2:
                        self.err(f"{path}: missing '.' or '..' entry")
                    continue
                if b"\0" not in rawname:
                    self.err(f"{path}: entry {idx} has an unterminated name")
                    continue
                name = rawname.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
                if idx == 0 and (name != "." or cino != ino):
                    self.err(f"{path}: first entry is not '.' -> itself")
                if idx == 1 and (name != ".." or cino != parent):
                    self.err(f"{path}: second entry is not '..' -> its parent (inode {parent})")
                if idx >= 2 and name in (".", ".."):
                    self.err(f"{path}: extra '{name}' entry")
                    continue
                if not name or "/" in name:
                    self.err(f"{path}: bad name {rawname!r}")
                    continue
                if name in names:
                    self.err(f"{path}: duplicate name '{name}'")
                names.add(name)
                if cino >= geo.ninodes or cino not in inodes:
                    self.err(f"{path}/{name}: refers to free or invalid inode {cino}")
                    continue
                if name == ".":
                    continue
                if name == "..":
                    if ino != ROOT_INO:
                        links[cino] += 1
                    continue
                links[cino] += 1
                children.append((name, cino))
            for name, cino in sorted(children, reverse=True):
                cpath = path.rstrip("/") + "/" + name
                if inodes[cino]["type"] == T_DIR:
                    stack.append((cpath, cino, ino))
                else:
                    listing.append((cpath, inodes[cino]))
            listing.append((path, ip))

        for ino, ip in inodes.items():
            if links[ino] == 0 and ino not in seen_dirs:
                if ip["nlink"] == 0:
                    self.warnings.append(f"inode {ino}: orphan (nlink 0, unreferenced); mount frees it")
                else:
                    self.err(f"inode {ino}: allocated with nlink {ip['nlink']} but not in any directory")
            elif links[ino] != ip["nlink"]:
                self.err(f"inode {ino}: nlink {ip['nlink']} but {links[ino]} directory references")

        # bitmap: metadata and referenced blocks used, everything else free
        bitmap = b"".join(self.block(geo.bmapstart + i) for i in range(geo.nbitmap))
        free = 0
        for b in range(geo.nblocks):
            used = (bitmap[b >> 3] >> (b & 7)) & 1
            if b < geo.datastart:
                if not used:
                    self.err(f"metadata block {b} marked free in the bitmap")
                continue
            r = refs[b]
            if r > 1:
                self.err(f"block {b} referenced {r} times")
            if r and not used:
                self.err(f"block {b} in use but marked free in the bitmap")
            elif not r and used:
                self.err(f"block {b} marked used in the bitmap but referenced by no inode")
            free += not used
            if len(self.errors) > 50:
                break

        if not quiet:
            for path, ip in sorted(listing):
                print(f"{TYPE_NAMES[ip['type']]:4} {ip['size']:12} {path}")
        print(f"{geo.nblocks} blocks ({free} free), {geo.ninodes} inodes ({geo.ninodes - 1 - len(inodes)} free)")
        for w in self.warnings:
            print("warning: " + w)
        for e in self.errors[:50]:
            print("error: " + e)
        if self.errors:
            print(f"mkfsimg: {self.path}: {len(self.errors)} problem(s)")
            return 1
        print(f"mkfsimg: {self.path}: ok")
        return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="build or check a kai file-system image")
    ap.add_argument("--out", help="image to write")
    ap.add_argument("--size", help="image size (e.g. 512M, 2G); default: data + metadata + 64 MiB")
    ap.add_argument("--inodes", type=int, help="number of inodes (default: max(1024, 2*files+256))")
    ap.add_argument("--add-dir", action="append", metavar="GUEST=HOST",
                    help="copy the HOST directory tree to /GUEST")
    ap.add_argument("--check", metavar="IMG", help="verify an image and list its tree")
    ap.add_argument("--quiet", action="store_true", help="with --check: do not list the tree")
    ap.add_argument("progs", nargs="*", help="programs to put in /bin")
    args = ap.parse_args(argv)
    try:
        if args.check:
            if not os.path.isfile(args.check):
                raise FsError(f"{args.check} does not exist")
            return Checker(args.check).run(args.quiet)
        if not args.out:
            ap.error("need --out IMG or --check IMG")
        return build(args)
    except FsError as e:
        print(f"mkfsimg: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"mkfsimg: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
