// usertests: pipes (data, closed ends, many at once).
#include "harness.h"

using namespace ut;

namespace {

// ---------------------------------------------------------------- pipes

bool t_pipe_data() {
  int p[2];
  EXPECT(pipe(p) == 0, "pipe failed");
  EXPECT(p[0] >= 0 && p[1] >= 0 && p[0] != p[1], "pipe gave fds %d %d", p[0], p[1]);
  constexpr long N = 100000;
  int pid = fork();
  if (pid == 0) {
    close(p[0]);
    static char out[N];
    pattern(out, N, 3);
    // Write in odd-sized pieces.
    for (long off = 0; off < N;) {
      long chunk = N - off < 777 ? N - off : 777;
      long w = write(p[1], out + off, chunk);
      if (w <= 0) exit(1);
      off += w;
    }
    exit(0);
  }
  close(p[1]);
  static char in[N], expect[N];
  pattern(expect, N, 3);
  long n = 0, r;
  while ((r = read(p[0], in + n, N - n + 1 > 5000 ? 5000 : N - n + 1)) > 0) n += r;
  close(p[0]);
  EXPECT(r == 0, "read ended with %ld", r);
  EXPECT(reap(pid) == 0, "writer failed");
  EXPECT(n == N, "read %ld bytes, expected %ld", n, N);
  EXPECT(memcmp(in, expect, N) == 0, "data through the pipe differs");
  return true;
}

bool t_pipe_closed() {
  int p[2];
  EXPECT(pipe(p) == 0, "pipe");
  close(p[0]);
  long w = write(p[1], "x", 1);
  EXPECT(w < 0, "write to a pipe without readers returned %ld", w);
  close(p[1]);
  EXPECT(pipe(p) == 0, "pipe");
  close(p[1]);
  char c;
  EXPECT(read(p[0], &c, 1) == 0, "read from a pipe without writers did not return 0");
  close(p[0]);
  EXPECT(pipe(p) == 0, "pipe");
  EXPECT(lseek(p[0], 0, SEEK_SET) == -KAI_ESPIPE, "lseek on a pipe did not fail with ESPIPE");
  close(p[0]); close(p[1]);
  return true;
}

bool t_pipe_many() {
  // Open and close many pipes: the kernel must not leak them.
  for (int i = 0; i < 300; ++i) {
    int p[2];
    int r = pipe(p);
    EXPECT(r == 0, "pipe #%d failed: %s", i, strerror(r));
    EXPECT(write(p[1], "ab", 2) == 2, "write");
    char b[2];
    EXPECT(read(p[0], b, 2) == 2 && b[1] == 'b', "read");
    close(p[0]);
    close(p[1]);
  }
  return true;
}

const Test kTests[] = {
    {"pipe_data", t_pipe_data},
    {"pipe_closed", t_pipe_closed},
    {"pipe_many", t_pipe_many},
};
}  // namespace

const TestGroup ut::pipes_tests = UT_GROUP(kTests);
