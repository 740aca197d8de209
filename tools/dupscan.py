#!/usr/bin/python3
"""Copied blocks of code in user/ and tools/ (issue #45: no function written
twice; a shared piece belongs in user/lib or tools/benchlib).

    dupscan.py [--min-lines N] [--allow FILE] [--root DIR] [DIR...]

Reads every C++ (.cpp .h .cc .hpp) and Python (.py) file below each DIR
(default: user and tools, relative to --root, the repository), and reports
every block of at least N (default 8) consecutive *counted* lines that stands
in two places, naming both:

    dupscan: copied block of 9 lines: FILE_A:10-24 and FILE_B:40-55

A line is normalized before it is compared: white space stripped; blank and
comment-only lines dropped (C++ `//`, `/*`, ` * `; Python `#`); and lines
that say nothing on their own (`}`, `break;`, `return 0;`, `else:`, ...) are
dropped too, so they neither count toward a block's length nor break one.
Two places in one file count as well, as long as they do not overlap.

A pair that is genuinely different logic of the same shape goes in the
allow-list (tools/dupscan_allow.txt): one line a pair,
    FILE_A FILE_B -- why they are not one function
which allows every copied block between those two files. Exit status 1 when
a block is not allowed (or an allow-list line matches nothing: a stale
entry), 0 otherwise. Standard library only: CI runs it in `make test`
(tests/tools/test_dupscan.py).
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIRS = ("user", "tools")
DEFAULT_ALLOW = os.path.join(ROOT, "tools", "dupscan_allow.txt")
CPP = (".cpp", ".h", ".cc", ".hpp")
PY = (".py",)

# Lines that carry no logic of their own: a block of them is no copy.
TRIVIAL = {
    "{", "}", "};", "});", "})", ")", "];", "]", "),", "],", "(", "[",
    "} else {", "else {", "else", "else:", "try:", "finally:", "pass",
    "break;", "continue;", "break", "continue", "return;", "return",
    "return 0;", "return 1;", "return -1;", "return true;", "return false;",
    "return nullptr;", "return None", "return True", "return False",
    "default:", "default: break;", "public:", "private:", "protected:",
    "namespace {", "}  // namespace", "#endif", "#else", '"""', "'''",
}


def normalized_lines(path):
    """[(line number, normalized text)] of the lines that count."""
    python = path.endswith(PY)
    out = []
    in_block_comment = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, raw in enumerate(f, 1):
            line = " ".join(raw.split())
            if not line:
                continue
            if not python:
                if in_block_comment:
                    if "*/" in line:
                        in_block_comment = False
                    continue
                if line.startswith("/*"):
                    in_block_comment = "*/" not in line
                    continue
                if line.startswith("//"):
                    continue
            elif line.startswith("#"):
                continue
            if line in TRIVIAL:
                continue
            out.append((number, line))
    return out


def source_files(root, dirs):
    for d in dirs:
        top = os.path.join(root, d)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(n for n in dirnames if n != "__pycache__" and not n.startswith("."))
            for name in sorted(filenames):
                if name.endswith(CPP + PY):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def find_copies(root, dirs, min_lines):
    """[(length, (file, first, last), (file, first, last))]: every maximal
    copied block of at least min_lines counted lines, once per pair."""
    files = {rel: normalized_lines(os.path.join(root, rel)) for rel in source_files(root, dirs)}
    windows = {}   # the text of min_lines counted lines -> [(file, index)]
    for rel, lines in files.items():
        for i in range(len(lines) - min_lines + 1):
            key = "\n".join(text for _, text in lines[i:i + min_lines])
            windows.setdefault(key, []).append((rel, i))
    # Pairs of window starts with the same text; then grow each to a maximal
    # block: a pair (a, i, b, j) whose predecessor (a, i-1, b, j-1) is also a
    # pair is part of a block that starts earlier.
    pairs = set()
    for places in windows.values():
        if len(places) < 2:
            continue
        for x in range(len(places)):
            for y in range(x + 1, len(places)):
                (a, i), (b, j) = places[x], places[y]
                if a == b and abs(i - j) < min_lines:
                    continue   # a window overlapping itself (a run of repeated lines)
                pairs.add((a, i, b, j))
    copies = []
    for a, i, b, j in sorted(pairs):
        if (a, i - 1, b, j - 1) in pairs:
            continue
        n = min_lines
        while (a, i + n - min_lines + 1, b, j + n - min_lines + 1) in pairs:
            n += 1
        la, lb = files[a], files[b]
        copies.append((n, (a, la[i][0], la[i + n - 1][0]), (b, lb[j][0], lb[j + n - 1][0])))
    return copies


def read_allow(path):
    """{(file, file): reason}, the pair in sorted order."""
    allowed = {}
    if not path or not os.path.exists(path):
        return allowed
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            files, sep, reason = line.partition(" -- ")
            names = files.split()
            if not sep or len(names) != 2 or not reason.strip():
                raise SystemExit(f"dupscan: {path}:{number}: expected 'FILE_A FILE_B -- reason', got {line!r}")
            allowed[tuple(sorted(names))] = reason.strip()
    return allowed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", default=list(DEFAULT_DIRS), help="folders below --root (default: user tools)")
    ap.add_argument("--root", default=ROOT, help="the tree to read (default: this repository)")
    ap.add_argument("--min-lines", type=int, default=8, help="counted lines that make a copy (default 8)")
    ap.add_argument("--allow", default=DEFAULT_ALLOW, help="the allow-list (default tools/dupscan_allow.txt; '' for none)")
    args = ap.parse_args(argv)
    if args.min_lines < 2:
        ap.error(f"--min-lines: {args.min_lines} is below 2")
    for d in args.dirs:
        if not os.path.isdir(os.path.join(args.root, d)):
            ap.error(f"{d}: not a folder below {args.root}")
    allowed = read_allow(args.allow)
    used = set()
    bad = 0
    for n, (a, a0, a1), (b, b0, b1) in find_copies(args.root, args.dirs, args.min_lines):
        key = tuple(sorted((a, b)))
        if key in allowed:
            used.add(key)
            continue
        bad += 1
        print(f"dupscan: copied block of {n} lines: {a}:{a0}-{a1} and {b}:{b0}-{b1}")
    for key in sorted(set(allowed) - used):
        bad += 1
        print(f"dupscan: allow-list entry matches no copied block (remove it): {key[0]} {key[1]}")
    if bad:
        print(f"dupscan: {bad} problem(s); move a shared block into user/lib or tools/benchlib, "
              f"or allow the pair in {os.path.relpath(args.allow, args.root) if args.allow else 'an allow-list'} with a reason")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
