"""Every link and citation of the documentation leads somewhere (no QEMU).

Checked:
  - the markdown files (README.md, docs/**/*.md, models/**/*.md): every
    relative link [text](path), [text](path#anchor), [text](#anchor) and
    reference definition [id]: path, outside code blocks and code spans;
  - the same files' prose citations of another note: `docs/NAME.md`, with
    an optional `, "Section"` or `#anchor` after it, and (in docs/) `NAME.md`
    with one of them;
  - the comments and strings of the sources (kernel/, lib/, user/, tools/,
    tests/ and the Makefile) that cite a note as docs/NAME.md, optionally
    followed by #anchor, `, "Section"` or ` "Section"` (a quoted name may
    run on over the next comment lines);
  - in all of them, every repository path named (kernel/..., lib/...,
    user/..., tools/..., tests/..., include/..., docs/... with a file
    suffix; `NAME` stands for any name and is not checked);
  - a symbol named with the file it lives in, as `ai::kMaxOutput
    (kernel/ai/limits.h)`, `kMaxPrompt (lib/llm_config.h)` or
    `` `do_thing()` (kernel/x.cpp) ``: the file must contain it.
A path must name a file inside the repository (a student's checkout has no
../shared); an anchor must be the GitHub anchor of a heading of that file
(lowercase, spaces to '-', punctuation dropped, a repeated heading gets -1,
-2, ...); a quoted section name must be a heading, or its first words (as
`"Iterations"` names "## Iterations: many requests in one pass").

    /usr/bin/python3 -m pytest -q tests/tools/test_doc_links.py
    /usr/bin/python3 tests/tools/test_doc_links.py      (lists what is broken)
"""
import functools
import os
import re
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_files import CITATION, HEADING, ROOT, files, markdown_files, markdown_lines, source_text  # noqa: E402

SOURCE_DIRS = ("kernel", "lib", "user", "tools", "tests")
SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".S", ".s", ".ld", ".py", ".sh", ".mk", ".txt")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
DOC_CITATION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)(?:#([\w-]+)|(,?[ \t]+\"))?")
# A repository path with a file suffix, as sources and notes name them.
REPO_PATH = re.compile(r"(?<![\w/.-])((?:kernel|lib|user|tools|tests|include|docs)/[\w/.-]*\w\."
                       r"(?:h|hpp|cpp|c|S|py|md|ld|sh|json|txt))(?![\w/])")
# A symbol followed by the file that holds it: "ai::kMaxOutput (kernel/ai/limits.h)".
SYMBOL_AT = re.compile(r"(`?)((?:\w+::)*[A-Za-z_]\w*(?:\(\))?)\1 \(`?((?:kernel|lib|user|include|tools)/"
                       r"[\w/.-]*\w\.(?:h|hpp|cpp|c|S|py))`?[),;]")
# What begins a comment line that continues a quoted name.
COMMENT_LEAD = re.compile(r"\n[ \t]*(?://+|#+|\*+(?!/)|;+)?[ \t]*")


# ---------------------------------------------------------------- headings

def github_anchor(heading):
    """The anchor GitHub gives a heading's text (before numbering repeats)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # a link: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)                           # punctuation (not - and _)
    return text.replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors(path):
    """The GitHub anchors of a markdown file's headings, in order."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    seen, out = {}, []
    for _, line in markdown_lines(text):
        m = HEADING.match(line)
        if not m:
            continue
        base = github_anchor(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base if n == 0 else f"{base}-{n}")
    return tuple(out)


def has_section(path, name):
    """Whether a heading of path is called name, or begins with its words."""
    want = github_anchor(name).strip("-")
    return bool(want) and any(a == want or a.startswith(want + "-") for a in anchors(path))


# ---------------------------------------------------------------- targets

def inside(path):
    real, root = os.path.realpath(path), os.path.realpath(ROOT)
    return real == root or real.startswith(root + os.sep)


def check_target(base_dir, target, where, section=None):
    """What is wrong with a link or citation (None if nothing): target is a
    path (relative to base_dir, or to the repository with a leading /),
    optionally with #anchor; section a quoted heading name."""
    path, _, anchor = target.partition("#")
    path = urllib.parse.unquote(path)
    if path:
        full = os.path.normpath(os.path.join(ROOT, path.lstrip("/")) if path.startswith("/")
                                else os.path.join(base_dir, path))
    else:
        full = where   # #anchor: this file
    shown = os.path.relpath(full, ROOT)
    if not inside(full):
        return f"{target}: outside the repository ({shown})"
    if not os.path.exists(full):
        return f"{target}: no such file ({shown})"
    if (anchor or section) and not full.endswith(".md"):
        return f"{target}: an anchor into a file that is not markdown"
    if anchor and anchor.lower() not in anchors(full):
        return f"{target}: {shown} has no heading with the anchor #{anchor}"
    if section is not None and not has_section(full, section):
        return f"{target}, \"{section}\": {shown} has no heading \"{section}\""
    return None


def quoted_name(text, start):
    """The section name in quotes that begins at text[start] (just after the
    opening quote), joined across comment line breaks; None if it does not
    end within a few lines."""
    end = text.find('"', start)
    if end < 0 or end - start > 240 or text.count("\n", start, end) > 3:
        return None
    name = COMMENT_LEAD.sub(" ", text[start:end]).strip()
    return name or None


# ---------------------------------------------------------------- scanners

def markdown_problems(path):
    """(file:line, problem) of the links and citations of one markdown file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    base, rel = os.path.dirname(path), os.path.relpath(path, ROOT)
    out = []
    lines = list(markdown_lines(text))
    for number, line in lines:
        m = REFERENCE.match(line)
        targets = [m.group(1)] if m else []
        targets += [t for t in LINK.findall(CODE_SPAN.sub("", line))]
        for target in targets:
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):   # http:, mailto: ...
                continue
            problem = check_target(base, target, path)
            if problem:
                out.append((f"{rel}:{number}", problem))
    # Prose citations (also inside code spans: `docs/runtime.md`).
    prose = "\n".join(line for _, line in lines)
    numbers = [n for n, _ in lines]
    for m in DOC_CITATION.finditer(prose):
        cited = m.group(1)
        # docs/NAME.md anywhere; in docs/, NAME.md with a section or anchor
        # (a bare `report.md` may be a file a study writes, not a note).
        beside = os.path.dirname(rel) == "docs" and "/" not in cited and (m.group(2) or m.group(3))
        if not (cited.startswith("docs/") or beside):
            continue
        if re.search(r"\]\($", prose[max(0, m.start() - 2):m.start()]):   # a link's target: done above
            continue
        section = quoted_name(prose, m.end()) if m.group(3) else None
        target = cited + (f"#{m.group(2)}" if m.group(2) else "")
        here = ROOT if cited.startswith("docs/") else base
        problem = check_target(here, target, path, section)
        if problem:
            out.append((f"{rel}:{numbers[prose.count(chr(10), 0, m.start())]}", problem))
    return out


def source_problems(path):
    """(file:line, problem) of the docs/NAME.md citations of one source file."""
    text = source_text(path)
    if text is None:
        return []
    rel = os.path.relpath(path, ROOT)
    out = []
    for m in CITATION.finditer(text):
        section = None
        if m.group(3):
            if m.group(3).endswith('"'):
                section = quoted_name(text, m.end())
            else:   # ".md,\n// "Section"": the name on the next comment line
                q = re.match(r"[ \t]*(?://+|#+|\*+)?[ \t]*\"", text[m.end():])
                section = quoted_name(text, m.end() + q.end()) if q else None
        target = m.group(1) + (f"#{m.group(2)}" if m.group(2) else "")
        problem = check_target(ROOT, target, path, section)
        if problem:
            out.append((f"{rel}:{text.count(chr(10), 0, m.start()) + 1}", problem))
    return out


def path_problems(path):
    """(file:line, problem) of the repository paths a file names that do not
    exist, and of the symbols it places in a file that does not hold them."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    rel = os.path.relpath(path, ROOT)
    out = []

    def at(m):
        return f"{rel}:{text.count(chr(10), 0, m.start()) + 1}"

    for m in REPO_PATH.finditer(text):
        named = m.group(1)
        if "NAME" not in named and not os.path.exists(os.path.join(ROOT, named)):
            out.append((at(m), f"{named}: no such file"))
    for m in SYMBOL_AT.finditer(text):
        symbol, named = m.group(2), m.group(3)
        # Only what is surely code: in backquotes, qualified (ns::name), a
        # call (name()) or a constant (kName); "PAGE_FIT (tools/...)" is prose.
        if not (m.group(1) or "::" in symbol or symbol.endswith("()") or re.match(r"k[A-Z]", symbol)):
            continue
        full = os.path.join(ROOT, named)
        name = symbol.split("::")[-1].rstrip("()")
        if os.path.exists(full):
            with open(full, encoding="utf-8", errors="replace") as f:
                if not re.search(rf"\b{re.escape(name)}\b", f.read()):
                    out.append((at(m), f"{symbol} ({named}): {named} has no {name}"))
    return out


def source_files(root=ROOT):
    out = [os.path.join(root, "Makefile")] if os.path.exists(os.path.join(root, "Makefile")) else []
    for d in SOURCE_DIRS:
        out += list(files(os.path.join(root, d), SOURCE_SUFFIXES))
    # This file's examples of broken citations are not citations, nor are
    # test_doc_layout.py's (made-up notes in a temporary tree) or the
    # patterns' descriptions in doc_files.py, nor test_dupscan.py's files of
    # a temporary tree.
    here = os.path.dirname(__file__)
    examples = {os.path.realpath(__file__), os.path.realpath(os.path.join(here, "test_doc_layout.py")),
                os.path.realpath(os.path.join(here, "doc_files.py")),
                os.path.realpath(os.path.join(here, "test_dupscan.py"))}
    return [p for p in out if os.path.realpath(p) not in examples]


def all_problems():
    return ([p for f in markdown_files() for p in markdown_problems(f)] +
            [p for f in source_files() for p in source_problems(f)] +
            [p for f in markdown_files() + source_files() for p in path_problems(f)])


def listing(problems):
    return "\n".join(f"  {where}: {what}" for where, what in problems)


# ---------------------------------------------------------------- the tests

def test_the_markdown_links_lead_somewhere():
    problems = [p for f in markdown_files() for p in markdown_problems(f)]
    assert not problems, "broken links or citations in the notes:\n" + listing(problems)


def test_the_sources_cite_notes_and_sections_that_exist():
    problems = [p for f in source_files() for p in source_problems(f)]
    assert not problems, "broken docs/ citations in the sources:\n" + listing(problems)


def test_the_files_and_symbols_named_are_there():
    problems = [p for f in markdown_files() + source_files() for p in path_problems(f)]
    assert not problems, "paths or symbols that moved:\n" + listing(problems)


def test_there_is_something_to_check():
    # A scanner that finds nothing passes: make sure it sees the citations.
    cited = [m for f in source_files() for m in CITATION.finditer(open(f, errors="replace").read())]
    assert len(cited) > 50 and len(markdown_files()) >= 8
    assert sum(1 for m in cited if m.group(3)) > 10   # with a section name


def test_github_anchors():
    assert github_anchor("Iterations: many requests in one pass over the weights") == \
        "iterations-many-requests-in-one-pass-over-the-weights"
    assert github_anchor("`make perf`: what a student waits for") == "make-perf-what-a-student-waits-for"
    assert github_anchor("How sure is a mean wait?") == "how-sure-is-a-mean-wait"
    assert github_anchor("The [trace](x.md) ring, 2026-12-04") == "the-trace-ring-2026-12-04"


def test_a_broken_link_or_citation_is_reported(tmp_path, monkeypatch):
    # A small tree of its own: the checker must catch each kind of break.
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    anchors.cache_clear()
    (tmp_path / "docs").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# A note\n\n## Iterations: many in one pass\n\n## Iterations: many in one pass\n\n"
        "[ok](a.md#iterations-many-in-one-pass-1) [ok](#a-note) [ok](../src/x.c) [web](https://x.org/y)\n"
        "[gone](b.md) [bad anchor](a.md#nothing) [out](../../shared/m.bin)\n"
        "`[in code](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n```\n"
        "See a.md, \"Iterations\" and docs/a.md, \"Hostile clients\".\n")
    (tmp_path / "src" / "x.c").write_text(
        "// docs/a.md, \"Iterations\": fine; docs/a.md \"A note\" too\n"
        "// (docs/a.md, \"Iterations: many\n// in one pass\"): fine across lines\n"
        "// docs/a.md#a-note fine; docs/gone.md broken; docs/a.md#gone broken\n"
        "// docs/a.md, \"Hostile\n// clients\": broken\n"
        "puts(\"see docs/a.md\", stderr);  // no section\n")
    md = [w for w, _ in markdown_problems(str(tmp_path / "docs" / "a.md"))]
    assert md == ["docs/a.md:8", "docs/a.md:8", "docs/a.md:8", "docs/a.md:14"], md
    src = [(w, p.split(":")[0]) for w, p in source_problems(str(tmp_path / "src" / "x.c"))]
    assert src == [("src/x.c:4", "docs/gone.md"), ("src/x.c:4", "docs/a.md#gone"),
                   ("src/x.c:5", "docs/a.md, \"Hostile clients\"")], src
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "limits.h").write_text("constexpr int kMaxOutput = 4;\n")
    (tmp_path / "src" / "y.c").write_text(
        "// ai::kMaxOutput (lib/limits.h) is there; ai::kMaxPrompt (lib/limits.h) is not\n"
        "// `kMaxOutput` (lib/service.h): no such file; PAGE_FIT (lib/limits.h) is prose\n"
        "// lib/NAME.h is a placeholder\n")
    got = path_problems(str(tmp_path / "src" / "y.c"))
    assert got == [("src/y.c:2", "lib/service.h: no such file"),
                   ("src/y.c:1", "ai::kMaxPrompt (lib/limits.h): lib/limits.h has no kMaxPrompt")], got
    anchors.cache_clear()


if __name__ == "__main__":
    found = all_problems()
    print(listing(found) if found else "no broken links or citations")
    sys.exit(1 if found else 0)
