// RoPE rows computed past a bundle's ROP.BIN (lib/llm_rope.h) and the
// context rule: the computed rows must be the cos/sin the table would hold
// (checked against the host's libm in long double), and context_for must
// give Qwen its longer default and Llama its bundle's length.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "llm_rope.h"
#include "llm_test_util.h"

namespace {

llm::Config shape(llm::Family f, float theta, uint32_t rot, uint32_t runtime, uint32_t seq) {
  llm::Config c;
  c.family = f;
  c.rope_theta = theta;
  c.rope_rotary_dim = rot;
  c.head_dim = rot;
  c.runtime_seq_len = runtime;
  c.seq_len = seq;
  return c;
}

}  // namespace

TEST_CASE("sincos_d agrees with libm over the positions a context reaches", "[rope]") {
  for (double x : {0.0, 1e-9, 0.5, 0.785398, 1.5707963, 3.14159265, 63.0, 1000.25, 32767.0, -7.5, 1e6}) {
    double s, c;
    llm::sincos_d(x, &s, &c);
    INFO(x);
    CHECK(std::fabs(s - double(std::sin((long double)x))) < 1e-13);
    CHECK(std::fabs(c - double(std::cos((long double)x))) < 1e-13);
  }
}

TEST_CASE("computed RoPE rows are the table's cos/sin, rounded to float", "[rope]") {
  // The real Qwen3.5 shape (theta 1e7, 64 of 256 dims rotated) and SmolLM2's.
  for (auto c : {shape(llm::Family::Qwen, 10000000.0f, 64, 64, 262144),
                 shape(llm::Family::Llama, 100000.0f, 64, 256, 8192)}) {
    float row[64];
    for (uint32_t pos : {0u, 1u, 63u, 64u, 1023u, 4095u, 32767u}) {
      llm::rope_row_compute(c, pos, row);
      for (uint32_t i = 0; i < 32; i++) {
        long double inv = 1.0L / std::pow((long double)c.rope_theta, 2.0L * i / 64);
        long double ang = (long double)pos * inv;
        INFO("pos " << pos << " i " << i);
        // At most one float rounding step apart (values in [-1, 1]).
        CHECK(std::fabs(row[i] - float(std::cos(ang))) <= 6e-8f);
        CHECK(std::fabs(row[32 + i] - float(std::sin(ang))) <= 6e-8f);
      }
    }
  }
}

TEST_CASE("context_for: Qwen gets 1024 by default, Llama its bundle's length, never past seq_len", "[rope]") {
  auto qwen = shape(llm::Family::Qwen, 1e7f, 64, 64, 262144);
  auto smol = shape(llm::Family::Llama, 1e5f, 64, 256, 8192);
  CHECK(llm::context_for(qwen, 0) == llm::kDefaultQwenContext);
  CHECK(llm::context_for(smol, 0) == 256);
  CHECK(llm::context_for(qwen, 32) == 32);
  CHECK(llm::context_for(smol, 2048) == 2048);
  CHECK(llm::context_for(smol, 100000) == 8192);
  auto short_qwen = shape(llm::Family::Qwen, 1e7f, 8, 64, 512);
  CHECK(llm::context_for(short_qwen, 0) == 512);
  auto long_bundle = shape(llm::Family::Qwen, 1e7f, 8, 2048, 4096);
  CHECK(llm::context_for(long_bundle, 0) == 2048);
}

TEST_CASE("Model::set_context keeps the bundle's rows and computes the rest", "[rope]") {
  using namespace testutil;
  SynthSpec shorter = qwen_spec(2);   // ROP.BIN of 16 rows, seq_len 64
  SynthSpec longer = shorter;
  longer.rsl = 48;                    // the same model, a 48-row ROP.BIN
  Files fs = make_bundle(shorter), fl = make_bundle(longer);
  llm::Model a, b;
  MapBundle bs(fs), bl(fl);
  REQUIRE(!a.load(bs).is_error());
  REQUIRE(!b.load(bl).is_error());
  uint32_t rot = a.config().rot_dim();
  REQUIRE(a.rope_table_floats(16) == 0);
  REQUIRE(a.rope_table_floats(48) == 48 * rot);
  std::vector<float> table(a.rope_table_floats(48));
  const float* bundle_row0 = a.rope_row(0);
  REQUIRE(!a.set_context(48, table.data()).is_error());
  CHECK(a.config().runtime_seq_len == 48);
  CHECK(a.rope_row(0) != bundle_row0);   // the new table serves now
  for (uint32_t p = 0; p < 48; p++)
    for (uint32_t i = 0; i < rot; i++) {
      INFO("pos " << p << " i " << i);
      if (p < 16) CHECK(a.rope_row(p)[i] == b.rope_row(p)[i]);   // the bundle's own bits
      else CHECK(std::fabs(a.rope_row(p)[i] - b.rope_row(p)[i]) <= 6e-8f);
    }
  // A shorter context needs no table; longer than seq_len, or no table, is refused.
  REQUIRE(!a.set_context(8, nullptr).is_error());
  CHECK(a.config().runtime_seq_len == 8);
  CHECK(std::string(a.set_context(65, table.data()).error().message) == "context 65 is not in 1..64");
  llm::Model c;
  MapBundle bc(fs);
  REQUIRE(!c.load(bc).is_error());
  CHECK(std::string(c.set_context(48, nullptr).error().message) == "context: no memory for the RoPE table");
}

TEST_CASE("a ROP.BIN that follows another rule is not extended", "[rope]") {
  using namespace testutil;
  SynthSpec spec = qwen_spec(2);
  Files f = make_bundle(spec);
  // Row 15's first cosine, slightly off: still a cosine to the loader.
  uint32_t rot = 8;   // qwen_spec's rotary dims, checked below
  float* v = reinterpret_cast<float*>(f["ROP.BIN"].data()) + 15 * rot;
  *v = *v * 0.99f;
  llm::Model m;
  MapBundle b(f);
  REQUIRE(!m.load(b).is_error());
  REQUIRE(m.config().rot_dim() == rot);
  std::vector<float> table(m.rope_table_floats(32));
  auto r = m.set_context(32, table.data());
  REQUIRE(r.is_error());
  CHECK(std::string(r.error().message) ==
        "ROP.BIN: row 15 is not cos/sin of pos * rope_theta^(-2i/rot); context stays 16");
  CHECK(m.config().runtime_seq_len == 16);
}
