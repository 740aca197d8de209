// The row team's width control (kernel/ai/width_control.h), fed sequences of
// measured windows by hand. Each host below is a rule "a window at width w
// takes so many picoseconds per multiply-add", with chosen windows made
// lucky, unlucky or of another kind of work; the expected widths are worked
// out from the rule in width_control.h, window by window, not taken from a
// run of the code.
//   - a host where 2 threads are faster keeps 2 even when one probe window
//     at 1 is lucky (a rule that adopts on one win moves to 1);
//   - a host where 1 thread is faster in every window moves to 1, after the
//     second won probe and not the first;
//   - a team of 3 on a host where 2 is best settles at 2 and then tries
//     both neighbours in turn;
//   - a probe window with other work than its reference (a prompt chunk) is
//     neither a win nor a loss, and after 3 of them the attempt gives up;
//   - each lost probe doubles the wait before the next, up to 32 windows;
//     an adoption resets it to 4.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <vector>

#include "../../kernel/ai/width_control.h"

using ai::WidthControl;
using ai::WidthWindow;

namespace {

// A SmolLM2-135M decode step: 135 M multiply-adds in 210 matrix products.
constexpr uint64_t kDecodeMacs = 135'000'000;
constexpr uint32_t kDecodeProducts = 210;

WidthWindow decode_window(uint64_t ps_per_mac) {
  return {ps_per_mac * kDecodeMacs / 1000, kDecodeMacs, kDecodeProducts};
}

// A prompt chunk of 16 tokens: the same number of products, each 16 times
// larger (other work than a decode step).
WidthWindow chunk_window(uint64_t ps_per_mac) {
  return {ps_per_mac * 16 * kDecodeMacs / 1000, 16 * kDecodeMacs, kDecodeProducts};
}

// What a host measures for window number `index` run at `width`.
using Host = std::function<WidthWindow(int index, uint32_t width)>;

// Runs n windows; returns the width each ran at.
std::vector<uint32_t> run(WidthControl& control, int n, const Host& host) {
  std::vector<uint32_t> widths;
  for (int i = 0; i < n; i++) {
    uint32_t w = control.width();
    widths.push_back(w);
    uint32_t next = control.on_window(host(i, w));
    REQUIRE(next == control.width());
    REQUIRE(next >= 1);
  }
  return widths;
}

// `count` copies of `width`, for writing expected sequences.
std::vector<uint32_t> times(int count, uint32_t width) { return std::vector<uint32_t>(count, width); }

std::vector<uint32_t> concat(std::initializer_list<std::vector<uint32_t>> parts) {
  std::vector<uint32_t> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// Indices of the windows that ran at a width other than `settled`.
std::vector<int> off_width(const std::vector<uint32_t>& widths, uint32_t settled) {
  std::vector<int> out;
  for (int i = 0; i < int(widths.size()); i++)
    if (widths[i] != settled) out.push_back(i);
  return out;
}

// Two threads: 1000 ps per multiply-add; one thread: 1800 ps (the usual
// host, where a second hart helps).
WidthWindow two_faster(uint32_t width) { return decode_window(width == 2 ? 1000 : 1800); }

}  // namespace

TEST_CASE("a team where two threads are faster stays at two despite one lucky probe at one", "[width]") {
  WidthControl control(2);
  // Window 4 is the first probe (after 4 settled windows); at width 1 it is
  // lucky: 800 ps, faster than the 1000 ps just measured at width 2.
  Host host = [](int i, uint32_t w) { return i == 4 ? decode_window(800) : two_faster(w); };
  auto widths = run(control, 100, host);
  // 4 settled windows; probe 1 (won, by luck); 2 for a fresh reference;
  // probe 1 again (lost): back to 2 at once, then probes after 8, 16, 32,
  // 32 settled windows, each lost.
  auto expected = concat({times(4, 2), {1, 2, 1}, times(8, 2), {1}, times(16, 2), {1}, times(32, 2), {1},
                          times(32, 2), {1, 2}});
  CHECK(widths == expected);
  CHECK(control.settled_width() == 2);
  CHECK(off_width(widths, 2) == std::vector<int>{4, 6, 15, 32, 65, 98});
}

TEST_CASE("a team where one thread is faster in every window moves to one after two won probes", "[width]") {
  WidthControl control(2);
  Host host = [](int, uint32_t w) { return decode_window(w == 1 ? 700 : 1000); };
  auto first = run(control, 5, host);
  CHECK(first == concat({times(4, 2), {1}}));
  // One win is not enough: the next window is back at 2 for a fresh reference.
  CHECK(control.settled_width() == 2);
  CHECK(control.width() == 2);
  CHECK(control.phase() == WidthControl::Phase::Recheck);
  auto rest = run(control, 40, host);
  // Recheck at 2, second win at 1: settled at 1. Probes up (the only
  // neighbour) then lose, after 4 windows (reset on adoption), then 8, 16.
  auto expected = concat({{2, 1}, times(4, 1), {2}, times(8, 1), {2}, times(16, 1), {2}, times(7, 1)});
  CHECK(rest == expected);
  CHECK(control.settled_width() == 1);
  CHECK(control.probe_interval() == 32);
}

TEST_CASE("a team of three on a host where two is best settles at two and probes both neighbours", "[width]") {
  WidthControl control(3);
  Host host = [](int, uint32_t w) { return decode_window(w == 2 ? 1000 : w == 1 ? 1600 : 2000); };
  auto widths = run(control, 50, host);
  // Down to 2 after two wins; then one fewer and one more in turn, each lost.
  auto expected = concat({times(4, 3), {2, 3, 2}, times(4, 2), {3}, times(8, 2), {1}, times(16, 2), {3},
                          times(12, 2)});
  CHECK(widths == expected);
  CHECK(control.settled_width() == 2);
}

TEST_CASE("a probe window with other work than its reference is not judged", "[width]") {
  SECTION("a fast prompt chunk does not count as the second win") {
    WidthControl control(2);
    // Window 4: a lucky probe (a win). Window 6, the second probe, is a
    // prompt chunk that runs fast: if judged, it would move the team to 1.
    Host host = [](int i, uint32_t w) {
      if (i == 4) return decode_window(800);
      if (i == 6) return chunk_window(600);
      return two_faster(w);
    };
    auto widths = run(control, 20, host);
    // Probe (won), recheck, chunk (not judged), recheck, probe (lost), 8 at 2, probe.
    auto expected = concat({times(4, 2), {1, 2, 1, 2, 1}, times(8, 2), {1}, times(2, 2)});
    CHECK(widths == expected);
    CHECK(control.settled_width() == 2);
  }
  SECTION("a slow prompt chunk does not count as a loss") {
    WidthControl control(2);
    // Window 4, the probe, is a slow prompt chunk: if judged a loss, the
    // wait would double and window 6 would not be a probe.
    Host host = [](int i, uint32_t w) { return i == 4 ? chunk_window(3000) : two_faster(w); };
    auto widths = run(control, 7, host);
    // Chunk (not judged), recheck at 2, the same probe (lost): one loss, so
    // the wait is 8, not 16.
    CHECK(widths == concat({times(4, 2), {1, 2, 1}}));
    CHECK(control.probe_interval() == 8);
    CHECK(run(control, 10, host) == concat({times(8, 2), {1, 2}}));
  }
  SECTION("when every probe window is other work, an attempt gives up after three") {
    WidthControl control(2);
    // The work changes kind exactly when the width does: every window at
    // width 1 is a prompt chunk. Without a limit the team would run every
    // other window at width 1 for good.
    Host host = [](int, uint32_t w) { return w == 1 ? chunk_window(3000) : decode_window(1000); };
    auto widths = run(control, 28, host);
    // Three unjudged probes (with rechecks between), then the usual wait
    // of 4, not doubled: no verdict was reached.
    auto attempt = std::vector<uint32_t>{1, 2, 1, 2, 1};
    CHECK(widths == concat({times(4, 2), attempt, times(4, 2), attempt, times(4, 2), attempt, {2}}));
    CHECK(control.settled_width() == 2);
    CHECK(control.probe_interval() == 4);
  }
}

TEST_CASE("each lost probe doubles the wait before the next, up to 32 windows", "[width]") {
  WidthControl control(2);
  Host host = [](int, uint32_t w) { return two_faster(w); };
  std::vector<uint32_t> intervals;
  std::vector<uint32_t> widths;
  for (int i = 0; i < 400; i++) {
    widths.push_back(control.width());
    control.on_window(host(i, control.width()));
    intervals.push_back(control.probe_interval());
  }
  // Settled windows between consecutive probes (and before the first).
  std::vector<int> gaps;
  int last = -1;
  for (int p : off_width(widths, 2)) {
    gaps.push_back(p - last - 1);
    last = p;
  }
  REQUIRE(gaps.size() >= 8);
  CHECK(std::vector<int>(gaps.begin(), gaps.begin() + 8) == std::vector<int>{4, 8, 16, 32, 32, 32, 32, 32});
  for (uint32_t v : intervals) CHECK(v <= 32);
  CHECK(control.probe_interval() == 32);
}

TEST_CASE("a team of one, and empty windows, change nothing", "[width]") {
  WidthControl one(1);
  for (int i = 0; i < 20; i++) CHECK(one.on_window(decode_window(1000)) == 1);
  WidthControl two(2);
  // Windows with no work say nothing about speed (and must not divide by zero).
  for (int i = 0; i < 20; i++) {
    CHECK(two.on_window(WidthWindow{}) == 2);
    CHECK(two.on_window(WidthWindow{5, 0, 3}) == 2);
    CHECK(two.on_window(WidthWindow{5, 100, 0}) == 2);
  }
  CHECK(two.phase() == WidthControl::Phase::Settled);
}
