#!/usr/bin/python3
"""Checks the code layout of kai's RISC-V programs against QEMU's page cliff.

    check_layout.py [--objdump PROG] [--calls] ELF...

QEMU translates guest code in blocks and links two blocks directly only when
the jump target lies in the same 4 KiB guest page; a block also ends at a
page boundary. A loop whose body crosses a page therefore goes through
QEMU's slow block lookup on every iteration (several times slower), and an
instruction that itself straddles two pages is far worse (docs/runtime.md,
"Code layout"). The build keeps both away by construction (the Makefile's
-march=rv64g and tools/page_fit.py); this check proves it on the linked
programs, from `objdump -d`:

  straddle  no instruction anywhere in the text has bytes in two pages;
  loop      no backward branch leaves the page of its own instruction, in
            any function that fits one page and in every hot function
            (HOT below) whatever its size; and a hot function fits one page.

Functions bigger than a page that are not hot (load-time parsers) may have
loops across a page: they run once per model, not once per token.
--calls also lists, per hot function, the innermost loops that call a
function (a call and its return per iteration; the `ret` always goes
through the lookup), as information. Exits 1 and names every violation.
Standard library only.
"""
import argparse
import re
import subprocess
import sys

PAGE = 4096

# The hot set: the code that runs once per token or more, per weight row or
# per vocabulary entry. Demangled names, matched from the start.
HOT = [re.compile(p) for p in (
    # int8 and float matrix kernels, activation quantisation, argmax/classify
    r"llm::int8_", r"llm::pack_int8_batch", r"llm::quantize_act", r"llm::matvec",
    r"(void )?llm::\(anonymous namespace\)::(cross_4|block_4x|row_one_word|row_float|matmul_|"
    r"matvec_one|argmax_one|argmax_batch)",
    r"llm::ArgMax llm::\(anonymous namespace\)::argmax_",
    # norms, softmax, RoPE and the scalar maths they use
    r"llm::(dot|rope|rmsnorm|l2norm|softmax|exp_d|exp_f|log_d|log_f|log1p_f|silu_f|sigmoid_f|"
    r"softplus_f|sqrt_f)\(",
    r"llm::\(anonymous namespace\)::exp_for_float",
    # the batched forward pass: attention, DeltaNet, MLP, projections, classifier
    r"llm::Batch::(forward|prepare|prepare_one|project|project_all|project_swiglu|classify|mlp|attention|"
    r"deltanet)\(",
    # the row jobs the products go out as (llm_rows.cpp)
    r"llm::run_(products|swiglu|argmax)\(", r"llm::\(anonymous namespace\)::(Products|Swiglu|Argmax)Job::",
    # the sampler's loops over the vocabulary
    r"llm::sample_token\(", r"llm::\(anonymous namespace\)::sift_down",
    # memory moves, and the file system's bulk copy
    r"(memcpy|memmove|memset)$", r"fs::\(anonymous namespace\)::copy_fast\(",
)]

INSN = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*\t(\S+)\s*(.*)$")
FUNC = re.compile(r"^([0-9a-f]+) <(.+)>:$")
TARGET = re.compile(r"\b([0-9a-f]+) <")
# Conditional branches and plain jumps (a loop closes with one of these).
BRANCH = re.compile(r"^(c\.)?(b[a-z]+|j)$")
CALL = re.compile(r"^(c\.)?(jal|jalr|call)$")


class Function:
    def __init__(self, name, start):
        self.name, self.start, self.insns = name, start, []   # (addr, size, mnemonic, target)

    @property
    def end(self):
        return self.insns[-1][0] + self.insns[-1][1] if self.insns else self.start

    @property
    def hot(self):
        return any(p.match(self.name) for p in HOT)


def disassemble(path, objdump):
    out = subprocess.run([objdump, "-d", "-w", "-C", path], check=True, capture_output=True,
                         text=True).stdout
    funcs, cur = [], None
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            cur = Function(m.group(2), int(m.group(1), 16))
            funcs.append(cur)
            continue
        m = INSN.match(line)
        if m and cur is not None:
            addr, raw, mnem, ops = int(m.group(1), 16), m.group(2), m.group(3), m.group(4)
            size = len(raw.replace(" ", "")) // 2
            target = None
            if BRANCH.match(mnem) or CALL.match(mnem):
                t = TARGET.search(ops)
                target = int(t.group(1), 16) if t else None
            cur.insns.append((addr, size, mnem, target))
    return [f for f in funcs if f.insns]


def loops(func):
    """(start, end, branch address) of every backward branch inside func."""
    out = []
    for addr, size, mnem, target in func.insns:
        if target is not None and BRANCH.match(mnem) and func.start <= target <= addr:
            out.append((target, addr + size, addr))
    return out


def check(path, objdump, show_calls=False):
    problems, notes = [], []
    funcs = disassemble(path, objdump)
    for f in funcs:
        for addr, size, mnem, _ in f.insns:
            if addr // PAGE != (addr + size - 1) // PAGE:
                problems.append(f"{path}: straddle: {size}-byte {mnem} at 0x{addr:x} in {f.name}")
        big = f.end - f.start > PAGE
        if f.hot and big:
            problems.append(f"{path}: hot function bigger than a page ({f.end - f.start} bytes): "
                            f"{f.name}")
        if big and not f.hot:
            continue
        crossing = [(s, e, b) for s, e, b in loops(f) if s // PAGE != (e - 1) // PAGE]
        if crossing:
            where = ", ".join(f"0x{s:x}-0x{e:x}" for s, e, _ in crossing[:3])
            more = f" and {len(crossing) - 3} more" if len(crossing) > 3 else ""
            problems.append(f"{path}: loop crosses a page in {'hot ' if f.hot else ''}"
                            f"function {f.name}: {where}{more}")
        if show_calls and f.hot:
            body = loops(f)
            for s, e, b in body:
                inner = not any(s <= s2 and e2 <= e and (s2, e2) != (s, e) for s2, e2, _ in body)
                calls = [t for a, _, m, t in f.insns if s <= a < e and CALL.match(m)]
                if inner and calls:
                    notes.append(f"{path}: call in an innermost loop of {f.name} "
                                 f"(0x{s:x}-0x{e:x}): {len(calls)} call(s)")
    return problems, notes, funcs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("elf", nargs="+")
    ap.add_argument("--objdump", default="riscv64-linux-gnu-objdump")
    ap.add_argument("--calls", action="store_true", help="list calls in hot innermost loops")
    args = ap.parse_args(argv)
    failed = False
    for path in args.elf:
        problems, notes, funcs = check(path, args.objdump, args.calls)
        for line in problems + notes:
            print(line)
        hot = sum(1 for f in funcs if f.hot)
        print(f"{path}: {len(funcs)} functions ({hot} hot): "
              f"{'ok' if not problems else f'{len(problems)} problem(s)'}")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
