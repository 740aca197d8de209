// The blocks of one layer for all items of a Batch pass: full attention,
// Gated DeltaNet and the MLP. Each block is: the projections as matrix x
// matrix products over the items (Batch::project*; products that read the
// same inputs go to the row team as one job), then the per-token work
// item by item, in item order, so that a later token of a prompt chunk sees
// the K/V rows and recurrent state its predecessors just wrote (causality).
#include "llm_batch.h"
#include "llm_math.h"
#include "llm_session.h"

namespace llm {

// What every (item, head) pair of one attention block shares.
struct Batch::HeadJob {
  const LayerView* L;
  uint32_t slot;
  float inv_sqrt;   // 1 / sqrt(head_dim)
};

// Attention of item i, query head h (pair = i * n_heads + h): q's norm and
// RoPE, softmax(q.k / sqrt(hd)) over positions 0..pos, then the
// probability-weighted sum of the values into ao. It reads only its own
// head's query and the cache rows already written, and writes only its own
// head's slice of ao (and its part's row of scores), so pairs can run on any
// hart in any order.
void Batch::attend_head(Batch& b, const void* arg, uint32_t pair, uint32_t part) {
  const auto& job = *static_cast<const HeadJob*>(arg);
  const Config& c = *b.cfg_;
  uint32_t i = pair / c.n_heads, h = pair % c.n_heads;
  uint32_t hd = c.head_dim, pos = b.pos_[i];
  uint32_t qstride = c.attn_gate() ? 2 * hd : hd;
  uint32_t kvh = h / (c.n_heads / c.n_kv_heads);   // GQA: query heads share a KV head
  const Session& s = *b.items_[i].session;
  float* qh = b.q_ + i * b.q_stride_ + h * qstride;
  // RoPE (after qwen's per-head q norm): position enters as a rotation, so
  // q.k depends on the distance between two tokens.
  if (job.L->q_norm) rmsnorm(qh, qh, job.L->q_norm, hd, c.rms_eps);
  rope(qh, b.model_->rope_row(pos), c.rot_dim());
  float* att = b.att_ + part * b.att_stride_;
  for (uint32_t t = 0; t <= pos; t++) att[t] = dot(qh, s.kv_rows(job.slot, t).k + kvh * hd, hd) * job.inv_sqrt;
  softmax(att, pos + 1);
  float* out = b.ao_ + i * b.ao_stride_ + h * hd;
  zero_floats(out, hd);
  for (uint32_t t = 0; t <= pos; t++) {
    const float* vt = s.kv_rows(job.slot, t).v + kvh * hd;
    float p = att[t];
    for (uint32_t d = 0; d < hd; d++) out[d] += p * vt[d];
  }
  if (c.attn_gate()) {  // qwen: the output gate lets a head switch itself off
    const float* gate = qh + hd;
    for (uint32_t d = 0; d < hd; d++) out[d] *= sigmoid_f(gate[d]);
  }
}

// What every value head of one DeltaNet block shares.
struct Batch::DeltaJob {
  const LayerView* L;
  uint32_t slot;
};

// DeltaNet value head j for every item, in item order: decay, the delta
// rule's update of the state S (d_k x d_v) and the read with the query, then
// the gated RMSNorm, into head j's slice of ao. Heads are independent (each
// has its own state and its own slice of ao; they only read q, k, v, z, ab),
// so they can run on any hart in any order; within a head the items must go
// in order, because a later token of a prompt chunk updates the state its
// predecessor left. tmp is the part's own row.
void Batch::delta_head(Batch& b, const void* arg, uint32_t j, uint32_t part) {
  const auto& job = *static_cast<const DeltaJob*>(arg);
  const LayerView& L = *job.L;
  const Config& c = *b.cfg_;
  uint32_t nv = c.lin_v_heads, dk = c.lin_k_dim, dv = c.lin_v_dim, kd = c.key_dim();
  uint32_t per_k = nv / c.lin_k_heads;
  float* tmp = b.tmp_ + part * b.tmp_stride_;
  for (uint32_t i = 0; i < b.n_; i++) {
    Session& s = *b.items_[i].session;
    const float* qkv = b.q_ + i * b.q_stride_;
    const float* ab = b.ab_ + i * b.ab_stride_;
    float beta = sigmoid_f(ab[nv + j]);
    float g = -exp_f(L.a_log[j]) * softplus_f(ab[j] + L.dt_bias[j]);
    float decay = exp_f(g);
    const float* kh = qkv + kd + (j / per_k) * dk;
    const float* qh = qkv + (j / per_k) * dk;
    const float* vh = qkv + 2 * kd + j * dv;
    float* S = s.ssm_state(job.slot, j);  // S[d_k][d_v]
    // Decay: the state forgets at a learned, input-dependent rate.
    for (size_t e = 0; e < size_t(dk) * dv; e++) S[e] *= decay;
    // Delta rule: what S predicts for k (S^T k) is corrected towards v.
    zero_floats(tmp, dv);
    for (uint32_t r = 0; r < dk; r++) {
      const float* row = S + size_t(r) * dv;
      float kr = kh[r];
      for (uint32_t d = 0; d < dv; d++) tmp[d] += row[d] * kr;
    }
    for (uint32_t d = 0; d < dv; d++) tmp[d] = (vh[d] - tmp[d]) * beta;
    // S += k delta^T; out = S^T q (read with the query)
    float* out = b.ao_ + i * b.ao_stride_ + j * dv;
    zero_floats(out, dv);
    for (uint32_t r = 0; r < dk; r++) {
      float* row = S + size_t(r) * dv;
      float kr = kh[r], qr = qh[r];
      for (uint32_t d = 0; d < dv; d++) {
        row[d] += kr * tmp[d];
        out[d] += row[d] * qr;
      }
    }
    // Gated RMSNorm: rmsnorm(out) * norm * silu(z)
    rmsnorm(out, out, L.gnorm, dv, c.rms_eps);
    const float* z = b.z_ + i * b.z_stride_ + j * dv;
    for (uint32_t d = 0; d < dv; d++) out[d] *= silu_f(z[d]);
    // The state at this item's next position, for a checkpoint there.
    if (const StateSink* keep = b.items_[i].keep_state) keep->put(keep->ctx, s.ssm_offset(job.slot, j), S, size_t(dk) * dv);
  }
}

void Batch::attention(const LayerView& L, uint32_t slot, const ActVec* a) {
  const Config& c = *cfg_;
  uint32_t hd = c.head_dim, kvd = c.kv_dim();
  // Projections: queries (qwen: per head query rows then gate rows), keys,
  // values of every item from its normed input xb, in one job.
  const Product qkv[] = {{&L.wq, q_, q_stride_}, {&L.wk, k_, kv_stride_}, {&L.wv, v_, kv_stride_}};
  project_all(qkv, 3, a);
  // First every item's key (norm, RoPE) and value go into the cache, in
  // item order: a later token of a prompt chunk attends to the rows its
  // predecessors write here.
  uint64_t macs = 0;
  for (uint32_t i = 0; i < n_; i++) {
    Session& s = *items_[i].session;
    WorkCounts& wc = work(i);
    uint32_t pos = pos_[i];
    float* k = k_ + i * kv_stride_;
    const float* cs = model_->rope_row(pos);
    for (uint32_t h = 0; h < c.n_kv_heads; h++) {
      float* kh = k + h * hd;
      if (L.k_norm) rmsnorm(kh, kh, L.k_norm, hd, c.rms_eps);
      rope(kh, cs, c.rot_dim());
    }
    KvRows mine = s.kv_rows(slot, pos);
    copy_floats(mine.k, k, kvd);
    copy_floats(mine.v, v_ + i * kv_stride_, kvd);
    wc.kv_write_bytes += 2 * uint64_t(kvd) * 4;
    // Counted here, not in the pairs (they may run at once on several harts):
    // q.k and p.v per query head; each KV head's rows read once.
    uint64_t item_macs = 2 * uint64_t(pos + 1) * hd * c.n_heads;
    wc.macs += item_macs;
    wc.kv_read_bytes += 2 * uint64_t(pos + 1) * hd * 4 * c.n_kv_heads;
    macs += item_macs;
  }
  // Then every (item, head) pair, on the row team's harts.
  HeadJob job{&L, slot, 1.0f / sqrt_f(float(hd))};
  for_each(n_ * c.n_heads, attend_head, &job, macs);
  // Output projection of the concatenated heads.
  const ActVec* o = prepare(ao_, ao_stride_, c.q_dim());
  project(L.wo, o, xb2_, dim_stride_);
}

void Batch::deltanet(const LayerView& L, uint32_t slot, const ActVec* a) {
  const Config& c = *cfg_;
  uint32_t K = c.conv_kernel, cd = c.conv_dim(), nv = c.lin_v_heads, nk = c.lin_k_heads;
  uint32_t dk = c.lin_k_dim, dv = c.lin_v_dim, kd = c.key_dim();
  // Projections: q|k|v (into the conv), the output gate z, and per value
  // head a (decay) and b (write strength beta), in one job.
  const Product in[] = {{&L.in_qkv, q_, q_stride_}, {&L.in_z, z_, z_stride_}, {&L.in_a, ab_, ab_stride_},
                        {&L.in_b, ab_ + nv, ab_stride_}};
  project_all(in, 4, a);
  float qscale = 1.0f / sqrt_f(float(dk));
  // First, item by item in order, the conv (its window is per session: a
  // later token of a chunk shifts in after its predecessor) and the norms.
  for (uint32_t i = 0; i < n_; i++) {
    Session& s = *items_[i].session;
    WorkCounts& wc = work(i);
    float* qkv = q_ + i * q_stride_;
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
    if (const StateSink* keep = items_[i].keep_state) keep->put(keep->ctx, s.conv_offset(slot), st, size_t(cd) * K);
    // q and k L2-normalised per head (q also scaled by 1/sqrt(dk)): the
    // state update stays bounded whatever the input scale.
    float* qv = qkv;
    float* kv = qkv + kd;
    for (uint32_t h = 0; h < nk; h++) {
      float* qh = qv + h * dk;
      l2norm(qh, dk, 1e-6f);
      for (uint32_t d = 0; d < dk; d++) qh[d] *= qscale;
      l2norm(kv + h * dk, dk, 1e-6f);
    }
    wc.macs += 3 * uint64_t(dk) * dv * nv;   // counted here: the heads may run at once on several harts
  }
  // Then the recurrence, head by head on the row team's harts.
  DeltaJob job{&L, slot};
  for_each(nv, delta_head, &job, 3 * uint64_t(dk) * dv * nv * n_);
  const ActVec* o = prepare(ao_, ao_stride_, c.value_dim());
  project(L.out, o, xb2_, dim_stride_);
}

// SwiGLU MLP: down(silu(gate(h)) * up(h)).
void Batch::mlp(const LayerView& L, const ActVec* a) {
  const Config& c = *cfg_;
  // gate into hb, up into hb2, then hb = silu(gate) * up: one job.
  project_swiglu({&L.gate, hb_, hid_stride_}, {&L.up, hb2_, hid_stride_}, a);
  const ActVec* h = prepare(hb_, hid_stride_, c.hidden_dim);
  project(L.down, h, xb2_, dim_stride_);
}

}  // namespace llm
