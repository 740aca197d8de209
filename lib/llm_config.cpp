#include "llm_config.h"

namespace llm {
namespace {

Error field_error(const char* field, uint64_t value, const char* what) {
  return Error::make(ErrorCode::BadField).str("CFG.BIN: ").str(field).str("=").num(value).str(" ").str(what);
}

// Checks 1 <= value <= max for a named header field.
ErrorOr<void, Error> check_range(const char* field, uint32_t value, uint32_t max) {
  if (value == 0) return field_error(field, value, "must be non-zero");
  if (value > max) {
    Error e = field_error(field, value, "exceeds the limit ");
    e.num(max);
    return e;
  }
  return {};
}

}  // namespace

uint32_t Config::n_linear_layers() const {
  uint32_t n = 0;
  for (uint32_t l = 0; l < n_layers && l < kMaxLayers; l++) n += is_linear(l);
  return n;
}

uint64_t Config::layer_bytes(uint32_t l) const {
  uint64_t d = dim, h = hidden_dim;
  uint64_t mlp = matrix_bytes(h, d) * 2 + matrix_bytes(d, h);
  uint64_t norms = 2 * d * 4;
  if (!is_qwen()) {
    return norms + matrix_bytes(q_dim(), d) + 2 * matrix_bytes(kv_dim(), d) + matrix_bytes(d, q_dim()) + mlp;
  }
  if (!is_linear(l)) {
    uint64_t qk = qk_norm() ? 2 * uint64_t(head_dim) * 4 : 0;
    return norms + qk + matrix_bytes(q_proj_rows(), d) + 2 * matrix_bytes(kv_dim(), d) +
           matrix_bytes(d, q_dim()) + mlp;
  }
  uint64_t vecs = uint64_t(conv_dim()) * conv_kernel * 4 + 2 * uint64_t(lin_v_heads) * 4 + uint64_t(lin_v_dim) * 4;
  return norms + vecs + matrix_bytes(conv_dim(), d) + matrix_bytes(value_dim(), d) +
         2 * matrix_bytes(lin_v_heads, d) + matrix_bytes(d, value_dim()) + mlp;
}

uint64_t Config::n_params() const {
  uint64_t n = uint64_t(vocab_size) * dim + dim;
  for (uint32_t l = 0; l < n_layers; l++) {
    // Every 4-byte vector element and every matrix element is one parameter;
    // for q8 the per-row scales are not parameters.
    uint64_t b = layer_bytes(l);
    if (weight_format == WeightFormat::F32) {
      n += b / 4;
      continue;
    }
    uint64_t d = dim, h = hidden_dim, vec = 2 * d, mat = 3 * d * h;
    if (!is_qwen() || !is_linear(l)) {
      if (qk_norm()) vec += 2 * uint64_t(head_dim);
      mat += uint64_t(q_proj_rows()) * d + 2 * uint64_t(kv_dim()) * d + d * q_dim();
    } else {
      vec += uint64_t(conv_dim()) * conv_kernel + 2 * uint64_t(lin_v_heads) + lin_v_dim;
      mat += uint64_t(conv_dim()) * d + uint64_t(value_dim()) * d + 2 * uint64_t(lin_v_heads) * d +
             d * value_dim();
    }
    n += vec + mat;
  }
  return n;
}

void layer_file_name(uint32_t layer, char buf[8]) {
  buf[0] = 'L';
  buf[1] = char('0' + layer / 10 % 10);
  buf[2] = char('0' + layer % 10);
  buf[3] = '.'; buf[4] = 'B'; buf[5] = 'I'; buf[6] = 'N'; buf[7] = 0;
}

ErrorOr<void, Error> parse_config(const uint8_t* cfg, size_t cfg_size, const uint8_t* lty,
                                  size_t lty_size, bool have_lty, Config* out) {
  Config c;
  if (cfg_size < 8)
    return Error::make(ErrorCode::BadSize).str("CFG.BIN: size ").num(cfg_size).str(" bytes, too small for a header");
  uint32_t magic = load_u32(cfg);
  if (magic != kCfgMagic)
    return Error::make(ErrorCode::BadMagic).str("CFG.BIN: magic=").num(magic).str(" is not 0x31474643 (CFG1)");
  c.version = load_u32(cfg + 4);
  size_t need = c.version == 1 ? 48 : c.version == 2 ? 84 : c.version == 3 ? 88 : 0;
  if (need == 0)
    return Error::make(ErrorCode::BadVersion).str("CFG.BIN: version=").num(c.version).str(" is not 1, 2 or 3");
  // A longer file is accepted (trailing bytes ignored) so a future exporter
  // that pads the header still loads; a shorter one never is.
  if (cfg_size < need || cfg_size > 4096)
    return Error::make(ErrorCode::BadSize).str("CFG.BIN: size ").num(cfg_size).str(" bytes, expected ").num(need);
  auto u = [&](int i) { return load_u32(cfg + 4 * i); };
  auto f = [&](int i) { return load_f32(cfg + 4 * i); };
  if (c.version == 1) {
    c.family = Family::Llama;
    c.dim = u(2); c.hidden_dim = u(3); c.n_layers = u(4); c.n_heads = u(5); c.n_kv_heads = u(6);
    c.vocab_size = u(7); c.seq_len = u(8); c.runtime_seq_len = u(9);
    c.rms_eps = f(10); c.rope_theta = f(11);
  } else {
    uint32_t kind = u(2);
    if (kind > 1)
      return Error::make(ErrorCode::BadVersion).str("CFG.BIN: model_kind=").num(kind).str(" is not 0 (llama) or 1 (qwen)");
    if (c.version == 2 && kind != 1)
      return Error::make(ErrorCode::BadVersion).str("CFG.BIN: model_kind=").num(kind).str(" must be 1 (qwen) in version 2");
    c.family = kind == 1 ? Family::Qwen : Family::Llama;
    c.flags = u(3);
    c.dim = u(4); c.hidden_dim = u(5); c.n_layers = u(6); c.n_heads = u(7); c.n_kv_heads = u(8);
    c.head_dim = u(9); c.vocab_size = u(10); c.seq_len = u(11); c.runtime_seq_len = u(12);
    c.rms_eps = f(13); c.rope_theta = f(14); c.rope_rotary_dim = u(15);
    c.lin_k_heads = u(16); c.lin_v_heads = u(17); c.lin_k_dim = u(18); c.lin_v_dim = u(19);
    c.conv_kernel = u(20);
    if (c.version == 3) {
      uint32_t wf = u(21);
      if (wf > 1)
        return Error::make(ErrorCode::BadVersion).str("CFG.BIN: weight_format=").num(wf).str(" is not 0 (q8) or 1 (f32)");
      c.weight_format = wf ? WeightFormat::F32 : WeightFormat::Q8;
    }
  }

  TRY(check_range("dim", c.dim, kMaxDim));
  TRY(check_range("hidden_dim", c.hidden_dim, kMaxHidden));
  TRY(check_range("n_layers", c.n_layers, kMaxLayers));
  TRY(check_range("n_heads", c.n_heads, kMaxHeads));
  TRY(check_range("n_kv_heads", c.n_kv_heads, c.n_heads));
  if (c.n_heads % c.n_kv_heads)
    return field_error("n_kv_heads", c.n_kv_heads, "does not divide n_heads");
  TRY(check_range("vocab_size", c.vocab_size, kMaxVocab));
  TRY(check_range("seq_len", c.seq_len, kMaxSeqLen));
  TRY(check_range("runtime_seq_len", c.runtime_seq_len, kMaxRuntimeSeqLen));
  if (c.runtime_seq_len > c.seq_len)
    return field_error("runtime_seq_len", c.runtime_seq_len, "exceeds seq_len");
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f))
    return Error::make(ErrorCode::BadField).str("CFG.BIN: rms_eps=").fnum(c.rms_eps).str(" must be in (0, 1)");
  if (!(c.rope_theta > 0.0f) || !is_finite(c.rope_theta))
    return Error::make(ErrorCode::BadField).str("CFG.BIN: rope_theta=").fnum(c.rope_theta).str(" must be positive and finite");

  if (c.version == 1) {
    if (c.dim % c.n_heads) return field_error("n_heads", c.n_heads, "does not divide dim");
    c.head_dim = c.dim / c.n_heads;
    c.rope_rotary_dim = c.head_dim;
  }
  TRY(check_range("head_dim", c.head_dim, kMaxHeadDim));
  if (c.head_dim % 2) return field_error("head_dim", c.head_dim, "must be even");
  if (c.family == Family::Llama && c.rope_rotary_dim != c.head_dim)
    return field_error("rope_rotary_dim", c.rope_rotary_dim, "must equal head_dim for llama");
  TRY(check_range("rope_rotary_dim", c.rope_rotary_dim, c.head_dim));
  if (c.rope_rotary_dim % 2) return field_error("rope_rotary_dim", c.rope_rotary_dim, "must be even");
  if (c.family == Family::Llama) {
    const char* names[] = {"linear_num_k_heads", "linear_num_v_heads", "linear_key_head_dim",
                           "linear_value_head_dim", "linear_conv_kernel"};
    uint32_t vals[] = {c.lin_k_heads, c.lin_v_heads, c.lin_k_dim, c.lin_v_dim, c.conv_kernel};
    for (int i = 0; i < 5; i++)
      if (vals[i]) return field_error(names[i], vals[i], "must be 0 for llama");
  } else if (c.flags != (kFlagAttnGate | kFlagQkNorm)) {
    // The course layout (gate rows in q_proj, q_norm/k_norm in the blob) is
    // the only one any exporter writes; other flag values are not defined.
    return field_error("flags", c.flags, "unsupported (qwen needs 3: output gate and q/k norm)");
  }

  if (c.family == Family::Qwen) {
    if (!have_lty)
      return Error::make(ErrorCode::MissingFile).str("LTY.BIN: missing (required for qwen models)");
    if (lty_size != c.lty_bytes())
      return Error::make(ErrorCode::BadSize).str("LTY.BIN: size ").num(lty_size).str(" bytes, expected ").num(c.lty_bytes());
    uint32_t n = load_u32(lty);
    if (n != c.n_layers)
      return Error::make(ErrorCode::BadField).str("LTY.BIN: n_layers=").num(n).str(" does not match CFG.BIN n_layers=").num(c.n_layers);
    for (uint32_t l = 0; l < c.n_layers; l++) {
      uint32_t t = load_u32(lty + 4 + 4 * l);
      if (t > 1)
        return Error::make(ErrorCode::BadValue).str("LTY.BIN: layer ").num(l).str(" type=").num(t).str(" is not 0 or 1");
      c.layer_type[l] = t ? LayerType::Linear : LayerType::Full;
    }
    if (c.n_linear_layers()) {
      TRY(check_range("linear_num_k_heads", c.lin_k_heads, kMaxHeads));
      TRY(check_range("linear_num_v_heads", c.lin_v_heads, kMaxHeads));
      if (c.lin_v_heads % c.lin_k_heads)
        return field_error("linear_num_k_heads", c.lin_k_heads, "does not divide linear_num_v_heads");
      TRY(check_range("linear_key_head_dim", c.lin_k_dim, kMaxHeadDim));
      TRY(check_range("linear_value_head_dim", c.lin_v_dim, kMaxHeadDim));
      TRY(check_range("linear_conv_kernel", c.conv_kernel, kMaxConvKernel));
    }
  }
  *out = c;
  return {};
}

}  // namespace llm
