// usertests: files and directories (read/write, lseek, truncate, append,
// links, unlink while open, big and concurrent files, statfs, long names).
#include "harness.h"

using namespace ut;

namespace {

// ---------------------------------------------------------------- files

// scratch_dir/name, in one of 8 rotating buffers (so a few can be alive).
const char* P(const char* name) {
  static char bufs[8][128];
  static int next;
  char* b = bufs[next++ % 8];
  snprintf(b, 128, "%s/%s", scratch_dir, name);
  return b;
}

bool t_file_rw() {
  mkdir(scratch_dir);
  const char* f = P("rw");
  pattern(big_buf, sizeof big_buf, 11);
  int fd = open(f, O_CREATE | O_RDWR | O_TRUNC);
  EXPECT(fd >= 0, "create %s: %s", f, strerror(fd));
  long w = write(fd, big_buf, sizeof big_buf);
  EXPECT(w == sizeof big_buf, "write returned %ld", w);
  kai_stat st;
  EXPECT(fstat(fd, &st) == 0, "fstat");
  EXPECT(st.type == KAI_T_FILE && st.size == sizeof big_buf, "fstat: type %d size %lu", st.type,
         (unsigned long)st.size);
  close(fd);
  fd = open(f, O_RDONLY);
  EXPECT(fd >= 0, "reopen");
  long n = 0, r;
  while ((r = read(fd, big_buf2 + n, 1000)) > 0) n += r;
  EXPECT(r == 0 && n == sizeof big_buf, "read back %ld bytes (last %ld)", n, r);
  EXPECT(memcmp(big_buf, big_buf2, sizeof big_buf) == 0, "contents differ");
  EXPECT(write(fd, "x", 1) < 0, "write to a read-only descriptor succeeded");
  close(fd);
  fd = open(f, O_WRONLY);
  EXPECT(read(fd, big_buf2, 1) < 0, "read from a write-only descriptor succeeded");
  close(fd);
  EXPECT(stat(f, &st) == 0 && st.size == sizeof big_buf && st.nlink == 1, "stat: size %lu nlink %d",
         (unsigned long)st.size, st.nlink);
  EXPECT(unlink(f) == 0, "unlink");
  EXPECT(open(f, O_RDONLY) == -KAI_ENOENT, "file still there after unlink");
  EXPECT(stat(f, &st) == -KAI_ENOENT, "stat of unlinked file did not say ENOENT");
  return true;
}

bool t_file_lseek() {
  mkdir(scratch_dir);
  const char* f = P("seek");
  int fd = open(f, O_CREATE | O_RDWR | O_TRUNC);
  EXPECT(fd >= 0, "create");
  EXPECT(write(fd, "0123456789", 10) == 10, "write");
  EXPECT(lseek(fd, 0, SEEK_CUR) == 10, "SEEK_CUR 0 != 10");
  EXPECT(lseek(fd, 3, SEEK_SET) == 3, "SEEK_SET 3");
  char b[8] = {};
  EXPECT(read(fd, b, 3) == 3 && memcmp(b, "345", 3) == 0, "read after seek got %s", b);
  EXPECT(lseek(fd, -2, SEEK_END) == 8, "SEEK_END -2");
  EXPECT(read(fd, b, 5) == 2 && memcmp(b, "89", 2) == 0, "read at end");
  EXPECT(lseek(fd, -1, SEEK_SET) < 0, "seek to a negative offset succeeded");
  EXPECT(lseek(fd, 0, 7) < 0, "bad whence accepted");
  // Overwrite in the middle.
  EXPECT(lseek(fd, 4, SEEK_SET) == 4 && write(fd, "ab", 2) == 2, "overwrite");
  EXPECT(lseek(fd, 0, SEEK_SET) == 0 && read(fd, b, 8) == 8 && memcmp(b, "0123ab67", 8) == 0,
         "overwrite result");
  // Past the end: a hole reads as zeros.
  long r = lseek(fd, 20, SEEK_SET);
  if (r == 20) {
    EXPECT(write(fd, "Z", 1) == 1, "write after seeking past the end");
    char h[11];
    EXPECT(lseek(fd, 10, SEEK_SET) == 10 && read(fd, h, 11) == 11, "read hole");
    for (int i = 0; i < 10; ++i) EXPECT(h[i] == 0, "hole byte %d is %d", i, h[i]);
    EXPECT(h[10] == 'Z', "byte after the hole");
  }
  close(fd);
  unlink(f);
  return true;
}

bool t_file_trunc_append() {
  mkdir(scratch_dir);
  const char* f = P("ta");
  EXPECT(write_file(f, "hello world", 11) == 0, "create");
  int fd = open(f, O_WRONLY | O_APPEND);
  EXPECT(fd >= 0, "open append");
  EXPECT(write(fd, "!!", 2) == 2, "append write");
  close(fd);
  kai_stat st;
  EXPECT(stat(f, &st) == 0 && st.size == 13, "size after append is %lu", (unsigned long)st.size);
  fd = open(f, O_WRONLY | O_TRUNC);
  EXPECT(fd >= 0, "open trunc");
  close(fd);
  EXPECT(stat(f, &st) == 0 && st.size == 0, "size after O_TRUNC is %lu", (unsigned long)st.size);
  EXPECT(open(P("missing"), O_WRONLY) == -KAI_ENOENT, "open without O_CREATE created a file");
  unlink(f);
  return true;
}

bool t_dirs() {
  mkdir(scratch_dir);
  const char* d = P("dir");
  unlink(P("dir/inner"));   // left over from an earlier failed run?
  unlink(d);
  EXPECT(mkdir(d) == 0, "mkdir %s", d);
  EXPECT(mkdir(d) == -KAI_EEXIST, "second mkdir did not say EEXIST");
  kai_stat st;
  EXPECT(stat(d, &st) == 0 && st.type == KAI_T_DIR, "stat dir");
  EXPECT(chdir(d) == 0, "chdir");
  EXPECT(write_file("inner", "x", 1) == 0, "create file in the new cwd");
  EXPECT(stat(P("dir/inner"), &st) == 0 && st.size == 1, "file not where expected");
  EXPECT(chdir("..") == 0, "chdir ..");
  EXPECT(stat("dir/inner", &st) == 0, "relative path after chdir ..");
  // Read the directory's records and find our file.
  int fd = open(d, O_RDONLY);
  EXPECT(fd >= 0, "open dir");
  kai_dirent de;
  bool found = false, dot = false, dotdot = false;
  while (read(fd, &de, sizeof de) == sizeof de) {
    if (de.inum == 0) continue;
    if (strcmp(de.name, "inner") == 0) found = true;
    if (strcmp(de.name, ".") == 0) dot = true;
    if (strcmp(de.name, "..") == 0) dotdot = true;
  }
  close(fd);
  EXPECT(found && dot && dotdot, "directory records: inner %d . %d .. %d", found, dot, dotdot);
  EXPECT(open(d, O_WRONLY) < 0, "opening a directory for writing succeeded");
  int r = unlink(d);
  EXPECT(r < 0, "unlink of a non-empty directory succeeded");
  EXPECT(chdir(P("dir/inner")) < 0, "chdir into a file succeeded");
  EXPECT(mkdir(P("nodir/sub")) == -KAI_ENOENT, "mkdir in a missing directory did not say ENOENT");
  EXPECT(unlink(P("dir/inner")) == 0, "unlink inner");
  EXPECT(unlink(P("dir/.")) < 0, "unlink of . succeeded");
  EXPECT(unlink(d) == 0, "unlink of the empty directory failed");
  EXPECT(stat(d, &st) == -KAI_ENOENT, "directory still there");
  chdir("/");
  return true;
}

bool t_link() {
  mkdir(scratch_dir);
  char a[64], b[64];
  snprintf(a, sizeof a, "%s/la", scratch_dir);
  snprintf(b, sizeof b, "%s/lb", scratch_dir);
  unlink(b);
  EXPECT(write_file(a, "linked", 6) == 0, "create");
  EXPECT(link(a, b) == 0, "link");
  kai_stat sa, sb;
  EXPECT(stat(a, &sa) == 0 && stat(b, &sb) == 0, "stat");
  EXPECT(sa.ino == sb.ino, "link has a different inode");
  EXPECT(sa.nlink == 2, "nlink is %d, expected 2", sa.nlink);
  EXPECT(link(a, b) == -KAI_EEXIST, "linking onto an existing name did not say EEXIST");
  EXPECT(link(P("nothere"), P("x")) == -KAI_ENOENT, "link of a missing file did not say ENOENT");
  EXPECT(link(scratch_dir, P("dirlink")) < 0, "hard link to a directory succeeded");
  EXPECT(unlink(a) == 0, "unlink a");
  int fd = open(b, O_RDONLY);
  char buf[8] = {};
  EXPECT(fd >= 0 && read(fd, buf, 8) == 6 && memcmp(buf, "linked", 6) == 0, "data gone with the first name");
  EXPECT(fstat(fd, &sb) == 0 && sb.nlink == 1, "nlink after unlink is %d", sb.nlink);
  close(fd);
  unlink(b);
  return true;
}

bool t_unlink_open() {
  // An unlinked file stays readable through an open descriptor.
  mkdir(scratch_dir);
  const char* f = P("uo");
  EXPECT(write_file(f, "still here", 10) == 0, "create");
  int fd = open(f, O_RDONLY);
  EXPECT(fd >= 0, "open");
  EXPECT(unlink(f) == 0, "unlink");
  char buf[16] = {};
  EXPECT(read(fd, buf, 16) == 10 && strcmp(buf, "still here") == 0, "read after unlink got \"%s\"", buf);
  close(fd);
  return true;
}

bool t_dup() {
  mkdir(scratch_dir);
  const char* f = P("dup");
  int fd = open(f, O_CREATE | O_RDWR | O_TRUNC);
  EXPECT(fd >= 0, "create");
  int fd2 = dup(fd);
  EXPECT(fd2 >= 0 && fd2 != fd, "dup returned %d", fd2);
  EXPECT(write(fd, "ab", 2) == 2 && write(fd2, "cd", 2) == 2, "writes");
  EXPECT(lseek(fd, 0, SEEK_CUR) == 4, "dup'd descriptors do not share the offset");
  close(fd);
  char buf[5] = {};
  EXPECT(lseek(fd2, 0, SEEK_SET) == 0 && read(fd2, buf, 4) == 4 && strcmp(buf, "abcd") == 0,
         "contents \"%s\"", buf);
  close(fd2);
  EXPECT(dup(fd2) == -KAI_EBADF, "dup of a closed fd did not say EBADF");
  unlink(f);
  return true;
}

bool t_bad_fds() {
  char c;
  for (int fd : {-1, 16, 100, 1 << 30}) {
    EXPECT(read(fd, &c, 1) == -KAI_EBADF, "read(%d) not EBADF", fd);
    EXPECT(write(fd, &c, 1) == -KAI_EBADF, "write(%d) not EBADF", fd);
    EXPECT(close(fd) == -KAI_EBADF, "close(%d) not EBADF", fd);
    EXPECT(dup(fd) == -KAI_EBADF, "dup(%d) not EBADF", fd);
    kai_stat st;
    EXPECT(fstat(fd, &st) == -KAI_EBADF, "fstat(%d) not EBADF", fd);
    EXPECT(lseek(fd, 0, SEEK_SET) == -KAI_EBADF, "lseek(%d) not EBADF", fd);
  }
  EXPECT(close(10) == -KAI_EBADF, "close of an unused fd");
  // Running out of descriptors.
  int fds[40], n = 0, last = 0;
  for (; n < 40; ++n) {
    fds[n] = open("/", O_RDONLY);
    if (fds[n] < 0) { last = fds[n]; break; }
  }
  for (int i = 0; i < n; ++i) close(fds[i]);
  EXPECT(n < 40, "opened 40 files without running out");
  EXPECT(last == -KAI_EMFILE, "running out of fds gave %d, expected EMFILE", last);
  return true;
}

bool t_bigfile() {
  // 1 MiB written in pieces of 64 KiB and read back.
  mkdir(scratch_dir);
  const char* f = P("big");
  int fd = open(f, O_CREATE | O_WRONLY | O_TRUNC);
  EXPECT(fd >= 0, "create");
  constexpr int PIECES = 16;
  for (int i = 0; i < PIECES; ++i) {
    pattern(big_buf, sizeof big_buf, 100 + i);
    long w = write(fd, big_buf, sizeof big_buf);
    EXPECT(w == sizeof big_buf, "write piece %d returned %ld (%s)", i, w, w < 0 ? strerror(w) : "short");
  }
  close(fd);
  kai_stat st;
  EXPECT(stat(f, &st) == 0 && st.size == PIECES * sizeof big_buf, "size %lu", (unsigned long)st.size);
  fd = open(f, O_RDONLY);
  for (int i = 0; i < PIECES; ++i) {
    pattern(big_buf, sizeof big_buf, 100 + i);
    long n = 0, r;
    while (n < (long)sizeof big_buf && (r = read(fd, big_buf2 + n, sizeof big_buf - n)) > 0) n += r;
    EXPECT(n == sizeof big_buf, "short read in piece %d", i);
    EXPECT(memcmp(big_buf, big_buf2, sizeof big_buf) == 0, "piece %d differs", i);
  }
  close(fd);
  EXPECT(unlink(f) == 0, "unlink");
  return true;
}

void concurrent_writer(long i) {
  char name[64];
  snprintf(name, sizeof name, "%s/cw%ld", scratch_dir, i);
  static char buf[20000];
  pattern(buf, sizeof buf, 500 + i);
  for (int round = 0; round < 5; ++round) {
    if (write_file(name, buf, sizeof buf) != 0) exit(1);
    int fd = open(name, O_RDONLY);
    static char back[20000];
    long n = 0, r;
    while ((r = read(fd, back + n, sizeof back - n)) > 0) n += r;
    close(fd);
    if (n != sizeof buf || memcmp(buf, back, sizeof buf) != 0) exit(2);
  }
  if (unlink(name) != 0) exit(3);
  exit(0);
}

bool t_concurrent_files() {
  mkdir(scratch_dir);
  constexpr int N = 6;
  int pids[N];
  for (int i = 0; i < N; ++i) pids[i] = spawn(concurrent_writer, i);
  for (int i = 0; i < N; ++i) {
    int s = reap(pids[i]);
    EXPECT(s == 0, "writer %d failed with %d", i, s);
  }
  return true;
}

void create_unlink_loop(long i) {
  char name[64];
  for (int k = 0; k < 30; ++k) {
    snprintf(name, sizeof name, "%s/cu%ld_%d", scratch_dir, i, k % 3);
    int fd = open(name, O_CREATE | O_RDWR);
    if (fd < 0) exit(1);
    write(fd, "x", 1);
    close(fd);
    unlink(name);
  }
  exit(0);
}

bool t_concurrent_create() {
  mkdir(scratch_dir);
  int pids[4];
  for (int i = 0; i < 4; ++i) pids[i] = spawn(create_unlink_loop, i);
  for (int i = 0; i < 4; ++i) EXPECT(reap(pids[i]) == 0, "child %d failed", i);
  return true;
}

bool t_statfs() {
  kai_statfs st;
  int r = statfs(&st);
  EXPECT(r == 0, "statfs: %s", strerror(r));
  EXPECT(st.block_size >= 512 && st.total_blocks > 0 && st.free_blocks <= st.total_blocks &&
             st.free_inodes <= st.total_inodes,
         "implausible statfs: bs %lu blocks %lu/%lu inodes %lu/%lu", (unsigned long)st.block_size,
         (unsigned long)st.free_blocks, (unsigned long)st.total_blocks, (unsigned long)st.free_inodes,
         (unsigned long)st.total_inodes);
  // Writing a file uses blocks; removing it gives them back.
  mkdir(scratch_dir);
  const char* f = P("sf");
  pattern(big_buf, sizeof big_buf, 1);
  EXPECT(write_file(f, big_buf, sizeof big_buf) == 0, "create");
  kai_statfs after;
  statfs(&after);
  EXPECT(after.free_blocks < st.free_blocks, "free blocks did not drop (%lu -> %lu)",
         (unsigned long)st.free_blocks, (unsigned long)after.free_blocks);
  unlink(f);
  statfs(&after);
  EXPECT(after.free_blocks == st.free_blocks, "free blocks not restored (%lu -> %lu)",
         (unsigned long)st.free_blocks, (unsigned long)after.free_blocks);
  return true;
}

bool t_long_names() {
  char name[300];
  memset(name, 'n', sizeof name);
  name[299] = 0;
  int r = open(name, O_CREATE | O_RDWR);
  EXPECT(r < 0, "open of a 299-character path succeeded");
  // A component longer than KAI_NAME_MAX.
  mkdir(scratch_dir);
  char p[128];
  int len = snprintf(p, sizeof p, "%s/", scratch_dir);
  memset(p + len, 'c', KAI_NAME_MAX + 5);
  p[len + KAI_NAME_MAX + 5] = 0;
  r = open(p, O_CREATE | O_RDWR);
  if (r >= 0) { close(r); unlink(p); }
  EXPECT(r < 0, "creating a %d-character name succeeded", KAI_NAME_MAX + 5);
  // Exactly KAI_NAME_MAX works.
  p[len + KAI_NAME_MAX] = 0;
  r = open(p, O_CREATE | O_RDWR);
  EXPECT(r >= 0, "creating a %d-character name failed: %s", KAI_NAME_MAX, strerror(r));
  close(r);
  kai_stat st;
  EXPECT(stat(p, &st) == 0, "stat of the long name");
  unlink(p);
  return true;
}

bool t_console_dev() {
  kai_stat st;
  EXPECT(stat("/dev/console", &st) == 0, "stat /dev/console failed");
  EXPECT(st.type == KAI_T_DEVICE, "/dev/console has type %d", st.type);
  EXPECT(fstat(1, &st) == 0, "fstat(1)");
  return true;
}

const Test kTests[] = {
    {"file_rw", t_file_rw},
    {"file_lseek", t_file_lseek},
    {"file_trunc_append", t_file_trunc_append},
    {"dirs", t_dirs},
    {"link", t_link},
    {"unlink_open", t_unlink_open},
    {"dup", t_dup},
    {"bad_fds", t_bad_fds},
    {"bigfile", t_bigfile},
    {"concurrent_files", t_concurrent_files},
    {"concurrent_create", t_concurrent_create},
    {"statfs", t_statfs},
    {"long_names", t_long_names},
    {"console_dev", t_console_dev},
};
}  // namespace

const TestGroup ut::files_tests = UT_GROUP(kTests);
