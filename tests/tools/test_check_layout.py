"""kai's code keeps QEMU's page rule: in the kernel and in every user program,
no instruction straddles a 4 KiB page, no loop of a function that fits a page
(and of no hot function) leaves its page, and every hot function fits one
page (tools/check_layout.py, docs/runtime.md "Code layout"). Also proves the
check itself catches both faults, on a small program laid out badly on
purpose, and that tools/page_fit.py gives sections the alignment that keeps
them inside a page."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import check_layout  # noqa: E402
import page_fit  # noqa: E402

CROSS = "riscv64-linux-gnu-"
KERNEL = os.path.join(ROOT, "build", "kernel", "kernel.elf")
USER_BIN = os.path.join(ROOT, "build", "user", "bin")


def need_toolchain():
    if not shutil.which(CROSS + "objdump") or not shutil.which(CROSS + "as"):
        pytest.skip("the riscv64-linux-gnu binutils are not installed")


def built_programs():
    if not os.path.exists(KERNEL) or not os.path.isdir(USER_BIN):
        pytest.skip("build/kernel/kernel.elf or build/user/bin missing: run make all first")
    progs = [KERNEL]
    for name in sorted(os.listdir(USER_BIN)):
        path = os.path.join(USER_BIN, name)
        with open(path, "rb") as f:
            if f.read(4) == b"\x7fELF" and os.access(path, os.X_OK):
                progs.append(path)
    return progs


def test_kernel_and_every_user_program_keep_code_inside_pages():
    need_toolchain()
    progs = built_programs()
    assert len(progs) > 10, progs
    problems = []
    hot_seen = 0
    for path in progs:
        found, _, funcs = check_layout.check(path, CROSS + "objdump")
        problems += found
        hot_seen += sum(1 for f in funcs if f.hot)
    assert problems == []
    # The hot set is really found in the programs (names did not drift away
    # from the patterns): the kernel alone holds the int8 kernels, attention...
    kernel_hot = [f.name for f in check_layout.disassemble(KERNEL, CROSS + "objdump") if f.hot]
    for name in ("llm::int8_packed(", "::block_4x2<", "::cross_4(", "llm::Batch::attention(",
                 "llm::Batch::deltanet(", "llm::rmsnorm(", "llm::softmax(", "llm::rope(",
                 "llm::Batch::classify(", "::ProductsJob::part(", "::SwigluJob::part(",
                 "llm::sample_token(", "memcpy", "memset",
                 "::copy_fast("):
        assert any(name in hot for hot in kernel_hot), name
    assert hot_seen > 50


# memset, a small hot function at 0xff0 whose loop crosses the page at
# 0x1000, and a 4-byte instruction at 0x1ffe that straddles the page at
# 0x2000 (one 2-byte c.nop, the only compressed instruction, misaligns it).
BAD_PROGRAM = """
    .option norvc
    .text
    .globl _start, memset, filler
_start:
    .fill 0xff0 / 4, 4, 0x00000013
memset:
    addi a0, a0, -1
    .fill 4, 4, 0x00000013
    bnez a0, memset
    ret
filler:
    .fill (0x1ffc - 0x100c) / 4, 4, 0x00000013
    .option rvc
    c.nop
    .option norvc
    add a1, a1, a2
    ret
"""


def test_check_reports_a_loop_across_a_page_and_a_straddling_instruction(tmp_path):
    need_toolchain()
    src, obj, elf = tmp_path / "bad.S", tmp_path / "bad.o", tmp_path / "bad.elf"
    src.write_text(BAD_PROGRAM)
    subprocess.run([CROSS + "as", "-march=rv64gc", "-o", str(obj), str(src)], check=True)
    subprocess.run([CROSS + "ld", "-Ttext=0x10000", "-o", str(elf), str(obj)], check=True)
    problems, _, _ = check_layout.check(str(elf), CROSS + "objdump")
    text = "\n".join(problems)
    assert "loop crosses a page in hot function memset: 0x10ff0-0x11008" in text, text
    assert "straddle: 4-byte add at 0x11ffe in filler" in text, text
    assert len(problems) == 2, text
    assert check_layout.main([str(elf)]) == 1


def test_page_fit_aligns_each_code_section_to_fit_a_page(tmp_path):
    need_toolchain()
    assert [page_fit.page_alignment(n) for n in (1, 2, 3, 100, 2048, 2049, 4096, 9000)] == \
        [1, 2, 4, 128, 2048, 4096, 4096, 4096]
    src, obj = tmp_path / "f.S", tmp_path / "f.o"
    # Three code sections of 12, 1000 and 5000 bytes and one data section.
    src.write_text("""
    .section .text.a,"ax",@progbits
    .fill 3, 4, 0x00000013
    .section .text.b,"ax",@progbits
    .fill 250, 4, 0x00000013
    .section .text.c,"ax",@progbits
    .fill 1250, 4, 0x00000013
    .data
    .fill 1000, 1, 0
""")
    subprocess.run([CROSS + "as", "-march=rv64g", "-o", str(obj), str(src)], check=True)
    assert page_fit.fit(str(obj)) == 3
    out = subprocess.run([CROSS + "readelf", "-SW", str(obj)], check=True, capture_output=True,
                         text=True).stdout
    align = {}
    for line in out.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 2 and parts[1].startswith("."):
            align[parts[1]] = int(parts[-1])
    assert (align[".text.a"], align[".text.b"], align[".text.c"]) == (16, 1024, 4096), out
    assert align[".data"] == 1, out
    assert page_fit.fit(str(obj)) == 0   # already fitted: nothing changes
