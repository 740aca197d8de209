// Work counts (Session::work(Phase)): multiply-adds, weight bytes and KV-cache
// bytes that the runtime counts where the work happens, checked against the
// figures computed here by hand from the model's shape. Also the fields
// `llmrun --timing` appends (tools/perf.py parses them).
#include <catch2/catch.hpp>

#include <sstream>

#include "llm_test_util.h"
#include "test_skip.h"

using namespace testutil;

namespace {

// A llama-shape model's per-token figures, from its configuration.
struct LlamaShape {
  uint64_t L, dim, hidden, q_dim, kv_dim, n_heads, hd, vocab;
  explicit LlamaShape(const llm::Config& c)
      : L(c.n_layers), dim(c.dim), hidden(c.hidden_dim), q_dim(c.q_dim()), kv_dim(c.kv_dim()),
        n_heads(c.n_heads), hd(c.head_dim), vocab(c.vocab_size) {}
  // wq, wk, wv, wo, gate, up, down of one layer: rows x cols each.
  uint64_t layer_macs() const { return q_dim * dim + 2 * kv_dim * dim + dim * q_dim + 3 * hidden * dim; }
  uint64_t layer_bytes() const {  // q8: int8 values + one float scale per row
    return layer_macs() + 4 * (q_dim + 2 * kv_dim + dim + 2 * hidden + dim);
  }
  uint64_t classifier_macs() const { return vocab * dim; }
  uint64_t classifier_bytes() const { return vocab * dim + 4 * vocab; }
  uint64_t attention_macs(uint64_t pos) const { return L * 2 * n_heads * (pos + 1) * hd; }  // q.k and p.v
  uint64_t kv_read(uint64_t pos) const { return L * 2 * (pos + 1) * kv_dim * 4; }
  uint64_t kv_write() const { return L * 2 * kv_dim * 4; }
};

// False when the bundle is absent; one that is there must load.
bool load_dir(const std::string& dir, Files* files, llm::Model* m) {
  std::string error;
  BundleState st = load_bundle_dir(dir, files, m, &error);
  if (st == BundleState::Refused) FAIL(error);
  return st == BundleState::Loaded;
}

}  // namespace

TEST_CASE("a SMOL-shape decode step counts 134.5 M multiply-adds plus attention", "[work]") {
  const char* e = getenv("KAI_SMOL_DIR");
  std::string dir = e && *e ? e : "build/assets/SMOL";
  Files files;
  llm::Model model;
  if (!load_dir(dir, &files, &model)) KAI_SKIP("no SMOL-shape bundle in " << dir << " (make smol-assets)");
  const llm::Config& c = model.config();
  REQUIRE(c.dim == 576);
  REQUIRE(c.n_layers == 30);
  REQUIRE(c.vocab_size == 49152);
  LlamaShape s(c);
  // By hand: 30 layers x 3,538,944 + 49152 x 576.
  REQUIRE(s.layer_macs() == 3538944);
  REQUIRE(s.L * s.layer_macs() + s.classifier_macs() == 134479872);

  Runtime rt(files, {llm::MatvecKind::Int8, 32});
  REQUIRE(rt.ok);
  const uint32_t prompt[5] = {504, 3575, 282, 4649, 314};
  REQUIRE(!rt.session.prefill(prompt, 5).is_error());
  REQUIRE(!rt.session.step(26746).is_error());  // the decode token sits at position 5

  const llm::WorkCounts& d = rt.session.work(llm::Phase::Decode);
  CHECK(d.macs == 134479872 + s.attention_macs(5));
  CHECK(d.weight_bytes == s.L * s.layer_bytes() + s.classifier_bytes() + s.dim + 4);  // + embedding row
  CHECK(d.kv_read_bytes == s.kv_read(5));
  CHECK(d.kv_write_bytes == s.kv_write());

  // The 5-token prompt ran as one pass: 5 tokens of products, but every
  // layer weight read once (plus 5 embedding rows), the classifier once.
  const llm::WorkCounts& p = rt.session.work(llm::Phase::Prefill);
  uint64_t att = 0, kvr = 0;
  for (uint64_t pos = 0; pos < 5; pos++) {
    att += s.attention_macs(pos);
    kvr += s.kv_read(pos);
  }
  CHECK(p.macs == 5 * s.L * s.layer_macs() + s.classifier_macs() + att);
  CHECK(p.weight_bytes == s.L * s.layer_bytes() + s.classifier_bytes() + 5 * (s.dim + 4));
  CHECK(p.kv_read_bytes == kvr);
  CHECK(p.kv_write_bytes == 5 * s.kv_write());

  rt.session.reset();
  CHECK(rt.session.work(llm::Phase::Decode).macs == 0);
  CHECK(rt.session.work(llm::Phase::Prefill).weight_bytes == 0);
}

TEST_CASE("items of one pass share its weight bytes exactly", "[work]") {
  Files files;
  llm::Model model;
  if (!load_dir(models_dir() + "/tiny-llama", &files, &model)) KAI_SKIP("no tiny-llama in " << models_dir());
  LlamaShape s(model.config());
  llm::SessionOptions opt;
  Runtime a(files, opt);
  REQUIRE(a.ok);
  std::vector<uint8_t> mem(llm::Batch::bytes_needed(model.config(), 4) + 64);
  void* p = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(mem.data()) + 63) & ~uintptr_t(63));
  llm::Batch batch;
  // Three sessions of a's model (a Batch serves one model), one pass.
  REQUIRE(!batch.init(a.model, p, mem.size() - 64, 4, opt).is_error());
  llm::Session s2, s3;
  std::vector<uint8_t> m2(llm::Session::bytes_needed(model.config()) + 64), m3(m2.size());
  auto al = [](std::vector<uint8_t>& v) {
    return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t(63));
  };
  REQUIRE(!s2.init(a.model, al(m2), m2.size() - 64, opt).is_error());
  REQUIRE(!s3.init(a.model, al(m3), m3.size() - 64, opt).is_error());
  llm::BatchItem items[3] = {{&a.session, 1, llm::Phase::Decode, true, 0},
                             {&s2, 2, llm::Phase::Decode, true, 0},
                             {&s3, 3, llm::Phase::Decode, false, 0}};
  REQUIRE(!batch.forward(items, 3).is_error());
  uint64_t layers = s.L * s.layer_bytes(), cls = s.classifier_bytes(), row = s.dim + 4;
  const llm::WorkCounts* w[3] = {&a.session.work(llm::Phase::Decode), &s2.work(llm::Phase::Decode),
                                 &s3.work(llm::Phase::Decode)};
  // Layer bytes split three ways, the classifier two ways (s3 did not ask).
  CHECK(w[0]->weight_bytes + w[1]->weight_bytes + w[2]->weight_bytes == layers + cls + 3 * row);
  CHECK(w[2]->weight_bytes <= layers / 3 + s.L * 7 + row);
  CHECK(w[2]->macs == s.L * s.layer_macs() + s.attention_macs(0));
  CHECK(w[0]->macs == s.L * s.layer_macs() + s.classifier_macs() + s.attention_macs(0));
}

TEST_CASE("llmrun --timing appends the work counts", "[work][llmrun]") {
  std::string dir = models_dir() + "/tiny-llama";
  Files files;
  llm::Model model;
  if (!load_dir(dir, &files, &model)) KAI_SKIP("no tiny-llama in " << models_dir());
  if (!file_exists("build/host/llmrun")) KAI_SKIP("build/host/llmrun not built (make host)");
  LlamaShape s(model.config());
  int rc = 0;
  std::string cmd = "build/host/llmrun --asset-dir " + dir + " --predict 4 --timing 1 17 42 2>&1";
  std::string out = run_command(cmd, &rc);
  REQUIRE(rc == 0);
  // Prompt of 3 (positions 0..2, one pass), then 3 decode steps at 3, 4, 5.
  uint64_t pm = 3 * s.L * s.layer_macs() + s.classifier_macs(), pr = 0;
  for (uint64_t pos = 0; pos < 3; pos++) pm += s.attention_macs(pos), pr += s.kv_read(pos);
  uint64_t dm = 0, dr = 0;
  for (uint64_t pos = 3; pos < 6; pos++) dm += s.L * s.layer_macs() + s.classifier_macs() + s.attention_macs(pos), dr += s.kv_read(pos);
  uint64_t pw = s.L * s.layer_bytes() + s.classifier_bytes() + 3 * (s.dim + 4);
  uint64_t dw = 3 * (s.L * s.layer_bytes() + s.classifier_bytes() + s.dim + 4);
  std::ostringstream want;
  want << " prefill_macs=" << pm << " prefill_weight_bytes=" << pw << " prefill_kv_read=" << pr
       << " prefill_kv_write=" << 3 * s.kv_write() << " decode_macs=" << dm << " decode_weight_bytes=" << dw
       << " decode_kv_read=" << dr << " decode_kv_write=" << 3 * s.kv_write();
  INFO(out);
  size_t at = out.find(want.str());
  REQUIRE(at != std::string::npos);
  char after = out[at + want.str().size()];  // the number ends there (more fields may follow)
  CHECK((after == ' ' || after == '\n'));
}
