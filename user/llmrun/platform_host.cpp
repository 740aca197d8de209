// llmrun's platform on a Linux host.
#include "platform.h"
#include "../lib/option_parser.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace platform {

OpenFile open_file(const char* path) {
  OpenFile f;
  int fd = open(path, O_RDONLY);
  if (fd < 0) return f;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return f;
  }
  f.fd = fd;
  f.size = int64_t(st.st_size);
  return f;
}

void close_file(OpenFile& f) {
  if (f.fd >= 0) close(f.fd);
  f.fd = -1;
}

bool read_open_file(const OpenFile& f, const char* path, void* dst, uint64_t n) {
  (void)path;
  auto* p = static_cast<char*>(dst);
  uint64_t got = 0;
  while (got < n) {
    ssize_t r = read(f.fd, p + got, n - got);
    if (r <= 0) return false;
    got += uint64_t(r);
  }
  char extra;
  return read(f.fd, &extra, 1) == 0;   // the whole file, and nothing after it
}

bool read_file(const char* path, void* dst, uint64_t n) {
  OpenFile f = open_file(path);
  if (f.fd < 0) return false;
  bool ok = read_open_file(f, path, dst, n);
  close_file(f);
  return ok;
}

const void* map_open_file(const OpenFile& f, const char* path, uint64_t n, bool populate) {
  (void)path;
  void* p = mmap(nullptr, n, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), f.fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

VmCounts vm_counts() { return {}; }
Resident resident() { return {}; }
int fork_process() { return fork(); }
int wait_process() {
  int status = 0;
  if (wait(&status) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
void exit_process(int status) {
  fflush(stdout);
  _exit(status);
}

void* alloc(uint64_t n) {
  void* p = nullptr;
  if (posix_memalign(&p, 64, n ? n : 64) != 0) return nullptr;
  return p;
}

void write_out(const char* s, size_t n) { fwrite(s, 1, n, stdout); fflush(stdout); }
void write_err(const char* s, size_t n) { fwrite(s, 1, n, stderr); fflush(stderr); }

bool read_line(char* buf, size_t cap) {
  size_t len = 0;
  int c;
  bool any = false;
  while ((c = getchar()) != EOF) {
    any = true;
    if (c == '\n') break;
    if (len + 1 < cap) buf[len++] = char(c);
  }
  buf[len] = 0;
  return any;
}

uint64_t clock_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void align_to_tick() {}   // the host has no kernel tick to line up with

const char* default_asset_dir() {
  const char* e = getenv("KAI_ASSET_DIR");
  return e && *e ? e : "models/SMOL";
}

}  // namespace platform

// The command-line parser's output and exit (user/lib/option_parser.h).
void option_io::write(int fd, const char* text) {
  if (fd == 2) platform::write_err(text, strlen(text));
  else platform::write_out(text, strlen(text));
}
void option_io::exit(int status) { ::exit(status); }

int main(int argc, char** argv) { return llmrun_main(argc, argv); }
