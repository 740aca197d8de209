// The row team's width control (kernel/ai/width_control.h), fed sequences of
// measured windows by hand. Each host below is a rule "a window at width w
// takes so many picoseconds per multiply-add", with chosen windows made
// lucky, unlucky or of another kind of work; the expected widths are worked
// out from the rule (docs/ai-service.md, "The row team's width"), window by window, not taken from a
// run of the code.
//   - a host where 2 threads are faster keeps 2 even when one probe window
//     at 1 is lucky (a rule that adopts on one win moves to 1), and when
//     two in a row are (a rule that adopts on two wins moves to 1);
//   - a host where 1 thread is faster in every window moves to 1, after the
//     third won probe and not the second;
//   - a team of 3 on a host where 2 is best settles at 2 and then tries
//     both neighbours in turn;
//   - the reference is the median of the last 3 windows at the settled
//     width: a stalled one before each probe moves nothing, and a host that
//     slows down for good is the reference within 3 windows;
//   - a probe window with other work than its reference (a prompt chunk) is
//     neither a win nor a loss, and after 3 of them the attempt gives up;
//   - each lost probe at least doubles the wait before the next, up to 32
//     windows; a clear loss makes it long enough that such probes cost at
//     most 1/32 of the windows (an 80% slower probe: 26 windows, not 8);
//     an adoption resets it to 4;
//   - PassWindows: a probe covers only a window's worth (the first 14 of a
//     batch pass's 150 products), and passes smaller than a window share one.
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
  // probe 1 again (lost, 1800 against 1000 ps: 80% slower): back to 2 at
  // once, then probes after ceil(0.8 * 32) = 26, then 52 (doubled) settled
  // windows, each lost; the next would wait 104.
  auto expected = concat({times(4, 2), {1, 2, 1}, times(26, 2), {1}, times(52, 2), {1}, times(13, 2)});
  CHECK(widths == expected);
  CHECK(control.settled_width() == 2);
  CHECK(off_width(widths, 2) == std::vector<int>{4, 6, 33, 86});
  CHECK(control.probe_interval() == 104);
}

TEST_CASE("a team where two threads are faster stays at two despite two lucky probes in a row", "[width]") {
  WidthControl control(2);
  // Windows 4 and 6, the first two probes of one attempt, are both lucky at
  // width 1 (800 ps against 1000): the noise that moved a team of 3 at
  // -smp 4 down to one thread when two wins were enough.
  Host host = [](int i, uint32_t w) { return i == 4 || i == 6 ? decode_window(800) : two_faster(w); };
  auto widths = run(control, 100, host);
  // Probe (won), recheck, probe (won), recheck, probe (lost by 80%): back
  // at 2, then probes after 26 and 52 settled windows.
  auto expected = concat({times(4, 2), {1, 2, 1, 2, 1}, times(26, 2), {1}, times(52, 2), {1}, times(11, 2)});
  CHECK(widths == expected);
  CHECK(control.settled_width() == 2);
  CHECK(off_width(widths, 2) == std::vector<int>{4, 6, 8, 35, 88});
}

TEST_CASE("a stalled reference window before each probe does not move the team", "[width]") {
  WidthControl control(2);
  // The host stalls (2.5x slower, 2500 ps at width 2) in the last settled
  // or recheck window before each probe of the first attempt: windows 3, 5
  // and 7. Against that window alone, each probe at 1 (1800 ps) would win
  // and the third would move the team to 1. The reference is the median of
  // the last three windows at 2, (1000, 1000, 2500) -> 1000 at window 4,
  // so the first probe loses by 80% and the team stays at 2.
  Host host = [](int i, uint32_t w) {
    if (w == 2 && (i == 3 || i == 5 || i == 7)) return decode_window(2500);
    return two_faster(w);
  };
  auto widths = run(control, 40, host);
  CHECK(widths == concat({times(4, 2), {1}, times(26, 2), {1}, times(8, 2)}));
  CHECK(control.settled_width() == 2);
}

TEST_CASE("the reference follows the host's drift within three windows", "[width]") {
  WidthControl control(2);
  // One thread is 10% faster (900 against 1000 ps), and from window 2 on
  // the whole host is twice as slow (1800 against 2000). The first probe
  // (window 4) is judged against the median of windows 1-3 at 2: (1000,
  // 2000, 2000) -> 2000, so 1800 wins; a reference that kept the old speed
  // (1000) would call it a loss. Three wins in a row move the team to 1.
  Host host = [](int i, uint32_t w) {
    uint64_t ps = w == 1 ? 900 : 1000;
    return decode_window(i >= 2 ? 2 * ps : ps);
  };
  auto widths = run(control, 9, host);
  CHECK(widths == concat({times(4, 2), {1, 2, 1, 2, 1}}));
  CHECK(control.settled_width() == 1);
}

TEST_CASE("a team where one thread is faster in every window moves to one after three won probes", "[width]") {
  WidthControl control(2);
  Host host = [](int, uint32_t w) { return decode_window(w == 1 ? 700 : 1000); };
  auto first = run(control, 7, host);
  CHECK(first == concat({times(4, 2), {1, 2, 1}}));
  // Two wins are not enough: the next window is back at 2 for a fresh
  // reference.
  CHECK(control.settled_width() == 2);
  CHECK(control.width() == 2);
  CHECK(control.phase() == WidthControl::Phase::Recheck);
  auto rest = run(control, 40, host);
  // Recheck at 2, third win at 1: settled at 1. Probes up (the only
  // neighbour) then lose by 300/700 = 43%, after 4 windows (reset on
  // adoption), then ceil(0.43 * 32) = 14, then 28 (doubled).
  auto expected = concat({{2, 1}, times(4, 1), {2}, times(14, 1), {2}, times(18, 1)});
  CHECK(rest == expected);
  CHECK(control.settled_width() == 1);
  CHECK(control.probe_interval() == 28);
}

TEST_CASE("a team of three on a host where two is best settles at two and probes both neighbours", "[width]") {
  WidthControl control(3);
  Host host = [](int, uint32_t w) { return decode_window(w == 2 ? 1000 : w == 1 ? 1600 : 2000); };
  auto widths = run(control, 50, host);
  // Down to 2 after three wins; then one more and one fewer in turn, each
  // lost: 3 is 100% slower (wait 32, the cap), then 1 is 60% slower (again
  // the cap: twice the last wait of 32), so 50 windows end before 3 is tried
  // again.
  auto expected = concat({times(4, 3), {2, 3, 2, 3, 2}, times(4, 2), {3}, times(32, 2), {1}, times(3, 2)});
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
    // Probe (won), recheck, chunk (not judged), recheck, probe (lost by
    // 80%), then 26 windows at 2.
    auto expected = concat({times(4, 2), {1, 2, 1, 2, 1}, times(11, 2)});
    CHECK(widths == expected);
    CHECK(control.settled_width() == 2);
  }
  SECTION("a slow prompt chunk does not count as a loss") {
    WidthControl control(2);
    // Window 4, the probe, is a slow prompt chunk: if judged a loss, the
    // wait would double and window 6 would not be a probe.
    Host host = [](int i, uint32_t w) { return i == 4 ? chunk_window(3000) : two_faster(w); };
    auto widths = run(control, 7, host);
    // Chunk (not judged), recheck at 2, the same probe (lost by 80%): one
    // loss, so the wait is 26; after two losses it would be 32.
    CHECK(widths == concat({times(4, 2), {1, 2, 1}}));
    CHECK(control.probe_interval() == 26);
    CHECK(run(control, 28, host) == concat({times(26, 2), {1, 2}}));
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

namespace {

// Settled windows between consecutive probes (and before the first) over
// `n` windows of a host where the team stays at 2.
std::vector<int> probe_gaps(const Host& host, int n, std::vector<uint32_t>* intervals) {
  WidthControl control(2);
  std::vector<uint32_t> widths;
  for (int i = 0; i < n; i++) {
    widths.push_back(control.width());
    control.on_window(host(i, control.width()));
    intervals->push_back(control.probe_interval());
  }
  std::vector<int> gaps;
  int last = -1;
  for (int p : off_width(widths, 2)) {
    gaps.push_back(p - last - 1);
    last = p;
  }
  return gaps;
}

}  // namespace

TEST_CASE("each lost probe at least doubles the wait before the next, up to 256 windows", "[width]") {
  std::vector<uint32_t> intervals;
  SECTION("narrow losses: the wait doubles") {
    // One thread is only 10% slower: ceil(0.1 * 32) = 4 windows would
    // afford it, so doubling decides.
    auto gaps = probe_gaps([](int, uint32_t w) { return decode_window(w == 2 ? 1000 : 1100); }, 1100, &intervals);
    REQUIRE(gaps.size() >= 8);
    CHECK(std::vector<int>(gaps.begin(), gaps.begin() + 8) == std::vector<int>{4, 8, 16, 32, 64, 128, 256, 256});
  }
  SECTION("clear losses: the wait makes probing cheap at once") {
    // One thread is 80% slower: 26 windows after the first loss, not 8.
    auto gaps = probe_gaps([](int, uint32_t w) { return two_faster(w); }, 2000, &intervals);
    REQUIRE(gaps.size() >= 8);
    CHECK(std::vector<int>(gaps.begin(), gaps.begin() + 8) == std::vector<int>{4, 26, 52, 104, 208, 256, 256, 256});
    // The probes' extra time: 0.8 of a window per probe, against all
    // windows: under 1/32 from the first loss on, under 1% over 2000.
    double extra = 0.8 * double(gaps.size() - 1);
    CHECK(extra / 2000 < 0.01);
  }
  for (uint32_t v : intervals) CHECK(v <= 256);
}

TEST_CASE("a host that moves cuts a long wait to 32 windows; other work does not", "[width]") {
  // Two threads are 1.8x faster. Lost probes at windows 4, 31, 84 and 189
  // (waits 26, 52, 104) leave a wait of 208: the next probe at 398.
  Host steady = [](int, uint32_t w) { return two_faster(w); };
  WidthControl unchanged(2);
  CHECK(off_width(run(unchanged, 420, steady), 2) == std::vector<int>{4, 31, 84, 189, 398});
  SECTION("the host slows down by half: a probe within 32 windows of noticing it") {
    // From window 200 on both widths take twice as long. The reference
    // (median of three) has moved at window 201: the wait is cut to 32.
    WidthControl control(2);
    Host slower = [](int i, uint32_t w) { return i >= 200 ? decode_window(w == 2 ? 2000 : 3600) : two_faster(w); };
    auto probes = off_width(run(control, 420, slower), 2);
    REQUIRE(probes.size() >= 5);
    CHECK(std::vector<int>(probes.begin(), probes.begin() + 4) == std::vector<int>{4, 31, 84, 189});
    CHECK(probes[4] == 201 + 32);
  }
  SECTION("the host speeds up by a third: the same") {
    WidthControl control(2);
    Host faster = [](int i, uint32_t w) { return i >= 200 ? decode_window(w == 2 ? 700 : 1260) : two_faster(w); };
    auto probes = off_width(run(control, 420, faster), 2);
    REQUIRE(probes.size() >= 5);
    CHECK(probes[4] == 201 + 32);
  }
  SECTION("a drift of a fifth is not a move") {
    WidthControl control(2);
    Host drift = [](int i, uint32_t w) { return i >= 200 ? decode_window(w == 2 ? 1200 : 2160) : two_faster(w); };
    CHECK(off_width(run(control, 420, drift), 2) == std::vector<int>{4, 31, 84, 189, 398});
  }
  SECTION("prompt chunks, slower per multiply-add, are other work: no cut") {
    WidthControl control(2);
    Host chunks = [](int i, uint32_t w) { return i >= 200 && i < 220 ? chunk_window(3000) : two_faster(w); };
    CHECK(off_width(run(control, 420, chunks), 2) == std::vector<int>{4, 31, 84, 189, 398});
  }
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

// ---- PassWindows: which products of the passes are measured -----------------

namespace {

// Runs `passes` forward passes of `products` equal products of `macs` each
// through PassWindows, on a host where one multiply-add takes 1000 ps at
// width 2 and 1800 ps at width 1. Returns, per pass, the width of each
// product.
std::vector<std::vector<uint32_t>> run_passes(ai::PassWindows& windows, int passes, uint32_t products,
                                              uint64_t macs) {
  std::vector<std::vector<uint32_t>> out;
  for (int p = 0; p < passes; p++) {
    std::vector<uint32_t> widths;
    for (uint32_t k = 0; k < products; k++) {
      uint32_t w = windows.width();
      widths.push_back(w);
      windows.product_done((w == 2 ? 1000 : 1800) * macs / 1000, macs);
    }
    windows.end_of_pass();
    out.push_back(widths);
  }
  return out;
}

}  // namespace

TEST_CASE("a probe runs only a window's worth of a large pass; the rest runs at the settled width", "[width]") {
  // A pass of 8 decode tokens: 150 products of 7.2 M multiply-adds (1.08 G).
  // A window is the first 14 products of a pass (14 x 7.2 M = 100.8 M, the
  // first sum that reaches 100 M), so every pass holds one window.
  ai::PassWindows windows(2);
  auto passes = run_passes(windows, 40, 150, 7'200'000);
  // Passes 0-3: settled windows at 2. Pass 4 starts with the probe at 1 for
  // its window (14 products) and runs the other 136 at 2. The probe loses by
  // 80%: the next waits ceil(0.8 * 32) = 26 windows (passes 5-30), so pass
  // 31 probes again.
  for (int p = 0; p < 40; p++) {
    INFO("pass " << p);
    if (p == 4 || p == 31)
      CHECK(passes[p] == concat({times(14, 1), times(136, 2)}));
    else
      CHECK(passes[p] == times(150, 2));
  }
  CHECK(windows.control().settled_width() == 2);
}

TEST_CASE("a window goes on into the next pass when a pass is smaller than a window", "[width]") {
  // Passes of 30 products of 2 M multiply-adds (60 M): a window is one
  // whole pass and the first 20 products of the next (60 M + 40 M); the
  // last 10 products of that pass are not measured, and the next window
  // starts with the pass after it.
  ai::PassWindows windows(2);
  std::vector<int> measured_per_pass;
  for (int p = 0; p < 4; p++) {
    int measured = 0;
    for (int k = 0; k < 30; k++) {
      if (windows.measuring()) measured++;
      windows.product_done(2'000'000, 2'000'000);
    }
    windows.end_of_pass();
    measured_per_pass.push_back(measured);
  }
  CHECK(measured_per_pass == std::vector<int>{30, 20, 30, 20});
  // Windows of whole passes and parts of passes, at a team of 3 too: no
  // width outside 1..3.
  ai::PassWindows three(3);
  for (const auto& pass : run_passes(three, 60, 30, 2'000'000))
    for (uint32_t w : pass) CHECK((w >= 1 && w <= 3));
}

TEST_CASE("each window's verdict says what the control made of it", "[width]") {
  // The verdicts the trace's WIDTH event shows. A team of 2 on a host where
  // one thread is faster (700 against 1000 ps per multiply-add), with window
  // 6 a prompt chunk: 4 references at 2; probe 1 won; recheck; the chunk,
  // not judged; recheck; probe won; recheck; probe won for the third time:
  // adopted; then references at 1 until the probe of 2 loses.
  using V = WidthControl::Verdict;
  WidthControl control(2);
  CHECK(control.verdict() == V::None);
  std::vector<V> verdicts;
  std::vector<uint32_t> widths;
  for (int i = 0; i < 16; i++) {
    uint32_t w = control.width();
    widths.push_back(w);
    control.on_window(i == 6 ? chunk_window(600) : decode_window(w == 1 ? 700 : 1000));
    verdicts.push_back(control.verdict());
  }
  CHECK(widths == std::vector<uint32_t>{2, 2, 2, 2, 1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2});
  std::vector<V> expected = {V::Reference, V::Reference, V::Reference, V::Reference, V::Won, V::Reference,
                             V::Unjudged, V::Reference, V::Won, V::Reference, V::Adopted, V::Reference,
                             V::Reference, V::Reference, V::Reference, V::Lost};
  CHECK(verdicts == expected);
  // The reference after the adoption is width 1's own: 700 ps.
  CHECK(control.reference_ps() == 700);
  // An empty window is ignored, and says so.
  control.on_window(WidthWindow{});
  CHECK(control.verdict() == V::None);
}

TEST_CASE("PassWindows tells which product closed a window, its figures and its width", "[width]") {
  // Passes of 150 products of 7.2 M multiply-adds, 720 us each (100 ps per
  // multiply-add): the 14th product of each pass closes its window.
  ai::PassWindows windows(2);
  for (int p = 0; p < 6; p++) {
    for (int k = 0; k < 150; k++) {
      uint32_t w = windows.width();
      bool closed = windows.product_done(720'000, 7'200'000);
      CHECK(closed == (k == 13));
      if (closed) {
        CHECK(windows.last_window().macs == 14 * 7'200'000ull);
        CHECK(windows.last_window().products == 14);
        CHECK(WidthControl::ps_per_mac(windows.last_window()) == 100);
        CHECK(windows.last_width() == w);
        // The first probe is the fifth window: it ran at 1.
        CHECK(w == (p == 4 ? 1u : 2u));
      }
    }
    windows.end_of_pass();
  }
}
