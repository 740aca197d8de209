// The Batch: scratch layout, request checks, the pass driver (embedding,
// layers, final norm, classifier) and the seam to the matrix kernels (work
// counts per matrix; the row split over parts is in llm_rows.cpp). The
// layer blocks are in llm_forward.cpp.
#include "llm_batch.h"
#include "llm_math.h"
#include "llm_session.h"

namespace llm {
namespace {

size_t pad64(size_t bytes) { return (bytes + 63) & ~size_t(63); }
size_t floats_row(uint32_t n) { return pad64(size_t(n) * 4) / 4; }  // a row's stride in floats

uint32_t max2(uint32_t a, uint32_t b) { return a > b ? a : b; }
uint32_t max_cols(const Config& c) { return max2(max2(c.dim, c.hidden_dim), max2(c.q_dim(), c.value_dim())); }

// Offsets of every scratch array in the caller's block.
struct BatchLayout {
  size_t off = 0;
  size_t x, xb, xb2, q, k, v, ao, hb, hb2, z, ab, actq, shift, pair, cross, acts, att, tmp, best, which, pos;
  size_t take(size_t bytes) {
    size_t at = off;
    off += pad64(bytes);
    return at;
  }
};

BatchLayout batch_layout(const Config& c, uint32_t m) {
  BatchLayout L;
  size_t f = 4;
  L.x = L.take(m * floats_row(c.dim) * f);
  L.xb = L.take(m * floats_row(c.dim) * f);
  L.xb2 = L.take(m * floats_row(c.dim) * f);
  L.q = L.take(m * floats_row(max2(c.q_proj_rows(), c.conv_dim())) * f);
  L.k = L.take(m * floats_row(c.kv_dim()) * f);
  L.v = L.take(m * floats_row(c.kv_dim()) * f);
  L.ao = L.take(m * floats_row(max2(c.q_dim(), c.value_dim())) * f);
  L.hb = L.take(m * floats_row(c.hidden_dim) * f);
  L.hb2 = L.take(m * floats_row(c.hidden_dim) * f);
  L.z = L.take(m * floats_row(c.value_dim()) * f);
  L.ab = L.take(m * floats_row(2 * c.lin_v_heads) * f);
  L.actq = L.take(m * pad64(max_cols(c)));
  L.shift = L.take(m * pad64(max_cols(c)));
  L.pair = L.take(size_t((m + 1) / 2) * int8_pack_stride(max_cols(c)) * 8);
  L.cross = L.take(size_t(max_cols(c)) / 2 * 8 + 8);
  L.acts = L.take(m * sizeof(ActVec));
  L.att = L.take(size_t(kMaxParts) * floats_row(c.runtime_seq_len) * f);   // one row per part
  L.tmp = L.take(size_t(kMaxParts) * floats_row(c.lin_v_dim) * f);       // one row per part
  L.best = L.take(size_t(kMaxParts + 1) * m * sizeof(ArgMax));
  L.which = L.take(m * 4);
  L.pos = L.take(m * 4);
  return L;
}

uint64_t matrix_bytes(const Matrix& w) {
  uint64_t cells = uint64_t(w.rows) * w.cols;
  return w.f ? 4 * cells : cells + 4 * uint64_t(w.rows);
}

}  // namespace

size_t Batch::bytes_needed(const Config& cfg, uint32_t max_items) { return batch_layout(cfg, max_items).off; }

ErrorOr<void, Error> Batch::init(const Model& model, void* mem, size_t size, uint32_t max_items,
                                 const SessionOptions& opt) {
  if (!model.loaded()) return Error::make(ErrorCode::BadField).str("batch: model not loaded");
  if (max_items == 0) return Error::make(ErrorCode::BadField).str("batch: max_items must be at least 1");
  const Config& c = model.config();
  BatchLayout L = batch_layout(c, max_items);
  if (size < L.off)
    return Error::make(ErrorCode::NoMemory).str("not enough memory: batch of ").num(max_items).str(" needs ").num(L.off).str(" bytes, have ").num(size);
  if (reinterpret_cast<uintptr_t>(mem) % 16)
    return Error::make(ErrorCode::BadAlignment).str("batch: memory is not 16-byte aligned");
  auto* base = static_cast<uint8_t*>(mem);
  auto F = [&](size_t off) { return reinterpret_cast<float*>(base + off); };
  model_ = &model;
  cfg_ = &c;
  ops_ = &matvec_ops(opt.matvec);
  group_ = opt.int8_group;
  max_ = max_items;
  x_ = F(L.x); xb_ = F(L.xb); xb2_ = F(L.xb2); q_ = F(L.q); k_ = F(L.k); v_ = F(L.v);
  ao_ = F(L.ao); hb_ = F(L.hb); hb2_ = F(L.hb2); z_ = F(L.z); ab_ = F(L.ab);
  dim_stride_ = floats_row(c.dim);
  q_stride_ = floats_row(max2(c.q_proj_rows(), c.conv_dim()));
  kv_stride_ = floats_row(c.kv_dim());
  ao_stride_ = floats_row(max2(c.q_dim(), c.value_dim()));
  hid_stride_ = floats_row(c.hidden_dim);
  z_stride_ = floats_row(c.value_dim());
  ab_stride_ = floats_row(2 * c.lin_v_heads);
  actq_ = reinterpret_cast<int8_t*>(base + L.actq);
  shift_ = base + L.shift;
  actq_stride_ = pad64(max_cols(c));
  pair_ = reinterpret_cast<int64_t*>(base + L.pair);
  cross_ = reinterpret_cast<uint64_t*>(base + L.cross);
  acts_ = reinterpret_cast<ActVec*>(base + L.acts);
  att_ = F(L.att);
  att_stride_ = floats_row(c.runtime_seq_len);
  tmp_ = F(L.tmp);
  tmp_stride_ = floats_row(c.lin_v_dim);
  part_best_ = reinterpret_cast<ArgMax*>(base + L.best);
  which_ = reinterpret_cast<uint32_t*>(base + L.which);
  pos_ = reinterpret_cast<uint32_t*>(base + L.pos);
  return {};
}

ErrorOr<void, Error> Batch::check(const BatchItem* items, uint32_t n) const {
  const Config& c = *cfg_;
  if (n > max_) return Error::make(ErrorCode::BadField).str("batch: ").num(n).str(" items, at most ").num(max_);
  // Single-item passes (Session::feed) keep the one-token messages.
  auto at = [&](ErrorCode code, uint32_t i) {
    Error e = Error::make(code);
    if (n > 1) e.str("batch item ").num(i).str(": ");
    return e;
  };
  uint32_t pos = 0;
  for (uint32_t i = 0; i < n; i++) {
    const Session* s = items[i].session;
    if (!s || !s->model_) return at(ErrorCode::BadField, i).str("no session");
    if (s->model_ != model_) return at(ErrorCode::BadField, i).str("session of another model");
    const SessionOptions& o = s->opt_;
    if (o.matvec != ops_->kind || (o.matvec == MatvecKind::Int8 && o.int8_group != group_))
      return at(ErrorCode::BadField, i).str("session options (matvec ").str(matvec_ops(o.matvec).name).str(", group ").num(o.int8_group).str(") differ from the batch's");
    if (items[i].token >= c.vocab_size)
      return at(ErrorCode::TokenOutOfRange, i).str("token id ").num(items[i].token).str(" out of range (vocab_size=").num(c.vocab_size).str(")");
    bool continues = i > 0 && items[i - 1].session == s;
    if (!continues) {
      for (uint32_t j = 0; j < i; j++)
        if (items[j].session == s)
          return at(ErrorCode::BadField, i).str("session also at item ").num(j).str(" (one session's items must be consecutive)");
      pos = s->pos_;
    } else {
      pos++;
    }
    if (pos >= c.runtime_seq_len)
      return at(ErrorCode::RequestTooLong, i).str("request too long for runtime_seq_len=").num(c.runtime_seq_len);
    if (pos >= s->kv_capacity())
      return at(ErrorCode::RequestTooLong, i).str("position ").num(pos).str(" has no KV block (").num(s->kv_capacity()).str(" positions mapped)");
  }
  return {};
}

WorkCounts& Batch::work(uint32_t item) const {
  return items_[item].session->work_[uint32_t(items_[item].phase)];
}

// An input vector as the kernels take it: int8-quantised into scratch row
// `slot`, or the floats themselves.
ActVec Batch::prepare_one(const float* x, uint32_t len, uint32_t slot) {
  if (ops_->kind == MatvecKind::Int8)
    return quantize_act(x, len, group_, actq_ + slot * actq_stride_, shift_ + slot * actq_stride_);
  ActVec a;
  a.x = x;
  a.n = len;
  return a;
}

// The int8 kernels take the m prepared vectors acts_[0..m) packed
// (pack_int8_batch); float vectors are used as they are.
const ActVec* Batch::pack_prepared(uint32_t m) {
  if (ops_->kind == MatvecKind::Int8) pack_int8_batch(acts_, m, pair_, int8_pack_stride(max_cols(*cfg_)), cross_);
  return acts_;
}

// The inputs of one product: item i's vector is x + i * stride, each
// quantised on whichever hart runs its item, then packed (one pass over the
// columns, integer work).
const ActVec* Batch::prepare(const float* x, size_t stride, uint32_t len) {
  struct Job {
    const float* x;
    size_t stride;
    uint32_t len;
  } job{x, stride, len};
  for_each(n_, [](Batch& b, const void* arg, uint32_t i, uint32_t) {
    auto* j = static_cast<const Job*>(arg);
    b.acts_[i] = b.prepare_one(j->x + i * j->stride, j->len, i);
  }, &job, 0);
  return pack_prepared(n_);
}

const ActVec* Batch::next_input(const NextInput& step) {
  for_each(n_, [](Batch& b, const void* arg, uint32_t i, uint32_t) {
    auto* st = static_cast<const NextInput*>(arg);
    const Config& c = *b.cfg_;
    float* x = b.x_ + i * b.dim_stride_;
    if (st->add_output) {
      const float* o = b.xb2_ + i * b.dim_stride_;
      for (uint32_t d = 0; d < c.dim; d++) x[d] += o[d];
    }
    Session* s = b.items_[i].session;
    if (st->observed_layer >= 0 && s->obs_) s->obs_(s->obs_ctx_, b.pos_[i], uint32_t(st->observed_layer), x, c.dim);
    if (st->norm) {
      float* xb = b.xb_ + i * b.dim_stride_;
      rmsnorm(xb, x, st->norm, c.dim, c.rms_eps);
      b.acts_[i] = b.prepare_one(xb, c.dim, i);
    }
  }, &step, 0);
  return step.norm ? pack_prepared(n_) : nullptr;
}

struct Batch::EachJob {
  Batch* batch;
  EachFn fn;
  const void* arg;
  uint32_t count, parts;
  static void part(void* self, uint32_t part) {
    auto* j = static_cast<EachJob*>(self);
    uint32_t k0 = uint32_t(uint64_t(j->count) * part / j->parts);
    uint32_t k1 = uint32_t(uint64_t(j->count) * (part + 1) / j->parts);
    for (uint32_t k = k0; k < k1; k++) j->fn(*j->batch, j->arg, k, part);
  }
};

void Batch::for_each(uint32_t count, EachFn fn, const void* arg, uint64_t macs) {
  uint32_t parts = count < 2 || observed_ ? 1 : parts_of(par_);
  EachJob job{this, fn, arg, count, parts};
  if (parts == 1) EachJob::part(&job, 0);
  else par_->run(par_->ctx, parts, EachJob::part, &job, macs);
}

// Charges one product with w to the items of the pass: rows x cols
// multiply-adds each, and each its share of the bytes of w (read once).
void Batch::charge_matrix(const Matrix& w) {
  uint64_t bytes = matrix_bytes(w), macs = uint64_t(w.rows) * w.cols;
  for (uint32_t i = 0; i < n_; i++) {
    WorkCounts& wc = work(i);
    wc.macs += macs;
    wc.weight_bytes += bytes * (i + 1) / n_ - bytes * i / n_;
  }
}

// Matrix x matrix products over the items, their rows split over the
// Parallel parts (llm_rows.h: each row computed the same way wherever it
// runs, so neither the split nor fusing products into one job changes a bit).
void Batch::project(const Matrix& w, const ActVec* a, float* y, size_t y_stride) {
  Product p{&w, y, y_stride};
  project_all(&p, 1, a);
}

void Batch::project_all(const Product* list, uint32_t count, const ActVec* a) {
  for (uint32_t k = 0; k < count; k++) charge_matrix(*list[k].w);
  run_products(*ops_, par_, list, count, a, n_);
}

void Batch::project_swiglu(const Product& gate, const Product& up, const ActVec* a) {
  charge_matrix(*gate.w);
  charge_matrix(*up.w);
  run_swiglu(*ops_, par_, gate, up, a, n_);
}

// One product over the vocabulary for the m items which[0..m): each is
// charged its multiply-adds and its share of the matrix's bytes (the
// shares add up to the matrix once), as charge_matrix does for a pass.
void Batch::charge_classifier(const uint32_t* which, uint32_t m) {
  Matrix emb = model_->embedding();
  uint64_t bytes = matrix_bytes(emb), macs = uint64_t(emb.rows) * emb.cols;
  for (uint32_t j = 0; j < m; j++) {
    WorkCounts& wc = work(which[j]);
    wc.macs += macs;
    wc.weight_bytes += bytes * (j + 1) / m - bytes * j / m;
  }
}

// The tied classifier for the m items which[0..m) (their normed vectors at
// rows + which[j] * stride): best[j] = greedy next token. One product over
// the vocabulary for all of them; with parts, each part's winner per item is
// combined in row order (argmax_beats is a total order, so this is exact).
void Batch::classify(const float* rows, size_t stride, const uint32_t* which, uint32_t m, ArgMax* best) {
  const Config& c = *cfg_;
  Matrix emb = model_->embedding();
  charge_classifier(which, m);
  // Prepare only the classified items' vectors (acts_[j] for which[j]).
  for (uint32_t j = 0; j < m; j++) acts_[j] = prepare_one(rows + which[j] * stride, c.dim, j);
  pack_prepared(m);
  run_argmax(*ops_, par_, emb, acts_, m, part_best_, best);
}

// The tied classifier's full product for the m items which[0..m), each
// into its own items[].logits row. Items whose rows lie one stride apart
// (a caller's [rows][vocab] scratch, the usual case) share one product, so
// the vocabulary's weights are read once for all of them; any others run
// in products of their own. Each logit is computed exactly as
// Session::logits() computes it (same kernel per (row, item)), so a
// sampler sees the same bits either way.
void Batch::classify_logits(const float* rows, size_t stride, const uint32_t* which, uint32_t m) {
  const Config& c = *cfg_;
  Matrix emb = model_->embedding();
  charge_classifier(which, m);
  size_t vocab = c.vocab_size;
  for (uint32_t j0 = 0; j0 < m;) {
    uint32_t j1 = j0 + 1;
    while (j1 < m && items_[which[j1]].logits == items_[which[j0]].logits + (j1 - j0) * vocab) j1++;
    for (uint32_t j = j0; j < j1; j++) acts_[j - j0] = prepare_one(rows + which[j] * stride, c.dim, j - j0);
    pack_prepared(j1 - j0);
    Product all{&emb, items_[which[j0]].logits, vocab};
    run_products(*ops_, par_, &all, 1, acts_, j1 - j0);
    j0 = j1;
  }
}

ErrorOr<void, Error> Batch::forward(BatchItem* items, uint32_t n) {
  if (n == 0) return {};
  TRY(check(items, n));
  const Config& c = *cfg_;
  items_ = items;
  n_ = n;
  for (uint32_t i = 0; i < n; i++) {
    Session* s = items[i].session;
    pos_[i] = i > 0 && items[i - 1].session == s ? pos_[i - 1] + 1 : s->pos_;
  }
  // Embedding: each item's residual stream starts as its token's row
  // (dequantised), a read of one row, not a product.
  Matrix emb = model_->embedding();
  for (uint32_t i = 0; i < n; i++) {
    float* x = x_ + i * dim_stride_;
    for (uint32_t d = 0; d < c.dim; d++) x[d] = emb.at(items[i].token, d);
    work(i).weight_bytes += emb.f ? 4 * uint64_t(c.dim) : c.dim + 4;
  }
  observed_ = false;
  for (uint32_t i = 0; i < n; i++) observed_ = observed_ || items[i].session->obs_;
  // Pre-norm: each block sees the residual stream at unit RMS; its output
  // is added to the stream (residual) before the next block's norm.
  const ActVec* a = next_input({.norm = model_->layer(0).in_norm});
  for (uint32_t l = 0; l < c.n_layers; l++) {
    LayerView L = model_->layer(l);
    uint32_t slot = items[0].session->slot_[l];  // same model: same slots in every session
    // Mixer: attention over the KV cache, or the DeltaNet recurrence; out in xb2.
    if (c.is_linear(l)) deltanet(L, slot, a);
    else attention(L, slot, a);
    a = next_input({.add_output = true, .norm = L.post_norm});
    mlp(L, a);
    const float* next_norm = l + 1 < c.n_layers ? model_->layer(l + 1).in_norm : nullptr;
    a = next_input({.add_output = true, .observed_layer = int32_t(l), .norm = next_norm});
  }
  // Final norm: the classifier's input, kept by each session for its last item.
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++) {
    float* h = xb_ + i * dim_stride_;
    rmsnorm(h, x_ + i * dim_stride_, model_->final_norm(), c.dim, c.rms_eps);
    Session* s = items[i].session;
    if (s->obs_) s->obs_(s->obs_ctx_, pos_[i], c.n_layers, h, c.dim);
    if (items[i].want_next) which_[m++] = i;
    if (i + 1 == n || items[i + 1].session != s) {
      copy_floats(s->hidden_, h, c.dim);
      s->pos_ = pos_[i] + 1;
      s->last_phase_ = items[i].phase;
    }
  }
  // Classifier: greedy next token for the items that asked, in one product;
  // the full logits for the items that gave a place for them, in another.
  if (m > 0) {
    // which_[0..m_argmax): argmax items; which_[m_argmax..m): logits items,
    // each list in item order.
    m = 0;
    for (uint32_t i = 0; i < n; i++)
      if (items[i].want_next && items[i].logits == nullptr) which_[m++] = i;
    uint32_t m_argmax = m;
    for (uint32_t i = 0; i < n; i++)
      if (items[i].want_next && items[i].logits != nullptr) which_[m++] = i;
    if (m_argmax > 0) {
      ArgMax* best = part_best_ + size_t(kMaxParts) * max_;  // after the parts' slots
      classify(xb_, dim_stride_, which_, m_argmax, best);
      for (uint32_t j = 0; j < m_argmax; j++) items[which_[j]].next = best[j].index;
    }
    if (m > m_argmax) classify_logits(xb_, dim_stride_, which_ + m_argmax, m - m_argmax);
  }
  items_ = nullptr;
  n_ = 0;
  return {};
}

}  // namespace llm
