// The page cache's eviction clock (kernel/fs/page_clock.h) over a plain
// table: second chances, pages someone holds, dropcaches' `all`, the hand
// going on where it stopped, and a sweep that ends when nothing can go.
#include <catch2/catch.hpp>

#include <vector>

#include "../../kernel/fs/page_clock.h"

namespace {

struct Slot {
  bool used = true;
  bool held = false;
  bool referenced = false;
};

// The clock's view of a vector of slots; evict() records the order.
struct Table {
  std::vector<Slot> slots;
  std::vector<uint32_t> evicted;
  explicit Table(size_t n) : slots(n) {}
  uint32_t size() const { return static_cast<uint32_t>(slots.size()); }
  bool used(uint32_t i) const { return slots[i].used; }
  bool held(uint32_t i) const { return slots[i].held; }
  bool& referenced(uint32_t i) { return slots[i].referenced; }
  void evict(uint32_t i) {
    REQUIRE(slots[i].used);
    REQUIRE(!slots[i].held);
    slots[i].used = false;
    evicted.push_back(i);
  }
};

}  // namespace

TEST_CASE("clock: a page looked up since the hand passed gets a second chance", "[page_clock]") {
  Table t(4);
  t.slots[0].referenced = true;   // looked up
  fs::PageClock clock;
  CHECK(clock.sweep(t, 1, false) == 1);
  CHECK(t.evicted == std::vector<uint32_t>{1});   // 0 was spared...
  CHECK_FALSE(t.slots[0].referenced);             // ...and lost its bit
  CHECK(t.slots[0].used);
  // Not looked up again: when the hand comes round, it goes.
  CHECK(clock.sweep(t, 3, false) == 3);
  CHECK(t.evicted == std::vector<uint32_t>{1, 2, 3, 0});
}

TEST_CASE("clock: a page looked up again before the hand returns stays", "[page_clock]") {
  Table t(3);
  for (Slot& s : t.slots) s.referenced = true;
  fs::PageClock clock;
  // The first turn only clears bits; the sweep goes on to a second turn.
  CHECK(clock.sweep(t, 1, false) == 1);
  CHECK(t.evicted == std::vector<uint32_t>{0});
  t.slots[1].referenced = true;   // a hit on page 1
  CHECK(clock.sweep(t, 1, false) == 1);
  CHECK(t.evicted == std::vector<uint32_t>{0, 2});   // 1 spared again
  CHECK(t.slots[1].used);
}

TEST_CASE("clock: pages someone holds are never evicted, not even by dropcaches", "[page_clock]") {
  Table t(6);
  t.slots[1].held = true;   // mapped
  t.slots[4].held = true;   // being copied
  t.slots[4].referenced = true;
  t.slots[2].used = false;  // an empty slot
  fs::PageClock clock;
  CHECK(clock.sweep(t, 100, false) == 3);
  CHECK(t.evicted == std::vector<uint32_t>{0, 3, 5});
  CHECK(t.slots[1].used);
  CHECK(t.slots[4].used);
  CHECK(t.slots[4].referenced);   // the hand does not even touch a held page's bit
  CHECK(clock.sweep(t, 100, true) == 0);
  t.slots[1].held = false;   // unmapped: now it can go
  CHECK(clock.sweep(t, 100, true) == 1);
  CHECK(t.evicted.back() == 1);
}

TEST_CASE("clock: dropcaches evicts every page nobody holds, bits or not", "[page_clock]") {
  Table t(5);
  for (Slot& s : t.slots) s.referenced = true;
  t.slots[3].held = true;
  fs::PageClock clock;
  CHECK(clock.sweep(t, ~0ull, true) == 4);
  for (uint32_t i = 0; i < 5; i++) CHECK(t.slots[i].used == (i == 3));
}

TEST_CASE("clock: the hand goes on where it stopped", "[page_clock]") {
  Table t(8);
  fs::PageClock clock;
  CHECK(clock.sweep(t, 2, false) == 2);
  CHECK(clock.sweep(t, 2, false) == 2);
  CHECK(t.evicted == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(clock.hand == 4);
  // Refill slot 0 (a new page, just looked up): the hand reaches it last.
  t.slots[0] = Slot{true, false, true};
  CHECK(clock.sweep(t, 5, false) == 5);
  CHECK(t.evicted == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 0});
}

TEST_CASE("clock: a sweep ends when nothing can be evicted", "[page_clock]") {
  Table t(4);
  for (Slot& s : t.slots) s.held = true;
  fs::PageClock clock;
  CHECK(clock.sweep(t, 1, false) == 0);
  Table empty(0);
  CHECK(clock.sweep(empty, 1, false) == 0);
}
