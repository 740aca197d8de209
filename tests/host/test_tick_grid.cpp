// The timer tick's grid (kernel/tick_grid.h): the next deadline is the next
// multiple of the tick after now, whenever the last tick was handled.
#include <catch2/catch.hpp>

#include "../../kernel/tick_grid.h"

TEST_CASE("the next tick deadline lies on the grid, after now", "[timer]") {
  constexpr uint64_t tick = 100000;   // 10 ms at QEMU virt's 10 MHz timebase
  // On time, a little late, almost a tick late: the next grid point.
  CHECK(next_tick_after(5 * tick, tick) == 6 * tick);
  CHECK(next_tick_after(5 * tick + 37, tick) == 6 * tick);
  CHECK(next_tick_after(6 * tick - 1, tick) == 6 * tick);
  // A hart 2.5 ticks late skips the points it missed: no catch-up burst.
  CHECK(next_tick_after(7 * tick + tick / 2, tick) == 8 * tick);
  // The first tick of a hart that starts at any moment joins the same grid.
  CHECK(next_tick_after(3, tick) == tick);
  CHECK(next_tick_after(0, tick) == tick);
  // A late tick moves no later one: handled late or on time, the deadline
  // after the next is the same.
  uint64_t on_time = next_tick_after(next_tick_after(9 * tick, tick), tick);
  uint64_t late = next_tick_after(next_tick_after(9 * tick + 4321, tick), tick);
  CHECK(on_time == 11 * tick);
  CHECK(late == on_time);
}
