#!/usr/bin/python3
"""Gives every code section of a RISC-V object file the alignment that keeps
it inside one 4 KiB page.

    page_fit.py OBJ...

kai compiles with -ffunction-sections, so each function is a section of its
own. This sets a code section's alignment to the smallest power of two at or
above its size, at most 4096 (it never lowers an alignment). A section of S
bytes that starts at a multiple of 2^k >= S cannot cross a multiple of 2^k,
and 4096 is a multiple of 2^k: so every function of at most 4 KiB lies
inside one page, with all its loops and instructions. The linker scripts
sort code by alignment (SORT_BY_ALIGNMENT), which packs the padded sections
with little waste. Linker relaxation only shrinks code, so the property
survives the link; tools/check_layout.py verifies the linked programs.

Why: QEMU links two translated blocks directly only within one guest page
(docs/runtime.md, "Code layout"). Edits the files in place; standard
library only.
"""
import struct
import sys

PAGE = 4096
SHT_PROGBITS = 1
SHF_EXECINSTR = 0x4
# Elf64_Shdr: name, type, flags, addr, offset, size, link, info, addralign, entsize
SHDR = struct.Struct("<IIQQQQIIQQ")
ADDRALIGN_OFFSET = 48


def page_alignment(size):
    """The smallest power of two >= size, capped at one page."""
    align = 1
    while align < size and align < PAGE:
        align *= 2
    return align


def fit(path):
    """Raises the alignment of every code section of one object; returns how many changed."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit(f"page_fit: {path}: not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    changed = 0
    for i in range(shnum):
        off = shoff + i * shentsize
        _, stype, flags, _, _, size, _, _, align, _ = SHDR.unpack_from(data, off)
        if stype != SHT_PROGBITS or not flags & SHF_EXECINSTR or size == 0:
            continue
        want = page_alignment(size)
        if want > align:
            struct.pack_into("<Q", data, off + ADDRALIGN_OFFSET, want)
            changed += 1
    if changed:
        with open(path, "wb") as f:
            f.write(data)
    return changed


def main(argv):
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    for path in argv:
        fit(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
