// meminfo(): the physical page allocator's counts and the memory policy's
// sizes (kernel/mem_policy.h), in 4 KiB pages. Tests use it to see that
// memory comes back in full; `free` prints it.
#pragma once
#include <stdint.h>

struct kai_meminfo {
  uint64_t total_pages;          // pages the allocator manages
  uint64_t free_pages;           // free right now
  uint64_t reserve_pages;        // only the kernel's own allocations go below this
  uint64_t headroom_pages;       // above the reserve: only small processes go below this
  uint64_t small_process_pages;  // a process up to this size may use the headroom
};
