"""User space behaves as documented in docs/userspace.md: the shell's grammar
(pipes, redirection, lists, quoting, background jobs, errors) and each
utility's output, on a booted kai."""
import os
import re

import pytest

from kai_boot import IMAGE, KERNEL, need_built, qemu_run

PROGRAMS = ["sh", "echo", "cat", "ls", "mkdir", "rm", "ln", "wc", "grep", "kill", "sleep",
            "time", "crash"]


def need_system():
    need_built(*PROGRAMS)
    if not os.path.exists(IMAGE):
        pytest.skip("build/fs.img is missing: run `make`")


def outputs(commands, **kwargs):
    """Boots once, runs the commands; returns {command: its output}."""
    need_system()
    kwargs.setdefault("snapshot", True)
    kwargs.setdefault("timeout", 60)
    res = qemu_run.run(commands, image=IMAGE, kernel=KERNEL, **kwargs)
    assert res.ok, f"{res.error}\n{res.transcript[-3000:]}"
    text = res.transcript.replace("\r", "")
    out = {}
    pos = 0
    for c in commands:
        start = text.index(c + "\n", pos) + len(c) + 1
        end = text.find(qemu_run.PROMPT, start)
        out[c] = text[start:end if end >= 0 else None]
        pos = start
    return out


def test_shell_grammar():
    cmds = [
        "echo a b c | wc",
        "echo one > /t1; echo two >> /t1; cat < /t1",
        "cat /t1 | grep tw | wc",
        "echo 'single  quoted' \"double \\\" quoted\" back\\ slash # a comment",
        "mkdir /td; cd /td; echo x > f; cd /; ls /td",
        "sh -c 'echo inner; exit 3'; echo after",
        "echo echo from script > /s.sh; echo cat /t1 >> /s.sh; sh /s.sh",
        "sh < /s.sh",
        "nosuchprogram x",
        "echo | | echo",
        "cat > ",
        "echo 'open",
        "sleep 0.2 & echo background",
        "/bin/echo absolute path",
        "nosuch && echo no || echo yes",
        "echo 1 && grep x /none && echo 2 || echo 3; echo 4",
        "echo x &&",
    ]
    out = outputs(cmds)
    assert re.search(r"^1 3 6$", out[cmds[0]], re.M), out[cmds[0]]
    assert out[cmds[1]] == "one\ntwo\n"
    assert re.search(r"^1 1 4$", out[cmds[2]], re.M), out[cmds[2]]
    assert out[cmds[3]] == 'single  quoted double " quoted back slash\n'
    assert re.search(r"^file\s+\d+\s+2 f$", out[cmds[4]], re.M), out[cmds[4]]
    assert out[cmds[5]] == "inner\nafter\n"
    assert out[cmds[6]] == "from script\none\ntwo\n"
    assert out[cmds[7]] == "from script\none\ntwo\n"
    assert "exec nosuchprogram failed" in out[cmds[8]]
    for bad in cmds[9:12]:
        assert out[bad].startswith("sh: "), out[bad]
    assert re.search(r"^\[\d+\]$", out[cmds[12]], re.M) and "background" in out[cmds[12]]
    assert out[cmds[13]] == "absolute path\n"
    assert out[cmds[14]].endswith("yes\n") and "no\n" not in out[cmds[14]]
    # (a background job from above may report "[pid] done" in between)
    lines = [ln for ln in out[cmds[15]].splitlines() if not ln.startswith("[")]
    assert lines[0] == "1" and lines[-2:] == ["3", "4"] and "2" not in lines, lines
    assert out[cmds[16]].startswith("sh: "), out[cmds[16]]


def test_utilities():
    cmds = [
        "echo hello > /u1",
        "ln /u1 /u2",
        "ls /u2",
        "rm /u1",
        "cat /u2",
        "cat /u1",
        "wc /u2 /u2",
        "grep ell /u2",
        "grep zzz /u2; echo status-checked",
        "mkdir /ud /ud",
        "ls /ud",
        "rm /ud /ud",
        "kill 99999",
        "time sleep -t 5",
        "crash write",
        "echo survived",
    ]
    out = outputs(cmds)
    assert re.search(r"^file\s+\d+\s+6 /u2$", out["ls /u2"], re.M), out["ls /u2"]
    assert out["cat /u2"] == "hello\n"
    assert "No such file or directory" in out["cat /u1"]
    assert out["wc /u2 /u2"] == "1 1 6 /u2\n1 1 6 /u2\n2 2 12 total\n"
    assert out["grep ell /u2"] == "hello\n"
    assert out["grep zzz /u2; echo status-checked"] == "status-checked\n"
    assert "File exists" in out["mkdir /ud /ud"]
    lines = out["ls /ud"].splitlines()
    assert [ln.split()[-1] for ln in lines] == [".", ".."], lines
    assert "No such file or directory" in out["rm /ud /ud"]
    assert "No such process" in out["kill 99999"]
    m = re.search(r"real (\d+)\.\d+ ms", out["time sleep -t 5"])
    assert m and 40 <= int(m.group(1)) < 2000, out["time sleep -t 5"]
    assert "killed: store page fault" in out["crash write"]
    assert out["echo survived"] == "survived\n"


def test_a_foreground_command_holds_the_console_from_its_first_instruction():
    """The shell hands the console to a command before the command runs:
    `aictl` may steer the AI service only as the console's foreground
    process. With `sched.fork_delay_ms=300` fork() keeps the parent asleep
    while the child runs, so a shell that called setfg(pid) only after
    fork() returned lost the race every time (`aictl policy ...` refused:
    Operation not permitted); with two harts and a busy host it lost it once
    in a while (a `make perf` run)."""
    need_built("aictl")
    cmds = ["aictl policy sjf", "aictl policy fcfs"]
    out = outputs(cmds, smp=1, append="sched.fork_delay_ms=300")
    for c in cmds:
        assert "not permitted" not in out[c] and "aictl:" not in out[c], (c, out[c])
    assert "policy=sjf" in out[cmds[0]] and "policy=fcfs" in out[cmds[1]], out
