// Physical memory: 4 KiB pages and large physically contiguous regions.
#pragma once
#include <stdint.h>

constexpr uint64_t PAGE_SIZE = 4096;

void kalloc_init();
// One zero-filled 4 KiB page (kernel direct-mapped address), or nullptr.
// kalloc() and kalloc_contiguous() are for the kernel's own use and may take
// the last free page; memory taken for a process goes through mem_policy.h.
void* kalloc();
// The same, but only if more than `keep` pages stay free (mem_policy.h's floors).
void* kalloc_keep(uint64_t keep);
void kfree(void* page);
// A physically contiguous, page-aligned, zero-filled region of at least
// `bytes` bytes (model weights, big I/O buffers), or nullptr if no such run
// of free pages exists.
void* kalloc_contiguous(uint64_t bytes);
void* kalloc_contiguous_keep(uint64_t bytes, uint64_t keep);
void kfree_contiguous(void* region, uint64_t bytes);
// Page reference counts: kpage_get() adds a holder to an allocated page
// (kfree() drops one; the last drop frees it); kpage_refs() reads the count.
void kpage_get(void* page);
uint32_t kpage_refs(void* page);
// Called (without any allocator lock held) when a request cannot be met: it
// frees up to `want` pages (or everything it can if `all`) and returns how
// many. The page cache registers its eviction here (fs/page_cache.h).
void kalloc_set_reclaimer(uint64_t (*fn)(uint64_t want, bool all));
uint64_t kalloc_free_pages();
uint64_t kalloc_total_pages();
