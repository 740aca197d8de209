// usertests: every system call refuses every bad user pointer with
// -KAI_EFAULT (or another error), never a kernel crash.
#include "harness.h"

using namespace ut;

namespace {

// ---------------------------------------------------------------- bad pointers

// Every system call that takes a pointer must fail (return < 0) for every
// bad address, and the caller must live on.
bool t_bad_pointers() {
  mkdir(scratch_dir);
  char file[64];
  snprintf(file, sizeof file, "%s/badptr", scratch_dir);
  EXPECT(write_file(file, "0123456789abcdef", 16) == 0, "cannot create %s", file);
  int pid = fork();
  if (pid == 0) exit(0);
  for (int i = 0; i < NBAD; ++i) {
    const char* what = bad_ptrs[i].what;
    long r;
    // Reads into bad memory: from a file, from a pipe.
    int fd = open(file, O_RDONLY);
    EXPECT(fd >= 0, "open");
    r = read(fd, bad<char>(i), 10);
    EXPECT(r < 0, "read(file, %s) returned %ld", what, r);
    close(fd);
    int p[2];
    EXPECT(pipe(p) == 0, "pipe");
    write(p[1], "abcdef", 6);
    r = read(p[0], bad<char>(i), 6);
    EXPECT(r < 0, "read(pipe, %s) returned %ld", what, r);
    r = write(p[1], bad<char>(i), 6);
    EXPECT(r < 0, "write(pipe, %s) returned %ld", what, r);
    close(p[0]); close(p[1]);
    fd = open(file, O_WRONLY);
    r = write(fd, bad<char>(i), 10);
    EXPECT(r < 0, "write(file, %s) returned %ld", what, r);
    close(fd);
    r = write(2, bad<char>(i), 10);
    EXPECT(r < 0, "write(console, %s) returned %ld", what, r);
    // Paths.
    EXPECT((r = open(bad<char>(i), O_RDONLY)) < 0, "open(%s) returned %ld", what, r);
    EXPECT((r = open(bad<char>(i), O_CREATE | O_RDWR)) < 0, "open(%s, O_CREATE) returned %ld", what, r);
    EXPECT((r = mkdir(bad<char>(i))) < 0, "mkdir(%s) returned %ld", what, r);
    EXPECT((r = chdir(bad<char>(i))) < 0, "chdir(%s) returned %ld", what, r);
    EXPECT((r = unlink(bad<char>(i))) < 0, "unlink(%s) returned %ld", what, r);
    EXPECT((r = mknod(bad<char>(i), KAI_DEV_CONSOLE, 0)) < 0, "mknod(%s) returned %ld", what, r);
    EXPECT((r = link(bad<char>(i), "/ut/l")) < 0, "link(%s, new) returned %ld", what, r);
    EXPECT((r = link(file, bad<char>(i))) < 0, "link(old, %s) returned %ld", what, r);
    kai_stat st;
    EXPECT((r = stat(bad<char>(i), &st)) < 0, "stat(%s, ok) returned %ld", what, r);
    EXPECT((r = stat(file, bad<kai_stat>(i))) < 0, "stat(ok, %s) returned %ld", what, r);
    fd = open(file, O_RDONLY);
    EXPECT((r = fstat(fd, bad<kai_stat>(i))) < 0, "fstat(fd, %s) returned %ld", what, r);
    close(fd);
    EXPECT((r = statfs(bad<kai_statfs>(i))) < 0, "statfs(%s) returned %ld", what, r);
    EXPECT((r = meminfo(bad<kai_meminfo>(i))) < 0, "meminfo(%s) returned %ld", what, r);
    EXPECT((r = pipe(bad<int>(i))) < 0, "pipe(%s) returned %ld", what, r);
    // exec: bad path, bad argv array, bad string inside argv.
    const char* ok_argv[] = {"echo", nullptr};
    EXPECT(exec_fails(bad<char>(i), ok_argv), "exec(%s, argv) succeeded", what);
    EXPECT(exec_fails("/bin/echo", bad<const char* const>(i)), "exec(path, argv=%s) succeeded", what);
    const char* bad_argv[] = {"echo", bad<char>(i), nullptr};
    // (a null element just ends argv: that exec is fine)
    if (bad_ptrs[i].addr != 0)
      EXPECT(exec_fails("/bin/echo", bad_argv), "exec(path, {ok, %s}) succeeded", what);
    // The AI service calls (they may not exist yet: any error is right).
    EXPECT((r = ai_submit(bad<kai_ai_submit>(i))) < 0, "ai_submit(%s) returned %ld", what, r);
    kai_ai_submit req{};
    req.model = bad<char>(i);
    uint32_t tok = 1;
    req.prompt = &tok;
    req.prompt_len = 1;
    req.n_predict = 1;
    EXPECT((r = ai_submit(&req)) < 0, "ai_submit(model=%s) returned %ld", what, r);
    req.model = "SMOL";
    req.prompt = bad<uint32_t>(i);
    EXPECT((r = ai_submit(&req)) < 0, "ai_submit(prompt=%s) returned %ld", what, r);
    EXPECT((r = ai_wait(1, bad<uint32_t>(i), 16, nullptr)) < 0, "ai_wait(out=%s) returned %ld", what, r);
    EXPECT((r = ai_query(1, bad<kai_ai_status>(i))) < 0, "ai_query(%s) returned %ld", what, r);
    EXPECT((r = ai_info(bad<kai_ai_info>(i))) < 0, "ai_info(%s) returned %ld", what, r);
  }
  // Read-only memory (our own text) is a bad destination too.
  {
    int fd = open(file, O_RDONLY);
    long r = read(fd, reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&t_bad_pointers)), 10);
    close(fd);
    EXPECT(r < 0, "read into the read-only text segment returned %ld", r);
    void* text = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&t_bad_pointers));
    r = pipe(static_cast<int*>(text));
    EXPECT(r < 0, "pipe() into the text segment returned %ld", r);
    EXPECT((r = fstat(1, static_cast<kai_stat*>(text))) < 0, "fstat into the text segment returned %ld", r);
    EXPECT((r = stat("/", static_cast<kai_stat*>(text))) < 0, "stat into the text segment returned %ld", r);
    EXPECT((r = statfs(static_cast<kai_statfs*>(text))) < 0, "statfs into the text segment returned %ld", r);
    EXPECT((r = meminfo(static_cast<kai_meminfo*>(text))) < 0, "meminfo into the text segment returned %ld", r);
    EXPECT((r = ai_info(static_cast<kai_ai_info*>(text))) < 0, "ai_info into the text segment returned %ld", r);
    r = wait(static_cast<int*>(text));
    EXPECT(r < 0, "wait() storing into the text segment returned %ld", r);
  }
  // A buffer that starts mapped and runs past the end of the heap.
  {
    char* end = reinterpret_cast<char*>(sbrk(0));
    long top = ((reinterpret_cast<long>(end) + 4095) & ~4095L);
    int fd = open(file, O_RDONLY);
    long r = read(fd, reinterpret_cast<char*>(top) - 4, 16);
    close(fd);
    EXPECT(r < 0 || r <= 4, "read straddling the heap end returned %ld", r);
    r = write(2, reinterpret_cast<char*>(top) - 4, 16) ;
    EXPECT(r < 0 || r <= 4, "write straddling the heap end returned %ld", r);
  }
  // wait() with a bad status pointer.
  for (int i = 0; i < NBAD; ++i) {
    if (bad_ptrs[i].addr == 0) continue;   // null means "don't care"
    int r = wait(bad<int>(i));
    EXPECT(r < 0 || r == pid, "wait(%s) returned %d", bad_ptrs[i].what, r);
    if (r == pid) return fail("wait(%s) succeeded", bad_ptrs[i].what);
  }
  wait(nullptr);   // reap the child now
  unlink(file);
  return true;
}

const Test kTests[] = {
    {"bad_pointers", t_bad_pointers},
};
}  // namespace

const TestGroup ut::bad_pointer_tests = UT_GROUP(kTests);
