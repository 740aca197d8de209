// Helpers shared by the runtime's host tests: bundles in memory (written by
// the test itself, or read from a directory), HDMP dumps, running the
// Python reference, and locating test models.
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "llm.h"

namespace testutil {

using Files = std::map<std::string, std::vector<uint8_t>>;

// A BundleSource over a map of file name -> bytes (vector storage from
// operator new is suitably aligned).
class MapBundle : public llm::BundleSource {
 public:
  explicit MapBundle(const Files& f) : files_(f) {}
  bool get(const char* name, llm::Bytes* out) override {
    auto it = files_.find(name);
    if (it == files_.end()) return false;
    out->data = it->second.data();
    out->size = it->second.size();
    return true;
  }

 private:
  const Files& files_;
};

inline bool read_file(const std::string& path, std::vector<uint8_t>* out) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return false;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  out->resize(size_t(n));
  bool ok = n == 0 || fread(out->data(), 1, size_t(n), f) == size_t(n);
  fclose(f);
  return ok;
}

// Every *.BIN file of a bundle directory that the runtime may read.
inline bool read_bundle_dir(const std::string& dir, Files* files) {
  std::vector<uint8_t> b;
  if (!read_file(dir + "/CFG.BIN", &b)) return false;
  (*files)["CFG.BIN"] = b;
  for (const char* n : {"EMB.BIN", "NRM.BIN", "ROP.BIN", "LTY.BIN", "PMT.BIN", "EXP.BIN"})
    if (read_file(dir + "/" + n, &b)) (*files)[n] = b;
  for (int l = 0; l < 100; l++) {
    char name[8];
    llm::layer_file_name(uint32_t(l), name);
    if (read_file(dir + "/" + name, &b)) (*files)[name] = b;
  }
  return true;
}

// A bundle directory: absent (no CFG.BIN: a test leaves it out and says so),
// or read and loaded. A bundle that exists but does not load is a loader bug,
// never "absent": the caller fails with `error`, so a regression on one bundle
// cannot quietly drop it from the exactness tests.
enum class BundleState { Absent, Loaded, Refused };
inline BundleState load_bundle_dir(const std::string& dir, Files* files, llm::Model* model, std::string* error) {
  if (!read_bundle_dir(dir, files)) return BundleState::Absent;
  MapBundle b(*files);
  auto r = model->load(b);
  if (r.is_error()) {
    *error = dir + " exists but does not load: " + r.error().message;
    return BundleState::Refused;
  }
  return BundleState::Loaded;
}

inline std::string models_dir() {
  const char* e = getenv("KAI_TEST_MODELS");
  return e && *e ? e : "build/models";
}
inline std::string shared_models_dir() {
  const char* e = getenv("KAI_SHARED_MODELS");
  return e && *e ? e : "../shared/models";
}
inline bool file_exists(const std::string& p) {
  FILE* f = fopen(p.c_str(), "rb");
  if (f) fclose(f);
  return f != nullptr;
}

inline std::vector<uint32_t> u32_list(const std::vector<uint8_t>& b) {  // PMT/EXP
  std::vector<uint32_t> v;
  if (b.size() < 4) return v;
  uint32_t n = llm::load_u32(b.data());
  for (uint32_t i = 0; i < n && 4 + 4 * size_t(i) + 4 <= b.size(); i++) v.push_back(llm::load_u32(b.data() + 4 + 4 * i));
  return v;
}

// Runs a shell command and returns its stdout; rc gets the exit status.
inline std::string run_command(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

inline std::vector<uint32_t> parse_ids(const std::string& s) {
  std::vector<uint32_t> v;
  const char* p = s.c_str();
  char* end;
  while (*p) {
    unsigned long x = strtoul(p, &end, 10);
    if (end == p) { p++; continue; }
    v.push_back(uint32_t(x));
    p = end;
  }
  return v;
}

struct Dump {  // HDMP: [positions][n_layers + 1][dim]
  uint32_t n_positions = 0, n_layers = 0, dim = 0;
  std::vector<float> data;
  const float* at(uint32_t pos, uint32_t layer) const {
    return data.data() + (size_t(pos) * (n_layers + 1) + layer) * dim;
  }
};

inline bool read_dump(const std::string& path, Dump* d) {
  std::vector<uint8_t> b;
  if (!read_file(path, &b) || b.size() < 16) return false;
  if (llm::load_u32(b.data()) != 0x504D4448) return false;
  d->n_positions = llm::load_u32(b.data() + 4);
  d->n_layers = llm::load_u32(b.data() + 8);
  d->dim = llm::load_u32(b.data() + 12);
  size_t n = size_t(d->n_positions) * (d->n_layers + 1) * d->dim;
  if (b.size() != 16 + 4 * n) return false;
  d->data.resize(n);
  memcpy(d->data.data(), b.data() + 16, 4 * n);
  return true;
}

// ---------------------------------------------------------------- synthetic bundles
// Small random bundles written by the tests themselves, independent of the
// Python tools: used for loader validation and fuzzing.
struct SynthSpec {
  uint32_t version = 1;  // 1, 2 or 3
  bool qwen = false;
  bool f32 = false;
  uint32_t flags = 3;
  uint32_t dim = 32, hidden = 48, n_layers = 2, n_heads = 4, n_kv = 2, head_dim = 8;
  uint32_t vocab = 64, seq_len = 64, rsl = 16;
  float eps = 1e-5f, theta = 10000.0f;
  uint32_t rot = 8;
  uint32_t lk = 1, lv = 2, lkd = 8, lvd = 8, conv = 4;
  std::vector<uint32_t> lty;  // qwen layer types
  uint32_t seed = 1;
};

class Writer {
 public:
  std::vector<uint8_t> b;
  void u32(uint32_t v) { for (int i = 0; i < 4; i++) b.push_back(uint8_t(v >> (8 * i))); }
  void f32(float f) { uint32_t u; memcpy(&u, &f, 4); u32(u); }
};

inline void put_matrix(Writer& w, std::mt19937& rng, uint32_t rows, uint32_t cols, bool f32, float amp) {
  std::uniform_real_distribution<float> U(-amp, amp);
  std::vector<float> m(size_t(rows) * cols);
  for (auto& x : m) x = U(rng);
  if (f32) {
    for (float x : m) w.f32(x);
    return;
  }
  std::vector<int8_t> q(m.size());
  for (uint32_t r = 0; r < rows; r++) {
    float mx = 0;
    for (uint32_t c = 0; c < cols; c++) mx = std::max(mx, std::fabs(m[size_t(r) * cols + c]));
    float s = mx > 0 ? mx / 127 : 1.0f;
    w.f32(s);
    for (uint32_t c = 0; c < cols; c++) q[size_t(r) * cols + c] = int8_t(std::lround(m[size_t(r) * cols + c] / s));
  }
  for (int8_t v : q) w.b.push_back(uint8_t(v));
}

inline void put_vec(Writer& w, std::mt19937& rng, uint32_t n, float lo, float hi) {
  std::uniform_real_distribution<float> U(lo, hi);
  for (uint32_t i = 0; i < n; i++) w.f32(U(rng));
}

inline Files make_bundle(const SynthSpec& s) {
  std::mt19937 rng(s.seed);
  Files files;
  Writer cfg;
  cfg.u32(0x31474643);
  cfg.u32(s.version);
  uint32_t hd = s.version == 1 ? s.dim / s.n_heads : s.head_dim;
  uint32_t rot = s.version == 1 || !s.qwen ? hd : s.rot;
  if (s.version == 1) {
    for (uint32_t v : {s.dim, s.hidden, s.n_layers, s.n_heads, s.n_kv, s.vocab, s.seq_len, s.rsl}) cfg.u32(v);
    cfg.f32(s.eps);
    cfg.f32(s.theta);
  } else {
    cfg.u32(s.qwen ? 1 : 0);
    cfg.u32(s.qwen ? s.flags : 0);
    for (uint32_t v : {s.dim, s.hidden, s.n_layers, s.n_heads, s.n_kv, hd, s.vocab, s.seq_len, s.rsl}) cfg.u32(v);
    cfg.f32(s.eps);
    cfg.f32(s.theta);
    cfg.u32(rot);
    if (s.qwen) for (uint32_t v : {s.lk, s.lv, s.lkd, s.lvd, s.conv}) cfg.u32(v);
    else for (int i = 0; i < 5; i++) cfg.u32(0);
    if (s.version == 3) cfg.u32(s.f32 ? 1 : 0);
  }
  files["CFG.BIN"] = cfg.b;
  bool f32 = s.version == 3 && s.f32;
  Writer emb;
  put_matrix(emb, rng, s.vocab, s.dim, f32, 1.0f);
  files["EMB.BIN"] = emb.b;
  Writer nrm;
  put_vec(nrm, rng, s.dim, 0.8f, 1.2f);
  files["NRM.BIN"] = nrm.b;
  Writer rop;
  for (uint32_t p = 0; p < s.rsl; p++) {
    for (uint32_t i = 0; i < rot / 2; i++) rop.f32(float(std::cos(p / std::pow(double(s.theta), 2.0 * i / rot))));
    for (uint32_t i = 0; i < rot / 2; i++) rop.f32(float(std::sin(p / std::pow(double(s.theta), 2.0 * i / rot))));
  }
  files["ROP.BIN"] = rop.b;
  std::vector<uint32_t> lty = s.lty;
  if (s.qwen) {
    if (lty.empty()) for (uint32_t l = 0; l < s.n_layers; l++) lty.push_back(l % 2 == 0 ? 1 : 0);
    Writer t;
    t.u32(s.n_layers);
    for (uint32_t v : lty) t.u32(v);
    files["LTY.BIN"] = t.b;
  }
  uint32_t kd = s.lk * s.lkd, vd = s.lv * s.lvd, cd = 2 * kd + vd;
  float a_in = 1.0f / std::sqrt(float(s.dim)), a_h = 1.0f / std::sqrt(float(s.hidden));
  for (uint32_t l = 0; l < s.n_layers; l++) {
    Writer w;
    put_vec(w, rng, s.dim, 0.8f, 1.2f);
    put_vec(w, rng, s.dim, 0.8f, 1.2f);
    bool linear = s.qwen && lty[l] == 1;
    if (linear) {
      put_vec(w, rng, cd * s.conv, -0.5f, 0.5f);
      put_vec(w, rng, s.lv, -0.5f, 0.5f);   // dt_bias
      put_vec(w, rng, s.lv, -1.0f, 0.5f);   // A_log
      put_vec(w, rng, s.lvd, 0.8f, 1.2f);   // norm
      put_matrix(w, rng, cd, s.dim, f32, a_in);
      put_matrix(w, rng, vd, s.dim, f32, a_in);
      put_matrix(w, rng, s.lv, s.dim, f32, a_in);
      put_matrix(w, rng, s.lv, s.dim, f32, a_in);
      put_matrix(w, rng, s.dim, vd, f32, 1.0f / std::sqrt(float(vd)));
    } else {
      if (s.qwen && (s.flags & 2)) {
        put_vec(w, rng, hd, 0.8f, 1.2f);
        put_vec(w, rng, hd, 0.8f, 1.2f);
      }
      uint32_t qrows = s.n_heads * hd * (s.qwen && (s.flags & 1) ? 2 : 1);
      put_matrix(w, rng, qrows, s.dim, f32, a_in);
      put_matrix(w, rng, s.n_kv * hd, s.dim, f32, a_in);
      put_matrix(w, rng, s.n_kv * hd, s.dim, f32, a_in);
      put_matrix(w, rng, s.dim, s.n_heads * hd, f32, 1.0f / std::sqrt(float(s.n_heads * hd)));
    }
    put_matrix(w, rng, s.hidden, s.dim, f32, a_in);
    put_matrix(w, rng, s.hidden, s.dim, f32, a_in);
    put_matrix(w, rng, s.dim, s.hidden, f32, a_h);
    char name[8];
    llm::layer_file_name(l, name);
    files[name] = w.b;
  }
  return files;
}

inline SynthSpec llama_spec() { return SynthSpec{}; }
inline SynthSpec qwen_spec(uint32_t version = 2, bool f32 = false) {
  SynthSpec s;
  s.version = version;
  s.qwen = true;
  s.f32 = f32;
  s.n_layers = 4;
  s.n_heads = 2;
  s.n_kv = 1;
  s.head_dim = 16;
  s.rot = 8;
  s.eps = 1e-6f;
  s.lty = {1, 1, 1, 0};
  return s;
}

// A loaded model plus session over its own memory.
struct Runtime {
  llm::Model model;
  llm::Session session;
  std::vector<uint8_t> mem;
  std::string error;
  bool ok = false;
  Runtime(const Files& files, llm::SessionOptions opt = {}) {
    MapBundle b(files);
    auto r = model.load(b);
    if (r.is_error()) {
      error = r.error().message;
      return;
    }
    mem.resize(llm::Session::bytes_needed(model.config()) + 64);
    uintptr_t p = (reinterpret_cast<uintptr_t>(mem.data()) + 63) & ~uintptr_t(63);
    auto s = session.init(model, reinterpret_cast<void*>(p), mem.size() - (p - reinterpret_cast<uintptr_t>(mem.data())), opt);
    if (s.is_error()) {
      error = s.error().message;
      return;
    }
    ok = true;
  }
};

}  // namespace testutil
