// Physical page allocator: one bit per 4 KiB page of RAM (1 = in use), kept
// right after the kernel image. Single pages come from a rotating hint;
// contiguous regions are found first-fit. Both are O(pages/64) at worst,
// which is fine for a few GiB of RAM (128 KiB of bitmap at 4 GiB).
//
// Each page also has a reference count (32 bits, after the bitmap): a page
// of the page cache is held by the cache and by every page table that maps
// it, a page shared by fork by both processes. kalloc() hands a page out with
// count 1; kpage_get() adds a holder; kfree() drops one and frees the page
// when the last one goes. The counts change with atomic operations, without
// the allocator's lock, except the last drop (which changes the bitmap).
//
// Reclaiming: when a request cannot be met, the allocator asks the page
// cache (kalloc_set_reclaimer) to evict clean pages nobody maps, and tries
// once more. So cached file pages never make an allocation fail.
#include "kalloc.h"
#include "boot.h"
#include "memlayout.h"
#include "printf.h"
#include "spinlock.h"
#include "string.h"

namespace {

Spinlock lock{"kalloc"};
uint64_t* bitmap = nullptr;
uint64_t base_pa = 0;      // physical address of page 0 of the bitmap
uint64_t npages = 0;       // pages covered by the bitmap
uint64_t nwords = 0;
uint64_t free_count = 0;
uint64_t managed = 0;      // pages that were ever free
uint64_t hint = 0;         // word index where the next single-page search starts
uint32_t* refs = nullptr;  // holders of each page (0: free)
uint64_t (*reclaimer)(uint64_t want, bool all) = nullptr;   // set once at boot

bool test(uint64_t i) { return (bitmap[i / 64] >> (i % 64)) & 1; }
void set(uint64_t i) { bitmap[i / 64] |= 1ull << (i % 64); }
void clear(uint64_t i) { bitmap[i / 64] &= ~(1ull << (i % 64)); }

uint64_t index_of(void* page) {
  uint64_t pa = reinterpret_cast<uint64_t>(page);
  if (pa % PAGE_SIZE != 0 || pa < base_pa || pa >= base_pa + npages * PAGE_SIZE)
    panic("kfree: bad page %p", page);
  return (pa - base_pa) / PAGE_SIZE;
}

}  // namespace

void kalloc_init() {
  base_pa = g_boot.ram_base;
  uint64_t ram_end = g_boot.ram_base + g_boot.ram_size;
  npages = g_boot.ram_size / PAGE_SIZE;
  nwords = (npages + 63) / 64;
  bitmap = reinterpret_cast<uint64_t*>(page_round_up(reinterpret_cast<uint64_t>(_kernel_end)));
  refs = reinterpret_cast<uint32_t*>(reinterpret_cast<uint64_t>(bitmap) + nwords * 8);
  uint64_t first_free = page_round_up(reinterpret_cast<uint64_t>(refs) + npages * sizeof(uint32_t));
  if (first_free >= ram_end) panic("kalloc_init: no free memory");
  // Everything below first_free (OpenSBI, the kernel, the bitmap) stays "used".
  memset(bitmap, 0xff, nwords * 8);
  memset(refs, 0, npages * sizeof(uint32_t));
  for (uint64_t pa = first_free; pa + PAGE_SIZE <= ram_end; pa += PAGE_SIZE) {
    clear((pa - base_pa) / PAGE_SIZE);
    free_count++;
  }
  managed = free_count;
  hint = (first_free - base_pa) / PAGE_SIZE / 64;
}

void kalloc_set_reclaimer(uint64_t (*fn)(uint64_t want, bool all)) { reclaimer = fn; }

void* kalloc() { return kalloc_keep(0); }

namespace {
void* take_one(uint64_t keep);
void* take_run(uint64_t bytes, uint64_t keep);
}  // namespace

void* kalloc_keep(uint64_t keep) {
  void* page = take_one(keep);
  if (!page && reclaimer && reclaimer(32, false) > 0) page = take_one(keep);
  return page;
}

void* kalloc_contiguous_keep(uint64_t bytes, uint64_t keep) {
  void* region = take_run(bytes, keep);
  if (region || !reclaimer) return region;
  // Evicted pages lie anywhere: a run may need more than its own size freed,
  // and the kernel's own requests (keep 0: a model's weights) get all of it.
  uint64_t want = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
  if (reclaimer(2 * want, keep == 0) > 0) region = take_run(bytes, keep);
  return region;
}

void kpage_get(void* page) {
  uint64_t i = index_of(page);
  if (__atomic_fetch_add(&refs[i], 1, __ATOMIC_RELAXED) == 0) panic("kpage_get: page %p is free", page);
}

uint32_t kpage_refs(void* page) { return __atomic_load_n(&refs[index_of(page)], __ATOMIC_RELAXED); }

namespace {
void* take_one(uint64_t keep) {
  uint64_t found = ~0ull;
  {
    SpinlockGuard guard(lock);
    if (free_count <= keep) return nullptr;   // checked and taken under one lock: no race
    for (uint64_t n = 0; n < nwords; n++) {
      uint64_t w = (hint + n) % nwords;
      if (bitmap[w] == ~0ull) continue;
      uint64_t bit = __builtin_ctzll(~bitmap[w]);
      uint64_t i = w * 64 + bit;
      if (i >= npages) continue;
      set(i);
      refs[i] = 1;
      free_count--;
      hint = w;
      found = i;
      break;
    }
  }
  if (found == ~0ull) return nullptr;
  void* page = reinterpret_cast<void*>(base_pa + found * PAGE_SIZE);
  memset(page, 0, PAGE_SIZE);
  return page;
}
}  // namespace

void kfree(void* page) {
  uint64_t i = index_of(page);
  uint32_t old = __atomic_load_n(&refs[i], __ATOMIC_RELAXED);
  // Not the last holder: drop one reference, the page stays in use.
  while (old > 1) {
    if (__atomic_compare_exchange_n(&refs[i], &old, old - 1, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
      return;
  }
  SpinlockGuard guard(lock);
  if (!test(i) || refs[i] == 0) panic("kfree: page %p is already free", page);
  refs[i] = 0;
  clear(i);
  free_count++;
  if (i / 64 < hint) hint = i / 64;
}

void* kalloc_contiguous(uint64_t bytes) { return kalloc_contiguous_keep(bytes, 0); }

namespace {
void* take_run(uint64_t bytes, uint64_t keep) {
  if (bytes == 0) return nullptr;
  uint64_t want = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
  uint64_t start = ~0ull;
  {
    SpinlockGuard guard(lock);
    if (want + keep > free_count) return nullptr;
    uint64_t run = 0, i = 0;
    while (i < npages) {
      if (i % 64 == 0 && bitmap[i / 64] == ~0ull) {   // skip full words quickly
        run = 0;
        i += 64;
        continue;
      }
      if (test(i)) {
        run = 0;
      } else if (++run == want) {
        start = i + 1 - want;
        break;
      }
      i++;
    }
    if (start == ~0ull) return nullptr;
    for (uint64_t j = start; j < start + want; j++) {
      set(j);
      refs[j] = 1;
    }
    free_count -= want;
  }
  void* region = reinterpret_cast<void*>(base_pa + start * PAGE_SIZE);
  memset(region, 0, want * PAGE_SIZE);
  return region;
}
}  // namespace

void kfree_contiguous(void* region, uint64_t bytes) {
  uint64_t first = index_of(region);
  uint64_t count = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
  SpinlockGuard guard(lock);
  if (first + count > npages) panic("kfree_contiguous: region %p too long", region);
  for (uint64_t j = first; j < first + count; j++) {
    if (!test(j)) panic("kfree_contiguous: page of %p already free", region);
    refs[j] = 0;
    clear(j);
  }
  free_count += count;
  if (first / 64 < hint) hint = first / 64;
}

uint64_t kalloc_free_pages() {
  SpinlockGuard guard(lock);
  return free_count;
}

uint64_t kalloc_total_pages() { return managed; }
