"""docs/userspace.md's example program ("Asking the model for JSON", the
```c block) is compiled and linked as a user program of the image is (the
commands `make print-user-build` prints, with -Werror), so the example cannot
rot: a renamed field or function in the ABI or the library fails here. A
block with a deliberate error must fail the same way (the check can fail)."""
import os
import re
import shlex
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "userspace.md")
LIBKAI = os.path.join(ROOT, "build", "user", "libkai.a")


def c_blocks():
    return re.findall(r"^```c\n(.*?)^```$", open(DOC, encoding="utf-8").read(), re.S | re.M)


@pytest.fixture(scope="module")
def commands():
    r = subprocess.run(["make", "-s", "build/user/libkai.a"], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0 and "riscv64" in r.stderr and "not found" in r.stderr:
        pytest.skip("no RISC-V cross compiler")
    assert r.returncode == 0, r.stderr
    lines = subprocess.run(["make", "-s", "print-user-build"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert len(lines) == 2, lines
    return [shlex.split(line) for line in lines]


def build(commands, code, tmp_path):
    src, obj, exe = tmp_path / "example.cpp", tmp_path / "example.o", tmp_path / "example"
    src.write_text(code)
    compile_, link = commands
    r = subprocess.run(compile_ + ["-Werror", "-c", str(src), "-o", str(obj)], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return r
    return subprocess.run(link + ["-o", str(exe), str(obj), LIBKAI, "-lgcc"], cwd=ROOT,
                          capture_output=True, text=True)


def test_the_json_example_compiles_and_links(commands, tmp_path):
    blocks = c_blocks()
    assert len(blocks) == 1 and "req.grammar.kind = KAI_AI_GRAMMAR_JSON;" in blocks[0], blocks
    r = build(commands, blocks[0], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "example").stat().st_size > 0


def test_a_broken_example_fails(commands, tmp_path):
    code = c_blocks()[0].replace("KAI_AI_GRAMMAR_JSON", "KAI_AI_GRAMMAR_JSN")
    r = build(commands, code, tmp_path)
    assert r.returncode != 0 and "KAI_AI_GRAMMAR_JSN" in r.stderr
