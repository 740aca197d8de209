#include "llm_model.h"
#include "llm_rope.h"

namespace llm {
namespace {

// Walks a file's bytes in order, handing out vectors and matrices.
// Sizes were validated before, so the cursor never passes the end.
struct Cursor {
  const uint8_t* p;
  WeightFormat fmt;
  const float* vec(uint64_t n) {
    auto* v = reinterpret_cast<const float*>(p);
    p += n * 4;
    return v;
  }
  Matrix mat(uint32_t rows, uint32_t cols) {
    Matrix m;
    m.rows = rows;
    m.cols = cols;
    if (fmt == WeightFormat::F32) {
      m.f = reinterpret_cast<const float*>(p);
      p += uint64_t(rows) * cols * 4;
    } else {
      m.scales = p;
      m.q = reinterpret_cast<const int8_t*>(p + uint64_t(rows) * 4);
      p += uint64_t(rows) * 4 + uint64_t(rows) * cols;
    }
    return m;
  }
};

LayerView view_layer(const Config& c, const uint8_t* blob, uint32_t l) {
  LayerView v;
  Cursor cur{blob, c.weight_format};
  v.in_norm = cur.vec(c.dim);
  v.post_norm = cur.vec(c.dim);
  if (c.is_qwen() && c.is_linear(l)) {
    v.conv = cur.vec(uint64_t(c.conv_dim()) * c.conv_kernel);
    v.dt_bias = cur.vec(c.lin_v_heads);
    v.a_log = cur.vec(c.lin_v_heads);
    v.gnorm = cur.vec(c.lin_v_dim);
    v.in_qkv = cur.mat(c.conv_dim(), c.dim);
    v.in_z = cur.mat(c.value_dim(), c.dim);
    v.in_a = cur.mat(c.lin_v_heads, c.dim);
    v.in_b = cur.mat(c.lin_v_heads, c.dim);
    v.out = cur.mat(c.dim, c.value_dim());
  } else {
    if (c.qk_norm()) {
      v.q_norm = cur.vec(c.head_dim);
      v.k_norm = cur.vec(c.head_dim);
    }
    v.wq = cur.mat(c.q_proj_rows(), c.dim);
    v.wk = cur.mat(c.kv_dim(), c.dim);
    v.wv = cur.mat(c.kv_dim(), c.dim);
    v.wo = cur.mat(c.dim, c.q_dim());
  }
  v.gate = cur.mat(c.hidden_dim, c.dim);
  v.up = cur.mat(c.hidden_dim, c.dim);
  v.down = cur.mat(c.dim, c.hidden_dim);
  return v;
}

ErrorOr<void, Error> check_finite(const char* file, const char* what, const float* v, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    if (!is_finite(v[i]))
      return Error::make(ErrorCode::BadValue).str(file).str(": ").str(what).str("[").num(i).str("] is not finite");
  }
  return {};
}

ErrorOr<void, Error> check_matrix(const char* file, const char* what, const Matrix& m) {
  if (m.f) return check_finite(file, what, m.f, uint64_t(m.rows) * m.cols);
  for (uint32_t r = 0; r < m.rows; r++) {
    float s = m.scale(r);
    if (!is_finite(s))
      return Error::make(ErrorCode::BadValue).str(file).str(": ").str(what).str(" scale[").num(r).str("] is not finite");
  }
  return {};
}

ErrorOr<void, Error> check_layer(const Config& c, const LayerView& v, const char* file, uint32_t l) {
  TRY(check_finite(file, "input_norm", v.in_norm, c.dim));
  TRY(check_finite(file, "post_attn_norm", v.post_norm, c.dim));
  if (c.is_qwen() && c.is_linear(l)) {
    TRY(check_finite(file, "conv1d", v.conv, uint64_t(c.conv_dim()) * c.conv_kernel));
    TRY(check_finite(file, "dt_bias", v.dt_bias, c.lin_v_heads));
    TRY(check_finite(file, "A_log", v.a_log, c.lin_v_heads));
    TRY(check_finite(file, "norm", v.gnorm, c.lin_v_dim));
    TRY(check_matrix(file, "in_proj_qkv", v.in_qkv));
    TRY(check_matrix(file, "in_proj_z", v.in_z));
    TRY(check_matrix(file, "in_proj_a", v.in_a));
    TRY(check_matrix(file, "in_proj_b", v.in_b));
    TRY(check_matrix(file, "out_proj", v.out));
  } else {
    if (v.q_norm) {
      TRY(check_finite(file, "q_norm", v.q_norm, c.head_dim));
      TRY(check_finite(file, "k_norm", v.k_norm, c.head_dim));
    }
    TRY(check_matrix(file, "q_proj", v.wq));
    TRY(check_matrix(file, "k_proj", v.wk));
    TRY(check_matrix(file, "v_proj", v.wv));
    TRY(check_matrix(file, "o_proj", v.wo));
  }
  TRY(check_matrix(file, "gate_proj", v.gate));
  TRY(check_matrix(file, "up_proj", v.up));
  TRY(check_matrix(file, "down_proj", v.down));
  return {};
}

// Fetches a file and checks presence, exact size and alignment.
ErrorOr<const uint8_t*, Error> fetch(BundleSource& src, const char* name, uint64_t expected) {
  Bytes b;
  if (!src.get(name, &b) || (!b.data && b.size))
    return Error::make(ErrorCode::MissingFile).str(name).str(": missing");
  if (b.size != expected)
    return Error::make(ErrorCode::BadSize).str(name).str(": size ").num(b.size).str(" bytes, expected ").num(expected);
  if (reinterpret_cast<uintptr_t>(b.data) % 4)
    return Error::make(ErrorCode::BadAlignment).str(name).str(": buffer is not 4-byte aligned");
  static const uint8_t empty[4] = {};
  return b.data ? b.data : empty;
}

}  // namespace

bool MemoryBundle::add(const char* name, const void* data, size_t size) {
  if (n_ >= kMaxFiles || str_len(name) >= sizeof(files_[0].name)) return false;
  Entry& e = files_[n_++];
  size_t i = 0;
  for (; name[i]; i++) e.name[i] = name[i];
  e.name[i] = 0;
  e.bytes.data = static_cast<const uint8_t*>(data);
  e.bytes.size = size;
  return true;
}

bool MemoryBundle::get(const char* name, Bytes* out) {
  for (uint32_t i = 0; i < n_; i++) {
    if (str_eq(files_[i].name, name)) {
      *out = files_[i].bytes;
      return true;
    }
  }
  return false;
}

ErrorOr<void, Error> Model::load(BundleSource& src) {
  loaded_ = false;
  Bytes cfg_bytes, lty_bytes;
  if (!src.get("CFG.BIN", &cfg_bytes) || !cfg_bytes.data)
    return Error::make(ErrorCode::MissingFile).str("CFG.BIN: missing");
  bool have_lty = src.get("LTY.BIN", &lty_bytes) && (lty_bytes.data || lty_bytes.size == 0);
  Config c;
  TRY(parse_config(cfg_bytes.data, cfg_bytes.size, lty_bytes.data, lty_bytes.size, have_lty, &c));
  uint64_t total = cfg_bytes.size + (c.is_qwen() ? lty_bytes.size : 0);

  const uint8_t* emb = TRY(fetch(src, "EMB.BIN", c.emb_bytes()));
  Cursor ec{emb, c.weight_format};
  TRY(check_matrix("EMB.BIN", "embedding", ec.mat(c.vocab_size, c.dim)));
  const uint8_t* nrm = TRY(fetch(src, "NRM.BIN", c.nrm_bytes()));
  TRY(check_finite("NRM.BIN", "norm", reinterpret_cast<const float*>(nrm), c.dim));
  const uint8_t* rop = TRY(fetch(src, "ROP.BIN", c.rop_bytes()));
  auto* ropf = reinterpret_cast<const float*>(rop);
  uint64_t nrop = uint64_t(c.runtime_seq_len) * c.rot_dim();
  for (uint64_t i = 0; i < nrop; i++) {
    // cos/sin values: anything outside [-1, 1] (or NaN) is corruption.
    if (!(ropf[i] >= -1.0001f && ropf[i] <= 1.0001f))
      return Error::make(ErrorCode::BadValue).str("ROP.BIN: value[").num(i).str("] is not a cosine/sine");
  }
  total += c.emb_bytes() + c.nrm_bytes() + c.rop_bytes();

  for (uint32_t l = 0; l < c.n_layers; l++) {
    char name[8];
    layer_file_name(l, name);
    const uint8_t* blob = TRY(fetch(src, name, c.layer_bytes(l)));
    TRY(check_layer(c, view_layer(c, blob, l), name, l));
    layers_[l] = blob;
    total += c.layer_bytes(l);
  }
  cfg_ = c;
  emb_ = emb;
  nrm_ = reinterpret_cast<const float*>(nrm);
  rop_ = ropf;
  bundle_rows_ = c.runtime_seq_len;
  bytes_ = total;
  loaded_ = true;
  return {};
}

ErrorOr<void, Error> Model::set_context(uint32_t context, float* table) {
  if (!loaded_) return Error::make(ErrorCode::BadValue).str("context: no model loaded");
  if (context == 0 || context > cfg_.seq_len || context > kMaxRuntimeSeqLen)
    return Error::make(ErrorCode::BadValue).str("context ").num(context).str(" is not in 1..").num(
        cfg_.seq_len < kMaxRuntimeSeqLen ? cfg_.seq_len : kMaxRuntimeSeqLen);
  if (context <= bundle_rows_) {
    cfg_.runtime_seq_len = context;   // the bundle's table has every row
    return {};
  }
  if (table == nullptr) return Error::make(ErrorCode::BadValue).str("context: no memory for the RoPE table");
  uint32_t rot = cfg_.rot_dim();
  // The bundle's own rows (always those: a shorter context gives the same
  // numbers), checked against the computation at its last row.
  const float* bundle = rop_ == table ? nullptr : rop_;
  if (bundle != nullptr) {
    for (uint64_t i = 0; i < uint64_t(bundle_rows_) * rot; i++) table[i] = bundle[i];
  }
  if (bundle_rows_ > 0) {
    // Computed into the next row's place (overwritten below): no stack array.
    float* row = table + size_t(bundle_rows_) * rot;
    rope_row_compute(cfg_, bundle_rows_ - 1, row);
    const float* last = table + size_t(bundle_rows_ - 1) * rot;
    for (uint32_t i = 0; i < rot; i++) {
      float d = row[i] - last[i];
      if (d > 1e-5f || d < -1e-5f)
        return Error::make(ErrorCode::BadValue).str("ROP.BIN: row ").num(bundle_rows_ - 1).str(
            " is not cos/sin of pos * rope_theta^(-2i/rot); context stays ").num(bundle_rows_);
    }
  }
  for (uint32_t pos = bundle_rows_; pos < context; pos++) rope_row_compute(cfg_, pos, table + size_t(pos) * rot);
  rop_ = table;
  cfg_.runtime_seq_len = context;
  return {};
}

Matrix Model::embedding() const {
  Cursor cur{emb_, cfg_.weight_format};
  return cur.mat(cfg_.vocab_size, cfg_.dim);
}

LayerView Model::layer(uint32_t l) const { return view_layer(cfg_, layers_[l], l); }

}  // namespace llm
