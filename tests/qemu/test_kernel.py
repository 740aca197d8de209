"""The kernel core works as a whole: kai boots to the shell (after its
selftest) and powers off on halt, at every memory size it supports; a pipe
connects two programs; usertests (the system-call interface, on 1 and 4
harts) passes; a faulting or ^C-killed program dies alone while the kernel
and shell go on; a fork loop of unknown system calls prints a bounded number
of console lines and the kernel later counts the ones it left out; the
console's line editing works."""
import glob
import os
import re
import time

import pytest

from kai_boot import IMAGE, KERNEL, ROOT, need_built, output_of, qemu_run


def need_image():
    need_built()
    if not os.path.exists(IMAGE):
        pytest.skip("build/fs.img is missing: run `make`")


def need_program(name):
    need_built(name)


def boot(commands, **kwargs):
    need_image()
    kwargs.setdefault("snapshot", True)
    kwargs.setdefault("timeout", 120)
    return qemu_run.run(commands, image=IMAGE, kernel=KERNEL, **kwargs)


def test_boot_reaches_shell_and_halts():
    res = boot([])
    assert res.booted, res.transcript
    assert "kai: selftest ok" in res.transcript
    assert not res.panicked
    assert res.halted, "halt did not power the machine off"


def test_pipe_echo_wc():
    res = boot(["echo hello | wc"])
    assert res.ok, res.error + "\n" + res.transcript
    # wc prints lines, words, bytes: "hello\n" is 1 1 6.
    assert re.search(r"\b1\s+1\s+6\b", output_of(res.transcript, "echo hello | wc"))


def usertest_names():
    """Every test usertests has, read from its source tables (`const Test
    kTests[] = {{"name", fn}, ...}` in user/usertests/*.cpp), so a run that
    skipped or lost a test cannot pass on "0 failed" alone."""
    names = []
    for path in sorted(glob.glob(os.path.join(ROOT, "user", "usertests", "*.cpp"))):
        with open(path) as f:
            table = re.search(r"const Test kTests\[\] = \{(.*?)\n\};", f.read(), re.S)
        if table:
            names += re.findall(r'\{"(\w+)",', table.group(1))
    return names


@pytest.mark.parametrize("smp", [1, 4])
def test_usertests(smp):
    need_program("usertests")
    names = usertest_names()
    assert len(names) >= 40, names          # the tables were found
    res = boot(["usertests"], smp=smp, timeout=600)
    assert res.ok, f"{res.error}\n{res.transcript[-4000:]}"
    out = output_of(res.transcript, "usertests")
    ok = re.findall(r"^ok (\w+)", out, re.M)
    assert sorted(ok) == sorted(names), f"missing: {sorted(set(names) - set(ok))}\n{out[-4000:]}"
    assert re.search(rf"^{len(names)} passed, 0 failed$", out, re.M), out[-4000:]


# kernel/syscall.cpp: at most this many unknown-system-call lines a second,
# from all processes together.
UNKNOWN_SYSCALL_LINES_PER_SECOND = 5


def test_unknown_syscall_fork_loop_cannot_flood_the_console():
    need_program("usertests")
    flood, later = "usertests -v unknown_syscall_flood", "usertests bad_syscall"
    # The sleep ends the budget's one-second period, so the next unknown
    # call (from `usertests bad_syscall`) is printed, after the count of the
    # lines the flood left out.
    res = boot([flood, "sleep 1.5", later], smp=2, timeout=300)
    assert res.ok, f"{res.error}\n{res.transcript[-4000:]}"
    flood_out = output_of(res.transcript, flood)
    m = re.search(r"ok unknown_syscall_flood \((\d+) ms\)", flood_out)
    assert m, flood_out
    seconds = int(m.group(1)) / 1000
    printed = len(re.findall(r"unknown system call 777 ", flood_out))
    # 100 children, each one unknown call: one budget per started second.
    bound = UNKNOWN_SYSCALL_LINES_PER_SECOND * (int(seconds) + 1)
    print(f"\nfork loop of 100 unknown calls: {printed} lines in {seconds:.2f} s (bound {bound})")
    assert 1 <= printed <= bound, flood_out
    later_out = output_of(res.transcript, later)
    # No line is lost: every one left out is counted when printing resumes
    # (inside the flood if it outlasts a period, and before the later line).
    left = re.findall(r"kai: (\d+) unknown-system-call lines left out", flood_out + later_out)
    assert re.search(r"kai: \d+ unknown-system-call lines left out", later_out), later_out
    assert printed + sum(map(int, left)) == 100, (printed, left, later_out)
    assert re.search(r"\(usertests\): unknown system call", later_out), later_out


def test_null_dereference_kills_only_the_process():
    need_program("crash")
    res = boot(["crash", "echo survived"])
    assert res.ok, f"{res.error}\n{res.transcript}"
    crash = output_of(res.transcript, "crash")
    assert re.search(r"pid \d+ \(crash\): killed: load page fault at va 0x0, sepc 0x[0-9a-f]+",
                     crash), crash
    assert "still alive" not in crash
    assert "survived" in output_of(res.transcript, "echo survived")


def test_fault_kinds_do_not_panic():
    need_program("crash")
    cmds = ["crash write", "crash ill", "crash jump", "echo done"]
    res = boot(cmds)
    assert res.ok, f"{res.error}\n{res.transcript}"
    assert "store page fault" in output_of(res.transcript, "crash write")
    assert "illegal instruction" in output_of(res.transcript, "crash ill")
    assert "instruction page fault" in output_of(res.transcript, "crash jump")
    assert "done" in output_of(res.transcript, "echo done")


@pytest.mark.parametrize("memory", ["512M", "4G"])
def test_memory_sizes(memory):
    res = boot(["echo ok"], memory=memory, smp=2)
    assert res.ok, f"{res.error}\n{res.transcript}"
    mib = int(memory[:-1]) * (1024 if memory.endswith("G") else 1)
    assert f"{mib} MiB RAM" in res.transcript


def test_ctrl_c_kills_foreground_job():
    need_image()
    need_program("sleep")
    with qemu_run.Session(image=IMAGE, kernel=KERNEL, smp=2) as s:
        assert s.booted, s.transcript
        start = s.mark()
        s.command("sleep 10000", wait=False)
        # A ^C that arrives before the shell has made sleep the foreground
        # job (a loaded host) kills nothing: send it again until the prompt
        # is back, for at most 30 s.
        deadline = time.monotonic() + 30
        while True:
            time.sleep(1.0)
            s.send("\x03")
            if s.wait_prompt(start, timeout=2, skip_echo=True) or time.monotonic() > deadline:
                break
        assert s.wait_prompt(start, timeout=10, skip_echo=True), s.transcript
        assert "^C" in s.since(start)
        assert s.command("echo still here", timeout=20)
        assert "still here" in s.since(start)
        assert s.halt(), s.transcript
        assert not any(m in s.transcript for m in qemu_run.PANIC_MARKERS)


def test_line_editing():
    need_image()
    with qemu_run.Session(image=IMAGE, kernel=KERNEL, smp=1) as s:
        assert s.booted, s.transcript
        start = s.mark()
        # "echo abX<BS>c" -> "abc"; a ^U-killed line is never run.
        s.send("rm -r /\x15")
        assert s.command("echo abX\x7fc", timeout=20), s.transcript
        out = s.since(start)
        assert "abc\n" in out.replace("\r", "")
        assert s.halt()
