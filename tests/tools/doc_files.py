"""What the two documentation checks read, in one place: the repository's
markdown notes and source files, the lines of a note outside code blocks,
its headings, and the pattern of a note cited as docs/NAME.md.

Used by tests/tools/test_doc_links.py (every link and citation leads
somewhere) and tests/tools/test_doc_layout.py (reference notes say what is
true now; history lives in docs/notebook/). Not a test file itself.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKDOWN_DIRS = ("docs", "models")
SKIP_DIRS = {".git", "__pycache__", "build", "results", ".pytest_cache", "node_modules"}

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# A note named in a source or in prose: docs/NAME.md (in docs/, also
# NAME.md), then #anchor, or a section name in quotes after ", " or " ".
CITATION = re.compile(r"(?<![\w/.-])(docs/(?:[\w.-]+/)*[\w.-]+\.md)(?:#([\w-]+)|(,?[ \t]+\"|,?[ \t]*\n))?")


def markdown_lines(text):
    """(line number, line) of text outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def files(top, suffixes):
    """The files under top (sorted, skipping build output and hidden folders)
    whose names end with one of suffixes, and any Makefile."""
    for d, dirs, names in os.walk(top):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("."))
        for name in sorted(names):
            if name.endswith(suffixes) or name == "Makefile":
                yield os.path.join(d, name)


def markdown_files(root=ROOT):
    """README.md and the notes under docs/ and models/."""
    out = [os.path.join(root, "README.md")] if os.path.exists(os.path.join(root, "README.md")) else []
    for d in MARKDOWN_DIRS:
        out += [p for p in files(os.path.join(root, d), (".md",)) if p.endswith(".md")]
    return out


def source_text(path):
    """A source file's text, or None when it cannot be read or is binary."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return None if "\0" in text else text
