// One mapping of a process (mmap.h): a range of its address space backed by
// a file or by zero pages. Kept in the Process record (proc.h).
#pragma once
#include <stdint.h>

namespace fs { struct Inode; }

struct VmArea {
  uint64_t start = 0;        // page-aligned
  uint64_t end = 0;          // page-aligned, exclusive; 0: slot unused
  uint32_t prot = 0;         // KAI_PROT_*
  uint32_t flags = 0;        // KAI_MAP_SHARED / PRIVATE / ANONYMOUS
  uint32_t advice = 0;       // KAI_MADV_NORMAL / RANDOM / SEQUENTIAL
  fs::Inode* ip = nullptr;   // the file (one inode reference), nullptr if anonymous
  uint64_t offset = 0;       // file offset of start, page-aligned
  // fs::inode_truncations(ip) when this area's pages were last known to be
  // the file's current ones: a larger count means a truncation detached
  // them, and the area's pages are unmapped (vm_sync_truncations).
  uint64_t truncations = 0;
  bool used() const { return end != 0; }
};

constexpr int NVMA = 64;     // mappings per process (a model bundle is ~40 files)

// Page-fault counters of one process (vmstat()).
struct VmCounters {
  uint64_t major_faults = 0;
  uint64_t minor_faults = 0;
  uint64_t disk_bytes = 0;
};
