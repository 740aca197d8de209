// fswrite_loop [-n COUNT] [DIR]   writes files and renames them, in a loop
// fswrite_loop -v [DIR]           verifies every DIR/f* file is complete
//
// The crash test kills the machine while this runs. Each round writes
// DIR/tmp (a self-describing file: header with round, size and checksum,
// then a pattern), closes it, and "renames" it over DIR/f<round % 8> with
// unlink + link + unlink. Because transactions commit in order, any f* that
// exists after a crash must be complete; -v checks exactly that. COUNT 0
// (the default) means forever.
#include "kai.h"

struct Header {
  char magic[8];      // "KAIWLOOP"
  uint64_t round;
  uint64_t size;      // whole file, header included
  uint64_t sum;       // FNV-1a of the bytes after the header
};

static uint8_t buf[256 * 1024];

static uint64_t fnv(const uint8_t* p, uint64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t fill(uint64_t round) {
  uint64_t size = sizeof(Header) + 1000 + (round * 7919) % (sizeof buf - sizeof(Header) - 1000);
  for (uint64_t i = sizeof(Header); i < size; i++) buf[i] = (uint8_t)(i * 31 + round);
  Header h;
  memcpy(h.magic, "KAIWLOOP", 8);
  h.round = round;
  h.size = size;
  h.sum = fnv(buf + sizeof(Header), size - sizeof(Header));
  memcpy(buf, &h, sizeof h);
  return size;
}

static int write_all(const char* path, uint64_t size) {
  int fd = open(path, O_WRONLY | O_CREATE | O_TRUNC);
  if (fd < 0) return fd;
  for (uint64_t off = 0; off < size;) {
    uint64_t chunk = size - off < 16384 ? size - off : 16384;   // several write calls
    long w = write(fd, buf + off, chunk);
    if (w < 0) {
      close(fd);
      return (int)w;
    }
    off += w;
  }
  return close(fd);
}

static int verify(const char* dir) {
  int fd = open(dir, O_RDONLY);
  if (fd < 0) {
    fprintf(2, "fswrite_loop: %s: %s\n", dir, strerror(fd));
    return 1;
  }
  kai_dirent de;
  int files = 0, bad = 0;
  while (read(fd, &de, sizeof de) == (long)sizeof de) {
    if (de.inum == 0 || de.name[0] != 'f') continue;
    char path[KAI_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, de.name);
    int f = open(path, O_RDONLY);
    long n = f < 0 ? f : read(f, buf, sizeof buf);
    if (f >= 0) close(f);
    Header h;
    memcpy(&h, buf, sizeof h);
    files++;
    if (n < (long)sizeof h || memcmp(h.magic, "KAIWLOOP", 8) != 0 || h.size != (uint64_t)n ||
        h.sum != fnv(buf + sizeof h, n - sizeof h)) {
      printf("fswrite_loop: %s is damaged (%ld bytes)\n", path, n);
      bad++;
    }
  }
  close(fd);
  printf("fswrite_loop: verified %d files, %d damaged: %s\n", files, bad, bad ? "FAIL" : "ok");
  return bad ? 1 : 0;
}

int main(int argc, char** argv) {
  const char* dir = "/w";
  long count = 0;
  bool check = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-v") == 0) check = true;
    else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) count = number_option("fswrite_loop", "-n", argv[++i], 0, 100000000);
    else if (argv[i][0] == '-') {
      fprintf(2, "fswrite_loop: unknown option '%s'\nusage: fswrite_loop [-v] [-n COUNT] [DIR]\n", argv[i]);
      return 2;
    }
    else dir = argv[i];
  }
  if (check) return verify(dir);
  int r = mkdir(dir);
  if (r < 0 && r != -KAI_EEXIST) {
    fprintf(2, "fswrite_loop: mkdir %s: %s\n", dir, strerror(r));
    return 1;
  }
  char tmp[KAI_PATH_MAX], dst[KAI_PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s/tmp", dir);
  for (long round = 1; count == 0 || round <= count; round++) {
    uint64_t size = fill(round);
    if ((r = write_all(tmp, size)) < 0) {
      fprintf(2, "fswrite_loop: write %s: %s\n", tmp, strerror(r));
      return 1;
    }
    snprintf(dst, sizeof dst, "%s/f%ld", dir, round % 8);
    unlink(dst);
    if ((r = link(tmp, dst)) < 0 || (r = unlink(tmp)) < 0) {
      fprintf(2, "fswrite_loop: rename %s: %s\n", dst, strerror(r));
      return 1;
    }
    if (round % 10 == 0) printf("fswrite_loop: round %ld\n", round);
  }
  printf("fswrite_loop: done\n");
  return 0;
}
