// Row jobs (lib/llm_rows.h): products fused into one job and cut into parts
// give the same bits as each product computed alone over all its rows.
//
// What it compares with: the reference is the plain definition, one
// ops.matmul (or argmax_batch) call per matrix over rows [0, rows), then the
// SwiGLU step written out here; never run_products itself. The parts run on a
// fake Parallel that calls them one after another in a shuffled order, so a
// part that depended on another part's rows, or wrote outside its own, would
// show. Every matmul call is recorded too: each row of each matrix must be
// computed by exactly one call, starting at a multiple of 4 (the kernels'
// row blocks), and each fused list must be one hand-off.
//
// How it can fail: cut the concatenation one block short (or let two parts
// share a block) and a row is missing or computed twice; drop the SwiGLU
// step or run it on other rows and the gate bits differ; take part 0's
// winner of the classifier when part 0 had no rows and the argmax is stale.
#include <catch2/catch.hpp>

#include <string.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "llm_math.h"
#include "llm_rows.h"

namespace {

// A q8 matrix with random weights and row scales, owning its bytes.
struct QMatrix {
  std::vector<uint8_t> scales;
  std::vector<int8_t> q;
  llm::Matrix m;
  QMatrix(std::mt19937& rng, uint32_t rows, uint32_t cols) : scales(4 * size_t(rows)), q(size_t(rows) * cols) {
    std::uniform_real_distribution<float> S(0.001f, 0.02f);
    for (uint32_t r = 0; r < rows; r++) {
      float s = S(rng);
      memcpy(scales.data() + 4 * size_t(r), &s, 4);
    }
    for (auto& v : q) v = int8_t(int(rng() % 255) - 127);
    m.scales = scales.data();
    m.q = q.data();
    m.rows = rows;
    m.cols = cols;
  }
};

// n input vectors of `cols` values, prepared for ops the way the Batch does:
// the floats themselves, or int8-quantised and packed for the fast kernels.
struct Inputs {
  std::vector<float> x;
  std::vector<int8_t> q;
  std::vector<uint8_t> shift;
  std::vector<int64_t> pair;
  std::vector<uint64_t> cross;
  std::vector<llm::ActVec> a;
  Inputs(std::mt19937& rng, const llm::MatvecOps& ops, uint32_t n, uint32_t cols)
      : x(size_t(n) * cols), q(size_t(n) * cols), shift(size_t(n) * cols), pair(size_t(n / 2 + 1) * llm::int8_pack_stride(cols)),
        cross(cols / 2 + 8), a(n) {
    std::normal_distribution<float> N(0, 1);
    for (auto& v : x) v = N(rng);
    for (uint32_t i = 0; i < n; i++) {
      const float* xi = x.data() + size_t(i) * cols;
      if (ops.kind == llm::MatvecKind::Int8) {
        a[i] = llm::quantize_act(xi, cols, 32, q.data() + size_t(i) * cols, shift.data() + size_t(i) * cols);
      } else {
        a[i].x = xi;
        a[i].n = cols;
      }
    }
    if (ops.kind == llm::MatvecKind::Int8) llm::pack_int8_batch(a.data(), n, pair.data(), llm::int8_pack_stride(cols), cross.data());
  }
};

// What the recording kernels and the fake runner saw.
struct Call {
  const llm::Matrix* w;
  uint32_t r0, r1, part;
};
struct Log {
  const llm::MatvecOps* real = nullptr;
  uint32_t part = 0;           // the part running now
  std::vector<Call> calls;     // every matmul / argmax_batch call
  std::vector<uint64_t> jobs;  // every Parallel::run: its macs
  std::vector<uint32_t> job_parts;
};
Log g_log;   // the kernels are plain function pointers: no context argument

void recording_matmul(const llm::Matrix& w, const llm::ActVec* x, uint32_t n, float* y, size_t stride, uint32_t r0,
                      uint32_t r1) {
  g_log.calls.push_back({&w, r0, r1, g_log.part});
  g_log.real->matmul(w, x, n, y, stride, r0, r1);
}
void recording_argmax(const llm::Matrix& w, const llm::ActVec* x, uint32_t n, llm::ArgMax* best, uint32_t r0,
                      uint32_t r1) {
  g_log.calls.push_back({&w, r0, r1, g_log.part});
  g_log.real->argmax_batch(w, x, n, best, r0, r1);
}

llm::MatvecOps recording(const llm::MatvecOps& real) {
  llm::MatvecOps ops = real;
  ops.matmul = recording_matmul;
  ops.argmax_batch = recording_argmax;
  g_log = Log{};
  g_log.real = &real;
  return ops;
}

// A Parallel that runs the parts one at a time in a shuffled order.
void run_shuffled(void* ctx, uint32_t parts, void (*fn)(void*, uint32_t), void* arg, uint64_t macs) {
  auto* rng = static_cast<std::mt19937*>(ctx);
  std::vector<uint32_t> order(parts);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), *rng);
  g_log.jobs.push_back(macs);
  g_log.job_parts.push_back(parts);
  for (uint32_t p : order) {
    g_log.part = p;
    fn(arg, p);
  }
  g_log.part = 0;
}

const float kUnwritten = -12345.5f;   // fills every output before a job

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Each row of w computed by exactly one recorded call, every call starting
// at a multiple of 4 (and ending at one, or at the last row).
void check_rows_once(const llm::Matrix& w) {
  std::vector<uint32_t> times(w.rows, 0);
  for (const Call& c : g_log.calls) {
    if (c.w != &w) continue;
    CHECK(c.r0 % 4 == 0);
    CHECK((c.r1 % 4 == 0 || c.r1 == w.rows));
    CHECK(c.r0 < c.r1);
    for (uint32_t r = c.r0; r < c.r1 && r < w.rows; r++) times[r]++;
  }
  for (uint32_t r = 0; r < w.rows; r++) {
    INFO("row " << r << " of a " << w.rows << "-row matrix");
    REQUIRE(times[r] == 1);
  }
}

const llm::MatvecOps* const kOps[] = {&llm::kMatvecFloat, &llm::kMatvecInt8};

}  // namespace

TEST_CASE("products fused into one job give the bits of each product alone, for 1..4 parts", "[rows]") {
  std::mt19937 rng(41);
  const uint32_t cols = 64;
  // Row counts with partial 4-row blocks, and a matrix smaller than a block.
  const uint32_t rows[] = {13, 8, 3, 21};
  std::vector<QMatrix> ws;
  for (uint32_t r : rows) ws.emplace_back(rng, r, cols);
  for (const llm::MatvecOps* real : kOps)
  for (uint32_t n : {1u, 2u, 3u, 8u, 9u}) {
    Inputs in(rng, *real, n, cols);
    // Reference: every product alone, one call over all its rows. Each
    // output has 3 floats of padding per item that nobody may write.
    std::vector<std::vector<float>> want(4);
    for (uint32_t k = 0; k < 4; k++) {
      size_t stride = rows[k] + 3;
      want[k].assign(stride * n, kUnwritten);
      real->matmul(ws[k].m, in.a.data(), n, want[k].data(), stride, 0, rows[k]);
    }
    for (uint32_t parts : {1u, 2u, 3u, 4u}) {
      INFO(real->name << " items " << n << " parts " << parts);
      llm::MatvecOps ops = recording(*real);
      llm::Parallel par{parts, &rng, run_shuffled};
      std::vector<std::vector<float>> got(4);
      llm::Product list[4];
      uint64_t macs = 0;
      for (uint32_t k = 0; k < 4; k++) {
        got[k].assign((rows[k] + 3) * n, kUnwritten);
        list[k] = {&ws[k].m, got[k].data(), rows[k] + 3};
        macs += uint64_t(rows[k]) * cols * n;
      }
      llm::run_products(ops, &par, list, 4, in.a.data(), n);
      for (uint32_t k = 0; k < 4; k++) REQUIRE(same_bits(got[k], want[k]));
      for (uint32_t k = 0; k < 4; k++) check_rows_once(ws[k].m);
      // One hand-off for all four products (none when there is one part).
      if (parts == 1) {
        CHECK(g_log.jobs.empty());
      } else {
        REQUIRE(g_log.jobs.size() == 1);
        CHECK(g_log.job_parts[0] == parts);
        CHECK(g_log.jobs[0] == macs);
      }
      // The parts share the 13 blocks (4 + 2 + 1 + 6) evenly, and a part
      // calls the kernel at most once per matrix.
      const uint32_t total = 13;
      std::vector<uint32_t> blocks(parts, 0);
      for (const Call& c : g_log.calls) blocks[c.part] += (c.r1 - c.r0 + 3) / 4;
      for (uint32_t p = 0; p < parts; p++) CHECK((blocks[p] == total / parts || blocks[p] == (total + parts - 1) / parts));
      for (uint32_t p = 0; p < parts; p++)
        for (uint32_t k = 0; k < 4; k++)
          CHECK(std::count_if(g_log.calls.begin(), g_log.calls.end(),
                              [&](const Call& c) { return c.part == p && c.w == &ws[k].m; }) <= 1);
    }
  }
}

TEST_CASE("gate and up in one job, with the SwiGLU step in the parts, give the bits of three steps", "[rows]") {
  std::mt19937 rng(42);
  const uint32_t cols = 64;
  for (uint32_t hidden : {40u, 22u, 3u}) {
    QMatrix gate(rng, hidden, cols), up(rng, hidden, cols);
    for (const llm::MatvecOps* real : kOps)
    for (uint32_t n : {1u, 3u, 8u}) {
      Inputs in(rng, *real, n, cols);
      size_t stride = hidden + 5;
      // Reference: gate, then up, then gate = silu(gate) * up over all rows.
      std::vector<float> want_g(stride * n, kUnwritten), want_u(stride * n, kUnwritten);
      real->matmul(gate.m, in.a.data(), n, want_g.data(), stride, 0, hidden);
      real->matmul(up.m, in.a.data(), n, want_u.data(), stride, 0, hidden);
      for (uint32_t i = 0; i < n; i++)
        for (uint32_t r = 0; r < hidden; r++) want_g[i * stride + r] = llm::silu_f(want_g[i * stride + r]) * want_u[i * stride + r];
      for (uint32_t parts : {1u, 2u, 3u, 4u}) {
        INFO(real->name << " hidden " << hidden << " items " << n << " parts " << parts);
        llm::MatvecOps ops = recording(*real);
        llm::Parallel par{parts, &rng, run_shuffled};
        std::vector<float> g(stride * n, kUnwritten), u(stride * n, kUnwritten);
        llm::run_swiglu(ops, &par, {&gate.m, g.data(), stride}, {&up.m, u.data(), stride}, in.a.data(), n);
        REQUIRE(same_bits(u, want_u));
        REQUIRE(same_bits(g, want_g));
        check_rows_once(gate.m);
        check_rows_once(up.m);
        CHECK(g_log.jobs.size() == (parts == 1 ? 0u : 1u));
        // The epilogue needs both products' rows r0..r1 in the same part.
        for (const Call& c : g_log.calls)
          if (c.w == &gate.m)
            CHECK(std::count_if(g_log.calls.begin(), g_log.calls.end(), [&](const Call& d) {
                    return d.w == &up.m && d.part == c.part && d.r0 == c.r0 && d.r1 == c.r1;
                  }) == 1);
      }
    }
  }
}

TEST_CASE("the classifier's argmax over parts equals one scan, also when a part has no rows", "[rows]") {
  std::mt19937 rng(43);
  const uint32_t cols = 64;
  for (uint32_t vocab : {50u, 5u, 3u}) {
    QMatrix w(rng, vocab, cols);
    for (const llm::MatvecOps* real : kOps)
    for (uint32_t n : {1u, 4u}) {
      Inputs in(rng, *real, n, cols);
      std::vector<llm::ArgMax> want(n);
      real->argmax_batch(w.m, in.a.data(), n, want.data(), 0, vocab);
      for (uint32_t parts : {1u, 2u, 3u, 4u, 16u}) {
        INFO(real->name << " vocab " << vocab << " items " << n << " parts " << parts);
        llm::MatvecOps ops = recording(*real);
        llm::Parallel par{parts, &rng, run_shuffled};
        // Scratch a part with no rows leaves as it is: a winner that beats all.
        std::vector<llm::ArgMax> scratch(llm::kMaxParts * n, llm::ArgMax{vocab + 7, INFINITY});
        std::vector<llm::ArgMax> got(n);
        llm::run_argmax(ops, &par, w.m, in.a.data(), n, scratch.data(), got.data());
        check_rows_once(w.m);
        for (uint32_t i = 0; i < n; i++) {
          CHECK(got[i].index == want[i].index);
          CHECK(memcmp(&got[i].value, &want[i].value, 4) == 0);
        }
      }
    }
  }
}
