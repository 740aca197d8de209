// The page cache's eviction clock, as pure logic: no locks, no pages, no
// allocator. page_cache.cpp runs it over its table of entries (under the
// cache's lock); tests/host/test_page_clock.cpp runs it over a plain array,
// so the policy can be checked on the host without a kernel.
//
// The clock ("second chance"): the slots form a circle and a hand goes
// round it. Each slot that holds a page has a `referenced` bit, set by every
// lookup that finds it. At each slot the hand passes:
//   - an empty slot, or a page someone holds (mapped or being copied): skip;
//   - a page whose bit is set: clear the bit (a second chance) and go on;
//   - a page whose bit is clear: nobody looked it up since the hand last
//     came by: evict it.
// A page looked up between two passes of the hand therefore survives the
// next pass; one untouched for a whole turn goes. Two turns at most (the
// first may only clear bits), so a sweep ends even when nothing can go.
// `all` (dropcaches) ignores the bits: every page nobody holds goes.
#pragma once
#include <stdint.h>

namespace fs {

// Table: the cache seen through what the clock needs of each slot i < size():
//   bool used(i)        it holds a page
//   bool held(i)        someone else holds that page (a mapping, a copier)
//   bool& referenced(i) its bit
//   void evict(i)       drop it (the slot becomes unused)
struct PageClock {
  uint32_t hand = 0;   // the next slot the hand looks at

  // Evicts up to `want` pages (all it can if `all`); returns how many.
  template <typename Table>
  uint64_t sweep(Table& t, uint64_t want, bool all) {
    uint32_t size = t.size();
    uint64_t freed = 0;
    if (size == 0) return 0;
    if (hand >= size) hand = 0;
    for (uint64_t step = 0; step < 2ull * size && freed < want; step++) {
      uint32_t i = hand;
      hand = hand + 1 == size ? 0 : hand + 1;
      if (!t.used(i) || t.held(i)) continue;   // mapped or pinned: stays
      bool& referenced = t.referenced(i);
      if (referenced && !all) {
        referenced = false;   // a second chance
        continue;
      }
      t.evict(i);
      freed++;
    }
    return freed;
  }
};

}  // namespace fs
