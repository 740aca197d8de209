// free: the memory report. Total, free and used memory, the memory
// policy's floors, and the page cache (kernel/fs/page_cache.h): its size,
// how much of it is mapped, and its hit/miss counters; and of the cache, the
// pages that are the AI service's loaded models (pinned: one copy of a model
// serves the service, read() and every mapping of the bundle).
//
// `free --drop-caches` evicts what it can first (dropcaches()).
//
// "free" counts the page cache's evictable pages as free (an allocation
// evicts them before it fails); "unused" is memory that holds nothing at all.
#include "kai.h"

namespace {
unsigned long mib(uint64_t pages) { return (unsigned long)(pages * 4096 >> 20); }
}  // namespace

int main(int argc, char** argv) {
  // --drop-caches: first evict every cached page nobody maps or pins
  // (Linux's `echo 3 > /proc/sys/vm/drop_caches`), then report.
  if (argc == 2 && strcmp(argv[1], "--drop-caches") == 0) {
    long dropped = dropcaches();
    if (dropped < 0) {
      fprintf(2, "free: dropcaches: %s\n", strerror(dropped));
      return 1;
    }
  } else if (argc > 1) {
    fprintf(2, "free: unexpected argument '%s' (usage: free [--drop-caches])\n", argv[1]);
    return 2;
  }
  kai_meminfo m{};
  int r = meminfo(&m);
  if (r < 0) {
    fprintf(2, "free: meminfo: %s\n", strerror(r));
    return 1;
  }
  printf("memory: total=%lu free=%lu unused=%lu used=%lu pages (%lu MiB total, %lu MiB free)\n",
         (unsigned long)m.total_pages, (unsigned long)m.free_pages, (unsigned long)m.unused_pages,
         (unsigned long)(m.total_pages - m.free_pages), mib(m.total_pages), mib(m.free_pages));
  printf("policy: reserve=%lu headroom=%lu small_process=%lu pages\n", (unsigned long)m.reserve_pages,
         (unsigned long)m.headroom_pages, (unsigned long)m.small_process_pages);
  printf("page cache: pages=%lu mapped=%lu hits=%lu misses=%lu evictions=%lu disk_bytes=%lu dirty=%lu\n",
         (unsigned long)m.cache_pages, (unsigned long)m.cache_mapped_pages, (unsigned long)m.cache_hits,
         (unsigned long)m.cache_misses, (unsigned long)m.cache_evictions,
         (unsigned long)m.cache_disk_bytes, (unsigned long)m.cache_dirty_pages);
  printf("buffer cache: blocks=%lu disk_reads=%lu\n", (unsigned long)m.bcache_blocks,
         (unsigned long)m.bcache_disk_reads);
  printf("ai service: pinned=%lu pages (%lu MiB of loaded models' weights, in the page cache)\n",
         (unsigned long)m.cache_pinned_pages, mib(m.cache_pinned_pages));
  return 0;
}
