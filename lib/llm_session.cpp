#include "llm_session.h"
#include "llm_math.h"

namespace llm {
namespace {

// Memory layout of a session: every array starts 64-byte aligned.
struct Layout {
  size_t off = 0;
  size_t take(size_t bytes) {
    size_t at = off;
    off += (bytes + 63) & ~size_t(63);
    return at;
  }
};

uint32_t max3(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t m = a > b ? a : b;
  return m > c ? m : c;
}

struct Sizes {
  size_t x, xb, xb2, hidden, q, k, v, att, ao, hb, hb2, z, ab, tmp, actq, acts, kc, vc, conv, ssm, total;
};

Sizes layout(const Config& c) {
  Layout L;
  Sizes s;
  size_t f = 4;
  uint32_t max_cols = max3(c.dim, c.hidden_dim, max3(c.q_dim(), c.value_dim(), 1));
  s.x = L.take(c.dim * f);
  s.xb = L.take(c.dim * f);
  s.xb2 = L.take(c.dim * f);
  s.hidden = L.take(c.dim * f);
  s.q = L.take(size_t(c.q_proj_rows() > c.conv_dim() ? c.q_proj_rows() : c.conv_dim()) * f);
  s.k = L.take(size_t(c.kv_dim()) * f);
  s.v = L.take(size_t(c.kv_dim()) * f);
  s.att = L.take(size_t(c.runtime_seq_len) * f);
  s.ao = L.take(size_t(c.q_dim() > c.value_dim() ? c.q_dim() : c.value_dim()) * f);
  s.hb = L.take(size_t(c.hidden_dim) * f);
  s.hb2 = L.take(size_t(c.hidden_dim) * f);
  s.z = L.take(size_t(c.value_dim()) * f);
  s.ab = L.take(size_t(2) * c.lin_v_heads * f);
  s.tmp = L.take(size_t(c.lin_v_dim) * f);
  s.actq = L.take(max_cols);
  s.acts = L.take(size_t(max_cols) * f);  // at most one group per value
  size_t nf = c.n_full_layers(), nl = c.n_linear_layers();
  s.kc = L.take(nf * c.runtime_seq_len * c.kv_dim() * f);
  s.vc = L.take(nf * c.runtime_seq_len * c.kv_dim() * f);
  s.conv = L.take(nl * c.conv_dim() * c.conv_kernel * f);
  s.ssm = L.take(nl * c.lin_v_heads * c.lin_k_dim * c.lin_v_dim * f);
  s.total = L.off;
  return s;
}

}  // namespace

ErrorOr<void, Error> check_request(const Config& cfg, const uint32_t* prompt, uint32_t n_prompt,
                                   uint32_t n_predict) {
  if (n_prompt == 0) return Error::make(ErrorCode::EmptyRequest).str("empty prompt");
  if (n_predict == 0) return Error::make(ErrorCode::EmptyRequest).str("nothing to predict (predict=0)");
  if (n_prompt > kMaxPrompt)
    return Error::make(ErrorCode::PromptTooLong).str("prompt too long: ").num(n_prompt).str(" tokens, at most ").num(kMaxPrompt);
  for (uint32_t i = 0; i < n_prompt; i++)
    if (prompt[i] >= cfg.vocab_size) return Error::make(ErrorCode::TokenOutOfRange).str("token ").num(i).str(" out of range");
  if (uint64_t(n_prompt) + n_predict > cfg.runtime_seq_len)
    return Error::make(ErrorCode::RequestTooLong).str("request too long for runtime_seq_len=").num(cfg.runtime_seq_len);
  return {};
}

size_t Session::bytes_needed(const Config& cfg) { return layout(cfg).total; }

ErrorOr<void, Error> Session::init(const Model& model, void* mem, size_t size, const SessionOptions& opt) {
  if (!model.loaded()) return Error::make(ErrorCode::BadField).str("session: model not loaded");
  const Config& c = model.config();
  Sizes s = layout(c);
  if (size < s.total)
    return Error::make(ErrorCode::NoMemory).str("not enough memory: session needs ").num(s.total).str(" bytes, have ").num(size);
  if (reinterpret_cast<uintptr_t>(mem) % 16)
    return Error::make(ErrorCode::BadAlignment).str("session: memory is not 16-byte aligned");
  auto* base = static_cast<uint8_t*>(mem);
  auto F = [&](size_t off) { return reinterpret_cast<float*>(base + off); };
  model_ = &model;
  cfg_ = &c;
  ops_ = &matvec_ops(opt.matvec);
  group_ = opt.int8_group;
  x_ = F(s.x); xb_ = F(s.xb); xb2_ = F(s.xb2); hidden_ = F(s.hidden);
  q_ = F(s.q); k_ = F(s.k); v_ = F(s.v); att_ = F(s.att); ao_ = F(s.ao);
  hb_ = F(s.hb); hb2_ = F(s.hb2); z_ = F(s.z); ab_ = F(s.ab); tmp_ = F(s.tmp);
  actq_ = reinterpret_cast<int8_t*>(base + s.actq);
  acts_ = F(s.acts);
  kcache_ = F(s.kc); vcache_ = F(s.vc); conv_ = F(s.conv); ssm_ = F(s.ssm);
  uint32_t nf = 0, nl = 0;
  for (uint32_t l = 0; l < c.n_layers; l++) slot_[l] = uint8_t(c.is_linear(l) ? nl++ : nf++);
  reset();
  return {};
}

void Session::reset() {
  const Config& c = *cfg_;
  pos_ = 0;
  fed_ = false;
  size_t nl = c.n_linear_layers();
  zero_floats(conv_, nl * c.conv_dim() * c.conv_kernel);
  zero_floats(ssm_, nl * c.lin_v_heads * c.lin_k_dim * c.lin_v_dim);
  zero_floats(hidden_, c.dim);
}

ActVec Session::prepare(const float* x, uint32_t n) {
  if (ops_->kind == MatvecKind::Int8) return quantize_act(x, n, group_, actq_, reinterpret_cast<uint8_t*>(acts_));
  ActVec a;
  a.x = x;
  a.n = n;
  return a;
}

void Session::attention(const LayerView& L, uint32_t slot) {
  const Config& c = *cfg_;
  uint32_t hd = c.head_dim, kvd = c.kv_dim(), rsl = c.runtime_seq_len;
  ActVec a = prepare(xb_, c.dim);
  mv(L.wq, a, q_);
  mv(L.wk, a, k_);
  mv(L.wv, a, v_);
  const float* cs = model_->rope_row(pos_);
  uint32_t qstride = c.attn_gate() ? 2 * hd : hd;  // qwen: per head, query rows then gate rows
  for (uint32_t h = 0; h < c.n_heads; h++) {
    float* qh = q_ + h * qstride;
    if (L.q_norm) rmsnorm(qh, qh, L.q_norm, hd, c.rms_eps);
    rope(qh, cs, c.rot_dim());
  }
  for (uint32_t h = 0; h < c.n_kv_heads; h++) {
    float* kh = k_ + h * hd;
    if (L.k_norm) rmsnorm(kh, kh, L.k_norm, hd, c.rms_eps);
    rope(kh, cs, c.rot_dim());
  }
  float* kc = kcache_ + size_t(slot) * rsl * kvd;
  float* vc = vcache_ + size_t(slot) * rsl * kvd;
  copy_floats(kc + size_t(pos_) * kvd, k_, kvd);
  copy_floats(vc + size_t(pos_) * kvd, v_, kvd);
  float inv_sqrt = 1.0f / sqrt_f(float(hd));
  uint32_t group = c.n_heads / c.n_kv_heads;
  for (uint32_t h = 0; h < c.n_heads; h++) {
    const float* qh = q_ + h * qstride;
    uint32_t kvh = h / group;
    for (uint32_t t = 0; t <= pos_; t++) att_[t] = dot(qh, kc + size_t(t) * kvd + kvh * hd, hd) * inv_sqrt;
    softmax(att_, pos_ + 1);
    float* out = ao_ + h * hd;
    zero_floats(out, hd);
    for (uint32_t t = 0; t <= pos_; t++) {
      const float* vt = vc + size_t(t) * kvd + kvh * hd;
      float p = att_[t];
      for (uint32_t i = 0; i < hd; i++) out[i] += p * vt[i];
    }
    if (c.attn_gate()) {
      const float* gate = q_ + h * qstride + hd;
      for (uint32_t i = 0; i < hd; i++) out[i] *= sigmoid_f(gate[i]);
    }
  }
  ActVec o = prepare(ao_, c.q_dim());
  mv(L.wo, o, xb2_);
}

void Session::deltanet(const LayerView& L, uint32_t slot) {
  const Config& c = *cfg_;
  uint32_t K = c.conv_kernel, cd = c.conv_dim(), nv = c.lin_v_heads, nk = c.lin_k_heads;
  uint32_t dk = c.lin_k_dim, dv = c.lin_v_dim, kd = c.key_dim();
  ActVec a = prepare(xb_, c.dim);
  mv(L.in_qkv, a, q_);
  mv(L.in_z, a, z_);
  mv(L.in_a, a, ab_);
  mv(L.in_b, a, ab_ + nv);
  // Causal depthwise conv: the state holds the last K inputs, oldest first.
  float* st = conv_ + size_t(slot) * cd * K;
  for (uint32_t ch = 0; ch < cd; ch++) {
    float* s = st + size_t(ch) * K;
    for (uint32_t j = 0; j + 1 < K; j++) s[j] = s[j + 1];
    s[K - 1] = q_[ch];
    const float* w = L.conv + size_t(ch) * K;
    float acc = 0;
    for (uint32_t j = 0; j < K; j++) acc += s[j] * w[j];
    q_[ch] = silu_f(acc);
  }
  float* qv = q_;
  float* kv = q_ + kd;
  const float* vv = q_ + 2 * kd;
  float qscale = 1.0f / sqrt_f(float(dk));
  for (uint32_t h = 0; h < nk; h++) {
    float* qh = qv + h * dk;
    l2norm(qh, dk, 1e-6f);
    for (uint32_t i = 0; i < dk; i++) qh[i] *= qscale;
    l2norm(kv + h * dk, dk, 1e-6f);
  }
  uint32_t per_k = nv / nk;
  for (uint32_t j = 0; j < nv; j++) {
    float beta = sigmoid_f(ab_[nv + j]);
    float g = -exp_f(L.a_log[j]) * softplus_f(ab_[j] + L.dt_bias[j]);
    float decay = exp_f(g);
    const float* kh = kv + (j / per_k) * dk;
    const float* qh = qv + (j / per_k) * dk;
    const float* vh = vv + j * dv;
    float* S = ssm_ + (size_t(slot) * nv + j) * dk * dv;  // S[i][d], i < dk, d < dv
    for (size_t i = 0; i < size_t(dk) * dv; i++) S[i] *= decay;
    // tmp = S^T k, then delta = (v - tmp) * beta
    zero_floats(tmp_, dv);
    for (uint32_t i = 0; i < dk; i++) {
      const float* row = S + size_t(i) * dv;
      float ki = kh[i];
      for (uint32_t d = 0; d < dv; d++) tmp_[d] += row[d] * ki;
    }
    for (uint32_t d = 0; d < dv; d++) tmp_[d] = (vh[d] - tmp_[d]) * beta;
    // S += k delta^T; out = S^T q
    float* out = ao_ + j * dv;
    zero_floats(out, dv);
    for (uint32_t i = 0; i < dk; i++) {
      float* row = S + size_t(i) * dv;
      float ki = kh[i], qi = qh[i];
      for (uint32_t d = 0; d < dv; d++) {
        row[d] += ki * tmp_[d];
        out[d] += row[d] * qi;
      }
    }
    // Gated RMSNorm: rmsnorm(out) * norm * silu(z)
    rmsnorm(out, out, L.gnorm, dv, c.rms_eps);
    const float* z = z_ + j * dv;
    for (uint32_t d = 0; d < dv; d++) out[d] *= silu_f(z[d]);
  }
  ActVec o = prepare(ao_, c.value_dim());
  mv(L.out, o, xb2_);
}

void Session::mlp(const LayerView& L) {
  const Config& c = *cfg_;
  ActVec a = prepare(xb_, c.dim);
  mv(L.gate, a, hb_);
  mv(L.up, a, hb2_);
  for (uint32_t i = 0; i < c.hidden_dim; i++) hb_[i] = silu_f(hb_[i]) * hb2_[i];
  ActVec h = prepare(hb_, c.hidden_dim);
  mv(L.down, h, xb2_);
}

ErrorOr<void, Error> Session::feed(uint32_t token) {
  const Config& c = *cfg_;
  if (token >= c.vocab_size)
    return Error::make(ErrorCode::TokenOutOfRange).str("token id ").num(token).str(" out of range (vocab_size=").num(c.vocab_size).str(")");
  if (pos_ >= c.runtime_seq_len)
    return Error::make(ErrorCode::RequestTooLong).str("request too long for runtime_seq_len=").num(c.runtime_seq_len);
  Matrix emb = model_->embedding();
  for (uint32_t i = 0; i < c.dim; i++) x_[i] = emb.at(token, i);
  for (uint32_t l = 0; l < c.n_layers; l++) {
    LayerView L = model_->layer(l);
    rmsnorm(xb_, x_, L.in_norm, c.dim, c.rms_eps);
    if (c.is_linear(l)) deltanet(L, slot_[l]);
    else attention(L, slot_[l]);
    for (uint32_t i = 0; i < c.dim; i++) x_[i] += xb2_[i];
    rmsnorm(xb_, x_, L.post_norm, c.dim, c.rms_eps);
    mlp(L);
    for (uint32_t i = 0; i < c.dim; i++) x_[i] += xb2_[i];
    if (obs_) obs_(obs_ctx_, l, x_, c.dim);
  }
  rmsnorm(hidden_, x_, model_->final_norm(), c.dim, c.rms_eps);
  if (obs_) obs_(obs_ctx_, c.n_layers, hidden_, c.dim);
  pos_++;
  fed_ = true;
  return {};
}

uint32_t Session::argmax() {
  ActVec a = prepare(hidden_, cfg_->dim);
  return ops_->argmax(model_->embedding(), a, 0, cfg_->vocab_size).index;
}

void Session::logits(float* out) {
  ActVec a = prepare(hidden_, cfg_->dim);
  ops_->matvec(model_->embedding(), a, out, 0, cfg_->vocab_size);
}

ErrorOr<uint32_t, Error> Session::prefill(const uint32_t* tokens, uint32_t n) {
  if (n == 0) return Error::make(ErrorCode::EmptyRequest).str("empty prompt");
  for (uint32_t i = 0; i < n; i++) TRY(feed(tokens[i]));
  return argmax();
}

ErrorOr<uint32_t, Error> Session::step(uint32_t token) {
  TRY(feed(token));
  return argmax();
}

}  // namespace llm
