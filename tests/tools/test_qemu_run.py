"""Unit tests of tools/qemu_run.py's console predicates (no QEMU needed)."""
import io
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import qemu_run  # noqa: E402

BOOT = "kai: selftest ok\nfs: mounted 73 MiB\ninit: starting sh\n"


def test_shell_started_needs_init_then_a_prompt():
    assert not qemu_run._shell_started("")
    assert not qemu_run._shell_started("kai: booting\n")
    assert not qemu_run._shell_started(BOOT)
    assert qemu_run._shell_started(BOOT + "$ ")


def test_shell_started_when_a_log_line_splits_inits_line():
    # Seen here: "in" + a whole kernel log line + "it: starting sh".
    boot = BOOT.replace("init: starting sh\n", "inai: model LLAMA ready: llama, 0.1M params\nit: starting sh\n")
    assert qemu_run._shell_started(boot + "$ ")
    assert not qemu_run._shell_started(boot)


def test_shell_started_when_a_log_line_follows_or_splits_the_prompt():
    # Seen in CI: the AI service logs each model as it loads, while sh starts.
    assert qemu_run._shell_started(BOOT + "$ ai: model LLAMA ready: llama, loaded in 28 ms\n")
    assert qemu_run._shell_started(BOOT + "ai: mode$ l LLAMA ready: llama, loaded in 28 ms\n")
    assert qemu_run._shell_started(BOOT + "ai: model LLAMA ready$: llama, 28 ms\n ")
    # ... and a command's prompt is still found after its echo.
    text = BOOT + "ai: mode$ l LLAMA ready\necho\n\n$ "
    assert qemu_run._prompt_after(skip_echo=True)(text[len(BOOT) + 8:])


def test_boot_over_without_waiting_for_the_timeout():
    assert qemu_run._boot_over(BOOT + "$ ")
    assert not qemu_run._boot_over(BOOT)
    panic = "kai: booting\npanic on hart 0: oops\n"
    assert qemu_run._boot_over(panic) and not qemu_run._shell_started(panic)
    idle = ("fs: cannot mount: bad magic\nkai: cannot mount the root file system; no /bin/init to run.\n"
            "kai: the kernel keeps running (idle). Build an image with `make fsimg`.\n")
    assert qemu_run._boot_over(idle) and not qemu_run._shell_started(idle)
    assert not qemu_run._boot_over(idle[:-5])    # the whole line, for the test's messages


def test_prompt_after_skips_the_echo():
    text = BOOT + "$ echo $ x\n$ x\n$ "
    start = len(BOOT) + 2
    assert qemu_run._prompt_after(skip_echo=True)(text[start:])
    assert not qemu_run._prompt_after(skip_echo=True)(text[start:-2])


class _FakeConsole:
    def __init__(self, text):
        self.text = text

    def wait_for(self, predicate, timeout, start=0):
        return predicate(self.text[start:])


def test_wait_log_ignores_a_prompt_inside_the_line():
    s = qemu_run.Session.__new__(qemu_run.Session)
    s.console = _FakeConsole(BOOT + "ai: mode$ l LLAMA ready: llama, 0.1M params, loaded in 28 ms\n")
    m = s.wait_log(r"ai: model LLAMA (ready|failed)")
    assert m and m.group(1) == "ready" and m.group(0).endswith("28 ms\n")
    s.console = _FakeConsole(BOOT + "$ ai: model LLAMA ready: llama, 0.1M params, loaded in 2")
    assert s.wait_log(r"ai: model LLAMA (ready|failed)") is None   # not the whole line yet


class _FakeQemu:
    """What _Console reads: a process whose stdout holds fixed bytes."""
    def __init__(self, data):
        self.stdout = io.BytesIO(data)


def _session_reading(data):
    s = qemu_run.Session.__new__(qemu_run.Session)
    s.console = qemu_run._Console(_FakeQemu(data))
    s.console.thread.join(timeout=5)
    return s


# A model's answer that is not clean UTF-8: "é" is two bytes and one
# character; b"\xe2\x82" is a character cut after two of its three bytes (a
# token boundary inside it), which decodes to one replacement character.
ANSWER = "caf\u00e9 ".encode() + b"\xe2\x82" + b" ok\n$ "
NEXT = b"echo next\nnext\n$ "


def test_since_slices_bytes_at_the_mark_then_decodes():
    s = _session_reading(BOOT.encode() + ANSWER + NEXT)
    mark = len(BOOT.encode() + ANSWER)       # what mark() returned before `echo next`
    assert s.since(mark) == NEXT.decode()
    assert s.since(0) == s.transcript
    # The old way, a byte offset used on the decoded transcript, lands two
    # characters late (the "é" and the cut character are two bytes each and
    # one character each) and cuts the start of the next command's echo.
    assert s.transcript[mark:] == NEXT.decode()[2:]


def test_waits_read_from_the_mark_in_bytes():
    s = _session_reading(BOOT.encode() + ANSWER + NEXT)
    mark = len(BOOT.encode() + ANSWER)
    assert s.wait_text("echo next", mark, timeout=0.1)
    assert not s.wait_text("ok", mark, timeout=0.1)           # before the mark
    assert s.wait_prompt(mark, timeout=0.1, skip_echo=True)
    assert s.wait_for(lambda t: t.startswith("echo next\n"), mark, timeout=0.1)
