// The blocks of one layer for all items of a Batch pass: full attention,
// Gated DeltaNet and the MLP. Each block is: the projections as matrix x
// matrix products over the items (Batch::project), then the per-token work
// item by item, in item order, so that a later token of a prompt chunk sees
// the K/V rows and recurrent state its predecessors just wrote (causality).
#include "llm_batch.h"
#include "llm_math.h"
#include "llm_session.h"

namespace llm {

void Batch::attention(const LayerView& L, uint32_t slot) {
  const Config& c = *cfg_;
  uint32_t hd = c.head_dim, kvd = c.kv_dim();
  // Projections: queries (qwen: per head query rows then gate rows), keys,
  // values of every item from its normed input xb.
  const ActVec* a = prepare(xb_, dim_stride_, c.dim);
  project(L.wq, a, q_, q_stride_);
  project(L.wk, a, k_, kv_stride_);
  project(L.wv, a, v_, kv_stride_);
  uint32_t qstride = c.attn_gate() ? 2 * hd : hd;
  uint32_t group = c.n_heads / c.n_kv_heads;  // query heads per KV head (GQA)
  float inv_sqrt = 1.0f / sqrt_f(float(hd));
  for (uint32_t i = 0; i < n_; i++) {
    Session& s = *items_[i].session;
    WorkCounts& wc = work(i);
    uint32_t pos = pos_[i];
    float* q = q_ + i * q_stride_;
    float* k = k_ + i * kv_stride_;
    // RoPE (after qwen's per-head q/k norm): position enters as a rotation,
    // so q.k depends on the distance between two tokens.
    const float* cs = model_->rope_row(pos);
    for (uint32_t h = 0; h < c.n_heads; h++) {
      float* qh = q + h * qstride;
      if (L.q_norm) rmsnorm(qh, qh, L.q_norm, hd, c.rms_eps);
      rope(qh, cs, c.rot_dim());
    }
    for (uint32_t h = 0; h < c.n_kv_heads; h++) {
      float* kh = k + h * hd;
      if (L.k_norm) rmsnorm(kh, kh, L.k_norm, hd, c.rms_eps);
      rope(kh, cs, c.rot_dim());
    }
    // Cache this token's key and value: later tokens attend to them.
    KvRows mine = s.kv_rows(slot, pos);
    copy_floats(mine.k, k, kvd);
    copy_floats(mine.v, v_ + i * kv_stride_, kvd);
    wc.kv_write_bytes += 2 * uint64_t(kvd) * 4;
    // Attention per head: softmax(q.k / sqrt(hd)) over positions 0..pos,
    // then the probability-weighted sum of the values.
    float* ao = ao_ + i * ao_stride_;
    for (uint32_t h = 0; h < c.n_heads; h++) {
      const float* qh = q + h * qstride;
      uint32_t kvh = h / group;
      for (uint32_t t = 0; t <= pos; t++) att_[t] = dot(qh, s.kv_rows(slot, t).k + kvh * hd, hd) * inv_sqrt;
      softmax(att_, pos + 1);
      float* out = ao + h * hd;
      zero_floats(out, hd);
      for (uint32_t t = 0; t <= pos; t++) {
        const float* vt = s.kv_rows(slot, t).v + kvh * hd;
        float p = att_[t];
        for (uint32_t d = 0; d < hd; d++) out[d] += p * vt[d];
      }
      if (c.attn_gate()) {  // qwen: the output gate lets a head switch itself off
        const float* gate = q + h * qstride + hd;
        for (uint32_t d = 0; d < hd; d++) out[d] *= sigmoid_f(gate[d]);
      }
      wc.macs += 2 * uint64_t(pos + 1) * hd;  // q.k and p.v
      if (h % group == 0) wc.kv_read_bytes += 2 * uint64_t(pos + 1) * hd * 4;
    }
  }
  // Output projection of the concatenated heads.
  const ActVec* o = prepare(ao_, ao_stride_, c.q_dim());
  project(L.wo, o, xb2_, dim_stride_);
}

void Batch::deltanet(const LayerView& L, uint32_t slot) {
  const Config& c = *cfg_;
  uint32_t K = c.conv_kernel, cd = c.conv_dim(), nv = c.lin_v_heads, nk = c.lin_k_heads;
  uint32_t dk = c.lin_k_dim, dv = c.lin_v_dim, kd = c.key_dim();
  // Projections: q|k|v (into the conv), the output gate z, and per value
  // head a (decay) and b (write strength beta).
  const ActVec* a = prepare(xb_, dim_stride_, c.dim);
  project(L.in_qkv, a, q_, q_stride_);
  project(L.in_z, a, z_, z_stride_);
  project(L.in_a, a, ab_, ab_stride_);
  project(L.in_b, a, ab_ + nv, ab_stride_);
  float qscale = 1.0f / sqrt_f(float(dk));
  uint32_t per_k = nv / nk;
  for (uint32_t i = 0; i < n_; i++) {
    Session& s = *items_[i].session;
    WorkCounts& wc = work(i);
    float* qkv = q_ + i * q_stride_;
    const float* ab = ab_ + i * ab_stride_;
    // Causal depthwise conv: the state holds the last K inputs, oldest first.
    float* st = s.conv_state(slot);
    for (uint32_t ch = 0; ch < cd; ch++) {
      float* cst = st + size_t(ch) * K;
      for (uint32_t j = 0; j + 1 < K; j++) cst[j] = cst[j + 1];
      cst[K - 1] = qkv[ch];
      const float* w = L.conv + size_t(ch) * K;
      float acc = 0;
      for (uint32_t j = 0; j < K; j++) acc += cst[j] * w[j];
      qkv[ch] = silu_f(acc);
    }
    wc.macs += uint64_t(cd) * K;
    // q and k L2-normalised per head (q also scaled by 1/sqrt(dk)): the
    // state update stays bounded whatever the input scale.
    float* qv = qkv;
    float* kv = qkv + kd;
    const float* vv = qkv + 2 * kd;
    for (uint32_t h = 0; h < nk; h++) {
      float* qh = qv + h * dk;
      l2norm(qh, dk, 1e-6f);
      for (uint32_t d = 0; d < dk; d++) qh[d] *= qscale;
      l2norm(kv + h * dk, dk, 1e-6f);
    }
    float* ao = ao_ + i * ao_stride_;
    for (uint32_t j = 0; j < nv; j++) {
      float beta = sigmoid_f(ab[nv + j]);
      float g = -exp_f(L.a_log[j]) * softplus_f(ab[j] + L.dt_bias[j]);
      float decay = exp_f(g);
      const float* kh = kv + (j / per_k) * dk;
      const float* qh = qv + (j / per_k) * dk;
      const float* vh = vv + j * dv;
      float* S = s.ssm_state(slot, j);  // S[d_k][d_v]
      // Decay: the state forgets at a learned, input-dependent rate.
      for (size_t e = 0; e < size_t(dk) * dv; e++) S[e] *= decay;
      // Delta rule: what S predicts for k (S^T k) is corrected towards v.
      zero_floats(tmp_, dv);
      for (uint32_t r = 0; r < dk; r++) {
        const float* row = S + size_t(r) * dv;
        float kr = kh[r];
        for (uint32_t d = 0; d < dv; d++) tmp_[d] += row[d] * kr;
      }
      for (uint32_t d = 0; d < dv; d++) tmp_[d] = (vh[d] - tmp_[d]) * beta;
      // S += k delta^T; out = S^T q (read with the query)
      float* out = ao + j * dv;
      zero_floats(out, dv);
      for (uint32_t r = 0; r < dk; r++) {
        float* row = S + size_t(r) * dv;
        float kr = kh[r], qr = qh[r];
        for (uint32_t d = 0; d < dv; d++) {
          row[d] += kr * tmp_[d];
          out[d] += row[d] * qr;
        }
      }
      wc.macs += 3 * uint64_t(dk) * dv;
      // Gated RMSNorm: rmsnorm(out) * norm * silu(z)
      rmsnorm(out, out, L.gnorm, dv, c.rms_eps);
      const float* z = z_ + i * z_stride_ + j * dv;
      for (uint32_t d = 0; d < dv; d++) out[d] *= silu_f(z[d]);
    }
  }
  const ActVec* o = prepare(ao_, ao_stride_, c.value_dim());
  project(L.out, o, xb2_, dim_stride_);
}

// SwiGLU MLP: down(silu(gate(h)) * up(h)).
void Batch::mlp(const LayerView& L) {
  const Config& c = *cfg_;
  const ActVec* a = prepare(xb_, dim_stride_, c.dim);
  project(L.gate, a, hb_, hid_stride_);
  project(L.up, a, hb2_, hid_stride_, hb_);   // and hb_ = silu(gate) * up, in the same parts
  const ActVec* h = prepare(hb_, hid_stride_, c.hidden_dim);
  project(L.down, h, xb2_, dim_stride_);
}

}  // namespace llm
