// usertests: virtual memory (the page cache, kernel/fs/page_cache.h).
#include "harness.h"

using namespace ut;

namespace {

kai_meminfo mem() {
  kai_meminfo m{};
  meminfo(&m);
  return m;
}

// Reads all of path into buf (at most cap bytes); returns the bytes read.
long read_all(const char* path, char* buf, long cap) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return fd;
  long n = 0, r;
  while (n < cap && (r = read(fd, buf + n, cap - n > 8192 ? 8192 : cap - n)) > 0) n += r;
  close(fd);
  return n;
}

// A file read twice is read from the disk once: the second pass hits the
// cache on every page, and the disk bytes do not move.
bool t_cache_second_read_hits() {
  mkdir(scratch_dir);
  const char* f = "/ut/cache";
  pattern(big_buf, sizeof big_buf, 41);
  EXPECT(write_file(f, big_buf, sizeof big_buf) == 0, "write %s", f);
  long n = read_all(f, big_buf2, sizeof big_buf2);
  EXPECT(n == sizeof big_buf && memcmp(big_buf, big_buf2, n) == 0, "first read: %ld bytes or wrong data", n);
  kai_meminfo a = mem();
  EXPECT(a.cache_pages >= sizeof big_buf / 4096, "only %lu pages cached", (unsigned long)a.cache_pages);
  memset(big_buf2, 0, sizeof big_buf2);
  n = read_all(f, big_buf2, sizeof big_buf2);
  kai_meminfo b = mem();
  EXPECT(n == sizeof big_buf && memcmp(big_buf, big_buf2, n) == 0, "second read: %ld bytes or wrong data", n);
  EXPECT(b.cache_misses == a.cache_misses, "second read missed %lu times",
         (unsigned long)(b.cache_misses - a.cache_misses));
  EXPECT(b.cache_hits >= a.cache_hits + sizeof big_buf / 4096, "second read hit only %lu times",
         (unsigned long)(b.cache_hits - a.cache_hits));
  EXPECT(b.cache_disk_bytes == a.cache_disk_bytes, "second read read %lu bytes from the disk",
         (unsigned long)(b.cache_disk_bytes - a.cache_disk_bytes));
  // Cached pages count as free: reading left free_pages where it was.
  EXPECT(b.free_pages == a.free_pages, "free pages moved from %lu to %lu", (unsigned long)a.free_pages,
         (unsigned long)b.free_pages);
  unlink(f);
  return true;
}

// write() updates cached pages: no stale data after an overwrite in the
// middle of a cached page, an append, or a truncation.
bool t_cache_sees_writes() {
  mkdir(scratch_dir);
  const char* f = "/ut/cachew";
  pattern(big_buf, 20000, 42);
  EXPECT(write_file(f, big_buf, 20000) == 0, "write %s", f);
  EXPECT(read_all(f, big_buf2, sizeof big_buf2) == 20000, "first read");
  int fd = open(f, O_RDWR);
  EXPECT(fd >= 0, "open");
  EXPECT(lseek(fd, 5000, SEEK_SET) == 5000, "lseek");
  EXPECT(write(fd, "overwritten", 11) == 11, "overwrite");
  memcpy(big_buf + 5000, "overwritten", 11);
  EXPECT(lseek(fd, 0, SEEK_END) == 20000, "lseek end");
  EXPECT(write(fd, "tail", 4) == 4, "append");
  memcpy(big_buf + 20000, "tail", 4);
  close(fd);
  long n = read_all(f, big_buf2, sizeof big_buf2);
  EXPECT(n == 20004 && memcmp(big_buf, big_buf2, n) == 0, "after writes: %ld bytes or stale data", n);
  // Truncate and write something shorter: none of the old pages may show.
  pattern(big_buf, 6000, 43);
  EXPECT(write_file(f, big_buf, 6000) == 0, "rewrite");
  memset(big_buf2, 0x5a, sizeof big_buf2);
  n = read_all(f, big_buf2, sizeof big_buf2);
  EXPECT(n == 6000 && memcmp(big_buf, big_buf2, n) == 0, "after truncation: %ld bytes or stale data", n);
  unlink(f);
  return true;
}

// ---------------------------------------------------------------- mmap

constexpr long PG = 4096;
// The file every mmap test maps: 3 pages and 100 bytes of pattern 51.
const char* const kMapFile = "/ut/mapped";
constexpr long kMapSize = 3 * PG + 100;

int make_map_file() {
  mkdir(scratch_dir);
  pattern(big_buf, kMapSize, 51);
  return write_file(kMapFile, big_buf, kMapSize);
}

char* map_file(int prot, int flags, long len = kMapSize, long off = 0) {
  int fd = open(kMapFile, O_RDONLY);
  if (fd < 0) return nullptr;
  void* p = mmap(nullptr, len, prot, flags, fd, off);
  close(fd);   // the mapping keeps the file
  return mmap_failed(p) ? nullptr : static_cast<char*>(p);
}

kai_vmstat vmst() {
  kai_vmstat v{};
  vmstat(&v);
  return v;
}

bool t_mmap_reads_file() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  kai_vmstat before = vmst();
  char* p = map_file(PROT_READ, MAP_PRIVATE);
  EXPECT(p, "mmap failed");
  EXPECT(vmst().mapped_pages == before.mapped_pages, "mmap mapped pages before any touch");
  EXPECT(memcmp(p, big_buf, kMapSize) == 0, "mapped bytes differ from the file");
  for (long i = kMapSize; i < 4 * PG; i++) EXPECT(p[i] == 0, "byte %ld past the end of the file is %d", i, p[i]);
  kai_vmstat after = vmst();
  long faults = long(after.major_faults + after.minor_faults - before.major_faults - before.minor_faults);
  EXPECT(faults >= 1 && faults <= 4, "%ld faults for 4 pages", faults);
  EXPECT(after.mapped_pages == before.mapped_pages + 4, "%lu pages mapped, not 4",
         (unsigned long)(after.mapped_pages - before.mapped_pages));
  // An offset: the second page of the file at the start of the map.
  char* q = map_file(PROT_READ, MAP_SHARED, PG, PG);
  EXPECT(q && memcmp(q, big_buf + PG, PG) == 0, "mapping at offset 4096 shows other bytes");
  EXPECT(munmap(p, kMapSize) == 0 && munmap(q, PG) == 0, "munmap");
  EXPECT(vmst().mapped_pages == before.mapped_pages, "pages still mapped after munmap");
  return true;
}

bool t_mmap_errors() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  int fd = open(kMapFile, O_RDONLY);
  EXPECT(fd >= 0, "open");
  auto err = [](void* p) { return mmap_failed(p); };
  EXPECT(err(mmap(nullptr, 0, PROT_READ, MAP_PRIVATE, fd, 0)) == -KAI_EINVAL, "length 0");
  EXPECT(err(mmap(nullptr, PG, PROT_READ, MAP_PRIVATE, fd, 100)) == -KAI_EINVAL, "unaligned offset");
  EXPECT(err(mmap(nullptr, PG, PROT_READ, MAP_PRIVATE, fd, -PG)) == -KAI_EINVAL, "negative offset");
  EXPECT(err(mmap(nullptr, PG, PROT_READ, 0, fd, 0)) == -KAI_EINVAL, "neither shared nor private");
  EXPECT(err(mmap(nullptr, PG, PROT_READ, MAP_SHARED | MAP_PRIVATE, fd, 0)) == -KAI_EINVAL, "both");
  EXPECT(err(mmap(nullptr, PG, 4 /* PROT_EXEC */, MAP_PRIVATE, fd, 0)) == -KAI_EINVAL, "PROT_EXEC");
  EXPECT(err(mmap(nullptr, PG, PROT_READ, MAP_PRIVATE | 0x100, fd, 0)) == -KAI_EINVAL, "unknown flag");
  EXPECT(err(mmap(nullptr, PG, PROT_READ, MAP_PRIVATE, 99, 0)) == -KAI_EBADF, "bad fd");
  EXPECT(err(mmap(nullptr, PG, PROT_READ, MAP_PRIVATE, -1, 0)) == -KAI_EBADF, "fd -1");
  close(fd);
  fd = open(kMapFile, O_RDONLY);
  EXPECT(err(mmap(nullptr, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == -KAI_EACCES,
         "a shared writable map of a read-only fd");
  close(fd);
  fd = open(kMapFile, O_WRONLY);
  EXPECT(err(mmap(nullptr, PG, PROT_READ, MAP_PRIVATE, fd, 0)) == -KAI_EACCES, "write-only fd");
  close(fd);
  fd = open(scratch_dir, O_RDONLY);
  EXPECT(err(mmap(nullptr, PG, PROT_READ, MAP_PRIVATE, fd, 0)) == -KAI_ENODEV, "a directory");
  close(fd);
  int fds[2];
  EXPECT(pipe(fds) == 0, "pipe");
  EXPECT(err(mmap(nullptr, PG, PROT_READ, MAP_PRIVATE, fds[0], 0)) == -KAI_ENODEV, "a pipe");
  close(fds[0]);
  close(fds[1]);
  char* p = map_file(PROT_READ, MAP_PRIVATE);
  EXPECT(p, "mmap");
  EXPECT(munmap(p + 1, PG) == -KAI_EINVAL, "munmap of an unaligned address");
  EXPECT(munmap(p, 0) == -KAI_EINVAL, "munmap of length 0");
  EXPECT(munmap(reinterpret_cast<void*>(0x1000), PG) == -KAI_EINVAL, "munmap of the program");
  EXPECT(madvise(p, PG, 99) == -KAI_EINVAL, "unknown advice");
  EXPECT(madvise(p + 1, PG, MADV_WILLNEED) == -KAI_EINVAL, "unaligned madvise");
  EXPECT(madvise(p, 8 * PG, MADV_WILLNEED) == -KAI_ENOMEM, "madvise past the mapping");
  EXPECT(msync(p + 1, PG, MS_SYNC) == -KAI_EINVAL, "unaligned msync");
  EXPECT(msync(p, PG, MS_SYNC | MS_ASYNC) == -KAI_EINVAL, "msync with MS_SYNC and MS_ASYNC");
  EXPECT(msync(p, PG, 8) == -KAI_EINVAL, "msync with an unknown flag");
  EXPECT(msync(p, 8 * PG, MS_SYNC) == -KAI_ENOMEM, "msync past the mapping");
  EXPECT(msync(p, 4 * PG, MS_SYNC | MS_INVALIDATE) == 0, "msync of a private map");
  EXPECT(munmap(p, 4 * PG) == 0, "munmap");
  EXPECT(munmap(p, 4 * PG) == 0, "a second munmap of the same range");
  EXPECT(msync(p, PG, MS_SYNC) == -KAI_ENOMEM, "msync after munmap");
  return true;
}

// Children that must be killed by their access (in_child gives their status).
char* g_map;
void store_to_map() { g_map[10] = 1; }
void load_page1() { exit(g_map[PG + 5] == 99 ? 3 : 4); }

bool killed(int status) { return status == -1; }

bool t_mmap_bad_access_kills() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  g_map = map_file(PROT_READ, MAP_PRIVATE);
  EXPECT(g_map, "mmap");
  int s = in_child(store_to_map);
  EXPECT(killed(s), "a store to a read-only mapping: status %d", s);
  EXPECT(g_map[10] == big_buf[10], "the parent's page changed");
  // Past the end of the file's last page (inside the mapping's length).
  munmap(g_map, kMapSize);
  g_map = map_file(PROT_READ, MAP_PRIVATE, 8 * PG) + 2 * PG;   // the map's pages 2..
  s = in_child(store_to_map);
  EXPECT(killed(s), "a store to a read-only map (page 2): status %d", s);
  g_map += 3 * PG;   // page 5: beyond the end of the file
  s = in_child([] { exit(g_map[0]); });
  EXPECT(killed(s), "a load past the end of the file: status %d", s);
  munmap(g_map - 5 * PG, 8 * PG);
  // After munmap nothing is there.
  s = in_child([] { exit(g_map[0]); });
  EXPECT(killed(s), "a load after munmap: status %d", s);
  return true;
}

bool t_mmap_partial_munmap() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  g_map = map_file(PROT_READ, MAP_PRIVATE);
  uint64_t mapped_before = mem().cache_mapped_pages;
  EXPECT(g_map && memcmp(g_map, big_buf, kMapSize) == 0, "mmap");   // every page mapped now
  EXPECT(munmap(g_map + PG, PG) == 0, "munmap of the second page");
  EXPECT(g_map[0] == big_buf[0] && g_map[2 * PG + 7] == big_buf[2 * PG + 7] && g_map[3 * PG] == big_buf[3 * PG],
         "the pages around the hole changed");
  int s = in_child(load_page1);
  EXPECT(killed(s), "a load from the unmapped page: status %d", s);
  EXPECT(munmap(g_map, 4 * PG) == 0, "munmap of the rest");
  // Every page unmapped, the hole's too: the cache's pages are unmapped again.
  EXPECT(mem().cache_mapped_pages == mapped_before, "%lu cache pages still mapped",
         (unsigned long)(mem().cache_mapped_pages - mapped_before));
  return true;
}

bool t_mmap_shared_sees_write() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  char* p = map_file(PROT_READ, MAP_SHARED);
  EXPECT(p && p[100] == big_buf[100], "mmap");
  int fd = open(kMapFile, O_RDWR);
  EXPECT(lseek(fd, 100, SEEK_SET) == 100 && write(fd, "coherent", 8) == 8, "write");
  close(fd);
  EXPECT(memcmp(p + 100, "coherent", 8) == 0, "the mapping did not see write()");
  // Writing from a mapping and reading into one (the kernel's copies fault pages in).
  char* anon = static_cast<char*>(mmap(nullptr, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  EXPECT(!mmap_failed(anon), "anonymous mmap");
  fd = open(kMapFile, O_RDONLY);
  EXPECT(read(fd, anon, 2 * PG) == 2 * PG, "read() into an untouched anonymous mapping");
  close(fd);
  EXPECT(memcmp(anon, p, 2 * PG) == 0, "read() and the map disagree");
  EXPECT(write_file("/ut/mapped2", p, kMapSize) == 0, "write() from a mapping");
  munmap(p, kMapSize);
  munmap(anon, 2 * PG);
  unlink("/ut/mapped2");
  return true;
}

bool t_mmap_private_copy_and_fork() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  g_map = map_file(PROT_READ | PROT_WRITE, MAP_PRIVATE);
  EXPECT(g_map, "mmap");
  g_map[0] = 'X';   // a private copy: the file does not change
  char c = 0;
  int fd = open(kMapFile, O_RDONLY);
  EXPECT(read(fd, &c, 1) == 1 && c == big_buf[0], "a private store reached the file");
  close(fd);
  char* other = map_file(PROT_READ, MAP_PRIVATE);
  EXPECT(other && other[0] == big_buf[0], "a private store reached another mapping");
  // After fork each side has its own private page.
  int s = in_child([] {
    if (g_map[0] != 'X') exit(2);
    g_map[0] = 'C';
    g_map[PG] = 'C';
    exit(g_map[0] == 'C' ? 0 : 3);
  });
  EXPECT(s == 0, "the child's view: status %d", s);
  EXPECT(g_map[0] == 'X' && g_map[PG] == big_buf[PG], "the child's stores reached the parent");
  // DONTNEED drops the private page: the file's byte is back.
  EXPECT(madvise(g_map, PG, MADV_DONTNEED) == 0 && g_map[0] == big_buf[0], "DONTNEED kept the private copy");
  munmap(g_map, kMapSize);
  munmap(other, kMapSize);
  // Anonymous: shared pages are shared with the child, private ones are not.
  char* sh = static_cast<char*>(mmap(nullptr, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  char* pr = static_cast<char*>(mmap(nullptr, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  EXPECT(!mmap_failed(sh) && !mmap_failed(pr) && sh[0] == 0 && pr[0] == 0, "anonymous maps");
  g_map = sh;
  sh[1] = pr[1] = 1;
  EXPECT(in_child([] { g_map[0] = 'S'; }) == 0, "child");
  EXPECT(sh[0] == 'S', "a MAP_SHARED anonymous page was not shared with the child");
  g_map = pr;
  EXPECT(in_child([] { g_map[0] = 'P'; }) == 0, "child");
  EXPECT(pr[0] == 0 && pr[1] == 1, "a MAP_PRIVATE anonymous page was shared with the child");
  munmap(sh, PG);
  munmap(pr, PG);
  return true;
}

bool t_mmap_released_at_exit() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  kai_meminfo before = mem();
  int s = in_child([] {
    char* p = map_file(PROT_READ | PROT_WRITE, MAP_PRIVATE);
    char* a = static_cast<char*>(mmap(nullptr, 64 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (!p || mmap_failed(a)) exit(2);
    for (long i = 0; i < 64; i++) a[i * PG] = 1;
    p[0] = p[2 * PG];
    exit(0);   // no munmap: exit releases them
  });
  EXPECT(s == 0, "child status %d", s);
  kai_meminfo after = mem();
  EXPECT(after.free_pages == before.free_pages, "free pages %lu before, %lu after the child exited",
         (unsigned long)before.free_pages, (unsigned long)after.free_pages);
  return true;
}

// Pages mapped before a truncation are unmapped by it (mmap.h,
// vm_sync_truncations): past the new end an access kills, within it the
// mapping shows the file as it is now, never the old bytes.
char* g_private;
bool t_mmap_truncated_file() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  g_map = map_file(PROT_READ, MAP_SHARED);
  g_private = map_file(PROT_READ | PROT_WRITE, MAP_PRIVATE);
  EXPECT(g_map && g_private, "mmap");
  for (long i = 0; i < kMapSize; i += PG) EXPECT(g_map[i] == big_buf[i] && g_private[i] == big_buf[i], "page %ld", i / PG);
  g_private[PG] = 'X';   // a private copy of page 1
  EXPECT(vmst().mapped_pages >= 8, "only %lu pages mapped", (unsigned long)vmst().mapped_pages);
  // Truncate, and fork at once: no copy to or from user memory in between,
  // so the pages go at the return to user mode (the child's and ours).
  int fd = open(kMapFile, O_WRONLY | O_TRUNC);
  EXPECT(fd >= 0, "open O_TRUNC");
  // Every page of both maps was mapped: none may still be.
  int s = in_child([] { exit(g_map[2 * PG]); });   // page 2 is past the new end
  EXPECT(killed(s), "a load past the end of the truncated file (shared map): status %d", s);
  s = in_child([] { exit(g_private[PG]); });   // so is the privately written page 1
  EXPECT(killed(s), "a load past the end of the truncated file (private copy): status %d", s);
  EXPECT(write(fd, "short", 5) == 5, "rewrite");
  close(fd);
  EXPECT(memcmp(g_map, "short", 5) == 0 && memcmp(g_private, "short", 5) == 0, "page 0 shows the old bytes");
  for (long i = 5; i < PG; i++) EXPECT(g_map[i] == 0, "byte %ld past the new end is %d", i, g_map[i]);
  // The kernel's copies see the same: the page past the end is EFAULT.
  fd = open("/ut/trunc-copy", O_CREATE | O_WRONLY | O_TRUNC);
  EXPECT(fd >= 0, "open");
  EXPECT(write(fd, g_map + 2 * PG, 16) == -KAI_EFAULT, "write() from a page past the new end");
  close(fd);
  unlink("/ut/trunc-copy");
  munmap(g_map, kMapSize);
  munmap(g_private, kMapSize);
  return true;
}

bool t_mmap_willneed_populate() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  char* p = map_file(PROT_READ, MAP_PRIVATE);
  EXPECT(p && madvise(p, kMapSize, MADV_WILLNEED) == 0, "WILLNEED");
  kai_vmstat v0 = vmst();
  EXPECT(memcmp(p, big_buf, kMapSize) == 0, "contents");
  kai_vmstat v1 = vmst();
  EXPECT(v1.major_faults == v0.major_faults, "%lu major faults after WILLNEED",
         (unsigned long)(v1.major_faults - v0.major_faults));
  munmap(p, kMapSize);
  uint64_t mapped = vmst().mapped_pages;
  int fd = open(kMapFile, O_RDONLY);
  p = static_cast<char*>(mmap(nullptr, kMapSize, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0));
  close(fd);
  EXPECT(!mmap_failed(p) && vmst().mapped_pages == mapped + 4, "MAP_POPULATE mapped %lu pages",
         (unsigned long)(vmst().mapped_pages - mapped));
  kai_vmstat v2 = vmst();
  EXPECT(memcmp(p, big_buf, kMapSize) == 0, "contents");
  EXPECT(vmst().minor_faults == v2.minor_faults && vmst().major_faults == v2.major_faults,
         "faults after MAP_POPULATE");
  munmap(p, kMapSize);
  unlink(kMapFile);
  return true;
}

// ---------------------------------------------------------------- shared writable maps

// A shared writable map of kMapFile (opened read-write), or nullptr.
char* map_shared_rw(long len = kMapSize) {
  int fd = open(kMapFile, O_RDWR);
  if (fd < 0) return nullptr;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return mmap_failed(p) ? nullptr : static_cast<char*>(p);
}

// kMapFile's bytes [off, off + n) through a new descriptor, compared with want.
bool file_has(long off, const char* want, long n) {
  char got[64];
  if (n > long(sizeof got)) return false;
  int fd = open(kMapFile, O_RDONLY);
  bool ok = fd >= 0 && lseek(fd, off, SEEK_SET) == off && read(fd, got, n) == n && memcmp(got, want, n) == 0;
  close(fd);
  return ok;
}

uint64_t dirty_pages() { return mem().cache_dirty_pages; }

// After dropcaches (every clean page nobody maps goes), kMapFile's bytes
// [off, off + n) must come from the file system (the disk, or the buffer
// cache in front of it, which holds what the log wrote): the read misses
// the page cache.
bool disk_has(long off, const char* want, long n) {
  dropcaches();
  uint64_t misses = mem().cache_misses;
  bool ok = file_has(off, want, n);
  return ok && mem().cache_misses > misses;
}

// One page, one copy: a store through a shared writable map is what read()
// sees at once, a write() is what the map sees, and msync puts the stores on
// the disk (a read after dropping the clean caches finds them there).
bool t_mmap_shared_write_coherent() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  uint64_t dirty0 = dirty_pages();
  char* p = map_shared_rw();
  EXPECT(p && p[PG] == big_buf[PG], "mmap(PROT_WRITE, MAP_SHARED)");
  EXPECT(dirty_pages() == dirty0, "a load made %lu pages dirty", (unsigned long)(dirty_pages() - dirty0));
  memcpy(p + PG + 10, "stored", 6);
  EXPECT(dirty_pages() == dirty0 + 1, "one store: %lu dirty pages", (unsigned long)(dirty_pages() - dirty0));
  EXPECT(file_has(PG + 10, "stored", 6), "read() does not see the map's store");
  int fd = open(kMapFile, O_RDWR);
  EXPECT(lseek(fd, 2 * PG + 5, SEEK_SET) == 2 * PG + 5 && write(fd, "written", 7) == 7, "write");
  // A write() into the same page as a store keeps the store.
  EXPECT(lseek(fd, PG + 100, SEEK_SET) == PG + 100 && write(fd, "beside", 6) == 6, "write");
  close(fd);
  EXPECT(memcmp(p + 2 * PG + 5, "written", 7) == 0, "the map does not see write()");
  EXPECT(memcmp(p + PG + 10, "stored", 6) == 0 && memcmp(p + PG + 100, "beside", 6) == 0,
         "a write() into a stored-to page lost the store");
  EXPECT(msync(p, kMapSize, MS_SYNC) == 0, "msync");
  EXPECT(dirty_pages() == dirty0, "%lu pages dirty after msync", (unsigned long)(dirty_pages() - dirty0));
  // A page this process maps is never dropped: let go of them (a page still
  // written but not written back would become dirty here and stay cached).
  EXPECT(madvise(p, kMapSize, MADV_DONTNEED) == 0, "DONTNEED");
  EXPECT(disk_has(PG + 10, "stored", 6), "after msync the disk does not have the store");
  // msync maps the page read-only again: the next store is seen again.
  p[PG + 20] = 'A';
  EXPECT(dirty_pages() == dirty0 + 1, "a store after msync: %lu dirty pages", (unsigned long)(dirty_pages() - dirty0));
  EXPECT(msync(p, kMapSize, MS_ASYNC) == 0 && madvise(p, kMapSize, MADV_DONTNEED) == 0 && disk_has(PG + 20, "A", 1),
         "the second store did not reach the disk");
  // The file does not grow through a map; a store past its end in its last page stays in memory.
  p[3 * PG + 200] = 'Z';
  EXPECT(msync(p, kMapSize, MS_SYNC) == 0, "msync");
  kai_stat st{};
  EXPECT(stat(kMapFile, &st) == 0 && st.size == uint64_t(kMapSize), "size %lu after a store past the end",
         (unsigned long)st.size);
  EXPECT(munmap(p, kMapSize) == 0, "munmap");
  return true;
}

// munmap and exit write the stores back; so does a fork's child, whose
// stores the parent sees at once (the page is shared, never copied).
bool t_mmap_shared_write_back() {
  EXPECT(make_map_file() == 0, "write %s", kMapFile);
  uint64_t dirty0 = dirty_pages();
  char* p = map_shared_rw();
  EXPECT(p, "mmap");
  memcpy(p + 5, "unmapped", 8);
  EXPECT(munmap(p, kMapSize) == 0, "munmap");
  EXPECT(dirty_pages() == dirty0, "%lu pages dirty after munmap", (unsigned long)(dirty_pages() - dirty0));
  EXPECT(disk_has(5, "unmapped", 8), "munmap did not write the store back");
  int s = in_child([] {
    char* c = map_shared_rw();
    if (!c) exit(2);
    memcpy(c + 2 * PG, "exited", 6);
    exit(0);   // no munmap, no msync
  });
  EXPECT(s == 0, "child status %d", s);
  EXPECT(disk_has(2 * PG, "exited", 6), "exit did not write the store back");
  // fork: both processes map the same page, writable; the stores of each
  // are the other's at once.
  g_map = map_shared_rw();
  EXPECT(g_map, "mmap");
  g_map[PG] = 'P';
  s = in_child([] {
    if (g_map[PG] != 'P') exit(2);
    g_map[PG + 1] = 'C';    // a page the parent already wrote
    g_map[3 * PG] = 'C';    // one it did not touch
    exit(0);
  });
  EXPECT(s == 0, "child status %d", s);
  EXPECT(g_map[PG + 1] == 'C' && g_map[3 * PG] == 'C', "the child's stores did not reach the parent's map");
  EXPECT(file_has(3 * PG, "C", 1), "the child's store is not in the file");
  // MADV_DONTNEED lets go of the pages, not of the stores: they stay in the
  // cache, dirty (dropcaches keeps them), until munmap writes them.
  g_map[2 * PG + 50] = 'D';
  EXPECT(madvise(g_map, kMapSize, MADV_DONTNEED) == 0, "DONTNEED");
  EXPECT(dirty_pages() > dirty0, "no page dirty after DONTNEED");
  dropcaches();
  EXPECT(file_has(2 * PG + 50, "D", 1), "a dirty page was dropped: its store is lost");
  EXPECT(g_map[2 * PG + 50] == 'D', "the map lost its store after DONTNEED");
  EXPECT(munmap(g_map, kMapSize) == 0, "munmap");
  EXPECT(dirty_pages() == dirty0, "%lu pages dirty after munmap", (unsigned long)(dirty_pages() - dirty0));
  EXPECT(disk_has(2 * PG + 50, "D", 1) && disk_has(PG, "PC", 2), "munmap did not write the stores back");
  // A store beyond the end of the file's last page kills only the process.
  g_map = map_shared_rw(8 * PG);
  EXPECT(g_map, "mmap");
  s = in_child([] { g_map[5 * PG] = 'X'; });
  EXPECT(killed(s), "a store past the end of the file: status %d", s);
  kai_stat st{};
  EXPECT(stat(kMapFile, &st) == 0 && st.size == uint64_t(kMapSize), "size %lu", (unsigned long)st.size);
  EXPECT(munmap(g_map, 8 * PG) == 0, "munmap");
  unlink(kMapFile);
  return true;
}

// ---------------------------------------------------------------- copy-on-write fork

// fork shares the parent's pages: the child's stores (by the CPU, and by the
// kernel's copies into its memory: read() into a buffer, even through the
// large-read path's DMA) reach only its own copy.
bool t_cow_fork_isolation() {
  mkdir(scratch_dir);
  const long n = sizeof big_buf;
  pattern(big_buf, n, 61);
  pattern(big_buf2, n, 62);
  EXPECT(write_file("/ut/cowsrc", big_buf2, n) == 0, "write");
  // The measured fork is the second: this test process shares its pages
  // with the usertests parent that forked it, so the first fork's stores
  // give it private copies of those (pages it then keeps, legitimately).
  auto child = [] {
    char check[64];
    pattern(check, sizeof check, 61);
    if (memcmp(big_buf, check, sizeof check) != 0) exit(2);
    big_buf[0] ^= 1;                                      // a store by the CPU
    int fd = open("/ut/cowsrc", O_RDONLY);
    if (fd < 0 || read(fd, big_buf, sizeof big_buf) != long(sizeof big_buf)) exit(3);   // by the kernel
    close(fd);
    if (memcmp(big_buf, big_buf2, sizeof big_buf) != 0) exit(4);
    exit(0);
  };
  char check[sizeof big_buf];
  pattern(check, n, 61);
  int s = in_child(child);
  EXPECT(s == 0, "child status %d", s);
  kai_meminfo before = mem();
  s = in_child(child);
  EXPECT(s == 0, "child status %d", s);
  EXPECT(memcmp(big_buf, check, n) == 0, "the child's stores reached the parent's memory");
  kai_meminfo after = mem();
  EXPECT(after.free_pages == before.free_pages, "free pages %lu before, %lu after the child exited",
         (unsigned long)before.free_pages, (unsigned long)after.free_pages);
  unlink("/ut/cowsrc");
  return true;
}

// A fork of a process with a big heap takes page tables, not pages.
bool t_cow_fork_shares_pages() {
  const long bytes = 4 << 20;
  long got = sbrk(bytes);
  EXPECT(got >= 0, "sbrk: %s", strerror(got));
  char* heap = reinterpret_cast<char*>(got);
  for (long i = 0; i < bytes; i += 4096) heap[i] = char(i >> 12);
  kai_meminfo before = mem();
  int pipefd[2];
  EXPECT(pipe(pipefd) == 0, "pipe");
  int pid = fork();
  if (pid == 0) {
    kai_meminfo m = mem();
    long taken = long(before.free_pages) - long(m.free_pages);
    write(pipefd[1], &taken, sizeof taken);
    heap[4096] = 'c';   // one page copied
    exit(heap[0] == 0 && heap[8192] == 2 ? 0 : 5);
  }
  long taken = -1;
  read(pipefd[0], &taken, sizeof taken);
  close(pipefd[0]);
  close(pipefd[1]);
  int s = reap(pid);
  EXPECT(s == 0, "child status %d", s);
  EXPECT(heap[4096] == 1, "the child's store reached the parent");
  sbrk(-bytes);
  // 1024 heap pages; the child's own table pages, kernel stack, trapframe
  // and stack copies are a few dozen.
  EXPECT(taken >= 0 && taken < 200, "fork of a 4 MiB heap took %ld pages", taken);
  return true;
}

// Fault-around (kernel/mmap.cpp): a fault maps every cached page of its
// aligned block of 16, so reading 32 pages of a mapped file takes 2 faults.
// The map is placed so that its first block straddles a 2 MiB boundary: its
// pages sit in two level-0 page tables, the second not made yet, and each
// page must still show its own part of the file.
bool t_mmap_fault_around() {
  mkdir(scratch_dir);
  const char* f = "/ut/around";
  constexpr long kBlock = 16, kPages = 2 * kBlock, kMega = 2l << 20;
  int fd = open(f, O_CREATE | O_RDWR | O_TRUNC);
  EXPECT(fd >= 0, "create %s", f);
  for (long b = 0; b < 2; b++) {
    pattern(big_buf, kBlock * PG, 70 + b);
    EXPECT(write(fd, big_buf, kBlock * PG) == kBlock * PG, "write block %ld", b);
  }
  void* probe = mmap(nullptr, kPages * PG, PROT_READ, MAP_PRIVATE, fd, 0);
  EXPECT(!mmap_failed(probe), "mmap");
  EXPECT(munmap(probe, kPages * PG) == 0, "munmap");
  uint64_t hint = ((reinterpret_cast<uint64_t>(probe) + 2 * kMega) & ~uint64_t(kMega - 1)) - 8 * PG;
  void* m = mmap(reinterpret_cast<void*>(hint), kPages * PG, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  EXPECT(!mmap_failed(m) && reinterpret_cast<uint64_t>(m) == hint, "mmap at the hint %lx: %p", hint, m);
  const char* p = static_cast<const char*>(m);
  for (long b = 0; b < 2; b++) {
    pattern(big_buf2, kBlock * PG, 70 + b);
    kai_vmstat before = vmst();
    volatile char first = p[b * kBlock * PG];   // the fault
    (void)first;
    kai_vmstat after = vmst();
    EXPECT(after.minor_faults + after.major_faults == before.minor_faults + before.major_faults + 1,
           "block %ld: the first touch took %lu faults", b,
           (unsigned long)(after.minor_faults + after.major_faults - before.minor_faults - before.major_faults));
    EXPECT(after.mapped_pages == before.mapped_pages + kBlock, "block %ld: %lu pages mapped by its fault, not 16", b,
           (unsigned long)(after.mapped_pages - before.mapped_pages));
    for (long i = 0; i < kBlock; i++)
      EXPECT(memcmp(p + (b * kBlock + i) * PG, big_buf2 + i * PG, PG) == 0, "page %ld shows other bytes",
             b * kBlock + i);
    kai_vmstat read = vmst();
    EXPECT(read.minor_faults == after.minor_faults && read.major_faults == after.major_faults,
           "block %ld: reading its other 15 pages faulted", b);
  }
  EXPECT(munmap(m, kPages * PG) == 0, "munmap");
  unlink(f);
  return true;
}

const Test kTests[] = {
    {"cow_fork_isolation", t_cow_fork_isolation},
    {"cow_fork_shares_pages", t_cow_fork_shares_pages},
    {"mmap_reads_file", t_mmap_reads_file},
    {"mmap_fault_around", t_mmap_fault_around},
    {"mmap_errors", t_mmap_errors},
    {"mmap_bad_access_kills", t_mmap_bad_access_kills},
    {"mmap_partial_munmap", t_mmap_partial_munmap},
    {"mmap_shared_sees_write", t_mmap_shared_sees_write},
    {"mmap_private_copy_and_fork", t_mmap_private_copy_and_fork},
    {"mmap_released_at_exit", t_mmap_released_at_exit},
    {"mmap_truncated_file", t_mmap_truncated_file},
    {"mmap_willneed_populate", t_mmap_willneed_populate},
    {"mmap_shared_write_coherent", t_mmap_shared_write_coherent},
    {"mmap_shared_write_back", t_mmap_shared_write_back},
    {"cache_second_read_hits", t_cache_second_read_hits},
    {"cache_sees_writes", t_cache_sees_writes},
};

}  // namespace

const TestGroup ut::vm_tests = UT_GROUP(kTests);
