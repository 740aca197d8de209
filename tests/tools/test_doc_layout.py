"""The reference docs state what is true now; dated history lives in the lab
notebook, docs/notebook/ (docs/development.md, "The lab notebook"). No QEMU.

Checked:
  - no heading of a note outside docs/notebook/ (README.md, docs/**/*.md)
    carries a date: YYYY-MM-DD, or a month's name and a year ("December
    2026"); a dated figure with its command may stay in a reference table,
    a dated section may not;
  - no reference note is longer than LIMIT lines (a few have their own
    limit below, each with its reason);
  - every notebook file opens by saying what it is: a dated lab notebook,
    with the reference that states what is true now;
  - no comment or string of the sources (kernel/, lib/, user/, tools/) holds
    a date, except inside the name of a notebook section it cites
    (`docs/notebook/FILE.md, "Night of 2026-12-04"`): a measurement's date
    and story go to the notebook, the code keeps the reason.
Every link and citation resolving is tests/tools/test_doc_links.py's job.

    /usr/bin/python3 -m pytest -q tests/tools/test_doc_layout.py
    /usr/bin/python3 tests/tools/test_doc_layout.py      (lists what is wrong)
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_files as docs  # noqa: E402   (the files and patterns test_doc_links.py reads too)

ROOT = docs.ROOT
NOTEBOOK = os.path.join("docs", "notebook")
LIMIT = 600
# Notes allowed more lines than LIMIT, and why (none now: a note that grows
# past it splits by topic, as docs/ai-service.md did into sharing.md,
# speculation.md and trace.md). Never raise a limit to fit a dated section.
LIMITS = {}
MONTHS = ("jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          "|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b(?:" + MONTHS + r")\.?,?\s+\d{4}\b", re.I)
SOURCE_DATE = re.compile(r"\b20\d{2}-\d{2}-\d{2}\b")
SOURCE_DIRS = ("kernel", "lib", "user", "tools")
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".S", ".s", ".py")


def rel(path):
    return os.path.relpath(path, ROOT).replace(os.sep, "/")


def in_notebook(path):
    return rel(path).startswith("docs/notebook/")


def reference_notes():
    return [p for p in docs.markdown_files(ROOT)
            if not in_notebook(p) and (rel(p) == "README.md" or rel(p).startswith("docs/"))]


def notebook_files():
    top = os.path.join(ROOT, NOTEBOOK)
    return sorted(os.path.join(top, n) for n in os.listdir(top) if n.endswith(".md")) \
        if os.path.isdir(top) else []


def dated_headings(path):
    """(file:line, heading) of the headings of path that carry a date."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    out = []
    for number, line in docs.markdown_lines(text):
        m = docs.HEADING.match(line)
        if m and DATE.search(m.group(2)):
            out.append((f"{rel(path)}:{number}", m.group(2)))
    return out


def line_count(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


def too_long(paths):
    out = []
    for p in paths:
        limit = LIMITS.get(rel(p), LIMIT)
        n = line_count(p)
        if n > limit:
            out.append((rel(p), f"{n} lines, over its limit of {limit}"))
    return out


def notebook_without_preamble(paths):
    """Notebook files whose opening (title and first paragraph) does not say
    it is a dated lab notebook and where the reference is."""
    out = []
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            opening = " ".join(f.read().split("\n\n")[:2]).lower()
        if "lab notebook" not in opening or "docs/" not in opening and "../" not in opening:
            out.append((rel(p), "does not open by saying it is a dated lab notebook "
                                "and naming the reference docs"))
    return out


def source_dates(path):
    """(file:line, date) of the dates in a source file that are not part of
    a cited notebook section's name."""
    text = docs.source_text(path)
    if text is None:
        return []
    allowed = []
    for m in docs.CITATION.finditer(text):
        if not m.group(1).startswith("docs/notebook/"):
            continue
        end = m.end()
        if m.group(3):   # a quoted section name, maybe on the next comment line
            opening = text.find('"', m.start() + len(m.group(1)))
            closing = text.find('"', opening + 1) if opening >= 0 else -1
            if closing >= 0:
                end = closing + 1
        allowed.append((m.start(), end))
    out = []
    for d in SOURCE_DATE.finditer(text):
        if not any(a <= d.start() < b for a, b in allowed):
            out.append((f"{rel(path)}:{text.count(chr(10), 0, d.start()) + 1}", d.group(0)))
    return out


def source_files():
    out = []
    for d in SOURCE_DIRS:
        out += [p for p in docs.files(os.path.join(ROOT, d), SOURCE_SUFFIXES) if p.endswith(SOURCE_SUFFIXES)]
    return out


def listing(problems):
    return "\n".join(f"  {where}: {what}" for where, what in problems)


# ---------------------------------------------------------------- the tests

def test_no_dated_heading_outside_the_notebook():
    found = [h for p in reference_notes() for h in dated_headings(p)]
    assert not found, ("dated headings in reference notes (move the section to docs/notebook/, "
                       "keep one sentence and a link):\n" + listing(found))


def test_reference_notes_stay_short():
    found = too_long(reference_notes())
    assert not found, ("reference notes over their line limit (history goes to docs/notebook/):\n"
                       + listing(found))


def test_every_notebook_file_says_what_it_is():
    paths = notebook_files()
    assert paths, "docs/notebook/ has no notebook files"
    found = notebook_without_preamble(paths)
    assert not found, listing(found)


def test_sources_carry_no_dates():
    found = [d for p in source_files() for d in source_dates(p)]
    assert not found, ("dated lines in source comments (give the reason and cite "
                       "docs/notebook/FILE.md, \"Section\"):\n" + listing(found))


def test_the_limits_name_notes_that_exist():
    for name, limit in LIMITS.items():
        assert os.path.exists(os.path.join(ROOT, name)), name
        assert limit > LIMIT, name


def test_the_checks_catch_what_they_should(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    (tmp_path / "docs" / "notebook").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    note = tmp_path / "docs" / "a.md"
    note.write_text("# A note\n\n## Measured on 2026-12-04\n\n### Where it stands, December 2026\n\n"
                    "## The rule\n\n| figure | 2026-12-05 |\n\n```\n# 2026-12-04 in a block\n```\n")
    assert [w for w, _ in dated_headings(str(note))] == ["docs/a.md:3", "docs/a.md:5"]
    (tmp_path / "docs" / "long.md").write_text("x\n" * (LIMIT + 1))
    assert [w for w, _ in too_long([str(tmp_path / "docs" / "long.md")])] == ["docs/long.md"]
    good = tmp_path / "docs" / "notebook" / "2026-12-x.md"
    good.write_text("# Notebook\n\nA dated lab notebook; the reference is docs/a.md.\n\n## 2026-12-04\n")
    bad = tmp_path / "docs" / "notebook" / "2026-12-y.md"
    bad.write_text("# Runs\n\nSome runs.\n")
    assert [w for w, _ in notebook_without_preamble([str(good), str(bad)])] == ["docs/notebook/2026-12-y.md"]
    src = tmp_path / "src" / "x.cpp"
    src.write_text('// measured (docs/notebook/2026-12-x.md, "2026-12-04"): fine\n'
                   "// paired boots, 2026-12-05: a date in a comment\n"
                   '// docs/notebook/2026-12-x.md,\n// "2026-12-04": fine across lines\n')
    assert source_dates(str(src)) == [("src/x.cpp:2", "2026-12-05")]


if __name__ == "__main__":
    found = ([h for p in reference_notes() for h in dated_headings(p)] + too_long(reference_notes())
             + notebook_without_preamble(notebook_files())
             + [d for p in source_files() for d in source_dates(p)])
    print(listing(found) if found else "the reference notes and the notebook are in order")
    sys.exit(1 if found else 0)
