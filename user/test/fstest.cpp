// fstest [-nospace]: checks the file system's Unix behaviour from user space.
// Prints one line per check and "fstest: N passed, M failed" at the end.
// -nospace also fills the disk to check ENOSPC (slow on big images).
#include "kai.h"

static int passed, failed;

static void check(bool ok, const char* what, long got = 0) {
  if (ok) {
    passed++;
    printf("ok   %s\n", what);
  } else {
    failed++;
    printf("FAIL %s (got %ld)\n", what, got);
  }
}

static char big[1 << 20];

static bool write_file(const char* path, const void* data, long n) {
  int fd = open(path, O_WRONLY | O_CREATE | O_TRUNC);
  if (fd < 0) return false;
  long w = write(fd, data, n);
  close(fd);
  return w == n;
}

static void basics() {
  mkdir("/t");
  check(write_file("/t/a", "hello", 5), "create and write a file");
  int fd = open("/t/a", O_RDONLY);
  char buf[16] = {};
  long n = read(fd, buf, sizeof buf);
  check(n == 5 && memcmp(buf, "hello", 5) == 0, "read it back", n);
  n = read(fd, buf, sizeof buf);
  check(n == 0, "read at end of file returns 0", n);
  check(lseek(fd, 1, SEEK_SET) == 1 && read(fd, buf, 2) == 2 && memcmp(buf, "el", 2) == 0, "lseek SEEK_SET");
  check(lseek(fd, 0, SEEK_END) == 5, "lseek SEEK_END");
  check(lseek(fd, 100, SEEK_SET) == 100 && read(fd, buf, 4) == 0, "read past the end returns 0");
  check(lseek(fd, -200, SEEK_CUR) == -KAI_EINVAL, "negative seek is EINVAL");
  check(write(fd, "x", 1) == -KAI_EBADF, "write to a read-only fd is EBADF");
  close(fd);

  fd = open("/t/a", O_WRONLY | O_APPEND);
  write(fd, " world", 6);
  close(fd);
  kai_stat st;
  check(stat("/t/a", &st) == 0 && st.size == 11 && st.type == KAI_T_FILE && st.nlink == 1, "append", (long)st.size);

  // a hole: write at 1 MiB into an empty file, the gap reads as zeros
  fd = open("/t/hole", O_RDWR | O_CREATE);
  lseek(fd, 1 << 20, SEEK_SET);
  write(fd, "z", 1);
  lseek(fd, 4096, SEEK_SET);
  memset(buf, 7, sizeof buf);
  n = read(fd, buf, sizeof buf);
  check(n == 16 && buf[0] == 0 && buf[15] == 0, "holes read as zeros", n);
  fstat(fd, &st);
  check(st.size == (1 << 20) + 1, "size after writing past a hole", (long)st.size);
  close(fd);
  unlink("/t/hole");

  check(read(99, buf, 1) == -KAI_EBADF && close(-1) == -KAI_EBADF && dup(42) == -KAI_EBADF, "bad fd is EBADF");
  fd = open("/t/a", O_RDONLY);
  check(read(fd, (void*)0x10, 5) == -KAI_EFAULT, "read into a bad pointer is EFAULT");
  check(read(fd, (void*)0xdead00000000ul, 5) == -KAI_EFAULT, "read into an unmapped pointer is EFAULT");
  close(fd);
  fd = open("/t/w", O_WRONLY | O_CREATE);
  check(write(fd, (void*)0x10, 5) == -KAI_EFAULT, "write from a bad pointer is EFAULT");
  close(fd);
  unlink("/t/w");
  check(open((const char*)0x10, O_RDONLY) == -KAI_EFAULT, "bad path pointer is EFAULT");
  check(stat("/t", (kai_stat*)0x10) == -KAI_EFAULT, "stat into a bad pointer is EFAULT");
}

static void names() {
  char name[100];
  memset(name, 'n', sizeof name);
  name[0] = '/';
  name[KAI_NAME_MAX + 2] = 0;   // a 60-byte component
  check(open(name, O_CREATE | O_WRONLY) == -KAI_ENAMETOOLONG, "60-byte name is ENAMETOOLONG");
  name[KAI_NAME_MAX + 1] = 0;   // exactly 59 bytes: fine
  int fd = open(name, O_CREATE | O_WRONLY);
  check(fd >= 0, "59-byte name works", fd);
  close(fd);
  check(unlink(name) == 0, "unlink it");
  static char path[400];
  memset(path, 0, sizeof path);
  for (int i = 0; i < 300; i += 2) { path[i] = '/'; path[i + 1] = 'd'; }
  check(open(path, O_RDONLY) == -KAI_ENAMETOOLONG, "300-byte path is ENAMETOOLONG");
  check(open("/t/none/x", O_RDONLY) == -KAI_ENOENT, "missing directory is ENOENT");
  check(open("/t/a/x", O_RDONLY) == -KAI_ENOTDIR, "file used as a directory is ENOTDIR");
  check(open("", O_RDONLY) == -KAI_ENOENT, "empty path is ENOENT");
}

static void dirs() {
  check(mkdir("/t/d") == 0 && mkdir("/t/d/e") == 0 && mkdir("/t/d/e/f") == 0, "nested mkdir");
  check(mkdir("/t/d") == -KAI_EEXIST, "mkdir existing is EEXIST");
  check(write_file("/t/d/e/f/g", "deep", 4), "file in a nested directory");
  check(chdir("/t/d/e") == 0, "chdir");
  int fd = open("f/g", O_RDONLY);
  char buf[8];
  check(fd >= 0 && read(fd, buf, 8) == 4, "relative path after chdir");
  close(fd);
  check(open("../e/./f/g", O_RDONLY) >= 0, "dot and dot-dot in paths");
  chdir("/");
  check(open("/t/d", O_WRONLY) == -KAI_EISDIR && open("/t/d", O_RDWR) == -KAI_EISDIR,
        "opening a directory for writing is EISDIR");
  check(open("/t/d", O_CREATE | O_WRONLY) == -KAI_EISDIR, "O_CREATE on a directory is EISDIR");
  fd = open("/t/d", O_RDONLY);
  kai_dirent de[4];
  long n = read(fd, de, sizeof de);
  check(n >= 3 * (long)sizeof(kai_dirent) && strcmp(de[0].name, ".") == 0 && strcmp(de[1].name, "..") == 0 &&
            strcmp(de[2].name, "e") == 0,
        "read on a directory returns kai_dirent records", n);
  close(fd);
  check(unlink("/t/d") == -KAI_ENOTEMPTY, "unlink of a non-empty directory is ENOTEMPTY");
  check(unlink("/t/d/.") == -KAI_EINVAL, "unlink of . is EINVAL");
  kai_stat st;
  stat("/t/d", &st);
  check(st.nlink == 2, "directory nlink counts its subdirectory's ..", st.nlink);
  check(unlink("/t/d/e/f/g") == 0 && unlink("/t/d/e/f") == 0 && unlink("/t/d/e") == 0 && unlink("/t/d") == 0,
        "remove the tree bottom-up");
  check(stat("/t/d", &st) == -KAI_ENOENT, "it is gone");

  check(link("/t/a", "/t/b") == 0, "link");
  stat("/t/a", &st);
  check(st.nlink == 2, "nlink 2 after link", st.nlink);
  check(link("/t/a", "/t/b") == -KAI_EEXIST, "link over an existing name is EEXIST");
  check(link("/t", "/t2") == -KAI_EPERM, "link of a directory is EPERM");
  check(unlink("/t/a") == 0 && stat("/t/b", &st) == 0 && st.nlink == 1 && st.size == 11, "unlink one name keeps the other");
  // an open file survives its unlink until closed
  fd = open("/t/b", O_RDONLY);
  unlink("/t/b");
  check(read(fd, buf, 5) == 5 && memcmp(buf, "hello", 5) == 0, "unlinked open file still readable");
  close(fd);
}

static void pipes_and_dup() {
  int fds[2];
  check(pipe(fds) == 0, "pipe");
  check(write(fds[1], "through", 7) == 7, "write into a pipe");
  char buf[16] = {};
  check(read(fds[0], buf, sizeof buf) == 7 && memcmp(buf, "through", 7) == 0, "read from a pipe");
  int d = dup(fds[1]);
  check(d >= 0, "dup", d);
  close(fds[1]);
  check(write(d, "x", 1) == 1 && read(fds[0], buf, 1) == 1 && buf[0] == 'x', "dup'ed write end still works");
  close(d);
  check(read(fds[0], buf, 1) == 0, "pipe reads end of file when all writers are closed");
  check(lseek(fds[0], 0, SEEK_SET) == -KAI_ESPIPE, "lseek on a pipe is ESPIPE");
  close(fds[0]);
  check(pipe((int*)0x10) == -KAI_EFAULT, "pipe into a bad pointer is EFAULT");
  int fd = open("/t/a", O_RDONLY);
  int fd2 = dup(fd);
  char c1, c2;
  check(read(fd, &c1, 1) == 1 && read(fd2, &c2, 1) == 1 && c1 == 'h' && c2 == 'e', "dup shares the offset");
  close(fd);
  close(fd2);
}

static void bigfile() {
  kai_statfs before, after;
  statfs(&before);
  for (long i = 0; i < (long)sizeof big; i++) big[i] = (char)(i * 13 + (i >> 12));
  int fd = open("/t/big", O_RDWR | O_CREATE | O_TRUNC);
  long total = 0;
  for (int i = 0; i < 8; i++) total += write(fd, big, sizeof big);   // 8 MiB: indirect + double indirect
  check(total == 8l << 20, "write 8 MiB", total);
  lseek(fd, 0, SEEK_SET);
  bool same = true;
  for (int i = 0; i < 8; i++) {
    memset(big, 0, sizeof big);
    long n = read(fd, big, sizeof big);
    for (long k = 0; k < n && same; k++) same = big[k] == (char)(k * 13 + (k >> 12));
    same = same && n == (long)sizeof big;
  }
  check(same, "read 8 MiB back (large-read path)");
  // unaligned read across the cache/direct boundary
  lseek(fd, 4095, SEEK_SET);
  long n = read(fd, big, 3 * 4096);
  same = n == 3 * 4096;
  for (long k = 0; k < n && same; k++) same = big[k] == (char)((k + 4095) * 13 + ((k + 4095) >> 12));
  check(same, "unaligned read", n);
  // overwrite one block in the middle; a big read must see the new bytes
  lseek(fd, 5 * 4096, SEEK_SET);
  write(fd, "NEW!", 4);
  lseek(fd, 0, SEEK_SET);
  n = read(fd, big, sizeof big);
  check(n == (long)sizeof big && memcmp(big + 5 * 4096, "NEW!", 4) == 0, "big read sees a recent small write", n);
  close(fd);
  statfs(&after);
  check(before.free_blocks - after.free_blocks >= 2048, "statfs counts the used blocks");
  unlink("/t/big");
  statfs(&after);
  check(after.free_blocks == before.free_blocks, "unlink frees every block", (long)(before.free_blocks - after.free_blocks));
}

static void nospace() {
  kai_statfs before, after;
  statfs(&before);
  memset(big, 'S', sizeof big);
  int fd = open("/t/fill", O_WRONLY | O_CREATE | O_TRUNC);
  long w = 0, total = 0;
  while ((w = write(fd, big, sizeof big)) > 0) total += w;
  check(w == -KAI_ENOSPC, "full disk: write returns ENOSPC", w);
  close(fd);
  printf("     (wrote %ld MiB before the disk filled)\n", total >> 20);
  check(write_file("/t/small", "x", 1) == false, "no room for another file's data");
  unlink("/t/small");
  check(unlink("/t/fill") == 0, "unlink the big file");
  statfs(&after);
  check(after.free_blocks == before.free_blocks, "all its blocks come back",
        (long)(before.free_blocks - after.free_blocks));
  check(write_file("/t/small", "x", 1), "the file system still works");
  unlink("/t/small");
}

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && strcmp(argv[1], "-nospace") != 0)) {
    fprintf(2, "fstest: unexpected argument '%s'\nusage: fstest [-nospace]\n", argv[argc > 2 ? 2 : 1]);
    return 2;
  }
  basics();
  names();
  pipes_and_dup();
  dirs();
  bigfile();
  if (argc > 1 && strcmp(argv[1], "-nospace") == 0) nospace();
  unlink("/t/a");
  unlink("/t/b");
  unlink("/t");
  printf("fstest: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
