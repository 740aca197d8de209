// The paged KV cache (llm::KvPool, Session::set_kv_pages, resume_at): a
// session whose K/V rows live in scattered blocks of a shared pool gives
// bit-identical logits and tokens to one with its own contiguous cache, for
// every block size; a session that reuses another's prefix blocks and starts
// after them (prefix caching) gives the same logits as computing it all; and
// a position without a block is refused, never written.
#include <catch2/catch.hpp>

#include <string.h>

#include <algorithm>
#include <random>
#include <vector>

#include "llm_test_util.h"
#include "test_skip.h"

using namespace testutil;

namespace {

struct Loaded {
  Files files;
  llm::Model model;
};

// True when the bundle loaded, false when it is absent; a bundle that is
// there but does not load fails the test (see load_bundle_dir).
bool load(const std::string& name, Loaded* out) {
  std::string error;
  BundleState st = load_bundle_dir(models_dir() + "/" + name, &out->files, &out->model, &error);
  if (st == BundleState::Refused) FAIL(error);
  return st == BundleState::Loaded;
}

struct Aligned {
  std::vector<uint8_t> bytes;
  void* get(size_t n) {
    bytes.assign(n + 64, 0);
    return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(bytes.data()) + 63) & ~uintptr_t(63));
  }
};

struct Pool {
  Aligned kmem, vmem;
  llm::KvPool pool;
  Pool(const llm::Config& c, uint32_t block_size, uint32_t n_blocks) {
    size_t half = llm::KvPool::bytes_per_block(c, block_size) / 2 * n_blocks;
    pool.k = static_cast<float*>(kmem.get(half));
    pool.v = static_cast<float*>(vmem.get(half));
    pool.block_size = block_size;
    pool.n_blocks = n_blocks;
  }
};

struct Sess {
  llm::Session s;
  Aligned mem;
  Sess(const llm::Model& m, llm::SessionOptions opt) {
    size_t n = llm::Session::bytes_needed(m.config(), opt.paged_kv);
    REQUIRE(!s.init(m, mem.get(n), n, opt).is_error());
  }
};

// Feeds seq; per position the logits (all of them) and the greedy token.
std::vector<float> run(llm::Session& s, const std::vector<uint32_t>& seq, uint32_t vocab) {
  std::vector<float> all;
  std::vector<float> lg(vocab);
  for (uint32_t t : seq) {
    REQUIRE(!s.feed(t).is_error());
    s.logits(lg.data());
    all.insert(all.end(), lg.begin(), lg.end());
    all.push_back(float(s.argmax()));
  }
  return all;
}

const char* const kModels[] = {"tiny-llama", "tiny-llama-f32", "tiny-qwen", "tiny-qwen-f32", "stories260K",
                               "stories260K-q8"};

}  // namespace

TEST_CASE("a paged session equals a contiguous one, for every block size", "[paged]") {
  for (const char* name : kModels) {
    Loaded m;
    if (!load(name, &m)) {
      if (std::string(name).rfind("tiny", 0) == 0) FAIL("missing " << name << ": run `make test-models`");
      continue;   // stories260K needs the real-model directory (reported by the batch tests)
    }
    const llm::Config& c = m.model.config();
    std::mt19937 rng(7);
    std::vector<uint32_t> seq(std::min<uint32_t>(40, c.runtime_seq_len));
    for (auto& t : seq) t = rng() % c.vocab_size;
    for (llm::MatvecKind kind : {llm::MatvecKind::Float, llm::MatvecKind::Int8}) {
      llm::SessionOptions flat{kind, 32, false}, paged{kind, 32, true};
      Sess ref(m.model, flat);
      std::vector<float> want = run(ref.s, seq, c.vocab_size);
      for (uint32_t bs : {1u, 3u, 16u, 64u}) {
        INFO(name << " block size " << bs);
        uint32_t need = (uint32_t(seq.size()) + bs - 1) / bs;
        Pool pool(c, bs, need + 5);
        // Scattered and reversed block ids: nothing depends on adjacency.
        std::vector<uint32_t> table(need);
        for (uint32_t i = 0; i < need; i++) table[i] = (need + 4 - i) % (need + 5);
        Sess p(m.model, paged);
        p.s.set_kv_pages(&pool.pool, table.data(), need);
        std::vector<float> got = run(p.s, seq, c.vocab_size);
        REQUIRE(got.size() == want.size());
        REQUIRE(memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("a reused prefix gives the same logits as computing it", "[paged]") {
  Loaded m;
  if (!load("tiny-llama", &m)) FAIL("missing tiny-llama: run `make test-models`");
  const llm::Config& c = m.model.config();
  const uint32_t bs = 8;
  std::vector<uint32_t> prefix(24), tail_a = {5, 9, 11, 2}, tail_b = {7, 7, 1};
  for (uint32_t i = 0; i < prefix.size(); i++) prefix[i] = (i * 13 + 3) % c.vocab_size;
  llm::SessionOptions paged{llm::MatvecKind::Int8, 32, true};
  Pool pool(c, bs, 16);

  // A computes prefix + tail_a in blocks 0..3.
  std::vector<uint32_t> table_a = {0, 1, 2, 3};
  Sess a(m.model, paged);
  a.s.set_kv_pages(&pool.pool, table_a.data(), 4);
  std::vector<uint32_t> seq_a = prefix;
  seq_a.insert(seq_a.end(), tail_a.begin(), tail_a.end());
  run(a.s, seq_a, c.vocab_size);

  // B shares A's three full prefix blocks (positions 0..23) and starts at 24.
  std::vector<uint32_t> table_b = {0, 1, 2, 9};
  Sess b(m.model, paged);
  b.s.set_kv_pages(&pool.pool, table_b.data(), 4);
  REQUIRE(!b.s.resume_at(24).is_error());
  std::vector<float> got = run(b.s, tail_b, c.vocab_size);

  // The same request computed from scratch in its own blocks.
  std::vector<uint32_t> table_c = {10, 11, 12, 13};
  Sess fresh(m.model, paged);
  fresh.s.set_kv_pages(&pool.pool, table_c.data(), 4);
  std::vector<uint32_t> seq_b = prefix;
  seq_b.insert(seq_b.end(), tail_b.begin(), tail_b.end());
  std::vector<float> all = run(fresh.s, seq_b, c.vocab_size);
  std::vector<float> want(all.end() - got.size(), all.end());
  REQUIRE(memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
}

TEST_CASE("a position without a block is refused; hybrid models refuse prefix reuse", "[paged]") {
  Loaded m;
  if (!load("tiny-llama", &m)) FAIL("missing tiny-llama: run `make test-models`");
  const llm::Config& c = m.model.config();
  Pool pool(c, 4, 2);
  std::vector<uint32_t> table = {1};
  Sess s(m.model, {llm::MatvecKind::Float, 32, true});
  s.s.set_kv_pages(&pool.pool, table.data(), 1);
  for (uint32_t i = 0; i < 4; i++) REQUIRE(!s.s.feed(1).is_error());
  auto r = s.s.feed(1);   // position 4: the table maps only 0..3
  REQUIRE(r.is_error());
  CHECK(r.error().code == llm::ErrorCode::RequestTooLong);
  CHECK(s.s.position() == 4);

  Loaded q;
  if (!load("tiny-qwen", &q)) FAIL("missing tiny-qwen: run `make test-models`");
  Pool qpool(q.model.config(), 4, 4);
  std::vector<uint32_t> qtable = {0, 1};
  Sess hybrid(q.model, {llm::MatvecKind::Float, 32, true});
  hybrid.s.set_kv_pages(&qpool.pool, qtable.data(), 2);
  auto h = hybrid.s.resume_at(4);
  REQUIRE(h.is_error());
  CHECK(std::string(h.error().message).find("linear-attention") != std::string::npos);
}
