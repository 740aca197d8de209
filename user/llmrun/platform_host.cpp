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

int64_t file_size(const char* path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return int64_t(st.st_size);
}

bool read_file(const char* path, void* dst, uint64_t n) {
  FILE* f = fopen(path, "rb");
  if (!f) return false;
  size_t got = n ? fread(dst, 1, n, f) : 0;
  bool ok = got == n && fgetc(f) == EOF;
  fclose(f);
  return ok;
}

const void* map_file(const char* path, uint64_t n, bool populate) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return nullptr;
  void* p = mmap(nullptr, n, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
  close(fd);
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
