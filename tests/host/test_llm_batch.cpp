// The batched forward pass (lib/llm_batch.h) against one token at a time:
// the residual stream after every layer, the final hidden vector, the logits
// and the greedy tokens must be bit-identical (memcmp, not a tolerance) for
// prompts split into chunks of every size 1..16, and for batches of 1..16
// items mixing several sessions at different positions. On every test model
// (tiny llama and qwen, q8 and f32, stories260K when exported), with float
// and int8 activations. Also: the Batch's request checks, Parallel row
// ranges on std::threads (and on a runner that runs the parts in a shuffled
// order) giving the same bits as one thread, and how many jobs a layer
// hands to the row team.
#include <catch2/catch.hpp>

#include <string.h>

#include <algorithm>
#include <memory>
#include <random>
#include <thread>

#include "llm_test_util.h"
#include "test_skip.h"

using namespace testutil;

namespace {

const char* const kModels[] = {"tiny-llama", "tiny-llama-f32", "tiny-qwen", "tiny-qwen-f32", "stories260K",
                               "stories260K-q8"};

// Records the observer's vectors by (position, layer).
struct Trace {
  uint32_t n_layers = 0, dim = 0;
  std::vector<float> data;  // [pos][n_layers + 1][dim]
  std::vector<uint8_t> seen;
  static void on_layer(void* ctx, uint32_t pos, uint32_t layer, const float* x, uint32_t dim) {
    auto* t = static_cast<Trace*>(ctx);
    size_t at = size_t(pos) * (t->n_layers + 1) + layer;
    if (t->seen.size() <= at) {
      t->seen.resize(at + 1);
      t->data.resize((at + 1) * dim);
    }
    memcpy(t->data.data() + at * dim, x, dim * sizeof(float));
    t->seen[at] = 1;
  }
};

struct Mem {
  std::vector<uint8_t> bytes;
  void* get(size_t n) {
    bytes.assign(n + 64, 0);
    return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(bytes.data()) + 63) & ~uintptr_t(63));
  }
};

struct Sess {
  llm::Session s;
  Mem mem;
  Trace trace;
  Sess(const llm::Model& m, llm::SessionOptions opt) {
    size_t n = llm::Session::bytes_needed(m.config());
    REQUIRE(!s.init(m, mem.get(n), n, opt).is_error());
    trace.n_layers = m.config().n_layers;
    trace.dim = m.config().dim;
    s.set_observer(Trace::on_layer, &trace);
  }
};

// One token at a time: per position the trace, logits and greedy token.
struct Reference {
  Trace trace;
  std::vector<std::vector<float>> logits;
  std::vector<uint32_t> next;
};

Reference reference(const llm::Model& m, llm::SessionOptions opt, const std::vector<uint32_t>& seq) {
  Sess one(m, opt);
  Reference r;
  for (uint32_t t : seq) {
    REQUIRE(!one.s.feed(t).is_error());
    std::vector<float> lg(m.config().vocab_size);
    one.s.logits(lg.data());
    r.logits.push_back(lg);
    r.next.push_back(one.s.argmax());
  }
  r.trace = one.trace;
  return r;
}

bool same_bits(const void* a, const void* b, size_t bytes) { return memcmp(a, b, bytes) == 0; }

std::vector<uint32_t> random_tokens(std::mt19937& rng, uint32_t n, uint32_t vocab) {
  std::vector<uint32_t> v(n);
  for (auto& t : v) t = rng() % vocab;
  return v;
}

struct Loaded {
  Files files;
  llm::Model model;
  bool ok = false;
};

// True when the bundle loaded; false when it is absent (stories260K needs
// ../shared/models). The tiny models come from `make test-models` and must be
// there; any bundle that is there must load.
bool load(const std::string& name, Loaded* out) {
  std::string error;
  BundleState st = load_bundle_dir(models_dir() + "/" + name, &out->files, &out->model, &error);
  if (st == BundleState::Refused) FAIL(error);
  if (st == BundleState::Absent && name.rfind("tiny", 0) == 0) FAIL("missing " << name << ": run `make test-models`");
  out->ok = st == BundleState::Loaded;
  return out->ok;
}

struct BatchMem {
  llm::Batch b;
  Mem mem;
  BatchMem(const llm::Model& m, uint32_t max_items, llm::SessionOptions opt) {
    size_t n = llm::Batch::bytes_needed(m.config(), max_items);
    REQUIRE(!b.init(m, mem.get(n), n, max_items, opt).is_error());
  }
};

const llm::SessionOptions kOptions[] = {{llm::MatvecKind::Float, 32}, {llm::MatvecKind::Int8, 32},
                                        {llm::MatvecKind::Int8, 0}};

// Every position of `got` the reference has, bit for bit.
void check_trace(const Trace& got, const Trace& want, uint32_t positions) {
  size_t per = size_t(want.n_layers + 1);
  REQUIRE(got.seen.size() >= positions * per);
  for (size_t i = 0; i < positions * per; i++) REQUIRE(got.seen[i]);
  REQUIRE(same_bits(got.data.data(), want.data.data(), positions * per * want.dim * sizeof(float)));
}

// A parallel hook on std::thread: parts run at once, in any order.
void run_threads(void* ctx, uint32_t parts, void (*fn)(void*, uint32_t), void* arg, uint64_t macs) {
  (void)ctx;
  (void)macs;
  std::vector<std::thread> ts;
  for (uint32_t p = 0; p < parts; p++) ts.emplace_back(fn, arg, p);
  for (auto& t : ts) t.join();
}

// A parallel hook that runs the parts one after another in a shuffled
// order, and records each job's size (its multiply-adds).
struct ShuffledRunner {
  std::mt19937 rng{7};
  std::vector<uint64_t> jobs;
  static void run(void* ctx, uint32_t parts, void (*fn)(void*, uint32_t), void* arg, uint64_t macs) {
    auto* r = static_cast<ShuffledRunner*>(ctx);
    r->jobs.push_back(macs);
    std::vector<uint32_t> order(parts);
    for (uint32_t p = 0; p < parts; p++) order[p] = p;
    std::shuffle(order.begin(), order.end(), r->rng);
    for (uint32_t p : order) fn(arg, p);
  }
};

uint64_t macs_of(const llm::Matrix& w) { return uint64_t(w.rows) * w.cols; }

}  // namespace

TEST_CASE("batched prefill in chunks of every size is bit-identical to one token at a time", "[batch]") {
  uint32_t tested = 0;
  for (const char* name : kModels) {
    Loaded m;
    if (!load(name, &m)) continue;
    tested++;
    const llm::Config& c = m.model.config();
    std::mt19937 rng(5);
    uint32_t len = std::min<uint32_t>(c.runtime_seq_len, 40);
    std::vector<uint32_t> seq = random_tokens(rng, len, c.vocab_size);
    for (const auto& opt : kOptions) {
      INFO(name << " matvec " << int(opt.matvec) << " group " << opt.int8_group);
      Reference ref = reference(m.model, opt, seq);
      BatchMem bm(m.model, 16, opt);
      for (uint32_t chunk = 1; chunk <= 16; chunk++) {
        INFO("chunk " << chunk);
        Sess s(m.model, opt);
        std::vector<float> lg(c.vocab_size);
        for (uint32_t i0 = 0; i0 < len; i0 += chunk) {
          uint32_t n = std::min(chunk, len - i0);
          std::vector<llm::BatchItem> items;
          for (uint32_t i = 0; i < n; i++) items.push_back({&s.s, seq[i0 + i], llm::Phase::Prefill, true, 0});
          REQUIRE(!bm.b.forward(items.data(), n).is_error());
          for (uint32_t i = 0; i < n; i++) REQUIRE(items[i].next == ref.next[i0 + i]);
          REQUIRE(s.s.position() == i0 + n);
          s.s.logits(lg.data());
          REQUIRE(same_bits(lg.data(), ref.logits[i0 + n - 1].data(), lg.size() * 4));
          REQUIRE(s.s.argmax() == ref.next[i0 + n - 1]);
        }
        check_trace(s.trace, ref.trace, len);
      }
      // Session::prefill (chunks of kPrefillChunk) then step, as llmrun runs it.
      Sess p(m.model, opt);
      uint32_t n_prompt = len / 2 + 3;
      auto first = p.s.prefill(seq.data(), n_prompt);
      REQUIRE(!first.is_error());
      CHECK(first.value() == ref.next[n_prompt - 1]);
      for (uint32_t i = n_prompt; i < len; i++) {
        auto nx = p.s.step(seq[i]);
        REQUIRE(!nx.is_error());
        REQUIRE(nx.value() == ref.next[i]);
      }
      check_trace(p.trace, ref.trace, len);
    }
  }
  if (tested == 0) KAI_SKIP("no test models in " << models_dir() << " (make test-models)");
}

TEST_CASE("batches of 1..16 items mixing sessions at different positions are bit-identical", "[batch]") {
  uint32_t tested = 0;
  for (const char* name : kModels) {
    Loaded m;
    if (!load(name, &m)) continue;
    tested++;
    const llm::Config& c = m.model.config();
    for (const auto& opt : kOptions) {
      INFO(name << " matvec " << int(opt.matvec) << " group " << opt.int8_group);
      std::mt19937 rng(17);
      constexpr uint32_t kSessions = 6;
      uint32_t len = std::min<uint32_t>(c.runtime_seq_len, 24);
      std::vector<std::vector<uint32_t>> seqs;
      std::vector<Reference> refs;
      for (uint32_t k = 0; k < kSessions; k++) {
        seqs.push_back(random_tokens(rng, len, c.vocab_size));
        refs.push_back(reference(m.model, opt, seqs.back()));
      }
      BatchMem bm(m.model, 16, opt);
      for (uint32_t max_batch = 1; max_batch <= 16; max_batch++) {
        INFO("batch " << max_batch);
        std::vector<std::unique_ptr<Sess>> ss;
        for (uint32_t k = 0; k < kSessions; k++) ss.emplace_back(new Sess(m.model, opt));
        // Random schedules: each pass takes sessions in a random order, a
        // random chunk of each (a prompt chunk or a single decode token).
        uint32_t passes = 0;
        for (;;) {
          std::vector<llm::BatchItem> items;
          std::vector<uint32_t> order(kSessions);
          for (uint32_t k = 0; k < kSessions; k++) order[k] = k;
          std::shuffle(order.begin(), order.end(), rng);
          for (uint32_t k : order) {
            uint32_t at = ss[k]->s.position(), left = len - at;
            uint32_t room = max_batch - uint32_t(items.size());
            if (left == 0 || room == 0) continue;
            uint32_t take = std::min<uint32_t>({left, room, uint32_t(1 + rng() % 5)});
            for (uint32_t i = 0; i < take; i++)
              items.push_back({&ss[k]->s, seqs[k][at + i], i + 1 == take ? llm::Phase::Decode : llm::Phase::Prefill,
                               (rng() % 3) != 0, 0});
          }
          if (items.empty()) break;
          std::vector<uint32_t> pos(items.size());
          for (size_t i = 0; i < items.size(); i++)
            pos[i] = i > 0 && items[i - 1].session == items[i].session ? pos[i - 1] + 1 : items[i].session->position();
          REQUIRE(!bm.b.forward(items.data(), uint32_t(items.size())).is_error());
          passes++;
          for (size_t i = 0; i < items.size(); i++) {
            uint32_t k = 0;
            while (&ss[k]->s != items[i].session) k++;
            if (items[i].want_next) REQUIRE(items[i].next == refs[k].next[pos[i]]);
          }
        }
        std::vector<float> lg(c.vocab_size);
        for (uint32_t k = 0; k < kSessions; k++) {
          check_trace(ss[k]->trace, refs[k].trace, len);
          ss[k]->s.logits(lg.data());
          REQUIRE(same_bits(lg.data(), refs[k].logits[len - 1].data(), lg.size() * 4));
        }
        CHECK(passes >= (len * kSessions + max_batch - 1) / max_batch);
      }
    }
  }
  if (tested == 0) KAI_SKIP("no test models in " << models_dir() << " (make test-models)");
}

TEST_CASE("Parallel row ranges on threads give the same bits as one thread", "[batch][parallel]") {
  uint32_t tested = 0;
  for (const char* name : kModels) {
    Loaded m;
    if (!load(name, &m)) continue;
    tested++;
    const llm::Config& c = m.model.config();
    std::mt19937 rng(23);
    uint32_t len = std::min<uint32_t>(c.runtime_seq_len, 20);
    std::vector<uint32_t> seq = random_tokens(rng, len, c.vocab_size);
    for (const auto& opt : kOptions) {
      Reference ref = reference(m.model, opt, seq);
      // Observed sessions run the per-item and per-head float work in item
      // order on one thread (the observer sees the items in order); without
      // an observer it is split over the parts too, and only the tokens and
      // logits can be compared.
      for (bool observed : {true, false})
      for (uint32_t parts : {2u, 3u, 5u, 16u, 40u}) {
        INFO(name << " matvec " << int(opt.matvec) << " parts " << parts << " observed " << observed);
        llm::Parallel par;
        par.parts = parts;
        par.run = run_threads;
        Sess s(m.model, opt);
        if (!observed) s.s.set_observer(nullptr, nullptr);
        s.s.set_parallel(&par);
        auto first = s.s.prefill(seq.data(), len - 4);
        REQUIRE(!first.is_error());
        CHECK(first.value() == ref.next[len - 5]);
        for (uint32_t i = len - 4; i < len; i++) {
          auto nx = s.s.step(seq[i]);
          REQUIRE(!nx.is_error());
          REQUIRE(nx.value() == ref.next[i]);
        }
        if (observed) check_trace(s.trace, ref.trace, len);
        std::vector<float> lg(c.vocab_size);
        s.s.logits(lg.data());
        REQUIRE(same_bits(lg.data(), ref.logits[len - 1].data(), lg.size() * 4));
      }
    }
  }
  if (tested == 0) KAI_SKIP("no test models in " << models_dir() << " (make test-models)");
}

// Fused products (q|k|v, DeltaNet's four input products, gate|up) with
// their rows cut into 1..4 parts, run in a shuffled order, against one token
// at a time on one thread: every layer's residual stream, the logits and the
// tokens, bit for bit. The items are a prompt chunk of one session, then a
// batch of decode steps of three sessions at different positions.
TEST_CASE("fused products on parts run in a shuffled order give the same bits as one thread", "[batch][parallel]") {
  uint32_t tested = 0;
  for (const char* name : kModels) {
    Loaded m;
    if (!load(name, &m)) continue;
    tested++;
    const llm::Config& c = m.model.config();
    std::mt19937 rng(29);
    const uint32_t kSessions = 3;
    uint32_t len = std::min<uint32_t>(c.runtime_seq_len, 12);
    std::vector<std::vector<uint32_t>> seqs;
    for (uint32_t k = 0; k < kSessions; k++) seqs.push_back(random_tokens(rng, len, c.vocab_size));
    for (const auto& opt : kOptions) {
      std::vector<Reference> refs;
      for (uint32_t k = 0; k < kSessions; k++) refs.push_back(reference(m.model, opt, seqs[k]));
      for (uint32_t parts : {1u, 2u, 3u, 4u}) {
        INFO(name << " matvec " << int(opt.matvec) << " group " << opt.int8_group << " parts " << parts);
        ShuffledRunner runner;
        llm::Parallel par{parts, &runner, ShuffledRunner::run};
        BatchMem bm(m.model, 8, opt);
        bm.b.set_parallel(&par);
        std::vector<std::unique_ptr<Sess>> ss;
        for (uint32_t k = 0; k < kSessions; k++) ss.push_back(std::make_unique<Sess>(m.model, opt));
        // Session k's prompt: its first k + 2 tokens in one chunk.
        for (uint32_t k = 0; k < kSessions; k++) {
          std::vector<llm::BatchItem> items;
          for (uint32_t t = 0; t < k + 2; t++) items.push_back({&ss[k]->s, seqs[k][t], llm::Phase::Prefill, false, 0});
          items.back().want_next = true;
          REQUIRE(!bm.b.forward(items.data(), uint32_t(items.size())).is_error());
          REQUIRE(items.back().next == refs[k].next[k + 1]);
        }
        // Then the rest, one token of every session per pass.
        for (uint32_t t = 2; t < len; t++) {
          std::vector<llm::BatchItem> items;
          for (uint32_t k = 0; k < kSessions; k++)
            if (t >= k + 2) items.push_back({&ss[k]->s, seqs[k][t], llm::Phase::Decode, true, 0});
          REQUIRE(!bm.b.forward(items.data(), uint32_t(items.size())).is_error());
          for (const auto& it : items) {
            uint32_t k = 0;
            while (&ss[k]->s != it.session) k++;
            REQUIRE(it.next == refs[k].next[t]);
          }
        }
        std::vector<float> lg(c.vocab_size);
        for (uint32_t k = 0; k < kSessions; k++) {
          check_trace(ss[k]->trace, refs[k].trace, len);
          ss[k]->s.logits(lg.data());
          REQUIRE(same_bits(lg.data(), refs[k].logits[len - 1].data(), lg.size() * 4));
        }
        if (parts > 1) CHECK(!runner.jobs.empty());
        else CHECK(runner.jobs.empty());
      }
    }
  }
  if (tested == 0) KAI_SKIP("no test models in " << models_dir() << " (make test-models)");
}

// Each job is a hand-off between harts, so the products that read the same
// inputs go as one: per layer q|k|v (or DeltaNet's in_qkv|in_z|in_a|in_b),
// o (out), gate|up, down; then the classifier. The expected jobs and their
// sizes come from the model's matrices, listed here. With an observer the
// float work between the products stays on the caller (Batch::for_each), so
// every job the runner sees is a product.
TEST_CASE("a layer hands four product jobs to the row team", "[batch][parallel]") {
  uint32_t tested = 0;
  for (const char* name : {"tiny-llama", "tiny-qwen"}) {
    Loaded m;
    if (!load(name, &m)) continue;
    tested++;
    const llm::Config& c = m.model.config();
    for (uint32_t n : {1u, 3u}) {
      INFO(name << " items " << n);
      std::vector<uint64_t> want;
      for (uint32_t l = 0; l < c.n_layers; l++) {
        llm::LayerView L = m.model.layer(l);
        if (c.is_linear(l)) {
          want.push_back((macs_of(L.in_qkv) + macs_of(L.in_z) + macs_of(L.in_a) + macs_of(L.in_b)) * n);
          want.push_back(macs_of(L.out) * n);
        } else {
          want.push_back((macs_of(L.wq) + macs_of(L.wk) + macs_of(L.wv)) * n);
          want.push_back(macs_of(L.wo) * n);
        }
        want.push_back((macs_of(L.gate) + macs_of(L.up)) * n);
        want.push_back(macs_of(L.down) * n);
      }
      want.push_back(macs_of(m.model.embedding()));   // the classifier: the last item only
      ShuffledRunner runner;
      llm::Parallel par{4, &runner, ShuffledRunner::run};
      llm::SessionOptions opt{llm::MatvecKind::Int8, 32};
      BatchMem bm(m.model, n, opt);
      bm.b.set_parallel(&par);
      Sess s(m.model, opt);   // has an observer
      std::vector<llm::BatchItem> items;
      for (uint32_t i = 0; i < n; i++) items.push_back({&s.s, 1 + i, llm::Phase::Prefill, i + 1 == n, 0});
      REQUIRE(!bm.b.forward(items.data(), n).is_error());
      CHECK(runner.jobs.size() == 4 * c.n_layers + 1);
      CHECK(runner.jobs == want);
    }
  }
  if (tested == 0) KAI_SKIP("no test models in " << models_dir() << " (make test-models)");
}

TEST_CASE("Batch::forward refuses bad items and changes nothing", "[batch]") {
  Loaded m;
  if (!load("tiny-llama", &m)) KAI_SKIP("no tiny-llama in " << models_dir() << " (make test-models)");
  const llm::Config& c = m.model.config();
  llm::SessionOptions fl{llm::MatvecKind::Float, 32}, i8{llm::MatvecKind::Int8, 32}, i8g{llm::MatvecKind::Int8, 64};
  BatchMem bm(m.model, 4, fl);
  Sess a(m.model, fl), b(m.model, fl), q(m.model, i8);
  REQUIRE(!a.s.feed(3).is_error());
  auto msg = [&](std::vector<llm::BatchItem> items) {
    auto r = bm.b.forward(items.data(), uint32_t(items.size()));
    REQUIRE(r.is_error());
    return std::string(r.error().message);
  };
  using llm::Phase;
  CHECK(msg({{&a.s, 1, Phase::Decode, true, 0}, {&b.s, 1, Phase::Decode, true, 0}, {&a.s, 2, Phase::Decode, true, 0}}) ==
        "batch item 2: session also at item 0 (one session's items must be consecutive)");
  CHECK(msg({{&a.s, 1, Phase::Decode, true, 0}, {&b.s, c.vocab_size, Phase::Decode, true, 0}}) ==
        "batch item 1: token id " + std::to_string(c.vocab_size) + " out of range (vocab_size=" +
            std::to_string(c.vocab_size) + ")");
  CHECK(msg({{&b.s, 1, Phase::Decode, true, 0}, {&q.s, 1, Phase::Decode, true, 0}}) ==
        "batch item 1: session options (matvec int8, group 32) differ from the batch's");
  CHECK(msg({{&a.s, 1, Phase::Decode, true, 0}, {nullptr, 1, Phase::Decode, true, 0}}) == "batch item 1: no session");
  std::vector<llm::BatchItem> five(5, llm::BatchItem{&b.s, 1, Phase::Prefill, false, 0});
  CHECK(msg(five) == "batch: 5 items, at most 4");
  // A session whose cache is full, then one from another model.
  Sess full(m.model, fl);
  for (uint32_t i = 0; i < c.runtime_seq_len; i++) REQUIRE(!full.s.feed(1).is_error());
  CHECK(msg({{&b.s, 1, Phase::Decode, true, 0}, {&full.s, 1, Phase::Decode, true, 0}}) ==
        "batch item 1: request too long for runtime_seq_len=" + std::to_string(c.runtime_seq_len));
  Loaded other;
  REQUIRE(load("tiny-llama", &other));
  Sess alien(other.model, fl);
  CHECK(msg({{&alien.s, 1, Phase::Decode, true, 0}}) == "session of another model");
  // Nothing moved: the failed passes left every session where it was.
  CHECK(a.s.position() == 1);
  CHECK(b.s.position() == 0);
  CHECK(q.s.position() == 0);
  // Int8 batches also compare the group.
  BatchMem bq(m.model, 2, i8g);
  llm::BatchItem it{&q.s, 1, Phase::Decode, true, 0};
  auto r = bq.b.forward(&it, 1);
  REQUIRE(r.is_error());
  CHECK(std::string(r.error().message) == "session options (matvec int8, group 32) differ from the batch's");
  CHECK(!bm.b.forward(nullptr, 0).is_error());  // an empty pass does nothing
}

// The iteration seam's two runtime parts.
//
// Logits once per position: an item that gives a place for its logits
// (BatchItem::logits) gets exactly Session::logits()'s floats, whether its
// row lies in a run of rows one vocabulary apart (one product for all of
// them) or alone, with and without a row team.
TEST_CASE("a pass writes each asking item's logits bit-identical to Session::logits", "[batch][logits]") {
  std::mt19937 rng(41);
  for (const char* name : kModels) {
    Loaded L;
    if (!load(name, &L)) continue;   // stories260K when not exported (load() fails a missing tiny model)
    const llm::Config& c = L.model.config();
    for (const auto& opt : kOptions) {
      INFO(name << " " << llm::matvec_ops(opt.matvec).name << " group " << opt.int8_group);
      const uint32_t kSessions = 5;
      std::vector<std::vector<uint32_t>> seqs;
      std::vector<Reference> refs;
      for (uint32_t s = 0; s < kSessions; s++) {
        seqs.push_back(random_tokens(rng, 3 + s, c.vocab_size));
        refs.push_back(reference(L.model, opt, seqs.back()));
      }
      for (bool threads : {false, true}) {
        std::vector<std::unique_ptr<Sess>> ss;
        for (uint32_t s = 0; s < kSessions; s++) ss.push_back(std::make_unique<Sess>(L.model, opt));
        BatchMem bm(L.model, 32, opt);
        llm::Parallel par{3, nullptr, run_threads};
        if (threads) bm.b.set_parallel(&par);
        // Rows 0..2 in one run (sessions 0, 1, 3), session 4's row apart;
        // session 2 asks for the argmax only.
        std::vector<float> rows(size_t(c.vocab_size) * 3), apart(c.vocab_size);
        std::vector<llm::BatchItem> items;
        for (uint32_t s = 0; s < kSessions; s++)
          for (uint32_t i = 0; i < seqs[s].size(); i++) {
            llm::BatchItem it{&ss[s]->s, seqs[s][i], llm::Phase::Prefill, i + 1 == seqs[s].size(), 0};
            if (it.want_next && s != 2) it.logits = s == 4 ? apart.data() : rows.data() + size_t(c.vocab_size) * (s == 3 ? 2 : s);
            items.push_back(it);
          }
        REQUIRE(!bm.b.forward(items.data(), uint32_t(items.size())).is_error());
        const uint32_t row_of[] = {0, 1, 9, 2};
        for (uint32_t s = 0; s < kSessions; s++) {
          uint32_t last = uint32_t(seqs[s].size()) - 1;
          if (s == 2) {
            uint32_t at = 0;
            for (uint32_t k = 0; k < 2; k++) at += uint32_t(seqs[k].size());
            REQUIRE(items[at + last].next == refs[s].next[last]);
            continue;
          }
          const float* got = s == 4 ? apart.data() : rows.data() + size_t(c.vocab_size) * row_of[s];
          REQUIRE(same_bits(got, refs[s].logits[last].data(), c.vocab_size * sizeof(float)));
        }
      }
    }
  }
}

namespace {

// A session with room for a checkpoint (SessionOptions::checkpoint).
struct CheckpointSess {
  llm::Session s;
  Mem mem;
  CheckpointSess(const llm::Model& m, llm::SessionOptions opt) {
    opt.checkpoint = true;
    size_t n = llm::Session::bytes_needed(m.config(), opt);
    REQUIRE(!s.init(m, mem.get(n), n, opt).is_error());
  }
};

// Feeds the tokens one at a time and returns the greedy next after each.
std::vector<uint32_t> pass(llm::Session& s, const std::vector<uint32_t>& tokens) {
  std::vector<uint32_t> next;
  for (uint32_t t : tokens) {
    REQUIRE(!s.feed(t).is_error());
    next.push_back(s.argmax());
  }
  return next;
}

}  // namespace

// Rollback: positions fed and then not accepted leave no trace. After a
// checkpoint, wrong tokens, and a rewind, feeding the right tokens gives
// the logits of a session that never saw the wrong ones, bit for bit; on
// the hybrid model (Gated DeltaNet layers) only back to the checkpoint.
TEST_CASE("a rewind to the checkpoint forgets the rejected positions bit for bit", "[batch][rollback]") {
  std::mt19937 rng(43);
  for (const char* name : kModels) {
    Loaded L;
    if (!load(name, &L)) continue;   // stories260K when not exported (load() fails a missing tiny model)
    const llm::Config& c = L.model.config();
    bool hybrid = c.n_linear_layers() > 0;
    for (const auto& opt : kOptions) {
      INFO(name << " " << llm::matvec_ops(opt.matvec).name << " group " << opt.int8_group);
      auto seq = random_tokens(rng, 10, c.vocab_size);
      Reference ref = reference(L.model, opt, seq);
      CheckpointSess a(L.model, opt);
      std::vector<uint32_t> head(seq.begin(), seq.begin() + 4);
      pass(a.s, head);
      REQUIRE(!a.s.keep_checkpoint().is_error());
      REQUIRE(a.s.checkpoint_position() == 4);
      // seq[4] then three wrong tokens; only seq[4]'s position stands.
      pass(a.s, {seq[4], (seq[5] + 1) % c.vocab_size, 2, 3});
      REQUIRE(a.s.position() == 8);
      uint32_t back = hybrid ? 4 : 5;
      if (hybrid) REQUIRE(a.s.rewind(5).is_error());   // the recurrent state cannot stop there
      REQUIRE(!a.s.rewind(back).is_error());
      REQUIRE(a.s.position() == back);
      REQUIRE(a.s.rewind(back + 1).is_error());        // never forward
      std::vector<uint32_t> rest(seq.begin() + back, seq.end());
      std::vector<uint32_t> next = pass(a.s, rest);
      for (uint32_t i = 0; i < rest.size(); i++) REQUIRE(next[i] == ref.next[back + i]);
      std::vector<float> lg(c.vocab_size);
      a.s.logits(lg.data());
      REQUIRE(same_bits(lg.data(), ref.logits.back().data(), c.vocab_size * sizeof(float)));
    }
    if (hybrid) {
      // Without room for one, a hybrid session cannot keep a checkpoint.
      Sess plain(L.model, kOptions[0]);
      REQUIRE(plain.s.keep_checkpoint().is_error());
    }
  }
}

namespace {

// A StateSink into host memory that also counts how often each float was
// written (every one exactly once, or a piece is missing or doubled).
struct KeptState {
  std::vector<float> floats;
  std::vector<uint8_t> writes;
  llm::StateSink sink{put, this};
  explicit KeptState(size_t n) : floats(n), writes(n) {}
  static void put(void* ctx, size_t at, const float* src, size_t n) {
    auto* k = static_cast<KeptState*>(ctx);
    REQUIRE(at + n <= k->floats.size());
    memcpy(k->floats.data() + at, src, n * sizeof(float));
    for (size_t i = at; i < at + n; i++) k->writes[i]++;
  }
};

// The recurrent part of a session's snapshot (snapshot_spans with no rows).
std::vector<float> recurrent_state(llm::Session& s) {
  std::vector<float> out;
  s.snapshot_spans(0, 0, [](void* ctx, float* span, size_t n) {
    auto* v = static_cast<std::vector<float>*>(ctx);
    v->insert(v->end(), span, span + n);
  }, &out);
  return out;
}

}  // namespace

// A checkpoint inside a pass (BatchItem::keep_state, kernel/ai/kv_checkpoint.h):
// the state handed over right after item i of a prompt chunk is, bit for
// bit, the state of a session fed only up to there, for two requests in
// one pass; and keeping it changes nothing the pass computes.
TEST_CASE("the recurrent state kept inside a pass is the state at that position", "[batch][checkpoint]") {
  std::mt19937 rng(47);
  for (const char* name : kModels) {
    Loaded L;
    if (!load(name, &L)) continue;
    const llm::Config& c = L.model.config();
    if (c.n_linear_layers() == 0) continue;   // nothing recurrent to keep
    for (const auto& opt : kOptions) {
      INFO(name << " " << llm::matvec_ops(opt.matvec).name << " group " << opt.int8_group);
      auto a_seq = random_tokens(rng, 7, c.vocab_size);
      auto b_seq = random_tokens(rng, 4, c.vocab_size);
      Reference a_ref = reference(L.model, opt, a_seq), b_ref = reference(L.model, opt, b_seq);
      // The states at position 3 of a and 4 of b (the end of b's chunk).
      Sess a3(L.model, opt), b4(L.model, opt);
      for (uint32_t i = 0; i < 3; i++) REQUIRE(!a3.s.feed(a_seq[i]).is_error());
      for (uint32_t t : b_seq) REQUIRE(!b4.s.feed(t).is_error());
      std::vector<float> want_a = recurrent_state(a3.s), want_b = recurrent_state(b4.s);
      REQUIRE(want_a.size() == llm::Session::recurrent_floats(c));

      Sess a(L.model, opt), b(L.model, opt);
      KeptState kept_a(want_a.size()), kept_b(want_b.size());
      std::vector<llm::BatchItem> items;
      for (uint32_t i = 0; i < a_seq.size(); i++) items.push_back({&a.s, a_seq[i], llm::Phase::Prefill, true, 0});
      for (uint32_t i = 0; i < b_seq.size(); i++) items.push_back({&b.s, b_seq[i], llm::Phase::Prefill, true, 0});
      items[2].keep_state = &kept_a.sink;                 // after a's third token: position 3
      items[a_seq.size() + 3].keep_state = &kept_b.sink;  // after b's last token
      BatchMem bm(L.model, uint32_t(items.size()), opt);
      REQUIRE(!bm.b.forward(items.data(), uint32_t(items.size())).is_error());
      for (size_t i = 0; i < want_a.size(); i++) REQUIRE(kept_a.writes[i] == 1);
      for (size_t i = 0; i < want_b.size(); i++) REQUIRE(kept_b.writes[i] == 1);
      REQUIRE(same_bits(kept_a.floats.data(), want_a.data(), want_a.size() * sizeof(float)));
      REQUIRE(same_bits(kept_b.floats.data(), want_b.data(), want_b.size() * sizeof(float)));
      for (uint32_t i = 0; i < a_seq.size(); i++) REQUIRE(items[i].next == a_ref.next[i]);
      for (uint32_t i = 0; i < b_seq.size(); i++) REQUIRE(items[a_seq.size() + i].next == b_ref.next[i]);
      REQUIRE((recurrent_state(b.s) == want_b));   // b's chunk ended there: its live state is the kept one
    }
  }
}
