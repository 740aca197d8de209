// free: the memory report. Total, free and used memory, the memory
// policy's floors, and the page cache (kernel/fs/page_cache.h): its size,
// how much of it is mapped, and its hit/miss counters.
//
// "free" counts the page cache's evictable pages as free (an allocation
// evicts them before it fails); "unused" is memory that holds nothing at all.
#include "kai.h"

namespace {
unsigned long mib(uint64_t pages) { return (unsigned long)(pages * 4096 >> 20); }
}  // namespace

int main(int argc, char** argv) {
  no_arguments("free", argc, argv);
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
  printf("page cache: pages=%lu mapped=%lu hits=%lu misses=%lu evictions=%lu disk_bytes=%lu\n",
         (unsigned long)m.cache_pages, (unsigned long)m.cache_mapped_pages, (unsigned long)m.cache_hits,
         (unsigned long)m.cache_misses, (unsigned long)m.cache_evictions,
         (unsigned long)m.cache_disk_bytes);
  return 0;
}
