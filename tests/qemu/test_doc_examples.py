"""The examples in README.md and docs/*.md run as written and print what the
docs show (docs/development.md, "Examples in the docs").

A fenced block is an example when its info string says so:
  kai       command lines typed into the kai shell. All of them run, in the
            order of the files, in one boot of the image `make demo` boots
            (the Makefile's fs-demo.img: build/fs-smol.img's programs and
            /AI/SMOL, synthetic weights with kai's own tokenizer, plus
            /etc/rc), built here from the same parts.
  kai-boot  what that boot prints before the first prompt (the demo's
            /etc/rc): sample output only.
  host      host commands, each run with bash (pipefail) from the top of the
            checkout, with a timeout.
In a block with lines starting with `$ `, those are the commands and the
lines under one are its sample output; in a block without, every line is a
command (`# comment` lines aside). A line ending in `\\` goes on the next.

Checked for each command (test id FILE:LINE, the line of the command):
status 0 (in the guest, of the line's last pipeline), and no `usage:`,
`error`, `panic`, `Traceback`, `exec ... failed` or `sh: ...` in its output.
Each shown output line must match one printed line, in the order shown
(other lines may come between): the same words and punctuation, except that
a number matches any number (timings, token ids) and `...` matches any text.
So a renamed or missing field, a reworded message, a line that is no longer
printed, or a different count of token ids fails the example; figures
changing, or new fields where the doc shows `...`, do not.

What it compares with: the docs, written by hand, not by the programs.
How it fails: `tests/mutate.py demo-rc-predicts-8` makes the demo's warm
request 8 tokens long, and README.md's boot block (16 ids) no longer
matches; a reworded option in a marked command fails with its file and line.

    /usr/bin/python3 -m pytest -q tests/qemu/test_doc_examples.py
    (needs make -j2 all test-models build/fs-smol.img)
"""
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field

import pytest

from kai_boot import KERNEL, ROOT, all_programs, make_image, need_built, qemu_run, run_in_session

KINDS = ("kai", "kai-boot", "host")
SMOL_ASSETS = os.path.join(ROOT, "build", "assets", "SMOL")
TIMEOUT = 300          # seconds per command: catches a hang, no verdict on speed
FAILED = "KAI-DOC-EXAMPLE-EXIT-NONZERO"
BAD = re.compile(r"usage:|\berror\b|\bpanic|Traceback|^exec \S+ failed|^sh: ", re.I | re.M)
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")


@dataclass
class Example:
    where: str                   # FILE:LINE of the command (or of the first output line)
    kind: str                    # kai, kai-boot or host
    command: str = ""            # empty for kai-boot
    shown: list = field(default_factory=list)   # (FILE:LINE, line) of the sample output


def doc_files(root=ROOT):
    docs = os.path.join(root, "docs")
    return [os.path.join(root, "README.md")] + \
        sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))


def blocks(text):
    """(line number of the first content line, info string, lines) of each
    fenced block; an indented fence's indentation is taken off its lines."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.groups()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
        yield i + 2, info, body
        i = j + 1


def examples_in(path, text):
    """The examples of one markdown file's kai, kai-boot and host blocks."""
    name = os.path.relpath(path, ROOT)
    out = []
    for first, info, body in blocks(text):
        if info not in KINDS:
            continue
        numbered = list(enumerate(body, first))
        if info == "kai-boot":
            out.append(Example(f"{name}:{first}", info,
                               shown=[(f"{name}:{n}", l) for n, l in numbered if l.strip()]))
            continue
        prompted = any(l.startswith("$ ") for l in body)
        current = None
        k = 0
        while k < len(numbered):
            n, line = numbered[k]
            text_ = line[2:] if prompted and line.startswith("$ ") else line
            is_command = line.startswith("$ ") if prompted else \
                (line.strip() and not line.lstrip().startswith("#"))
            if is_command:
                while text_.endswith("\\") and k + 1 < len(numbered):
                    k += 1
                    text_ = text_[:-1] + " " + numbered[k][1].strip()
                current = Example(f"{name}:{n}", info, command=text_.strip())
                out.append(current)
            elif prompted and current is not None and line.strip() and line.strip() != "$":
                current.shown.append((f"{name}:{n}", line))
            k += 1
    return out


def all_examples(root=ROOT):
    found = []
    for path in doc_files(root):
        with open(path, encoding="utf-8") as f:
            found += examples_in(path, f.read())
    return found


EXAMPLES = all_examples()


def by_kind(kind):
    return pytest.mark.parametrize("example", [e for e in EXAMPLES if e.kind == kind],
                                   ids=lambda e: e.where)


# ---------------------------------------------------------------- the checks
NUMBER = r"0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?"


def line_pattern(shown):
    """A regex for one shown output line: words and punctuation as shown,
    whitespace runs alike, a number for any number, `...` for any text."""
    out = []
    for part in re.split(r"(\.\.\.|(?<![\w.])(?:" + NUMBER + r")|\s+)", shown.strip()):
        if not part:
            continue
        if part == "...":
            out.append(".*")
        elif part.isspace():
            out.append(r"\s+")
        elif re.fullmatch(NUMBER, part):
            out.append(f"(?:{NUMBER})")
        else:
            out.append(re.escape(part))
    return re.compile("".join(out))


def missing_lines(shown, output):
    """The shown lines (FILE:LINE, line) that the output does not print in
    that order; after the first one missing, every later one is reported too."""
    printed = [l.strip() for l in output.replace("\r\n", "\n").split("\n")]
    at = 0
    for i, (where, line) in enumerate(shown):
        pattern = line_pattern(line)
        hit = next((j for j in range(at, len(printed)) if pattern.fullmatch(printed[j])), None)
        if hit is None:
            return shown[i:]
        at = hit + 1
    return []


def check_output(example, output, status_ok):
    """Asserts what every example must show; the message names FILE:LINE."""
    head = f"{example.where}: `{example.command}`" if example.command else f"{example.where}: the boot"
    if not status_ok:
        pytest.fail(f"{head} failed (non-zero status):\n{output}", pytrace=False)
    bad = BAD.search(output)
    if bad:
        pytest.fail(f"{head} printed {bad.group(0)!r}:\n{output}", pytrace=False)
    lost = missing_lines(example.shown, output)
    if lost:
        pytest.fail(f"{head}: the output does not show, in this order:\n" +
                    "\n".join(f"  {w}: {l}" for w, l in lost) + f"\nwhat it printed:\n{output}",
                    pytrace=False)


def strip_comment(line):
    """The command line without a trailing `# comment` (quotes respected)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


# ---------------------------------------------------------------- the guest
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """One boot of the demo image: (session, what it printed up to the first prompt)."""
    need_built("sh", "init", "ai", "llmrun", "chat", "aistat")
    if not os.path.exists(os.path.join(SMOL_ASSETS, "TOK.BIN")):
        pytest.skip(f"{SMOL_ASSETS}/TOK.BIN missing: run `make build/fs-smol.img` "
                    "(a course zip's bundle has no tokenizer)")
    img = make_image(str(tmp_path_factory.mktemp("demo") / "fs-demo.img"), all_programs(),
                     [("AI/SMOL", SMOL_ASSETS), ("etc", os.path.join(ROOT, "user", "etc"))])
    with qemu_run.Session(img, KERNEL, smp=2, memory="1G", snapshot=True, boot_timeout=TIMEOUT) as s:
        assert s.booted, "the demo image did not boot to the shell:\n" + s.transcript[-4000:]
        boot = s.transcript
        yield s, qemu_run.KERNEL_AI_LINE.sub("", boot.replace("\r\n", "\n"))
        s.halt()


@by_kind("kai-boot")
def test_boot_prints_what_the_docs_show(demo, example):
    _, boot = demo
    start = boot.find("fs: mounted")       # /etc/rc runs after the root is mounted
    check_output(example, boot[start if start >= 0 else 0:boot.rfind("init: starting sh")], True)


@by_kind("kai")
def test_kai_example(demo, example):
    session, _ = demo
    out = run_in_session(session, f"{strip_comment(example.command)} || echo {FAILED}", TIMEOUT)
    out = qemu_run.KERNEL_AI_LINE.sub("", out.replace("\r\n", "\n"))
    check_output(example, out.replace(FAILED + "\n", ""), FAILED not in out)


# ---------------------------------------------------------------- the host
def missing_inputs(command):
    """What under build/ the command names and the build has not made."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return []
    missing = [w for w in words if w.startswith("build/") and not os.path.exists(os.path.join(ROOT, w))]
    if "qemu_run.py" in command and not os.path.exists(KERNEL):
        missing.append(os.path.relpath(KERNEL, ROOT))
    return missing


@by_kind("host")
def test_host_example(example):
    missing = missing_inputs(example.command)
    if missing:
        pytest.skip(f"{example.where}: {', '.join(missing)} not built (`make -j2 all test-models`, "
                    "or the make target the doc names; models/README.md for the real-model files)")
    try:
        r = subprocess.run(["bash", "-o", "pipefail", "-c", example.command], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{example.where}: `{example.command}` did not finish in {TIMEOUT} s:\n"
                    + (e.stdout or b"").decode(errors="replace")[-3000:])
    check_output(example, r.stdout.decode(errors="replace"), r.returncode == 0)


# ---------------------------------------------------------------- the checker itself (no QEMU)
def test_the_docs_mark_examples_of_each_kind():
    for kind in KINDS:
        assert any(e.kind == kind for e in EXAMPLES), f"no `{kind}` block in README.md or docs/*.md"
    for e in EXAMPLES:
        assert e.command or e.shown, f"{e.where}: an empty `{e.kind}` block"


def test_the_parser_reads_the_conventions():
    doc = "\n".join(["text", "```kai", "$ ai --text \"x\" \\", "    --predict 4", "x noise",
                     "timing model=SMOL ttft_us=5 ...", "$", "```", "```host", "# a comment",
                     "make_a b   # and another", "", "```", "  ```kai-boot", "  --- cold ---", "  ```",
                     "```sh", "make demo", "```"])
    got = examples_in(os.path.join(ROOT, "X.md"), doc)
    assert [(e.where, e.kind, e.command) for e in got] == [
        ("X.md:3", "kai", 'ai --text "x"  --predict 4'), ("X.md:11", "host", "make_a b   # and another"),
        ("X.md:15", "kai-boot", "")]
    assert got[0].shown == [("X.md:5", "x noise"), ("X.md:6", "timing model=SMOL ttft_us=5 ...")]
    assert got[2].shown == [("X.md:15", "--- cold ---")]
    assert strip_comment("make_a b   # and another") == "make_a b"
    assert strip_comment("echo '# not a comment' x") == "echo '# not a comment' x"


def test_shown_lines_match_by_shape():
    shown = [("D.md:1", "26746 155 38689"),
             ("D.md:2", "timing model=SMOL load_us=177020 ttft_us=2280783 ..."),
             ("D.md:3", "model SMOL: queue wait 128490 us, TTFT 414286 us (prefill 285796 us), ...")]
    out = "x\n1 2 3\nai: noise\ntiming model=SMOL load_us=9 ttft_us=10 gen=4\n" \
          "model SMOL: queue wait 1 us, TTFT 2 us (prefill 3 us), TPOT 4 us\n"
    assert missing_lines(shown, out) == []
    # Fields renamed, token ids missing or lines out of order fail.
    assert missing_lines(shown, out.replace("ttft_us", "first_us")) == shown[1:]
    assert missing_lines(shown, out.replace("1 2 3", "1 2")) == shown
    assert missing_lines(shown[1:2] + shown[:1], out) == shown[:1]
    assert missing_lines([("D.md:1", "matvec=int8")], "matvec=int16") != []
    ex = Example("D.md:9", "kai", "ai --bad")
    with pytest.raises(pytest.fail.Exception, match="D.md:9"):
        check_output(ex, "usage: ai [--model NAME]\n", True)
    with pytest.raises(pytest.fail.Exception, match="D.md:9"):
        check_output(ex, "fine\n", False)
