// Loader validation: exact messages for bad headers and files, request
// checks, and a fuzz test that truncates and bit-flips every file of small
// bundles (written here, independent of the Python tools). Runs under
// ASan+UBSan: every mutation must end in an error or a valid load, and a
// valid load must run a few forward steps without memory errors.
#include <catch2/catch.hpp>

#include "llm_test_util.h"

using namespace testutil;

namespace {

std::string load_error(const Files& f) {
  MapBundle b(f);
  llm::Model m;
  auto r = m.load(b);
  return r.is_error() ? std::string(r.error().message) : std::string();
}

llm::ErrorCode load_code(const Files& f) {
  MapBundle b(f);
  llm::Model m;
  auto r = m.load(b);
  return r.is_error() ? r.error().code : llm::ErrorCode::None;
}

void set_u32(Files& f, const char* file, size_t index, uint32_t v) {
  auto& b = f[file];
  for (int i = 0; i < 4; i++) b[4 * index + i] = uint8_t(v >> (8 * i));
}
void set_f32(Files& f, const char* file, size_t byte_off, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  auto& b = f[file];
  for (int i = 0; i < 4; i++) b[byte_off + i] = uint8_t(u >> (8 * i));
}

}  // namespace

TEST_CASE("synthetic bundles load and run", "[loader]") {
  for (auto spec : {llama_spec(), qwen_spec(2), qwen_spec(3, true), qwen_spec(3, false)}) {
    Files f = make_bundle(spec);
    Runtime rt(f);
    INFO(rt.error);
    REQUIRE(rt.ok);
    auto tok = rt.session.prefill(std::vector<uint32_t>{1, 2, 3}.data(), 3);
    REQUIRE(!tok.is_error());
    CHECK(tok.value() < spec.vocab);
    CHECK(rt.session.position() == 3);
  }
  SynthSpec l3 = llama_spec();
  l3.version = 3;
  l3.f32 = true;
  Files f = make_bundle(l3);
  Runtime rt(f);
  INFO(rt.error);
  CHECK(rt.ok);
  CHECK(rt.model.config().weight_format == llm::WeightFormat::F32);
}

TEST_CASE("header validation names the file and field", "[loader]") {
  Files base = make_bundle(llama_spec());
  CHECK(load_error(base).empty());

  Files f = base;  // v1 fields: 2 dim, 3 hidden, 4 layers, 5 heads, 6 kv, 7 vocab, 8 seq, 9 rsl
  set_u32(f, "CFG.BIN", 6, 0);
  CHECK(load_error(f) == "CFG.BIN: n_kv_heads=0 must be non-zero");
  f = base;
  set_u32(f, "CFG.BIN", 6, 3);
  CHECK(load_error(f) == "CFG.BIN: n_kv_heads=3 does not divide n_heads");
  f = base;
  set_u32(f, "CFG.BIN", 2, 0);
  CHECK(load_error(f) == "CFG.BIN: dim=0 must be non-zero");
  f = base;
  set_u32(f, "CFG.BIN", 2, 20000);
  CHECK(load_error(f) == "CFG.BIN: dim=20000 exceeds the limit 16384");
  f = base;
  set_u32(f, "CFG.BIN", 9, 65);
  CHECK(load_error(f) == "CFG.BIN: runtime_seq_len=65 exceeds seq_len");
  f = base;
  set_u32(f, "CFG.BIN", 4, 101);
  CHECK(load_error(f) == "CFG.BIN: n_layers=101 exceeds the limit 100");
  f = base;
  set_u32(f, "CFG.BIN", 0, 0x12345678);
  CHECK(load_error(f) == "CFG.BIN: magic=305419896 is not 0x31474643 (CFG1)");
  CHECK(load_code(f) == llm::ErrorCode::BadMagic);
  f = base;
  set_u32(f, "CFG.BIN", 1, 7);
  CHECK(load_error(f) == "CFG.BIN: version=7 is not 1, 2 or 3");
  f = base;
  set_u32(f, "CFG.BIN", 5, 3);  // dim 32 % 3
  set_u32(f, "CFG.BIN", 6, 1);
  CHECK(load_error(f) == "CFG.BIN: n_heads=3 does not divide dim");
  f = base;
  set_u32(f, "CFG.BIN", 5, 32);  // head_dim 1
  set_u32(f, "CFG.BIN", 6, 32);
  CHECK(load_error(f) == "CFG.BIN: head_dim=1 must be even");
  f = base;
  set_f32(f, "CFG.BIN", 40, -1.0f);
  CHECK(load_error(f) == "CFG.BIN: rms_eps=-1 must be in (0, 1)");
  f = base;
  f["CFG.BIN"].resize(40);
  CHECK(load_error(f) == "CFG.BIN: size 40 bytes, expected 48");
  f = base;
  f.erase("CFG.BIN");
  CHECK(load_error(f) == "CFG.BIN: missing");
  CHECK(load_code(f) == llm::ErrorCode::MissingFile);
}

TEST_CASE("file sizes and weight values are validated", "[loader]") {
  Files base = make_bundle(llama_spec());
  Files f = base;
  size_t n = f["L01.BIN"].size();
  f["L01.BIN"].resize(1000);
  CHECK(load_error(f) == "L01.BIN: size 1000 bytes, expected " + std::to_string(n));
  CHECK(load_code(f) == llm::ErrorCode::BadSize);
  f = base;
  f["EMB.BIN"].push_back(0);
  CHECK(load_error(f) == "EMB.BIN: size " + std::to_string(base["EMB.BIN"].size() + 1) + " bytes, expected " +
                             std::to_string(base["EMB.BIN"].size()));
  f = base;
  f.erase("L01.BIN");
  CHECK(load_error(f) == "L01.BIN: missing");
  f = base;
  set_f32(f, "EMB.BIN", 12, NAN);
  CHECK(load_error(f) == "EMB.BIN: embedding scale[3] is not finite");
  CHECK(load_code(f) == llm::ErrorCode::BadValue);
  f = base;
  set_f32(f, "NRM.BIN", 8, INFINITY);
  CHECK(load_error(f) == "NRM.BIN: norm[2] is not finite");
  f = base;
  set_f32(f, "L00.BIN", 4 * 32 + 4, NAN);  // post_attn_norm[1]
  CHECK(load_error(f) == "L00.BIN: post_attn_norm[1] is not finite");
  f = base;
  set_f32(f, "L00.BIN", 4 * 64, NAN);  // q_proj scale[0]
  CHECK(load_error(f) == "L00.BIN: q_proj scale[0] is not finite");
  f = base;
  set_f32(f, "ROP.BIN", 4, 7.0f);
  CHECK(load_error(f) == "ROP.BIN: value[1] is not a cosine/sine");
}

TEST_CASE("qwen bundles need a valid LTY.BIN", "[loader]") {
  Files base = make_bundle(qwen_spec(2));
  CHECK(load_error(base).empty());
  Files f = base;
  f.erase("LTY.BIN");
  CHECK(load_error(f) == "LTY.BIN: missing (required for qwen models)");
  CHECK(load_code(f) == llm::ErrorCode::MissingFile);
  f = base;
  set_u32(f, "LTY.BIN", 2, 2);
  CHECK(load_error(f) == "LTY.BIN: layer 1 type=2 is not 0 or 1");
  f = base;
  set_u32(f, "LTY.BIN", 0, 3);
  CHECK(load_error(f) == "LTY.BIN: n_layers=3 does not match CFG.BIN n_layers=4");
  f = base;
  f["LTY.BIN"].resize(12);
  CHECK(load_error(f) == "LTY.BIN: size 12 bytes, expected 20");
  // flipping a layer's type changes its expected size
  f = base;
  set_u32(f, "LTY.BIN", 4, 1);
  CHECK(load_error(f).rfind("L03.BIN: size ", 0) == 0);
  // v2 fields: 16 k heads, 17 v heads, 20 conv kernel, 15 rotary dim, 3 flags
  f = base;
  set_u32(f, "CFG.BIN", 17, 3);
  CHECK(load_error(f).rfind("L00.BIN: size ", 0) == 0);  // 3 v heads: consistent header, wrong blob
  f = base;
  set_u32(f, "CFG.BIN", 16, 2);
  set_u32(f, "CFG.BIN", 17, 3);
  CHECK(load_error(f) == "CFG.BIN: linear_num_k_heads=2 does not divide linear_num_v_heads");
  f = base;
  set_u32(f, "CFG.BIN", 20, 0);
  CHECK(load_error(f) == "CFG.BIN: linear_conv_kernel=0 must be non-zero");
  f = base;
  set_u32(f, "CFG.BIN", 15, 18);
  CHECK(load_error(f) == "CFG.BIN: rope_rotary_dim=18 exceeds the limit 16");
  f = base;
  set_u32(f, "CFG.BIN", 15, 7);
  CHECK(load_error(f) == "CFG.BIN: rope_rotary_dim=7 must be even");
  f = base;
  set_u32(f, "CFG.BIN", 3, 4);
  CHECK(load_error(f) == "CFG.BIN: flags=4 unsupported (qwen needs 3: output gate and q/k norm)");
  f = base;
  set_u32(f, "CFG.BIN", 3, 1);
  CHECK(load_error(f) == "CFG.BIN: flags=1 unsupported (qwen needs 3: output gate and q/k norm)");
  f = base;
  set_u32(f, "CFG.BIN", 2, 0);
  CHECK(load_error(f) == "CFG.BIN: model_kind=0 must be 1 (qwen) in version 2");
  Files v3 = make_bundle(qwen_spec(3, true));
  set_u32(v3, "CFG.BIN", 21, 2);
  CHECK(load_error(v3) == "CFG.BIN: weight_format=2 is not 0 (q8) or 1 (f32)");
  // v3 llama must leave the linear fields zero
  SynthSpec l3 = llama_spec();
  l3.version = 3;
  Files f3 = make_bundle(l3);
  CHECK(load_error(f3).empty());
  set_u32(f3, "CFG.BIN", 20, 4);
  CHECK(load_error(f3) == "CFG.BIN: linear_conv_kernel=4 must be 0 for llama");
}

TEST_CASE("request validation uses the course wording", "[request]") {
  Files f = make_bundle(llama_spec());  // vocab 64, runtime_seq_len 16
  Runtime rt(f);
  REQUIRE(rt.ok);
  const llm::Config& c = rt.model.config();
  std::vector<uint32_t> p = {1, 2, 64, 3};
  auto e = llm::check_request(c, p.data(), 4, 4);
  REQUIRE(e.is_error());
  CHECK(std::string(e.error().message) == "token 2 out of range");
  CHECK(e.error().code == llm::ErrorCode::TokenOutOfRange);
  p[2] = 63;
  CHECK(!llm::check_request(c, p.data(), 4, 12).is_error());
  e = llm::check_request(c, p.data(), 4, 13);
  REQUIRE(e.is_error());
  CHECK(std::string(e.error().message) == "request too long for runtime_seq_len=16");
  CHECK(e.error().code == llm::ErrorCode::RequestTooLong);
  e = llm::check_request(c, p.data(), 0, 4);
  REQUIRE(e.is_error());
  CHECK(e.error().code == llm::ErrorCode::EmptyRequest);
  e = llm::check_request(c, p.data(), 4, 0);
  REQUIRE(e.is_error());
  CHECK(e.error().code == llm::ErrorCode::EmptyRequest);
  std::vector<uint32_t> longp(256, 1);
  e = llm::check_request(c, longp.data(), 256, 1);
  REQUIRE(e.is_error());
  CHECK(e.error().code == llm::ErrorCode::PromptTooLong);
  CHECK(std::string(e.error().message) == "prompt too long: 256 tokens, at most 255");
  // the session itself refuses to run past runtime_seq_len or the vocabulary
  CHECK(rt.session.feed(64).is_error());
  for (uint32_t i = 0; i < 16; i++) REQUIRE(!rt.session.feed(1).is_error());
  auto full = rt.session.feed(1);
  REQUIRE(full.is_error());
  CHECK(std::string(full.error().message) == "request too long for runtime_seq_len=16");
  rt.session.reset();
  CHECK(!rt.session.feed(1).is_error());
}

TEST_CASE("session memory is checked", "[request]") {
  Files f = make_bundle(qwen_spec(2));
  MapBundle b(f);
  llm::Model m;
  REQUIRE(!m.load(b).is_error());
  size_t need = llm::Session::bytes_needed(m.config());
  std::vector<uint64_t> mem(need / 8 + 1);
  llm::Session s;
  auto r = s.init(m, mem.data(), need - 1);
  REQUIRE(r.is_error());
  CHECK(r.error().code == llm::ErrorCode::NoMemory);
  CHECK(std::string(r.error().message).rfind("not enough memory: session needs ", 0) == 0);
  CHECK(!s.init(m, mem.data(), need).is_error());
}

TEST_CASE("loader fuzz: truncations and bit flips never crash", "[loader][fuzz]") {
  std::mt19937 rng(12345);
  int loads = 0, valid = 0;
  std::vector<SynthSpec> specs = {llama_spec(), qwen_spec(2), qwen_spec(3, true)};
  for (const auto& spec : specs) {
    const Files base = make_bundle(spec);
    for (const auto& kv : base) {
      const std::string name = kv.first;
      for (int iter = 0; iter < 150; iter++) {
        Files f = base;
        auto& b = f[name];
        int mode = iter % 3;
        if (mode == 0) {
          b.resize(std::uniform_int_distribution<size_t>(0, b.size() - 1)(rng));
        } else {
          int flips = 1 + int(rng() % 4);
          for (int k = 0; k < flips; k++) {
            // bias half the flips to the first 64 bytes (headers, norms, scales)
            size_t lim = (k % 2 == 0) ? std::min<size_t>(64, b.size()) : b.size();
            size_t at = std::uniform_int_distribution<size_t>(0, lim - 1)(rng);
            b[at] ^= uint8_t(1u << (rng() % 8));
          }
        }
        if (b.empty()) b.shrink_to_fit();  // data() may be null: the loader must cope
        loads++;
        Runtime rt(f);
        if (!rt.ok) {
          CHECK(!rt.error.empty());
          continue;
        }
        valid++;
        // A bundle that loads must run (values may be odd but memory-safe).
        const llm::Config& c = rt.model.config();
        uint32_t steps = std::min<uint32_t>(4, c.runtime_seq_len);
        uint32_t tok = 1 % c.vocab_size;
        for (uint32_t s = 0; s < steps; s++) {
          auto r = rt.session.step(tok);
          REQUIRE(!r.is_error());
          tok = r.value();
          REQUIRE(tok < c.vocab_size);
        }
      }
    }
  }
  INFO("loads " << loads << " valid " << valid);
  CHECK(loads > 3000);
  CHECK(valid > 0);
  WARN("fuzz: " << loads << " mutated bundles, " << valid << " still valid and ran 4 steps");
}
