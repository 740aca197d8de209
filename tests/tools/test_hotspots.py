"""tools/hotspots.py turns the trace's timer samples into a profile: it names
each kernel pc with the function whose [start, start + size) holds it (from
nm's output), counts samples of idle harts as (idle) and user samples by
process unless a program is named, splits the samples where interrupts come
on again by caller, and refuses a log without samples or a bad --top. The
symbol table and the samples below are written by hand, and so are the
expected counts."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "hotspots.py")
PYTHON = "/usr/bin/python3"
sys.path.insert(0, os.path.join(ROOT, "tools"))
import hotspots  # noqa: E402

# nm -C -n -S --defined-only: address, size, type, name. A data symbol and a
# symbol without a size are not functions.
NM = """\
0000000080200000 0000000000000040 T _entry
0000000080201000 0000000000000100 T cross_4(llm::Matrix const&)
0000000080201100 0000000000000020 t pop_interrupts_off()
0000000080201200 0000000000000080 T wakeup(void const*)
0000000080201300 0000000000000080 T sys_sleep()
0000000080202000 0000000000000800 D some_table
0000000080203000 T no_size
"""


def ev(seq, hart, pc, mode, pid, ra=0):
    return (f"ev {seq} {1000 * seq} {10 * seq} {hart} SAMPLE pc_lo={pc & 0xffffffff} pc_hi={pc >> 32} "
            f"mode={mode} pid={pid} ra_lo={ra}")


LINES = [
    ev(0, 0, 0x80201000, 0, 3),            # cross_4, first byte
    ev(1, 1, 0x802010ff, 0, 3),            # cross_4, last byte
    ev(2, 0, 0x80201100, 0, 3, ra=0x80201200),   # just past cross_4: pop_interrupts_off
    ev(3, 1, 0x80201004, 0, 0),            # an idle hart: whatever the pc
    ev(4, 0, 0x80201110, 0, 5, ra=0x80201240),   # interrupts back on, released by wakeup
    ev(5, 1, 0x80201110, 0, 5, ra=0x80201310),   # ... by sys_sleep
    ev(6, 1, 0x80201110, 0, 5, ra=0x80201250),   # ... by wakeup again
    ev(7, 0, 0x1234, 1, 7),                # user code of pid 7
    ev(8, 0, 0x80202010, 0, 3),            # inside a data symbol: no function
]
TRANSCRIPT = "$ aitrace\nnoise\n" + "\n".join(LINES) + "\nev 9 9 9 0 ITER_END worker=0 requests=1 tokens=1\n"


def symbols():
    return hotspots.Symbols.from_nm(NM)


def test_symbols_cover_each_function_exactly():
    s = symbols()
    assert s.name(0x80201000) == "cross_4(llm::Matrix const&)"
    assert s.name(0x802010ff) == "cross_4(llm::Matrix const&)"
    assert s.name(0x80201100) == "pop_interrupts_off()"
    assert s.name(0x80201120) == "0x80201120"     # between two functions
    assert s.name(0x80202010) == "0x80202010"     # data, not code
    assert s.name(0x80203000) == "0x80203000"     # no size: not counted as a function
    assert s.name(0x100) == "0x100"


def test_rows_name_idle_user_and_callers():
    rows = hotspots.sample_rows(hotspots.kai_trace.parse(TRANSCRIPT), symbols(), None)
    assert rows == [
        (0, "cross_4(llm::Matrix const&)"),
        (1, "cross_4(llm::Matrix const&)"),
        (0, "pop_interrupts_off() <- wakeup(void const*)"),
        (1, "(idle)"),
        (0, "pop_interrupts_off() <- wakeup(void const*)"),
        (1, "pop_interrupts_off() <- sys_sleep()"),
        (1, "pop_interrupts_off() <- wakeup(void const*)"),
        (0, "(user pid 7)"),
        (0, "0x80202010"),
    ]


def test_user_samples_named_with_a_program():
    user = hotspots.Symbols.from_nm("0000000000001200 0000000000000100 T main\n")
    rows = hotspots.sample_rows(hotspots.kai_trace.parse(TRANSCRIPT), symbols(), user)
    assert (0, "user: main") in rows


def test_table_counts_and_shares():
    rows = [(0, "a"), (1, "a"), (1, "a"), (0, "b")]
    lines = hotspots.table(rows, top=5, by_hart=True)
    assert lines[0] == "hotspots: 4 samples on 2 harts"
    assert lines[2].split() == ["3", "75.0%", "1", "2", "a"]
    assert lines[3].split() == ["1", "25.0%", "1", "0", "b"]
    assert len(hotspots.table(rows, top=1, by_hart=False)) == 3


def run(*args):
    return subprocess.run([PYTHON, TOOL, *args], capture_output=True, text=True)


def test_command_line(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(TRANSCRIPT)
    nm = tmp_path / "nm.sh"
    nm.write_text("#!/bin/sh\ncat <<'EOF'\n" + NM + "EOF\n")
    nm.chmod(0o755)
    elf = tmp_path / "kernel.elf"
    elf.write_bytes(b"\x7fELF")   # the fake nm does not read it
    out = subprocess.run([PYTHON, TOOL, str(log), "--kernel", str(elf)], capture_output=True, text=True,
                         env={**os.environ, "NM": str(nm)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "hotspots: 9 samples on 2 harts"
    assert "33.3%  pop_interrupts_off() <- wakeup(void const*)" in out.stdout   # 3 of 9
    empty = tmp_path / "empty.txt"
    empty.write_text("$ aitrace\naitrace: end events=0 dropped=0\n")
    out = subprocess.run([PYTHON, TOOL, str(empty), "--kernel", str(elf)], capture_output=True, text=True,
                         env={**os.environ, "NM": str(nm)})
    assert out.returncode == 1 and "no SAMPLE events" in out.stderr
    out = run(str(log), "--top", "0")
    assert out.returncode == 2 and "--top must be at least 1, not 0" in out.stderr
    out = run(str(log), "--kernel", str(tmp_path / "missing.elf"))
    assert out.returncode != 0 and "no such ELF file" in out.stderr
