#include "llm_session.h"
#include "llm_math.h"

namespace llm {
namespace {

// Memory layout of a session: its state, then its own Batch; every array
// starts 64-byte aligned.
struct Layout {
  size_t off = 0;
  size_t take(size_t bytes) {
    size_t at = off;
    off += (bytes + 63) & ~size_t(63);
    return at;
  }
};

struct Sizes {
  size_t hidden, kc, vc, conv, ssm, ckpt_conv, ckpt_ssm, batch, total;
};

size_t conv_floats(const Config& c) { return size_t(c.n_linear_layers()) * c.conv_dim() * c.conv_kernel; }
size_t ssm_floats(const Config& c) { return size_t(c.n_linear_layers()) * c.lin_v_heads * c.lin_k_dim * c.lin_v_dim; }

Sizes layout(const Config& c, const SessionOptions& opt) {
  bool paged_kv = opt.paged_kv;
  Layout L;
  Sizes s;
  size_t f = 4;
  size_t nf = paged_kv ? 0 : c.n_full_layers();
  s.hidden = L.take(c.dim * f);
  s.kc = L.take(nf * c.runtime_seq_len * c.kv_dim() * f);   // paged: in the pool instead
  s.vc = L.take(nf * c.runtime_seq_len * c.kv_dim() * f);
  s.conv = L.take(conv_floats(c) * f);
  s.ssm = L.take(ssm_floats(c) * f);
  s.ckpt_conv = L.take(opt.checkpoint ? conv_floats(c) * f : 0);
  s.ckpt_ssm = L.take(opt.checkpoint ? ssm_floats(c) * f : 0);
  s.batch = L.take(Batch::bytes_needed(c, Session::kPrefillChunk));
  s.total = L.off;
  return s;
}

}  // namespace

ErrorOr<void, Error> check_request(const Config& cfg, const uint32_t* prompt, uint32_t n_prompt,
                                   uint32_t n_predict, uint32_t max_prompt) {
  if (n_prompt == 0) return Error::make(ErrorCode::EmptyRequest).str("empty prompt");
  if (n_predict == 0) return Error::make(ErrorCode::EmptyRequest).str("nothing to predict (predict=0)");
  if (n_prompt > max_prompt)
    return Error::make(ErrorCode::PromptTooLong).str("prompt too long: ").num(n_prompt).str(" tokens, at most ").num(max_prompt);
  for (uint32_t i = 0; i < n_prompt; i++)
    if (prompt[i] >= cfg.vocab_size) return Error::make(ErrorCode::TokenOutOfRange).str("token ").num(i).str(" out of range");
  if (uint64_t(n_prompt) + n_predict > cfg.runtime_seq_len)
    return Error::make(ErrorCode::RequestTooLong).str("request too long for runtime_seq_len=").num(cfg.runtime_seq_len);
  return {};
}

size_t Session::bytes_needed(const Config& cfg, bool paged_kv) {
  SessionOptions opt;
  opt.paged_kv = paged_kv;
  return layout(cfg, opt).total;
}

size_t Session::bytes_needed(const Config& cfg, const SessionOptions& opt) { return layout(cfg, opt).total; }

ErrorOr<void, Error> Session::init(const Model& model, void* mem, size_t size, const SessionOptions& opt) {
  if (!model.loaded()) return Error::make(ErrorCode::BadField).str("session: model not loaded");
  const Config& c = model.config();
  Sizes s = layout(c, opt);
  if (size < s.total)
    return Error::make(ErrorCode::NoMemory).str("not enough memory: session needs ").num(s.total).str(" bytes, have ").num(size);
  if (reinterpret_cast<uintptr_t>(mem) % 16)
    return Error::make(ErrorCode::BadAlignment).str("session: memory is not 16-byte aligned");
  auto* base = static_cast<uint8_t*>(mem);
  auto F = [&](size_t off) { return reinterpret_cast<float*>(base + off); };
  TRY(own_.init(model, base + s.batch, s.total - s.batch, kPrefillChunk, opt));
  model_ = &model;
  cfg_ = &c;
  n_full_ = c.n_full_layers();
  n_linear_ = c.n_linear_layers();
  ops_ = &matvec_ops(opt.matvec);
  opt_ = opt;
  hidden_ = F(s.hidden);
  kcache_ = F(s.kc); vcache_ = F(s.vc); conv_ = F(s.conv); ssm_ = F(s.ssm);
  ckpt_conv_ = opt.checkpoint ? F(s.ckpt_conv) : nullptr;
  ckpt_ssm_ = opt.checkpoint ? F(s.ckpt_ssm) : nullptr;
  pool_ = nullptr;
  table_ = nullptr;
  n_table_ = 0;
  uint32_t nf = 0, nl = 0;
  for (uint32_t l = 0; l < c.n_layers; l++) slot_[l] = uint8_t(c.is_linear(l) ? nl++ : nf++);
  reset();
  return {};
}

void Session::reset() {
  const Config& c = *cfg_;
  pos_ = 0;
  ckpt_pos_ = kNoCheckpoint;
  last_phase_ = Phase::Prefill;
  work_[0] = WorkCounts{};
  work_[1] = WorkCounts{};
  size_t nl = c.n_linear_layers();
  zero_floats(conv_, nl * c.conv_dim() * c.conv_kernel);
  zero_floats(ssm_, nl * c.lin_v_heads * c.lin_k_dim * c.lin_v_dim);
  zero_floats(hidden_, c.dim);
}

ErrorOr<void, Error> Session::resume_at(uint32_t pos) {
  if (cfg_->n_linear_layers() > 0)
    return Error::make(ErrorCode::BadField).str("prefix reuse: the model's linear-attention state is not per position");
  if (pos_ != 0) return Error::make(ErrorCode::BadField).str("prefix reuse: the session has already run");
  if (pos >= kv_capacity())
    return Error::make(ErrorCode::RequestTooLong).str("prefix reuse: position ").num(pos).str(" beyond the KV cache");
  pos_ = pos;
  return {};
}

size_t Session::snapshot_floats(const Config& c, uint32_t rows) {
  return conv_floats(c) + ssm_floats(c) + size_t(2) * rows * c.n_full_layers() * c.kv_dim();
}

size_t Session::recurrent_floats(const Config& c) { return conv_floats(c) + ssm_floats(c); }

void Session::snapshot_spans(uint32_t from, uint32_t to, SpanFn fn, void* ctx) {
  const Config& c = *cfg_;
  fn(ctx, conv_, conv_floats(c));
  fn(ctx, ssm_, ssm_floats(c));
  snapshot_row_spans(from, to, fn, ctx);
}

void Session::snapshot_row_spans(uint32_t from, uint32_t to, SpanFn fn, void* ctx) {
  const Config& c = *cfg_;
  for (uint32_t pos = from; pos < to; pos++)
    for (uint32_t slot = 0; slot < n_full_; slot++) {
      KvRows rows = kv_rows(slot, pos);
      fn(ctx, rows.k, c.kv_dim());
      fn(ctx, rows.v, c.kv_dim());
    }
}

ErrorOr<void, Error> Session::resume_from_snapshot(uint32_t pos) {
  if (pos_ != 0) return Error::make(ErrorCode::BadField).str("snapshot: the session has already run");
  if (pos >= kv_capacity())
    return Error::make(ErrorCode::RequestTooLong).str("snapshot: position ").num(pos).str(" beyond the KV cache");
  pos_ = pos;
  return {};
}

ErrorOr<void, Error> Session::keep_checkpoint() {
  const Config& c = *cfg_;
  if (c.n_linear_layers() == 0) {
    ckpt_pos_ = pos_;   // the KV rows are the whole state: nothing to copy
    return {};
  }
  if (ckpt_conv_ == nullptr)
    return Error::make(ErrorCode::BadField).str("checkpoint: the session has no room for one (SessionOptions::checkpoint)");
  copy_floats(ckpt_conv_, conv_, conv_floats(c));
  copy_floats(ckpt_ssm_, ssm_, ssm_floats(c));
  ckpt_pos_ = pos_;
  return {};
}

ErrorOr<void, Error> Session::rewind(uint32_t pos) {
  const Config& c = *cfg_;
  if (pos > pos_)
    return Error::make(ErrorCode::BadField).str("rewind: position ").num(pos).str(" is ahead of the session (").num(pos_).str(")");
  if (pos == pos_) return {};
  if (c.n_linear_layers() > 0) {
    if (ckpt_pos_ != pos)
      return Error::make(ErrorCode::BadField).str("rewind: no checkpoint at position ").num(pos).str(" (the linear-attention state moves only forward)");
    copy_floats(conv_, ckpt_conv_, conv_floats(c));
    copy_floats(ssm_, ckpt_ssm_, ssm_floats(c));
  }
  pos_ = pos;
  return {};
}

ErrorOr<void, Error> Session::feed(uint32_t token) {
  BatchItem item{this, token, Phase::Prefill, false, 0};
  return own_.forward(&item, 1);
}

uint32_t Session::argmax() {
  ArgMax best;
  uint32_t which = 0;
  // The classifier on hidden_ alone: a one-item pass of the Batch's classifier.
  BatchItem item{this, 0, last_phase_, true, 0};
  own_.items_ = &item;
  own_.n_ = 1;
  own_.classify(hidden_, 0, &which, 1, &best);
  own_.items_ = nullptr;
  own_.n_ = 0;
  return best.index;
}

void Session::logits(float* out) {
  ActVec a = own_.prepare_one(hidden_, cfg_->dim, 0);
  ops_->matvec(model_->embedding(), a, out, 0, cfg_->vocab_size);
}

namespace {

// The prompt in passes of up to `chunk` tokens; the last token's item gets
// `logits` (nullptr: its argmax). Returns that item's next.
ErrorOr<uint32_t, Error> prefill_chunks(Session* s, Batch& own, const uint32_t* tokens, uint32_t n, uint32_t chunk,
                                        float* logits) {
  if (n == 0) return Error::make(ErrorCode::EmptyRequest).str("empty prompt");
  BatchItem items[Session::kPrefillChunk];
  for (uint32_t i0 = 0; i0 < n; i0 += chunk) {
    uint32_t m = n - i0 < chunk ? n - i0 : chunk;
    for (uint32_t i = 0; i < m; i++) items[i] = BatchItem{s, tokens[i0 + i], Phase::Prefill, i0 + i == n - 1, 0};
    if (i0 + m == n) items[m - 1].logits = logits;
    TRY(own.forward(items, m));
    if (i0 + m == n) return items[m - 1].next;
  }
  return 0;  // not reached: n > 0
}

}  // namespace

ErrorOr<uint32_t, Error> Session::prefill(const uint32_t* tokens, uint32_t n) {
  return prefill_chunks(this, own_, tokens, n, kPrefillChunk, nullptr);
}

ErrorOr<void, Error> Session::prefill_logits(const uint32_t* tokens, uint32_t n, float* logits) {
  TRY(prefill_chunks(this, own_, tokens, n, kPrefillChunk, logits));
  return {};
}

ErrorOr<uint32_t, Error> Session::step(uint32_t token) {
  BatchItem item{this, token, Phase::Decode, true, 0};
  TRY(own_.forward(&item, 1));
  return item.next;
}

ErrorOr<void, Error> Session::step_logits(uint32_t token, float* logits) {
  BatchItem item{this, token, Phase::Decode, true, 0, logits};
  TRY(own_.forward(&item, 1));
  return {};
}

ErrorOr<void, Error> Session::verify(const uint32_t* tokens, uint32_t n, uint32_t* next, float* logits) {
  if (n == 0 || n > kPrefillChunk) return Error::make(ErrorCode::BadField).str("verify: 1 to kPrefillChunk tokens");
  BatchItem items[kPrefillChunk];
  for (uint32_t i = 0; i < n; i++)
    items[i] = BatchItem{this, tokens[i], Phase::Decode, true, 0, logits ? logits + size_t(i) * cfg_->vocab_size : nullptr};
  TRY(own_.forward(items, n));
  if (!logits)
    for (uint32_t i = 0; i < n; i++) next[i] = items[i].next;
  return {};
}

}  // namespace llm
