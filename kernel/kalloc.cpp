// Physical page allocator: one bit per 4 KiB page of RAM (1 = in use), kept
// right after the kernel image. Single pages come from a rotating hint;
// contiguous regions are found first-fit. Both are O(pages/64) at worst,
// which is fine for a few GiB of RAM (128 KiB of bitmap at 4 GiB).
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
  uint64_t first_free = page_round_up(reinterpret_cast<uint64_t>(bitmap) + nwords * 8);
  if (first_free >= ram_end) panic("kalloc_init: no free memory");
  // Everything below first_free (OpenSBI, the kernel, the bitmap) stays "used".
  memset(bitmap, 0xff, nwords * 8);
  for (uint64_t pa = first_free; pa + PAGE_SIZE <= ram_end; pa += PAGE_SIZE) {
    clear((pa - base_pa) / PAGE_SIZE);
    free_count++;
  }
  managed = free_count;
  hint = (first_free - base_pa) / PAGE_SIZE / 64;
}

void* kalloc() { return kalloc_keep(0); }

void* kalloc_keep(uint64_t keep) {
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

void kfree(void* page) {
  uint64_t i = index_of(page);
  SpinlockGuard guard(lock);
  if (!test(i)) panic("kfree: page %p is already free", page);
  clear(i);
  free_count++;
  if (i / 64 < hint) hint = i / 64;
}

void* kalloc_contiguous(uint64_t bytes) { return kalloc_contiguous_keep(bytes, 0); }

void* kalloc_contiguous_keep(uint64_t bytes, uint64_t keep) {
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
    for (uint64_t j = start; j < start + want; j++) set(j);
    free_count -= want;
  }
  void* region = reinterpret_cast<void*>(base_pa + start * PAGE_SIZE);
  memset(region, 0, want * PAGE_SIZE);
  return region;
}

void kfree_contiguous(void* region, uint64_t bytes) {
  uint64_t first = index_of(region);
  uint64_t count = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
  SpinlockGuard guard(lock);
  if (first + count > npages) panic("kfree_contiguous: region %p too long", region);
  for (uint64_t j = first; j < first + count; j++) {
    if (!test(j)) panic("kfree_contiguous: page of %p already free", region);
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
