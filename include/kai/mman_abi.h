// mmap(), munmap(), madvise(), msync() and vmstat(): mapping files and anonymous
// memory into a process (kernel/mmap.h). The values follow Linux's, so a
// student's reading of mmap(2) carries over.
#pragma once
#include <stdint.h>

#define KAI_PROT_NONE   0
#define KAI_PROT_READ   1
#define KAI_PROT_WRITE  2

#define KAI_MAP_SHARED     0x01     // stores reach the file (and other mappers); see kernel/mmap.h
#define KAI_MAP_PRIVATE    0x02     // stores go to a private copy of the page
#define KAI_MAP_ANONYMOUS  0x20     // no file: zero-filled pages (fd and offset ignored)
#define KAI_MAP_POPULATE   0x8000   // fault every page in before returning

#define KAI_MADV_NORMAL     0
#define KAI_MADV_RANDOM     1
#define KAI_MADV_SEQUENTIAL 2       // faults read far ahead
#define KAI_MADV_WILLNEED   3       // read the range into the page cache now
#define KAI_MADV_DONTNEED   4       // drop the range's pages (a private page's changes are lost)

#define KAI_MS_ASYNC       1        // msync: write back (kai does it at once, as MS_SYNC)
#define KAI_MS_INVALIDATE  2        // msync: nothing to do in kai (maps show the cached page itself)
#define KAI_MS_SYNC        4        // msync: write back, done when msync returns

#define KAI_MAP_FAILED ((void*)-1)

// vmstat(): the calling process's page-fault counters since it started
// (fork starts the child at zero; exec keeps them).
struct kai_vmstat {
  uint64_t major_faults;   // faults that read the disk (a page-cache miss)
  uint64_t minor_faults;   // faults served from memory (cached page, zero page, a copy)
  uint64_t disk_bytes;     // bytes its faults and madvise read from the disk
  uint64_t mapped_pages;   // pages mapped by its mappings right now
  uint64_t resident_pages; // all its pages mapped right now: program, heap, stack, mappings
  uint64_t shared_pages;   // of which held by someone else too (fork's sharing, the page cache)
};
