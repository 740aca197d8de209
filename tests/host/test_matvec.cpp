// Matrix-vector kernels: the float kernel against a double-precision
// reference, the int8 kernel's fast path (aligned, 4 rows at a time) against
// its generic path (bit-identical), and the int8 error on Gaussian data.
#include <catch2/catch.hpp>

#include <string.h>
#include <cfloat>
#include <cstring>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "llm_test_util.h"
#include "matvec.h"

namespace {

struct QMat {
  std::vector<uint8_t> bytes;  // scales then q, at `offset` inside the buffer
  llm::Matrix m;
};

// offset shifts the q data off 8-byte alignment when non-zero (mod 8).
QMat make_qmat(std::mt19937& rng, uint32_t rows, uint32_t cols, uint32_t offset) {
  QMat q;
  testutil::Writer w;
  testutil::put_matrix(w, rng, rows, cols, false, 1.0f);
  q.bytes.assign(offset, 0);
  q.bytes.insert(q.bytes.end(), w.b.begin(), w.b.end());
  q.m.rows = rows;
  q.m.cols = cols;
  q.m.scales = q.bytes.data() + offset;
  q.m.q = reinterpret_cast<const int8_t*>(q.bytes.data() + offset + 4 * size_t(rows));
  return q;
}

}  // namespace

TEST_CASE("float matvec matches a double reference", "[matvec]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> N(0, 1);
  for (uint32_t cols : {1u, 7u, 64u, 172u}) {
    QMat q = make_qmat(rng, 9, cols, 3);
    std::vector<float> x(cols), y(9);
    for (auto& v : x) v = N(rng);
    llm::ActVec a;
    a.x = x.data();
    a.n = cols;
    llm::kMatvecFloat.matvec(q.m, a, y.data(), 0, 9);
    for (uint32_t r = 0; r < 9; r++) {
      double want = 0, mag = 0;
      for (uint32_t c = 0; c < cols; c++) {
        want += double(q.m.at(r, c)) * x[c];
        mag += std::fabs(double(q.m.at(r, c)) * x[c]);
      }
      REQUIRE(std::fabs(y[r] - want) <= 1e-6 * mag + 1e-12);
    }
    auto am = llm::kMatvecFloat.argmax(q.m, a, 0, 9);
    for (uint32_t r = 0; r < 9; r++) CHECK(y[r] <= am.value);
    CHECK(y[am.index] == am.value);
  }
}

TEST_CASE("int8 fast path is bit-identical to the generic path", "[matvec]") {
  std::mt19937 rng(12);
  std::normal_distribution<float> N(0, 1);
  for (uint32_t rows : {1u, 4u, 7u, 13u}) {
    for (uint32_t cols : {8u, 64u, 96u, 576u, 100u}) {
      for (uint32_t group : {0u, 8u, 32u, 64u, 12u}) {
        for (uint32_t offset : {0u, 8u, 4u}) {
          // offset 4 plus rows*4 scales: q aligned only when rows is odd
          QMat q = make_qmat(rng, rows, cols, offset);
          std::vector<float> x(cols), y(rows), yref(rows);
          for (auto& v : x) v = N(rng) * (rng() % 7 == 0 ? 20.0f : 1.0f);
          std::vector<int8_t> xq(cols + 8);
          std::vector<uint8_t> xs(cols + 1);
          auto a = llm::quantize_act(x.data(), cols, group, xq.data(), xs.data());
          llm::kMatvecInt8.matvec(q.m, a, y.data(), 0, rows);
          // generic reference: the same sums, one byte at a time
          uint32_t g = group ? group : cols;
          for (uint32_t r = 0; r < rows; r++) {
            int64_t acc = 0;
            uint32_t gi = 0;
            for (uint32_t c0 = 0; c0 < cols; c0 += g, gi++) {
              int32_t s = 0;
              for (uint32_t c = c0; c < std::min(cols, c0 + g); c++) s += int32_t(q.m.q[size_t(r) * cols + c]) * xq[c];
              acc += int64_t(s) << (llm::kMaxShift - xs[gi]);
            }
            yref[r] = float(acc) * (a.scale * (1.0f / 32768.0f)) * q.m.scale(r);
          }
          INFO("rows " << rows << " cols " << cols << " group " << group << " offset " << offset);
          for (uint32_t r = 0; r < rows; r++) REQUIRE(y[r] == yref[r]);
          auto am = llm::kMatvecInt8.argmax(q.m, a, 0, rows);
          uint32_t best = 0;
          for (uint32_t r = 1; r < rows; r++) if (yref[r] > yref[best]) best = r;
          CHECK(am.index == best);
        }
      }
    }
  }
}

TEST_CASE("argmax: the lowest index wins ties", "[matvec]") {
  // All-zero rows: every logit is 0.
  std::vector<uint8_t> buf(4 * 6 + 6 * 8, 0);
  for (int r = 0; r < 6; r++) { float one = 1.0f; memcpy(&buf[4 * r], &one, 4); }
  llm::Matrix m;
  m.rows = 6;
  m.cols = 8;
  m.scales = buf.data();
  m.q = reinterpret_cast<const int8_t*>(buf.data() + 24);
  std::vector<float> x(8, 1.0f);
  llm::ActVec a;
  a.x = x.data();
  a.n = 8;
  CHECK(llm::kMatvecFloat.argmax(m, a, 0, 6).index == 0);
  CHECK(llm::kMatvecFloat.argmax(m, a, 2, 6).index == 2);
  std::vector<int8_t> xq(8);
  std::vector<uint8_t> xs(8);
  auto qa = llm::quantize_act(x.data(), 8, 8, xq.data(), xs.data());
  CHECK(llm::kMatvecInt8.argmax(m, qa, 0, 6).index == 0);
}

TEST_CASE("int8 activation error on Gaussian data", "[matvec][int8]") {
  std::mt19937 rng(13);
  std::normal_distribution<float> N(0, 1);
  QMat q = make_qmat(rng, 256, 576, 0);
  std::vector<float> x(576), yf(256), yq(256);
  for (auto& v : x) v = N(rng);
  llm::ActVec a;
  a.x = x.data();
  a.n = 576;
  llm::kMatvecFloat.matvec(q.m, a, yf.data(), 0, 256);
  std::vector<int8_t> xq(576);
  std::vector<uint8_t> xs(576);
  for (uint32_t group : {32u, 0u}) {
    auto qa = llm::quantize_act(x.data(), 576, group, xq.data(), xs.data());
    llm::kMatvecInt8.matvec(q.m, qa, yq.data(), 0, 256);
    double e = 0, n = 0;
    for (int r = 0; r < 256; r++) {
      e += double(yf[r] - yq[r]) * (yf[r] - yq[r]);
      n += double(yf[r]) * yf[r];
    }
    double rel = std::sqrt(e / n);
    WARN("int8 matvec, group " << group << ": relative L2 error " << rel);
    CHECK(rel < 0.01);
  }
}

// The packed int8 kernels (items in triples or pairs, one item crosswise)
// against the plain int8 kernel: bit-identical for every item count (1..13:
// one, two and three packed words per block, a second block, short last
// words, crosswise blocks of 1 and 2 items alone and after a block of
// triples or pairs), row ranges that are and are not a multiple of 4, group sizes
// (several groups per row, a short last group, one group), every item with
// its own gain in every group (the packed kernels read each group's gains
// from the packed stream), and the extreme values that bound the lanes (all
// products +127*127 or all -127*127: the largest lane sums).
TEST_CASE("packed int8 matmul is bit-identical to the plain int8 kernel", "[matvec]") {
  std::mt19937 rng(3);
  std::normal_distribution<float> N(0, 1);
  for (uint32_t cols : {8u, 64u, 104u, 576u, 1536u}) {
    for (uint32_t group : {0u, 8u, 32u, 64u, 128u}) {
      for (int extreme = 0; extreme < 4; extreme++) {
        uint32_t rows = 11;
        // The packed kernels need 8-byte aligned weight rows (else the plain
        // kernel runs and would be compared with itself): the 44 bytes of
        // row scales in front of the weights are padded to 48.
        QMat q = make_qmat(rng, rows, cols, 4);
        REQUIRE(reinterpret_cast<uintptr_t>(q.m.q) % 8 == 0);
        if (extreme) {  // every weight at +-127 (mixed, all +, all -)
          auto* qv = const_cast<int8_t*>(q.m.q);
          for (size_t i = 0; i < size_t(rows) * cols; i++)
            qv[i] = extreme == 1 ? ((i % 3) ? -127 : 127) : extreme == 2 ? 127 : -127;
        }
        constexpr uint32_t kItems = 13;
        uint32_t g = group ? group : cols, groups = (cols + g - 1) / g;
        std::vector<std::vector<float>> xs(kItems, std::vector<float>(cols));
        std::vector<std::vector<int8_t>> qs(kItems, std::vector<int8_t>(cols + 8));
        std::vector<std::vector<uint8_t>> sh(kItems, std::vector<uint8_t>(cols));
        std::vector<llm::ActVec> acts(kItems);
        for (uint32_t i = 0; i < kItems; i++) {
          for (uint32_t c = 0; c < cols; c++) {
            // Group gi of item i is scaled by 2^-j: its gain is 2^j (random
            // values: about that), j in 0..15, different across groups and
            // items. A power of two keeps the extremes at +-127 after
            // quantisation.
            uint32_t j = (c / g * 7 + i * 3 + uint32_t(extreme)) % 16;
            float v = extreme == 1 ? ((c + i) % 2 ? -1.0f : 1.0f) : extreme ? 1.0f : N(rng) * (c % 7 == 0 ? 0.01f : 1.0f);
            xs[i][c] = std::ldexp(v, -int(j));
          }
          acts[i] = llm::quantize_act(xs[i].data(), cols, group, qs[i].data(), sh[i].data());
          if (groups >= 3) {  // the gains really differ across the item's groups
            bool differ = false;
            for (uint32_t gi = 1; gi < groups; gi++) differ |= sh[i][gi] != sh[i][0];
            REQUIRE(differ);
          }
          if (extreme)
            for (uint32_t c = 0; c < cols; c++) REQUIRE((qs[i][c] == 127 || qs[i][c] == -127));
        }
        size_t stride = llm::int8_pack_stride(cols);
        std::vector<int64_t> pairs((kItems + 1) / 2 * stride);
        std::vector<uint64_t> cross(cols / 2);
        for (uint32_t n = 1; n <= kItems; n++) {
          INFO("cols " << cols << " group " << group << " extreme " << extreme << " items " << n);
          std::vector<llm::ActVec> packed(acts.begin(), acts.begin() + n);
          for (const auto& a : packed) REQUIRE(reinterpret_cast<uintptr_t>(a.q) % 8 == 0);
          llm::pack_int8_batch(packed.data(), n, pairs.data(), stride, cross.data());
          // Blocks of 3 words: 9 items (triples) or 6 (pairs), but a last
          // block of 1 or 2 items is crosswise (cross or cross_block).
          uint32_t block = g <= 64 ? 9 : 6;
          for (uint32_t i = 0; i < n; i++) {
            uint32_t items = i % block == 0 ? std::min(block, n - i) : 0u;
            bool crosswise = items == 1 || items == 2;
            REQUIRE((packed[i].triple != nullptr) == (items && !crosswise && g <= 64));
            REQUIRE((packed[i].pair != nullptr) == (items && !crosswise && g > 64));
            REQUIRE((packed[i].cross != nullptr) == (items == 1));
            REQUIRE((packed[i].cross_block != nullptr) == (items == 2));
            REQUIRE(packed[i].block_items == (items == 1 ? 0u : items));
          }
          for (uint32_t r0 : {0u, 1u, 3u}) {
            std::vector<float> y(size_t(n) * rows, -1.0f);
            llm::kMatvecInt8.matmul(q.m, packed.data(), n, y.data(), rows, r0, rows);
            for (uint32_t i = 0; i < n; i++) {
              std::vector<float> want(rows);
              llm::kMatvecInt8.matvec(q.m, acts[i], want.data(), r0, rows);  // unpacked: plain kernel
              for (uint32_t r = r0; r < rows; r++) REQUIRE(memcmp(&y[i * rows + (r - r0)], &want[r], 4) == 0);
            }
          }
          // Fewer items than the packed blocks hold (the rest of a block is
          // summed, not written).
          if (n >= 3) {
            std::vector<float> y(size_t(n) * rows, -1.0f), want(rows);
            llm::kMatvecInt8.matmul(q.m, packed.data(), n - 1, y.data(), rows, 0, rows);
            for (uint32_t i = 0; i < n - 1; i++) {
              llm::kMatvecInt8.matvec(q.m, acts[i], want.data(), 0, rows);
              for (uint32_t r = 0; r < rows; r++) REQUIRE(memcmp(&y[i * rows + r], &want[r], 4) == 0);
            }
            for (uint32_t r = 0; r < rows; r++) REQUIRE(y[(n - 1) * rows + r] == -1.0f);
          }
        }
      }
    }
  }
}

// Packing needs room for the gain words after the columns: with less room
// than int8_pack_stride it packs nothing (and writes nothing), and the
// product falls back to the plain kernel with the same results.
TEST_CASE("pack_int8_batch packs nothing into rooms that are too small", "[matvec]") {
  std::mt19937 rng(5);
  std::normal_distribution<float> N(0, 1);
  const uint32_t cols = 64, rows = 8, n = 4;
  QMat q = make_qmat(rng, rows, cols, 4);
  std::vector<std::vector<float>> xs(n, std::vector<float>(cols));
  std::vector<std::vector<int8_t>> qs(n, std::vector<int8_t>(cols));
  std::vector<std::vector<uint8_t>> sh(n, std::vector<uint8_t>(cols));
  std::vector<llm::ActVec> acts(n);
  for (uint32_t i = 0; i < n; i++) {
    for (auto& v : xs[i]) v = N(rng);
    acts[i] = llm::quantize_act(xs[i].data(), cols, 32, qs[i].data(), sh[i].data());
  }
  size_t stride = llm::int8_pack_stride(cols);
  REQUIRE(stride == cols + cols / 8);
  std::vector<int64_t> room((n + 1) / 2 * stride, 0x5a5a);
  std::vector<uint64_t> cross(cols / 2);
  std::vector<llm::ActVec> packed = acts;
  llm::pack_int8_batch(packed.data(), n, room.data(), cols + 1, cross.data());  // 2 groups need cols + 2
  for (const auto& a : packed) CHECK((a.triple == nullptr && a.pair == nullptr && a.cross == nullptr));
  for (int64_t v : room) REQUIRE(v == 0x5a5a);
  std::vector<float> y(n * rows), want(rows);
  llm::kMatvecInt8.matmul(q.m, packed.data(), n, y.data(), rows, 0, rows);
  for (uint32_t i = 0; i < n; i++) {
    llm::kMatvecInt8.matvec(q.m, acts[i], want.data(), 0, rows);
    for (uint32_t r = 0; r < rows; r++) REQUIRE(memcmp(&y[i * rows + r], &want[r], 4) == 0);
  }
  llm::pack_int8_batch(packed.data(), n, room.data(), cols + 2, cross.data());  // just enough
  CHECK(packed[0].triple != nullptr);
}

// quantize_act compares bit patterns with integer instructions (cheap under
// QEMU); its result must be exactly the float definition, written out here
// the plain way, on ordinary and on special values.
namespace {
void quantize_by_definition(const float* x, uint32_t n, uint32_t group, int8_t* q, uint8_t* shift, float* scale) {
  float amax = 0;
  for (uint32_t c = 0; c < n; c++) {
    float v = std::fabs(x[c]);
    if (v > amax) amax = v;
  }
  *scale = amax / 127.0f;
  float inv = amax > 0 && std::isfinite(amax) ? 127.0f / amax : 0.0f;
  uint32_t g = group ? group : n;
  for (uint32_t c0 = 0, gi = 0; c0 < n; c0 += g, gi++) {
    uint32_t c1 = std::min(n, c0 + g);
    float gmax = 0;
    for (uint32_t c = c0; c < c1; c++)
      if (std::fabs(x[c]) > gmax) gmax = std::fabs(x[c]);
    uint32_t k = 0;
    float scaled = gmax * 2.0f;
    while (k < llm::kMaxShift && scaled <= amax) {
      k++;
      scaled *= 2.0f;
    }
    shift[gi] = uint8_t(k);
    float m = inv * float(1u << k);
    for (uint32_t c = c0; c < c1; c++) {
      float v = x[c] * m;
      int32_t iv = -127;
      if (v >= 127.0f) iv = 127;
      else if (v > -127.0f) iv = int32_t(v >= 0 ? v + 0.5f : v - 0.5f);
      q[c] = int8_t(iv);
    }
  }
}
}  // namespace

TEST_CASE("quantize_act equals its float definition bit for bit", "[matvec][int8]") {
  std::mt19937 rng(29);
  std::normal_distribution<float> N(0, 1);
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, -1e-45f, 1e-40f,
                            FLT_MAX, -FLT_MAX, 0.5f, -0.5f, 0.49999997f, -0.49999997f, 127.0f, -127.0f};
  int cases = 0;
  for (uint32_t n : {8u, 64u, 576u, 100u}) {
    for (uint32_t group : {0u, 8u, 32u, 12u}) {
      for (int trial = 0; trial < 40; trial++) {
        std::vector<float> x(n);
        for (auto& v : x) v = N(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);
        // Some vectors get special values, some values on rounding edges.
        if (trial % 3 == 1)
          for (int k = 0; k < 4; k++) x[rng() % n] = specials[rng() % (sizeof specials / sizeof *specials)];
        if (trial % 5 == 2) x[rng() % n] = 127.0f, x[rng() % n] = 63.5f, x[rng() % n] = -0.5f;
        std::vector<int8_t> q(n), qref(n);
        std::vector<uint8_t> s(n + 1), sref(n + 1);
        float scale_ref = 0;
        auto a = llm::quantize_act(x.data(), n, group, q.data(), s.data());
        quantize_by_definition(x.data(), n, group, qref.data(), sref.data(), &scale_ref);
        INFO("n " << n << " group " << group << " trial " << trial);
        REQUIRE(std::memcmp(&a.scale, &scale_ref, 4) == 0);
        REQUIRE(q == qref);
        REQUIRE(s == sref);
        cases++;
      }
    }
  }
  CHECK(cases == 640);
}

// The rounding itself (quantize_act rounds on the bits, to_int8), value by
// value: a vector whose largest value is 127 and that is one group has the
// multiplier m = 127 / 127 * 2^0 = 1, so each value is rounded as it is.
// Checked: every 997th float pattern from 0 to 127 and, all of them, the 9
// floats on either side of every integer and every half-integer (where
// round-half-away and the float add's rounding can differ), both signs.
TEST_CASE("quantize_act rounds every value on the rounding edges as its float definition", "[matvec][int8]") {
  std::vector<float> values;
  for (uint32_t b = 0; b <= 0x42fe0000u; b += 997) values.push_back(std::bit_cast<float>(b));
  for (int h = 0; h <= 254; h++) {
    uint32_t b = std::bit_cast<uint32_t>(0.5f * float(h));
    for (int d = -9; d <= 9; d++)
      if (int64_t(b) + d >= 0) values.push_back(std::bit_cast<float>(uint32_t(int64_t(b) + d)));
  }
  const uint32_t n = 1024;
  size_t checked = 0;
  for (size_t at = 0; at < values.size(); at += n - 1) {
    std::vector<float> x(n, 0.0f);
    x[0] = 127.0f;   // the vector's max: m = 1
    for (uint32_t c = 1; c < n && at + c - 1 < values.size(); c++) {
      float v = values[at + c - 1];
      x[c] = std::fabs(v) <= 127.0f ? ((at + c) % 2 ? -v : v) : 0.0f;
    }
    std::vector<int8_t> q(n), qref(n);
    std::vector<uint8_t> s(2), sref(2);
    float scale_ref = 0;
    llm::quantize_act(x.data(), n, 0, q.data(), s.data());
    quantize_by_definition(x.data(), n, 0, qref.data(), sref.data(), &scale_ref);
    REQUIRE(s[0] == 0);   // one group at gain 2^0: m really is 1
    auto diff = std::mismatch(q.begin(), q.end(), qref.begin());
    if (diff.first != q.end()) {
      size_t c = size_t(diff.first - q.begin());
      INFO("x = " << x[c] << " (bits 0x" << std::hex << std::bit_cast<uint32_t>(x[c]) << ")");
      REQUIRE(int(q[c]) == int(qref[c]));
    }
    checked += n;
  }
  CHECK(checked > 1'000'000);
}
