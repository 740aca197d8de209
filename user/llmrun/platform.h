// What llmrun needs from the system it runs on. platform_host.cpp implements
// it for Linux (build/host/llmrun); platform_kai.cpp (guest) for kai.
// Deliberately tiny: whole-file reads, one big bump allocation pool, byte
// output, line input and a nanosecond clock.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace platform {

// Reads exactly n bytes (the whole file) into dst; false on any error.
bool read_file(const char* path, void* dst, uint64_t n);
// A bundle file is opened once: its size comes from the open file, so the
// path is looked up once (not once for the size and again for the bytes),
// and the size and the bytes are those of the same file. fd < 0: missing,
// or not a regular file (guest: -errno).
struct OpenFile {
  int fd = -1;
  int64_t size = -1;
};
OpenFile open_file(const char* path);
void close_file(OpenFile& f);
// Size in bytes of the regular file at path, or -1 if it cannot be opened.
inline int64_t file_size(const char* path) {
  OpenFile f = open_file(path);
  close_file(f);
  return f.size;
}
// read_file on an open file (path only names it in messages).
bool read_open_file(const OpenFile& f, const char* path, void* dst, uint64_t n);
// Maps the whole file (n bytes) read-only in place of reading it (llmrun
// --mmap): the pages are the page cache's, faulted in on first use, or all
// at once if populate. The mapping keeps the file: close it afterwards.
// nullptr on any error (reported).
const void* map_open_file(const OpenFile& f, const char* path, uint64_t n, bool populate);
// Page faults of this process so far and bytes the system read from the
// disk into its page cache (guest: vmstat() and meminfo(); host: zeros).
struct VmCounts {
  uint64_t major_faults = 0, minor_faults = 0, disk_bytes = 0;
};
VmCounts vm_counts();
// Memory this process maps right now: all its pages, and those it shares
// with another holder (a forked relative or the page cache). Guest only
// (host: zeros).
struct Resident {
  uint64_t pages = 0, shared_pages = 0;
};
Resident resident();
// fork() (0 in the child, the child's id in the parent, < 0 on error), wait
// for any child (its exit status, or < 0), and leaving a child (llmrun --forks).
int fork_process();
int wait_process();
[[noreturn]] void exit_process(int status);
// n bytes, 64-byte aligned, or nullptr when memory is exhausted. Never
// freed: llmrun allocates once per file and once for the session.
void* alloc(uint64_t n);
void write_out(const char* s, size_t n);
void write_err(const char* s, size_t n);
// One line of standard input without its newline (NUL-terminated, at most
// cap-1 bytes kept). Returns false at end of input.
bool read_line(char* buf, size_t cap);
uint64_t clock_ns();
// Returns right after a timer tick (guest: sleep one tick; host: at once), so
// that a measurement starting now has the same phase against the kernel's
// 10 ms tick in every boot: exact mode then repeats to the instruction.
void align_to_tick();
// Bundle directory used when --asset-dir is absent.
const char* default_asset_dir();

}  // namespace platform

// The program itself (llmrun.cpp); the platform's main() calls it.
int llmrun_main(int argc, char** argv);
