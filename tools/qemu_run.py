#!/usr/bin/python3
"""Boot kai in QEMU, run shell commands, print the console transcript.

    python3 tools/qemu_run.py [--image IMG] [--kernel ELF] [--smp N] [--memory SIZE]
                              [--timeout S] [--snapshot] [--deterministic]
                              [--disk ram|nvme|ssd|hdd|sdcard] [--idle-warps] -c 'COMMAND' [-c ...]

Boots QEMU with the Makefile's options (serial console on stdio), waits for
the shell prompt `$ `, sends each command, waits for the next prompt (at most
--timeout seconds per command), then runs `halt` and waits for QEMU to exit.
Exits non-zero if boot fails, a command times out, or the console shows a
kernel panic. Import it and call run() to get the transcript in a test.
Standard library only.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import disk_models  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_IMAGE = os.path.join(ROOT, "build", "fs.img")
DEFAULT_KERNEL = os.path.join(ROOT, "build", "kernel", "kernel.elf")
PROMPT = "$ "
PANIC_MARKERS = ("panic on hart", "panic:")


class RunResult:
    """What happened in one QEMU session."""

    def __init__(self):
        self.transcript = ""
        self.booted = False
        self.timed_out_command = None   # the command that never got a prompt back
        self.halted = False             # QEMU exited after `halt`
        self.error = None               # short reason if not ok

    @property
    def panicked(self):
        return any(m in self.transcript for m in PANIC_MARKERS)

    @property
    def ok(self):
        return self.booted and self.timed_out_command is None and not self.panicked \
            and self.error is None


class _Console:
    """Collects QEMU's stdout on a thread so waits can time out."""

    def __init__(self, proc):
        self.proc = proc
        self.buf = bytearray()
        self.cond = threading.Condition()
        self.eof = False
        self.thread = threading.Thread(target=self._reader, daemon=True)
        self.thread.start()

    def _reader(self):
        while True:
            data = self.proc.stdout.read1(4096) if hasattr(self.proc.stdout, "read1") \
                else os.read(self.proc.stdout.fileno(), 4096)
            with self.cond:
                if not data:
                    self.eof = True
                    self.cond.notify_all()
                    return
                self.buf += data
                self.cond.notify_all()

    def text(self, start=0):
        """The console from byte offset start on, decoded. The offset counts
        bytes (as size() does): a model's answer may hold bytes that are not
        UTF-8, each decoded to one replacement character, so slicing the
        decoded text at a byte offset would land a few characters off."""
        with self.cond:
            return self.buf[start:].decode("utf-8", errors="replace")

    def size(self):
        with self.cond:
            return len(self.buf)

    def wait_for(self, predicate, timeout, start=0):
        """Wait until predicate(text) holds, text being the console from byte
        offset start on; True if it did, False on timeout/EOF."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                text = self.buf[start:].decode("utf-8", errors="replace")
                if predicate(text):
                    return True
                if self.eof:
                    return False
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.2))

    def send(self, data):
        try:
            self.proc.stdin.write(data.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass


# Exact mode: the guest clock counts executed instructions, 1 ns each
# (QEMU's -icount with shift=0). align=off: never slow the guest down to
# real time; sleep=on: an idle guest (waiting for the disk, or in wfi) lets
# real time pass instead of warping the clock forward. Compute figures are
# then identical from boot to boot, whatever else the host is doing.
ICOUNT = ["-icount", "shift=0,align=off,sleep=on"]
# sleep=off: an idle guest's clock jumps straight to its next timer deadline,
# exactly. For a guest that only computes and waits for its own timers (no
# disk, no console input) while it measures, this makes the *waits*
# reproducible too: with sleep=on an idle stretch ends when the host's timer
# fires, a little after the deadline and by a different amount every time.
# Disk reads then take no virtual time at all (so no loading figure means
# anything), and idle stretches cost no real time.
ICOUNT_IDLE_WARPS = ["-icount", "shift=0,align=off,sleep=off"]
TIME_MODE_EXACT = "virtual time: 1 instruction = 1 ns"
TIME_MODE_REAL = "real time"
# Exact mode runs one hart. Under -icount QEMU runs every hart in one host
# thread, round-robin, so extra harts add no throughput in virtual time; and
# kai's SMP boot does not complete there yet: since the boot hart waits for
# the others in wfi they do report in, but the first process then never
# mounts the root file system (docs/experiments.md, "Exact mode").
EXACT_MAX_SMP = 1


class Monitor:
    """QEMU's human monitor (HMP) on the Unix socket given as qemu_command's
    `monitor`: `with Monitor(path) as m: text = m.command("info jit")`.
    Each command's reply is read up to the next prompt (or `until`)."""

    def __init__(self, path, timeout=20):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
            self._read_until(b"(qemu)")   # the greeting
        except OSError:
            self.sock.close()
            raise

    def command(self, text, until=b"(qemu)"):
        self.sock.sendall(text.encode() + b"\n")
        return self._read_until(until)

    def _read_until(self, token):
        buf = b""
        while token not in buf:
            data = self.sock.recv(65536)
            if not data:
                break
            buf += data
        return buf.decode("utf-8", errors="replace")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()


def qemu_command(image=DEFAULT_IMAGE, kernel=DEFAULT_KERNEL, smp=2, memory="1G", snapshot=False,
                 append="", deterministic=False, disk=disk_models.DEFAULT_DISK, idle_warps=False,
                 monitor=None):
    """QEMU's command line. disk names a disk model (tools/disk_models.py):
    in real time QEMU throttles the drive to that device's bandwidth and
    IOPS; in exact mode (deterministic) the kernel's disk clock charges the
    model's time in virtual time instead (boot option disk.clock=B,IOPS:
    QEMU's throttle works in real time, which exact mode cannot repeat).
    idle_warps (exact mode only): ICOUNT_IDLE_WARPS instead of ICOUNT.
    monitor: a Unix socket path for QEMU's monitor (HMP), e.g. for `info jit`."""
    throttle = disk_models.drive_options(disk)   # UnknownDisk (a ValueError) if bad
    if deterministic and throttle:
        throttle = ""
        clock = disk_models.clock_option(disk)
        append = f"{append} {clock}".strip()
    cmd = ["qemu-system-riscv64", "-machine", "virt", "-bios", "default", "-kernel", kernel,
           "-m", str(memory), "-smp", str(smp), "-nographic",
           "-global", "virtio-mmio.force-legacy=false"]
    if deterministic:
        if int(smp) > EXACT_MAX_SMP:
            raise ValueError(f"exact mode (--deterministic) runs {EXACT_MAX_SMP} hart, not {smp}")
        cmd += ICOUNT_IDLE_WARPS if idle_warps else ICOUNT
    if image:
        drive = f"file={image},if=none,format=raw,id=x0"
        if snapshot:
            # Writes go to a temporary overlay, so the image is only read: skip
            # QEMU's image lock so that several sessions (or tests) can share it.
            drive += ",snapshot=on,file.locking=off"
        drive += throttle
        cmd += ["-drive", drive, "-device", "virtio-blk-device,drive=x0,bus=virtio-mmio-bus.0"]
    if append:
        cmd += ["-append", append]   # kernel command line, e.g. "ai.workers=2"
    if monitor:
        cmd += ["-monitor", f"unix:{monitor},server=on,wait=off"]
    return cmd


def _shell_started(text):
    """The shell has printed its first prompt. Kernel log lines (the AI
    service logs each model as it loads, while the shell starts) may follow
    the prompt or even split it, so the prompt need not end the console."""
    # A kernel log line can even land inside init's own line ("in" + "ai:
    # model ... ready\n" + "it: starting sh"): look past whole AI log lines.
    # Only the shell writes "$" after init's line; a log line may even land
    # between the prompt's two characters, so look in the original text too.
    for t in (text, KERNEL_AI_LINE.sub("", text)):
        init = t.find("init: starting sh")
        if init >= 0 and "$" in t[init:]:
            return True
    return False


# A whole line the AI service logs while the shell starts.
KERNEL_AI_LINE = re.compile(r"ai: (model|no model|scheduling|unknown|cannot)[^\n]*\n")

# The kernel's last words when the root file system cannot be mounted.
NO_ROOT = re.compile(r"kai: the kernel keeps running \(idle\)[^\n]*\n")


def _boot_over(text):
    """A boot predicate: the shell started, the kernel panicked, or it runs
    idle without a root file system (no need to wait for the timeout)."""
    return _shell_started(text) or any(m in text for m in PANIC_MARKERS) or \
        NO_ROOT.search(text) is not None


def _prompt_after(skip_echo=False):
    """A predicate on the console since a mark: it ends with a fresh prompt."""
    def check(tail):
        if skip_echo:
            # Skip the echoed command line itself (it may contain "$ ").
            nl = tail.find("\n")
            if nl < 0:
                return False
            tail = tail[nl + 1:]
        if any(m in tail for m in PANIC_MARKERS):
            return True
        return tail.endswith(PROMPT)
    return check


class Session:
    """An interactive QEMU session, for tests that need more than run():

        with Session(smp=2) as s:          # boots and waits for the prompt
            s.command("sleep 1000", wait=False)
            s.send("\x03")                  # ^C
            s.wait_prompt()
    """

    def __init__(self, image=DEFAULT_IMAGE, kernel=DEFAULT_KERNEL, smp=2, memory="1G",
                 snapshot=True, boot_timeout=60.0, append="", deterministic=False,
                 disk=disk_models.DEFAULT_DISK, idle_warps=False, monitor=None):
        self.deterministic = deterministic
        self.disk = disk
        self.proc = subprocess.Popen(qemu_command(image, kernel, smp, memory, snapshot, append,
                                                  deterministic, disk, idle_warps, monitor),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, bufsize=0)
        self.console = _Console(self.proc)
        self.booted = self.console.wait_for(_boot_over, boot_timeout) and \
            _shell_started(self.console.text()) and \
            not any(m in self.console.text() for m in PANIC_MARKERS)
        # No fresh prompt is asked for: the shell reads commands either way,
        # and the echo of an empty line could split a log line in progress.

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def transcript(self):
        return self.console.text()

    def send(self, data):
        self.console.send(data)

    def mark(self):
        """A place in the console to read from later with since(); it counts
        bytes, not characters (see _Console.text)."""
        return self.console.size()

    def since(self, mark):
        """The console's text from mark on: the bytes are cut at the mark,
        then decoded (never transcript[mark:])."""
        return self.console.text(mark)

    def wait_for(self, predicate, start=0, timeout=60.0):
        """True once predicate(self.since(start)) holds."""
        return self.console.wait_for(predicate, timeout, start)

    def wait_prompt(self, start=None, timeout=60.0, skip_echo=False):
        """True once the console (from mark start) ends with a fresh prompt."""
        start = self.mark() if start is None else start
        return self.console.wait_for(_prompt_after(skip_echo), timeout, start)

    def wait_text(self, text, start=0, timeout=60.0):
        """True once text appears in the console after mark start."""
        return self.console.wait_for(lambda t: text in t, timeout, start)

    def wait_log(self, pattern, timeout=60.0):
        """Waits for a whole kernel log line matching the regex `pattern`
        (e.g. r"ai: model LLAMA (ready|failed)") and returns its match, or
        None. The AI service logs while the shell starts, so the shell's
        first prompt may land inside the line: it is ignored. Use it before
        sending commands (their echo could split the line too)."""
        regex = re.compile(pattern + r"[^\n]*\n")
        found = []

        def check(text):
            m = regex.search(text.replace(PROMPT, ""))
            if m:
                found.append(m)
            return m is not None
        return found[-1] if self.console.wait_for(check, timeout) else None

    def command(self, command, timeout=60.0, wait=True):
        """Sends a command line; returns True if the next prompt came back in time."""
        time.sleep(0.05)
        start = self.mark()
        self.send(command + "\n")
        return self.wait_prompt(start, timeout, skip_echo=True) if wait else True

    def halt(self, timeout=15.0):
        """Runs `halt`; True if QEMU exited."""
        self.send("halt\n")
        try:
            self.proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def close(self):
        if self.proc.poll() is None and any(m in self.transcript for m in PANIC_MARKERS):
            time.sleep(1.0)   # let the rest of the panic report reach the console
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.console.thread.join(timeout=2)


def run(commands, image=DEFAULT_IMAGE, kernel=DEFAULT_KERNEL, smp=2, memory="1G",
        timeout=60.0, boot_timeout=60.0, snapshot=False, halt=True, append="", deterministic=False,
        disk=disk_models.DEFAULT_DISK, idle_warps=False):
    """Boot, run each command, halt. Returns a RunResult (transcript and status)."""
    result = RunResult()
    session = Session(image, kernel, smp, memory, snapshot, boot_timeout, append, deterministic, disk,
                      idle_warps)
    try:
        if not session.booted:
            result.error = "boot failed: no shell prompt"
        else:
            result.booted = True
            for command in commands:
                if command.strip() == "halt":   # powers off: no prompt follows
                    halt = True
                    break
                if not session.command(command, timeout):
                    result.timed_out_command = command
                    result.error = f"command timed out after {timeout}s: {command}"
                    break
                result.transcript = session.transcript
                if result.panicked:
                    result.error = "kernel panic"
                    break
            if halt and result.error is None:
                if session.halt():
                    result.halted = True
                else:
                    result.error = "QEMU did not exit after halt"
    finally:
        session.close()
        result.transcript = session.transcript
        if result.panicked and result.error is None:
            result.error = "kernel panic"
    return result


def transcript(commands, **kwargs):
    """Convenience for tests: the console transcript of run(commands, **kwargs)."""
    return run(commands, **kwargs).transcript


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", default=DEFAULT_IMAGE)
    ap.add_argument("--kernel", default=DEFAULT_KERNEL)
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--memory", default="1G")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per command")
    ap.add_argument("--boot-timeout", type=float, default=60.0)
    ap.add_argument("--snapshot", action="store_true", help="do not write to the image")
    ap.add_argument("--append", default="", help='kernel command line, e.g. "ai.workers=2"')
    ap.add_argument("--deterministic", action="store_true",
                    help="exact mode: QEMU -icount, the guest clock counts instructions (1 ns each)")
    ap.add_argument("--disk", default=disk_models.DEFAULT_DISK, metavar="|".join(disk_models.DISK_NAMES),
                    help="disk model: QEMU throttles the drive to that device's bandwidth and IOPS, "
                         "or with --deterministic the kernel's disk clock charges them in virtual time "
                         "(tools/disk_models.py; ram: no throttling)")
    ap.add_argument("--idle-warps", action="store_true",
                    help="with --deterministic: an idle guest's clock jumps to its next timer deadline "
                         "(-icount sleep=off), so idle waits repeat too (needs the disk clock: a disk model "
                         "other than ram, or the disk's reads take no time)")
    ap.add_argument("-c", "--command", action="append", default=[], dest="commands")
    args = ap.parse_args(argv)
    if args.deterministic and args.smp > EXACT_MAX_SMP:
        print(f"qemu_run: --deterministic runs one hart (--smp 1), not --smp {args.smp}: "
              "see docs/experiments.md", file=sys.stderr)
        return 2
    if args.idle_warps and not args.deterministic:
        print("qemu_run: --idle-warps needs --deterministic (it is an -icount option)", file=sys.stderr)
        return 2
    try:
        disk_models.disk_model(args.disk)
    except disk_models.UnknownDisk as e:
        print(f"qemu_run: --disk: {e}", file=sys.stderr)
        return 2
    for path in (args.kernel, args.image):
        if path and not os.path.exists(path):
            print(f"qemu_run: {path} does not exist (run make)", file=sys.stderr)
            return 2
    res = run(args.commands, image=args.image, kernel=args.kernel, smp=args.smp,
              memory=args.memory, timeout=args.timeout, boot_timeout=args.boot_timeout,
              snapshot=args.snapshot, append=args.append, deterministic=args.deterministic,
              disk=args.disk, idle_warps=args.idle_warps)
    sys.stdout.write(res.transcript)
    if not res.transcript.endswith("\n"):
        sys.stdout.write("\n")
    if args.deterministic:
        print(f"qemu_run: exact mode, {TIME_MODE_EXACT}", file=sys.stderr)
    if not res.ok:
        print(f"qemu_run: FAILED: {res.error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
