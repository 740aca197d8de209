// oomtest: running out of memory must never cost data or break other processes.
//
//   oomtest sbrkfail   xv6's sbrkfail, made exact: one process takes all the
//                      memory it can; then another can still fork, exec a small
//                      program, make a pipe, sbrk a page, write a file and (with
//                      a model at /AI/LLAMA or /AI/SMOL) have an AI request answered. Small
//                      processes then take the rest down to the kernel's reserve,
//                      where pipes stop with ENOMEM and files are still written.
//   oomtest torture [SECONDS]
//                      memory is taken every way a process can (one big sbrk,
//                      small processes down to the reserve, forks, pipes, open
//                      files, sbrk up and down) while a writer creates files and
//                      directories, rewrites a big file (each rewrite frees a block
//                      map) and prints what the kernel acknowledged:
//                      "ack file N SIZE", "ack dir N", "ack big VERSION".
//   oomtest verify     prints "verify N SIZE ok|bad" for every /oomt/fN and "verify big
//                      VERSION full|partial|empty|bad|missing" (after a reboot).
//   oomtest mem        prints meminfo(): total and free pages, the policy's sizes.
//   oomtest hold       takes all the memory it may and keeps it until killed.
//   oomtest pinned     with a model loaded: a fork or sbrk that would need the
//                      model's pinned page-cache pages is refused (ENOMEM).
//
// Every mode that changes memory ends with "oomtest: free before A after B"
// (meminfo's free pages: everything must come back) and "oomtest: PASS" or
// "oomtest: FAIL why". kernel policy: kernel/mem_policy.h.
#include "kai.h"

namespace {

constexpr const char* DIR = "/oomt";
constexpr int MAX_FILES = 1000;
// torture's writer tries at least this many files (so two versions of the
// big file and four directories) however slow the host, and each churner
// does at least one round of each of its CHURN_KINDS.
constexpr int MIN_WRITES = 16;
constexpr int CHURN_KINDS = 4;
char failure[200];

bool fail(const char* what) {
  if (!failure[0]) snprintf(failure, sizeof failure, "%s", what);
  return false;
}

kai_meminfo info() {
  kai_meminfo m{};
  meminfo(&m);
  return m;
}

// Takes all the memory the kernel grants this process: sbrk in halving
// steps down to one page. Returns the bytes taken.
long take_all() {
  long got = 0;
  for (long step = 64L << 20; step >= 4096;) {
    if (sbrk(step) < 0) step /= 2;
    else got += step;
  }
  return got;
}

[[noreturn]] void hold_forever() {
  for (;;) sleep(1000);
}

// The bytes of file N: its size and a pattern both derived from N.
long file_size(int n) { return 1000 + (n * 7919L) % 60000; }
char pattern_byte(int n, long i) { return static_cast<char>((n * 131 + i * 7 + (i >> 9)) & 0xff); }

static char buf[64 * 1024];

// Creates path with file N's bytes; true only if every call succeeded.
bool write_file(const char* path, int n) {
  int fd = open(path, O_CREATE | O_WRONLY | O_TRUNC);
  if (fd < 0) return false;
  long size = file_size(n);
  for (long i = 0; i < size; i++) buf[i] = pattern_byte(n, i);
  long half = size / 2;
  bool ok = write(fd, buf, half) == half && write(fd, buf + half, size - half) == size - half;
  return close(fd) == 0 && ok;
}

// Does path hold exactly file N's bytes?
bool check_file(const char* path, int n) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return false;
  long size = file_size(n);
  long got = read(fd, buf, sizeof buf);
  close(fd);
  if (got != size) return false;
  for (long i = 0; i < size; i++)
    if (buf[i] != pattern_byte(n, i)) return false;
  return true;
}

// /oomt/big is rewritten (O_TRUNC) again and again: large enough for an
// indirect block, so each rewrite frees a block map, which is what a
// truncation with no free page must do without leaking blocks. Its first 4
// bytes say which version it is; the rest is that version's pattern.
constexpr long BIG_CHUNKS = 5;   // x 64 KiB = 320 KiB: past the 104 KiB of direct blocks
constexpr const char* BIG = "/oomt/big";

bool write_big(int version) {
  int fd = open(BIG, O_CREATE | O_WRONLY | O_TRUNC);
  if (fd < 0) return false;
  bool ok = true;
  for (long c = 0; c < BIG_CHUNKS && ok; c++) {
    for (long i = 0; i < long(sizeof buf); i++) buf[i] = pattern_byte(version, c * long(sizeof buf) + i);
    if (c == 0) memcpy(buf, &version, sizeof version);
    ok = write(fd, buf, sizeof buf) == long(sizeof buf);
  }
  return close(fd) == 0 && ok;
}

// What /oomt/big holds: "full" (one whole version), "partial" (the start of
// one version and nothing else: a rewrite cut by a crash), "empty", "bad"
// (bytes of no single version) or "missing"; *version is the version, or -1.
const char* check_big(int* version) {
  *version = -1;
  int fd = open(BIG, O_RDONLY);
  if (fd < 0) return "missing";
  long total = 0;
  bool ok = true;
  for (long c = 0; c < BIG_CHUNKS && ok; c++) {
    long got = read(fd, buf, sizeof buf);
    if (got <= 0) break;
    if (c == 0 && got >= 4) memcpy(version, buf, sizeof *version);
    if (c == 0 && got < 4) ok = false;
    for (long i = c == 0 ? 4 : 0; i < got && ok; i++)
      ok = buf[i] == pattern_byte(*version, c * long(sizeof buf) + i);
    total += got;
    if (got < long(sizeof buf)) break;
  }
  ok = ok && read(fd, buf, 1) == 0;
  close(fd);
  if (total == 0) return "empty";
  if (!ok) return "bad";
  return total == BIG_CHUNKS * long(sizeof buf) ? "full" : "partial";
}

// What a child that took memory tells its parent.
struct Report {
  bool exact_refused;  // the big process's sbrk of exactly the data pages that fit was refused
  uint64_t free_before_exact, free_after_exact;
  long taken;          // bytes sbrk granted
  uint64_t free_after; // free pages right after
  int pipes;           // pipes made at the floor
  int pipe_error;      // why the next pipe failed
  uint64_t free_at_floor;
  bool file_ok;        // wrote and read back a file at the floor
};

// A small process waits for its turn (a byte on the token pipe), then takes
// what it may; if that reached the reserve, it also makes pipes until
// refused and writes a file there. Fillers are forked while memory is
// plentiful: at the end there is none left to fork with.
void filler(int token_fd, int report_fd, int index) {
  char c;
  if (read(token_fd, &c, 1) != 1) exit(0);
  Report r{};
  r.taken = take_all();
  kai_meminfo m = info();
  r.free_after = m.free_pages;
  if (m.free_pages <= m.reserve_pages + 8) {
    int fds[16][2];
    int e = 0;
    while (r.pipes < 16 && (e = pipe(fds[r.pipes])) == 0) r.pipes++;
    r.pipe_error = e;
    r.free_at_floor = info().free_pages;
    char path[64];
    snprintf(path, sizeof path, "%s/floor%d", DIR, index);
    r.file_ok = write_file(path, 7) && check_file(path, 7);
  }
  write(report_fd, &r, sizeof r);
  hold_forever();
}

constexpr int FILLERS = 10;

// Forks the fillers; their pids go to pids[*n...]. They wait on tok[0].
bool spawn_fillers(const int tok[2], const int rep[2], int* pids, int* n) {
  for (int i = 0; i < FILLERS; i++) {
    int pid = fork();
    if (pid == 0) {
      close(tok[1]);
      filler(tok[0], rep[1], i);
    }
    if (pid < 0) return fail("fork of a filler failed");
    pids[(*n)++] = pid;
  }
  return true;
}

bool read_report(int fd, Report* r) { return read(fd, r, sizeof *r) == long(sizeof *r); }

// One big process takes all it can; returns its pid (or <= 0).
int start_hog(const int rep[2], Report* r) {
  int pid = fork();
  if (pid == 0) {
    // First one sbrk of exactly as many data pages as fit above the
    // headroom: the page tables that would map them do not fit, so it must
    // be refused, and must take nothing.
    Report mine{};
    kai_meminfo m = info();
    long fit = long(m.free_pages) - long(m.reserve_pages + m.headroom_pages);
    mine.free_before_exact = m.free_pages;
    mine.exact_refused = fit > 0 && sbrk(fit * 4096) < 0;
    mine.free_after_exact = info().free_pages;
    mine.taken = take_all();
    mine.free_after = info().free_pages;
    write(rep[1], &mine, sizeof mine);
    hold_forever();
  }
  if (pid < 0) printf("oomtest: fork of the big process: %s\n", strerror(pid));
  if (pid > 0 && !read_report(rep[0], r)) return -1;
  return pid;
}

// The hog must stop exactly at the headroom: not below (it would have taken
// what is left for others; a page-table page not counted does that), and
// not more than a page and its tables above (it took all it could). Its
// first, exact sbrk was refused and took nothing.
bool check_hog(const Report& r, const kai_meminfo& m) {
  uint64_t floor = m.reserve_pages + m.headroom_pages;
  printf("oomtest: hog took %ld MiB; free %lu pages (reserve %lu + headroom %lu)\n", r.taken >> 20,
         r.free_after, m.reserve_pages, m.headroom_pages);
  if (!r.exact_refused) return fail("an sbrk whose page tables do not fit was granted");
  if (r.free_after_exact != r.free_before_exact) return fail("a refused sbrk took pages");
  if (r.free_after < floor) return fail("the big process went below the headroom");
  if (r.free_after > floor + 3) return fail("the big process could not take all it should");
  return true;
}

// Runs a program in a child; its exit status (or -1 if it could not run).
int run_program(const char* path, const char* const argv[]) {
  int pid = fork();
  if (pid == 0) {
    exec(path, argv);
    exit(99);
  }
  int status = -1;
  if (pid < 0 || wait(&status) != pid) return -1;
  return status;
}

// One request to the AI service through /bin/ai, if the image has a model
// (/AI/LLAMA, the tiny test model, or /AI/SMOL); true if it answered or
// there is no model.
bool ai_works() {
  for (const char* model : {"LLAMA", "SMOL"}) {
    char path[64];
    snprintf(path, sizeof path, "/AI/%s/CFG.BIN", model);
    kai_stat st;
    if (stat(path, &st) != 0) continue;
    const char* argv[] = {"ai", "--model", model, "--int8", "--predict", "2", "1", "2", "3", nullptr};
    if (run_program("/bin/ai", argv) != 0) return fail("an AI request failed");
    printf("oomtest: AI request ok\n");
    return true;
  }
  return true;
}

// What another process must still be able to do.
bool others_work() {
  int pid = fork();
  if (pid == 0) exit(7);
  int status = -1;
  if (pid < 0 || wait(&status) != pid || status != 7) return fail("fork failed");
  int p[2];
  char c = 0;
  if (pipe(p) != 0) return fail("pipe failed");
  bool piped = write(p[1], "x", 1) == 1 && read(p[0], &c, 1) == 1 && c == 'x';
  close(p[0]);
  close(p[1]);
  if (!piped) return fail("pipe did not carry a byte");
  long brk = sbrk(4096);
  if (brk < 0) return fail("sbrk(4096) failed");
  reinterpret_cast<char*>(brk)[4095] = 1;
  sbrk(-4096);
  const char* argv[] = {"echo", "oomtest: exec ok", nullptr};
  if (run_program("/bin/echo", argv) != 0) return fail("exec of a small program failed");
  if (!ai_works()) return false;
  char path[64];
  snprintf(path, sizeof path, "%s/other", DIR);
  if (!write_file(path, 3) || !check_file(path, 3)) return fail("file write failed");
  snprintf(path, sizeof path, "%s/otherdir", DIR);
  if (mkdir(path) != 0 && unlink(path) != 0) return fail("mkdir failed");
  printf("oomtest: fork, exec, pipe, sbrk, file write (and an AI request, if there is a model) "
         "work for another process\n");
  return true;
}

// Small processes take what is left down to the reserve. At the reserve a
// pipe is refused with ENOMEM without taking a reserve page, and a file is
// still written and read back.
bool fill_to_reserve(const int tok[2], const int rep[2]) {
  kai_meminfo m = info();
  for (int i = 0; i < FILLERS; i++) {
    Report r;
    if (write(tok[1], "t", 1) != 1 || !read_report(rep[0], &r)) return fail("a filler died");
    if (r.free_after > m.reserve_pages + 8) continue;
    printf("oomtest: at the reserve: %d pipes, then error %d; free %lu (reserve %lu); file %s\n",
           r.pipes, r.pipe_error, r.free_at_floor, m.reserve_pages, r.file_ok ? "ok" : "FAILED");
    if (r.pipe_error != -KAI_ENOMEM) return fail("pipe at the reserve did not fail with ENOMEM");
    if (r.free_at_floor != m.reserve_pages) return fail("pipes did not stop exactly at the reserve");
    if (!r.file_ok) return fail("file write at the reserve failed");
    return true;
  }
  return fail("the small processes never reached the reserve");
}

// The processes that hold the memory (the fillers and the big one) and the
// pipes they talk through.
struct Holders {
  int rep[2] = {-1, -1};
  int tok[2] = {-1, -1};
  int pids[FILLERS + 1];
  int n = 0;
};

// Memory runs out: the big process takes all it may (checked), `meanwhile`
// runs (what others must still be able to do), then the fillers take the
// rest down to the reserve (checked).
bool exhaust(Holders& h, const kai_meminfo& before, bool (*meanwhile)()) {
  if (pipe(h.rep) != 0 || pipe(h.tok) != 0) return fail("pipe");
  if (!spawn_fillers(h.tok, h.rep, h.pids, &h.n)) return false;
  Report hog;
  int hog_pid = start_hog(h.rep, &hog);
  if (hog_pid <= 0) return fail("the big process did not start");
  h.pids[h.n++] = hog_pid;
  return check_hog(hog, before) && meanwhile() && fill_to_reserve(h.tok, h.rep);
}

void release(Holders& h) {
  for (int i = 0; i < h.n; i++) kill(h.pids[i]);
  for (int i = 0; i < h.n; i++) wait(nullptr);
  for (int fd : {h.rep[0], h.rep[1], h.tok[0], h.tok[1]})
    if (fd >= 0) close(fd);
}

// Every page must be free again.
bool all_back(const kai_meminfo& before) {
  kai_meminfo after = info();
  printf("oomtest: free before %lu after %lu\n", before.free_pages, after.free_pages);
  return after.free_pages == before.free_pages || fail("memory did not all come back");
}

bool sbrkfail() {
  // The AI worker keeps a request's working memory for the next one: a
  // first request before counting, so that what is kept is not a leak.
  if (!ai_works()) return false;
  kai_meminfo before = info();
  Holders h;
  bool ok = exhaust(h, before, others_work);
  release(h);
  return all_back(before) && ok;
}

// -- pinned ------------------------------------------------------------------

// The memory policy counts cached file pages as free (an allocation evicts
// them), but not a loaded model's pinned pages, which nothing evicts
// (docs/virtual-memory.md, "One copy of a model"). This process grows until
// a fork of it would fit only if the pinned pages counted: the fork must be
// refused with ENOMEM at once (not admitted, its child to be killed later at
// a copy-on-write store it has no memory for), and so must an sbrk of that
// much. Then it shrinks back, a fork works again and every page comes back.
// The trial, in a child (its page tables go with it at exit); true if
// both requests were refused with ENOMEM.
bool pinned_trial(const kai_meminfo& before) {
  uint64_t pinned = before.cache_pinned_pages;
  uint64_t floor = before.reserve_pages + before.headroom_pages;
  // Growing by P pages costs P + P/512 (the page tables); a fork of the
  // grown process asks as much again. So with F free and P chosen so that
  // 2 P (1 + 1/512) + floor = F + pinned / 2, the fork misses by half the
  // pinned pages, and would be admitted by as much if they counted.
  uint64_t grow = (before.free_pages - floor + pinned / 2) * 512 / (2 * 513);
  if (sbrk(long(grow * 4096)) < 0) return fail("the first sbrk was refused");
  bool ok = true;
  int pid = fork();
  if (pid == 0) exit(0);
  if (pid >= 0) {
    wait(nullptr);
    ok = fail("fork admitted: it needed the pinned pages");
  } else if (pid != -KAI_ENOMEM) {
    ok = fail("fork failed, but not with ENOMEM");
  }
  printf("oomtest: fork of a %lu MiB process: %s\n", grow >> 8, pid < 0 ? strerror(pid) : "admitted");
  // The same for sbrk: what is free now, plus half the pinned pages.
  uint64_t more = info().free_pages - floor + pinned / 2;
  long r = sbrk(long(more * 4096));
  if (r >= 0) {
    sbrk(-long(more * 4096));
    ok = fail("sbrk admitted: it needed the pinned pages");
  } else if (r != -KAI_ENOMEM) {
    ok = fail("sbrk failed, but not with ENOMEM");
  }
  printf("oomtest: sbrk of %lu MiB more: %s\n", more >> 8, r < 0 ? strerror(int(r)) : "admitted");
  return ok;
}

bool pinned() {
  kai_meminfo before = info();
  printf("oomtest: %lu pages free, %lu pinned, reserve + headroom %lu\n", before.free_pages,
         before.cache_pinned_pages, before.reserve_pages + before.headroom_pages);
  if (before.cache_pinned_pages < 4096)
    return fail("needs a loaded model's pinned pages (at least 16 MiB: free's pinned=)");
  if (before.free_pages < before.reserve_pages + before.headroom_pages + before.cache_pinned_pages)
    return fail("too little free memory to try");
  int pid = fork();
  if (pid == 0) {
    bool ok = pinned_trial(before);
    if (!ok) printf("oomtest: %s\n", failure);
    exit(ok ? 0 : 1);
  }
  int status = -1;
  if (pid < 0 || wait(&status) != pid || status != 0) fail("the trial failed (above)");
  // Nothing broke: a fork works again, and every page came back.
  pid = fork();
  if (pid == 0) exit(0);
  if (pid < 0) fail("fork refused after the trial");
  else wait(nullptr);
  return all_back(before) && !failure[0];
}

// -- torture -----------------------------------------------------------------

// Churns until the deadline, and at least one round of each kind: forks,
// pipes, sbrk up and down, open files read through, each until refused,
// everything given back each round.
void churner(uint64_t deadline, int seed) {
  long refused = 0;
  for (int i = seed; i < seed + CHURN_KINDS || clock_ns() < deadline; i++) {
    switch (i % CHURN_KINDS) {
      case 0: {
        int pid = fork();
        if (pid == 0) exit(0);
        if (pid < 0) refused++;
        else wait(nullptr);
        break;
      }
      case 1: {
        int fds[6][2], k = 0;
        while (k < 6 && pipe(fds[k]) == 0) k++;
        if (k < 6) refused++;
        while (k-- > 0) { close(fds[k][0]); close(fds[k][1]); }
        break;
      }
      case 2: {
        long got = take_all();
        refused++;
        sleep(2);
        sbrk(-got);
        break;
      }
      case 3: {
        int fds[8], k = 0;
        while (k < 8 && (fds[k] = open("/bin/sh", O_RDONLY)) >= 0) k++;
        for (int j = 0; j < k; j++)
          while (read(fds[j], buf, sizeof buf) > 0) {}
        while (k-- > 0) close(fds[k]);
        break;
      }
    }
  }
  // Silent (the writer's lines must not be cut by others): the status says
  // whether memory really ran out during the churn.
  exit(refused > 0 ? 0 : 1);
}

// Writes files and directories until the deadline, and at least
// MIN_WRITES of them whatever the time; prints what was acknowledged.
void writer(uint64_t deadline) {
  int files = 0, dirs = 0;
  char path[64];
  for (int n = 0; n < MAX_FILES && (n < MIN_WRITES || clock_ns() < deadline); n++) {
    snprintf(path, sizeof path, "%s/f%d", DIR, n);
    if (write_file(path, n)) {
      printf("ack file %d %ld\n", n, file_size(n));
      files++;
    }
    if (n % 8 == 0 && write_big(n)) printf("ack big %d\n", n);
    if (n % 4 == 0) {
      snprintf(path, sizeof path, "%s/d%d", DIR, n);
      if (mkdir(path) == 0) {
        printf("ack dir %d\n", n);
        dirs++;
      }
    }
  }
  printf("oomtest: writer acknowledged %d files, %d directories\n", files, dirs);
  exit(files > 0 ? 0 : 1);
}

bool nothing() { return true; }

bool torture(int seconds) {
  kai_meminfo before = info();
  int go[2];
  if (pipe(go) != 0) return fail("pipe");
  // The writer and the churners exist before memory runs out (fork needs
  // memory); each waits for a byte on the go pipe.
  constexpr int CHURNERS = 3;
  int workers[1 + CHURNERS];
  for (int i = 0; i <= CHURNERS; i++) {
    workers[i] = fork();
    if (workers[i] == 0) {
      close(go[1]);
      char c;
      read(go[0], &c, 1);
      close(go[0]);
      // The window opens now, with memory exhausted: a deadline taken
      // before exhaust() would be spent by it on a slow (busy) host, and
      // the workers would be let go after it and do nothing.
      uint64_t deadline = clock_ns() + uint64_t(seconds) * 1000000000ull + 2000000000ull;
      if (i == 0) writer(deadline);
      churner(deadline, i);
    }
  }
  close(go[0]);
  Holders h;
  bool ok = exhaust(h, before, nothing);
  // One byte each (not a close: the fillers hold copies of go[1]).
  for (int i = 0; i <= CHURNERS; i++) write(go[1], "g", 1);
  close(go[1]);
  bool writer_ok = false;
  int starved = 0;   // churners that were refused memory at least once
  for (int i = 0; i <= CHURNERS; i++) {
    int status = -1;
    int pid = wait(&status);
    if (pid == workers[0]) writer_ok = status == 0;
    else if (status == 0) starved++;
  }
  printf("oomtest: %d of %d churners were refused memory\n", starved, CHURNERS);
  release(h);
  if (!writer_ok) ok = fail("the writer could not write a file");
  return all_back(before) && ok;
}

void verify() {
  char path[64];
  for (int n = 0; n < MAX_FILES; n++) {
    snprintf(path, sizeof path, "%s/f%d", DIR, n);
    kai_stat st;
    if (stat(path, &st) != 0) continue;
    printf("verify %d %lu %s\n", n, (unsigned long)st.size, check_file(path, n) ? "ok" : "bad");
  }
  int version;
  const char* state = check_big(&version);
  printf("verify big %d %s\n", version, state);
  printf("oomtest: verify done\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    printf("usage: oomtest sbrkfail | torture [SECONDS] | verify | mem | hold | pinned\n");
    return 2;
  }
  if (strcmp(argv[1], "verify") == 0) {
    verify();
    return 0;
  }
  if (strcmp(argv[1], "hold") == 0) {   // for trying things by hand: `oomtest hold &`
    long got = take_all();
    printf("oomtest: holding %ld MiB; %lu pages free\n", got >> 20, info().free_pages);
    hold_forever();
  }
  if (strcmp(argv[1], "mem") == 0) {
    kai_meminfo m = info();
    printf("pages: %lu total, %lu free; reserve %lu, headroom %lu, small process %lu\n", m.total_pages,
           m.free_pages, m.reserve_pages, m.headroom_pages, m.small_process_pages);
    return 0;
  }
  mkdir(DIR);
  bool ok;
  if (strcmp(argv[1], "sbrkfail") == 0) ok = sbrkfail();
  else if (strcmp(argv[1], "torture") == 0) ok = torture(argc > 2 ? atoi(argv[2]) : 5);
  else if (strcmp(argv[1], "pinned") == 0) ok = pinned();
  else return 2;
  if (ok) printf("oomtest: PASS\n");
  else printf("oomtest: FAIL %s\n", failure);
  return ok ? 0 : 1;
}
