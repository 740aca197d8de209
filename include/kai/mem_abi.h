// meminfo(): the physical page allocator's counts and the memory policy's
// sizes (kernel/mem_policy.h), in 4 KiB pages, and the page cache's figures
// (kernel/fs/page_cache.h). Tests use it to see that memory comes back in
// full; `free` prints it. free_pages counts the cache's evictable pages as
// free (an allocation evicts them), so reading a file leaves it unchanged.
#pragma once
#include <stdint.h>

struct kai_meminfo {
  uint64_t total_pages;          // pages the allocator manages
  uint64_t free_pages;           // free right now
  uint64_t reserve_pages;        // only the kernel's own allocations go below this
  uint64_t headroom_pages;       // above the reserve: only small processes go below this
  uint64_t small_process_pages;  // a process up to this size may use the headroom
  uint64_t unused_pages;         // free and not even caching a file page
  uint64_t cache_pages;          // pages of the page cache
  uint64_t cache_mapped_pages;   // of which mapped, pinned or dirty (not evictable)
  uint64_t cache_hits;           // page lookups that found the page cached
  uint64_t cache_misses;         // lookups that read it from the disk
  uint64_t cache_evictions;      // pages evicted under memory pressure
  uint64_t cache_disk_bytes;     // bytes read from the disk into the cache
  uint64_t cache_pinned_pages;   // of cache_pages, the AI service's loaded models' (never evicted)
  uint64_t cache_dirty_pages;    // of cache_pages, holding shared maps' stores not yet written back
  // The buffer cache (kernel/fs/bio.h): disk blocks of metadata (inodes,
  // directories, block maps, the log) and of reads that go block by block.
  uint64_t bcache_blocks;        // blocks it holds (valid copies)
  uint64_t bcache_disk_reads;    // blocks it has read from the disk since boot
};
