// llmrun's platform inside kai (the cold path): bundle files come from the
// file system on every run, memory from malloc, time from clock_ns().
//
// One binary serves three names: /bin/llmrun_smol defaults to /AI/SMOL,
// /bin/llmrun_qwen to /AI/QWEN, and plain /bin/llmrun to /AI/SMOL (pass
// --asset-dir for anything else). The name is taken from argv[0].
#include "platform.h"

#include "kai.h"

namespace platform {
namespace {

const char* g_default_dir = "/AI/SMOL";

// Big buffers start on a page: the kernel's large-read path then DMAs whole
// pages of the file straight into them (no bounce through the buffer cache),
// and each page is one device segment.
constexpr uint64_t kPage = 4096;
constexpr uint64_t kBigAlloc = 64 * 1024;
// One read() per this many bytes: large enough that the kernel batches
// 4 MiB device requests and keeps its read-ahead busy, small enough that a
// very large file still shows progress to a debugger.
constexpr uint64_t kReadChunk = 64ull << 20;

void report(const char* path, const char* what, long err) {
  if (err < 0)
    fprintf(2, "llmrun: %s: %s: %s\n", path, what, strerror(err));
  else
    fprintf(2, "llmrun: %s: %s\n", path, what);
}

}  // namespace

OpenFile open_file(const char* path) {
  OpenFile f;
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    f.fd = fd;   // -errno, for the message
    return f;
  }
  kai_stat st;
  if (fstat(fd, &st) < 0 || st.type != T_FILE) {
    close(fd);
    f.fd = -KAI_EISDIR;   // not a regular file
    return f;
  }
  f.fd = fd;
  f.size = int64_t(st.size);
  return f;
}

void close_file(OpenFile& f) {
  if (f.fd >= 0) close(f.fd);
  f.fd = -1;
}

bool read_file(const char* path, void* dst, uint64_t n) {
  OpenFile f = open_file(path);
  if (f.fd < 0) {
    report(path, "cannot open", f.fd);
    return false;
  }
  bool ok = read_open_file(f, path, dst, n);
  close_file(f);
  return ok;
}

bool read_open_file(const OpenFile& f, const char* path, void* dst, uint64_t n) {
  int fd = f.fd;
  auto* p = static_cast<uint8_t*>(dst);
  uint64_t got = 0;
  bool ok = true;
  while (got < n) {
    uint64_t want = n - got < kReadChunk ? n - got : kReadChunk;
    long r = read(fd, p + got, want);
    if (r < 0) {
      report(path, "read failed", r);
      ok = false;
      break;
    }
    if (r == 0) {
      report(path, "file shorter than its size (changed while reading?)", 0);
      ok = false;
      break;
    }
    got += uint64_t(r);
  }
  if (ok) {
    // The whole file, and nothing after it (it did not grow meanwhile).
    uint8_t extra;
    if (read(fd, &extra, 1) != 0) {
      report(path, "file longer than its size (changed while reading?)", 0);
      ok = false;
    }
  }
  return ok;
}

const void* map_open_file(const OpenFile& f, const char* path, uint64_t n, bool populate) {
  void* p = mmap(nullptr, n, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), f.fd, 0);
  if (long e = mmap_failed(p)) {
    report(path, "mmap failed", e);
    return nullptr;
  }
  // A weight file is read from start to end, layer after layer: fault far ahead.
  madvise(p, n, MADV_SEQUENTIAL);
  return p;
}

VmCounts vm_counts() {
  kai_vmstat v{};
  kai_meminfo m{};
  vmstat(&v);
  meminfo(&m);
  return {v.major_faults, v.minor_faults, m.cache_disk_bytes};
}

Resident resident() {
  kai_vmstat v{};
  vmstat(&v);
  return {v.resident_pages, v.shared_pages};
}

int fork_process() { return fork(); }

int wait_process() {
  int status = 0;
  if (wait(&status) < 0) return -1;
  return status;
}

void exit_process(int status) { exit(status); }

void* alloc(uint64_t n) {
  if (n == 0) n = 64;
  return aligned_alloc(n >= kBigAlloc ? kPage : 64, n);
}

void write_out(const char* s, size_t n) {
  while (n > 0) {
    long r = write(1, s, n);
    if (r <= 0) return;
    s += r;
    n -= size_t(r);
  }
}

void write_err(const char* s, size_t n) {
  while (n > 0) {
    long r = write(2, s, n);
    if (r <= 0) return;
    s += r;
    n -= size_t(r);
  }
}

// One byte per read() so that nothing after the line is consumed (the shell
// or the next program may own the rest of a pipe or the console).
bool read_line(char* buf, size_t cap) {
  size_t len = 0;
  bool any = false;
  char c;
  while (read(0, &c, 1) == 1) {
    any = true;
    if (c == '\n') break;
    if (len + 1 < cap) buf[len++] = c;
  }
  buf[len] = 0;
  return any;
}

uint64_t clock_ns() { return ::clock_ns(); }

// Three ticks: also lets console output still in flight (the UART interrupts
// at the serial line's pace) finish before the measurement starts.
void align_to_tick() { ::sleep(3); }

const char* default_asset_dir() { return g_default_dir; }

}  // namespace platform

namespace {

bool ends_with(const char* s, const char* suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 0 && argv[0]) {
    if (ends_with(argv[0], "_qwen")) platform::g_default_dir = "/AI/QWEN";
    else if (ends_with(argv[0], "_smol")) platform::g_default_dir = "/AI/SMOL";
  }
  return llmrun_main(argc, argv);
}
