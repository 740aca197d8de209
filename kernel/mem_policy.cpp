// The memory policy (mem_policy.h): the floors under each kind of
// allocation, and the worst-case size of a process.
#include "mem_policy.h"
#include "boot.h"
#include "fs/page_cache.h"
#include "fdt.h"
#include "kalloc.h"
#include "memlayout.h"
#include "printf.h"

namespace mem {
namespace {

constexpr uint64_t MEGA2 = 2ull << 20;   // one level-0 table maps 2 MiB
constexpr uint64_t GIGA = 1ull << 30;    // one level-1 table maps 1 GiB

// Written once by init() on the boot hart before any other hart starts.
uint64_t reserve = RESERVE_PAGES;
uint64_t headroom = HEADROOM_PAGES;

uint64_t keep_for(For who) {
  switch (who) {
    case For::Kernel: return 0;
    case For::Process: return reserve;
    case For::Cache: return reserve + headroom;
  }
  return reserve;
}

constexpr uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Every process, whatever its size: the root table; the stack's pages and
// its level-1 and level-0 tables; the level-1 and level-0 tables of the
// trampoline and trapframe (counted apart from the stack's: the worst case);
// the trapframe; the kernel stack.
constexpr uint64_t FIXED_PAGES = 1 + USER_STACK_SIZE / PAGE_SIZE + 2 + 2 + 1 + KSTACK_SIZE / PAGE_SIZE;

}  // namespace

void init() {
  // A small machine (-m 64M) keeps most of its memory for processes.
  uint64_t cap = kalloc_total_pages() / RAM_SHARE;
  reserve = RESERVE_PAGES < cap ? RESERVE_PAGES : cap;
  headroom = HEADROOM_PAGES < cap ? HEADROOM_PAGES : cap;
  int64_t n = bootarg_int(g_boot, "mem.reserve_pages", -1);
  if (n >= 0) {
    reserve = uint64_t(n);
    kprintf("kai: memory reserve %lu pages (mem.reserve_pages)\n", reserve);
  }
}

uint64_t available_pages() { return kalloc_free_pages() + fs::page_cache_stats().evictable; }

uint64_t reserve_pages() { return reserve; }
uint64_t headroom_pages() { return headroom; }

void* take_page(For who) { return kalloc_keep(keep_for(who)); }

void* take_contiguous(uint64_t bytes, For who) { return kalloc_contiguous_keep(bytes, keep_for(who)); }

uint64_t process_pages(uint64_t sz) {
  return div_up(sz, PAGE_SIZE) + div_up(sz, MEGA2) + div_up(sz, GIGA) + FIXED_PAGES;
}

ErrorOr<void> admit_growth(uint64_t more, uint64_t after) {
  uint64_t floor = reserve + (after > SMALL_PROCESS_PAGES ? headroom : 0);
  // Cached file pages count as free: the allocation evicts them (kalloc.h).
  if (more + floor > kalloc_free_pages() + fs::page_cache_pages()) return Errno::NoMem;
  return {};
}

}  // namespace mem
