"""No copied blocks in user/ and tools/ (issue #45): tools/dupscan.py on the
tree finds none outside its allow-list. Also proves the scan finds a block
planted in a small fixture, names both places, and passes over what does not
make a copy: blank lines, comments, trivial lines, and blocks too short."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import dupscan  # noqa: E402

SCAN = [sys.executable, os.path.join(ROOT, "tools", "dupscan.py")]

# Eight lines of logic, in C++: the planted copy.
BLOCK = """\
  int total = 0;
  for (int i = 0; i < n; ++i) {
    if (values[i] < 0) {
      printf("negative value at %d\\n", i);
      return -1;
    }
    total += values[i];
  }
  int mean = total / n;
  printf("mean %d\\n", mean);
  int spread = values[n - 1] - values[0];
  printf("spread %d\\n", spread);
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def test_the_tree_has_no_copied_blocks():
    res = subprocess.run(SCAN, capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_planted_copy_is_found_with_both_places(tmp_path):
    write(str(tmp_path / "user" / "a.cpp"), "int a(int* values, int n) {\n" + BLOCK + "  return total;\n}\n")
    # The copy reindented, with a comment and blank lines inside and the
    # trivial lines of a different brace style: still the same block.
    copy = BLOCK.replace("  total += values[i];\n", "\n  // add it up\n      total += values[i];\n\n")
    write(str(tmp_path / "tools" / "b.cpp"), "// b\n#include <x>\n\nint b(int* values, int n)\n{\n" + copy + "  return 0;\n}\n")
    res = subprocess.run(SCAN + ["--root", str(tmp_path), "--allow", ""], capture_output=True, text=True)
    assert res.returncode == 1, res.stdout + res.stderr
    lines = [l for l in res.stdout.splitlines() if "copied block" in l]
    assert len(lines) == 1, res.stdout
    # BLOCK has 9 counted lines (`return -1;` and the two `}` do not count);
    # in a.cpp they are lines 2-13, in b.cpp lines 6-20.
    assert lines[0] == "dupscan: copied block of 9 lines: user/a.cpp:2-13 and tools/b.cpp:6-20", lines


def test_an_allow_list_entry_allows_the_pair_and_a_stale_one_fails(tmp_path):
    write(str(tmp_path / "user" / "a.cpp"), BLOCK)
    write(str(tmp_path / "user" / "b.cpp"), BLOCK)
    allow = tmp_path / "allow.txt"
    allow.write_text("# comment\nuser/b.cpp user/a.cpp -- the same shape, different logic\n")
    res = subprocess.run(SCAN + ["--root", str(tmp_path), "--allow", str(allow), "user"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout
    allow.write_text("user/b.cpp user/c.cpp -- gone\n")
    res = subprocess.run(SCAN + ["--root", str(tmp_path), "--allow", str(allow), "user"], capture_output=True, text=True)
    assert res.returncode == 1 and "copied block of 9 lines" in res.stdout and "matches no copied block" in res.stdout, res.stdout
    allow.write_text("user/b.cpp user/a.cpp no reason\n")
    res = subprocess.run(SCAN + ["--root", str(tmp_path), "--allow", str(allow), "user"], capture_output=True, text=True)
    assert res.returncode != 0 and "expected 'FILE_A FILE_B -- reason'" in res.stderr, res.stderr


def test_what_is_not_a_copy(tmp_path):
    short = "\n".join(BLOCK.splitlines()[:9]) + "\n"   # 6 counted lines
    write(str(tmp_path / "tools" / "a.py"), "x = 1\n")
    write(str(tmp_path / "user" / "a.cpp"), short)
    write(str(tmp_path / "user" / "b.cpp"), short)
    # Comment-only and trivial lines alike in two files make no block either.
    filler = "".join(f"// comment {i % 2}\n}}\nbreak;\nreturn 0;\n\n" for i in range(20))
    write(str(tmp_path / "user" / "c.cpp"), filler)
    write(str(tmp_path / "user" / "d.cpp"), filler)
    assert dupscan.find_copies(str(tmp_path), ["user", "tools"], 8) == []
    # ... but the short block is one at --min-lines 6, and Python is read too.
    assert len(dupscan.find_copies(str(tmp_path), ["user"], 6)) == 1
    py = "".join(f"value_{i} = compute({i})\n" for i in range(8))
    write(str(tmp_path / "tools" / "p.py"), "# p\n" + py)
    write(str(tmp_path / "tools" / "q.py"), "import os\n\n" + py.replace("value_4", "    # a comment\n    value_4"))
    copies = dupscan.find_copies(str(tmp_path), ["tools"], 8)
    assert copies == [(8, ("tools/p.py", 2, 9), ("tools/q.py", 3, 11))], copies


def test_a_bad_command_line_names_the_argument(tmp_path):
    res = subprocess.run(SCAN + ["--root", str(tmp_path), "nowhere"], capture_output=True, text=True)
    assert res.returncode == 2 and "nowhere: not a folder" in res.stderr, res.stderr
    res = subprocess.run(SCAN + ["--min-lines", "1"], capture_output=True, text=True)
    assert res.returncode == 2 and "--min-lines: 1 is below 2" in res.stderr, res.stderr
