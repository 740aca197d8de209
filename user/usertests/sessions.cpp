// usertests: Unix sessions (setsid, getsid): fork inherits the session, a
// new session is led by its caller, a leader cannot start another one
// (EPERM), and /bin/setsid runs a command in a session of its own.
#include "harness.h"

using namespace ut;

namespace {

bool t_session_inherited() {
  int mine = getsid(0);
  EXPECT(mine > 0, "getsid(0) returned %d (%s)", mine, strerror(mine));
  EXPECT(getsid(getpid()) == mine, "getsid(getpid()) = %d, getsid(0) = %d", getsid(getpid()), mine);
  EXPECT(mine != getpid(), "a forked test process leads session %d", mine);
  EXPECT(getsid(1) == 1, "init is in session %d, not its own (1)", getsid(1));
  int pid = fork();
  EXPECT(pid >= 0, "fork: %s", strerror(pid));
  if (pid == 0) exit(getsid(0) == mine ? 0 : 1);
  EXPECT(reap(pid) == 0, "the child's session differs from its parent's %d", mine);
  return true;
}

// In a child: setsid() returns the child's pid; the child and its own
// children are then in that session, while the parent stays where it was.
void new_session_child() {
  int me = getpid();
  if (setsid() != me) exit(1);
  if (getsid(0) != me) exit(2);
  int grandchild = fork();
  if (grandchild < 0) exit(3);
  if (grandchild == 0) exit(getsid(0) == me ? 0 : 1);
  if (reap(grandchild) != 0) exit(4);
  exit(0);
}

bool t_setsid_new() {
  int before = getsid(0);
  int s = in_child(new_session_child);
  EXPECT(s == 0, "new-session child failed at step %d (1 setsid, 2 getsid, 3 fork, 4 grandchild)", s);
  EXPECT(getsid(0) == before, "the parent's session moved from %d to %d", before, getsid(0));
  return true;
}

// A session leader may not start another session: POSIX's EPERM, and the
// session stays the one it leads.
void leader_setsid_child() {
  int me = getpid();
  if (setsid() != me) exit(1);
  int again = setsid();
  if (again != -KAI_EPERM) exit(2);
  exit(getsid(0) == me ? 0 : 3);
}

bool t_setsid_leader_eperm() {
  int s = in_child(leader_setsid_child);
  EXPECT(s != 1, "the first setsid() failed");
  EXPECT(s != 2, "a second setsid() by the session leader did not fail with EPERM");
  EXPECT(s == 0, "the leader's session changed after a refused setsid() (status %d)", s);
  return true;
}

// Another process can see a session: getsid(pid) of a live child that
// started its own session is that child's pid.
bool t_getsid_other() {
  int p[2];
  EXPECT(pipe(p) == 0, "pipe failed");
  int pid = fork();
  EXPECT(pid >= 0, "fork: %s", strerror(pid));
  if (pid == 0) {
    close(p[1]);
    setsid();
    char c;
    read(p[0], &c, 1);   // stay alive until the parent has looked
    exit(0);
  }
  close(p[0]);
  // The child calls setsid() at its own pace: look until it has.
  int seen = 0;
  for (int tries = 0; tries < 500 && seen != pid; tries++) {
    seen = getsid(pid);
    if (seen != pid) sleep(1);
  }
  write(p[1], "x", 1);
  close(p[1]);
  reap(pid);
  EXPECT(seen == pid, "getsid(%d) = %d after the child's setsid()", pid, seen);
  return true;
}

bool t_getsid_errors() {
  int r = getsid(-1);
  EXPECT(r == -KAI_EINVAL, "getsid(-1) returned %d (%s)", r, strerror(r));
  r = getsid(1 << 30);
  EXPECT(r == -KAI_ESRCH, "getsid of a pid never used returned %d (%s)", r, strerror(r));
  int pid = fork();
  if (pid == 0) exit(0);
  reap(pid);
  r = getsid(pid);
  EXPECT(r == -KAI_ESRCH, "getsid of a reaped child returned %d (%s)", r, strerror(r));
  return true;
}

// Runs /bin/setsid with argv; returns its exit status and what it wrote to
// standard output (in out, NUL-terminated).
int run_setsid(const char* const* argv, char* out, int cap) {
  int p[2];
  if (pipe(p) != 0) return -1000;
  int pid = fork();
  if (pid == 0) {
    close(1);
    dup(p[1]);
    close(p[0]);
    close(p[1]);
    exec("/bin/setsid", argv);
    exit(99);
  }
  close(p[1]);
  int n = 0;
  long r;
  while (n < cap - 1 && (r = read(p[0], out + n, cap - 1 - n)) > 0) n += static_cast<int>(r);
  out[n] = 0;
  close(p[0]);
  return reap(pid);
}

bool t_setsid_program() {
  char out[64];
  const char* echo[] = {"setsid", "echo", "in", "a", "session", nullptr};
  int s = run_setsid(echo, out, sizeof out);
  EXPECT(s == 0, "setsid echo exited with %d", s);
  EXPECT(strcmp(out, "in a session\n") == 0, "setsid echo wrote \"%s\"", out);
  const char* none[] = {"setsid", nullptr};
  EXPECT(run_setsid(none, out, sizeof out) == 2, "setsid without a command did not exit 2");
  const char* missing[] = {"setsid", "/no/such/program", nullptr};
  EXPECT(run_setsid(missing, out, sizeof out) == 127, "setsid of a missing program did not exit 127");
  const char* option[] = {"setsid", "-x", "echo", nullptr};
  EXPECT(run_setsid(option, out, sizeof out) == 2, "setsid -x did not exit 2");
  return true;
}

const Test kTests[] = {
    {"session_inherited", t_session_inherited},
    {"setsid_new", t_setsid_new},
    {"setsid_leader_eperm", t_setsid_leader_eperm},
    {"getsid_other", t_getsid_other},
    {"getsid_errors", t_getsid_errors},
    {"setsid_program", t_setsid_program},
};

}  // namespace

const TestGroup ut::sessions_tests = UT_GROUP(kTests);
