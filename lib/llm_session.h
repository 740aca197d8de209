// Per-request inference state: KV cache (full-attention layers), causal conv
// and recurrent Gated DeltaNet states (linear layers), activations and
// scratch, all inside one caller-supplied memory block. A Session refers to
// an immutable Model; many sessions may share one model.
//
//   size_t n = llm::Session::bytes_needed(model.config());
//   llm::Session s;  TRY(s.init(model, mem, n));
//   TRY(llm::check_request(model.config(), prompt, n_prompt, n_predict));
//   uint32_t tok = TRY(s.prefill(prompt, n_prompt));      // first token
//   for (i = 1; i < n_predict; i++) tok = TRY(s.step(tok)); // each next token
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "llm_model.h"
#include "llm_batch.h"
#include "matvec.h"

namespace llm {

// Called after each layer with the residual stream x (layer 0..n_layers-1)
// and once more with the final RMS-normed hidden vector (layer == n_layers),
// for the token at position pos. A batched pass reports layer by layer over
// its items, so calls of different positions interleave.
using LayerObserver = void (*)(void* ctx, uint32_t pos, uint32_t layer, const float* x, uint32_t dim);

// Where one position's key and value rows live in a session's KV cache.
struct KvRows {
  float* k;  // [kv_dim]
  float* v;  // [kv_dim]
};

// A paged KV cache (the kernel's AI service; docs/ai-service.md, "The KV cache
// as paged memory"): K and V rows of many sessions in one pool of fixed-size blocks,
// each block holding `block_size` consecutive positions of every full-attention
// layer. A session maps its positions to blocks through a block table, as a
// process maps virtual pages to physical frames through its page table:
// position p lives in block table[p / block_size], at row p % block_size.
//
//   k (and v): [n_blocks][n_full_layers][block_size][kv_dim] floats
struct KvPool {
  float* k = nullptr;
  float* v = nullptr;
  uint32_t block_size = 0;   // positions per block (> 0)
  uint32_t n_blocks = 0;
  // Bytes of K plus V for one block of this model.
  static size_t bytes_per_block(const Config& cfg, uint32_t block_size) {
    return size_t(2) * cfg.n_full_layers() * block_size * cfg.kv_dim() * sizeof(float);
  }
};

// Request checks with the course's wording and one code per cause:
// EmptyRequest (no prompt or n_predict == 0), PromptTooLong (> max_prompt:
// the course's 255 unless the caller allows more, llm_config.h),
// TokenOutOfRange ("token i out of range", i = index in the prompt),
// RequestTooLong ("request too long for runtime_seq_len=N").
ErrorOr<void, Error> check_request(const Config& cfg, const uint32_t* prompt, uint32_t n_prompt,
                                   uint32_t n_predict, uint32_t max_prompt = kMaxPrompt);

class Session {
 public:
  constexpr Session() = default;

  // Tokens one internal forward pass of prefill() takes (a prompt chunk).
  // 18: a multiple of 3 and 2, so the int8 kernels pack every item of a
  // chunk three (or two) to a word (matmul_int8.cpp).
  static constexpr uint32_t kPrefillChunk = 18;

  // Bytes of caller memory a session of this model needs (64-byte multiple):
  // its state plus a Batch of kPrefillChunk items for feed/prefill/step.
  static size_t bytes_needed(const Config& cfg, bool paged_kv = false);
  static size_t bytes_needed(const Config& cfg, const SessionOptions& opt);

  // Lays the session out in mem[0..size) and resets it. mem must be
  // 16-byte aligned; it is owned by the caller and must outlive the session.
  ErrorOr<void, Error> init(const Model& model, void* mem, size_t size, const SessionOptions& opt = {});

  // Forget everything: position 0, zero recurrent states, zero work counts.
  void reset();

  // Runs the forward pass for one token at position(), then advances.
  // Charged to Phase::Prefill.
  ErrorOr<void, Error> feed(uint32_t token);
  // Greedy next token from the last feed (argmax of the tied classifier,
  // lowest index wins ties). Only valid after at least one feed. Charged to
  // the phase of the last token fed.
  uint32_t argmax();
  // All vocab_size logits of the last feed into out.
  void logits(float* out);

  // The prompt in batched passes of kPrefillChunk tokens (matrix x matrix),
  // then the classifier once: the first generated token.
  ErrorOr<uint32_t, Error> prefill(const uint32_t* tokens, uint32_t n);
  // One decode token (Phase::Decode) and the classifier: the next token.
  ErrorOr<uint32_t, Error> step(uint32_t token);
  // The same two, for a sampler: the classifier writes all vocab_size
  // logits of the last position into `logits` instead of taking their
  // argmax (one product over the vocabulary either way; calling logits()
  // after prefill()/step() would be a second one).
  ErrorOr<void, Error> prefill_logits(const uint32_t* tokens, uint32_t n, float* logits);
  ErrorOr<void, Error> step_logits(uint32_t token, float* logits);

  // Speculation's verify pass: tokens[0..n) (n <= kPrefillChunk: a token
  // then the drafts that follow it) in ONE batched pass, every position's
  // next token wanted (Phase::Decode): its argmax in next[i], or, with
  // logits, its vocab_size logits in row i of logits. Bit for bit what n
  // step()s would give; the caller rewinds past the drafts it rejects.
  ErrorOr<void, Error> verify(const uint32_t* tokens, uint32_t n, uint32_t* next, float* logits);

  uint32_t position() const { return pos_; }
  const Model& model() const { return *model_; }
  const MatvecOps& ops() const { return *ops_; }
  const WorkCounts& work(Phase p) const { return work_[uint32_t(p)]; }
  void set_observer(LayerObserver fn, void* ctx) { obs_ = fn; obs_ctx_ = ctx; }
  // The session's own Batch (feed/prefill/step) runs its products in parallel.
  void set_parallel(const Parallel* p) { own_.set_parallel(p); }

  // Paged sessions (SessionOptions::paged_kv): the pool and this session's
  // block table, table[i] = the block of positions [i*B, (i+1)*B). The
  // caller owns both and may grow n_table (and change entries it has not
  // used yet) between passes; positions >= n_table * B are refused.
  void set_kv_pages(const KvPool* pool, const uint32_t* table, uint32_t n_table) {
    pool_ = pool;
    table_ = table;
    n_table_ = n_table;
  }
  // Positions the KV cache can hold now.
  uint32_t kv_capacity() const {
    if (!opt_.paged_kv) return cfg_->runtime_seq_len;
    uint64_t cap = pool_ ? uint64_t(n_table_) * pool_->block_size : 0;
    return cap < cfg_->runtime_seq_len ? uint32_t(cap) : cfg_->runtime_seq_len;
  }
  // Prefix reuse: continue at position pos as if tokens 0..pos-1 had been
  // fed, their K/V rows already in this session's blocks (computed by an
  // earlier request with the same tokens: a cached prefix). Only for models
  // without linear-attention layers, whose recurrent state is not stored
  // per position (BadField otherwise), and for a fresh session.
  ErrorOr<void, Error> resume_at(uint32_t pos);

  // A state snapshot (the kernel's recurrent-state checkpoints,
  // kernel/ai/kv_checkpoint.h): everything a session at position `to` holds
  // beyond the K/V rows of positions [0, from): the linear layers' conv
  // windows and DeltaNet states, then the K and V rows of positions
  // [from, to) of every full-attention layer. snapshot_spans() hands each
  // piece to fn in that fixed order, so the same walk copies a snapshot
  // out of a session and back into another one (rows of positions
  // < kv_capacity() only).
  using SpanFn = void (*)(void* ctx, float* span, size_t n_floats);
  void snapshot_spans(uint32_t from, uint32_t to, SpanFn fn, void* ctx);
  // The K/V rows part alone (positions [from, to)), in the same order: for
  // a snapshot whose recurrent part a pass already handed to a StateSink
  // (BatchItem::keep_state), which lands at recurrent_floats() onwards.
  void snapshot_row_spans(uint32_t from, uint32_t to, SpanFn fn, void* ctx);
  static size_t recurrent_floats(const Config& cfg);
  static size_t snapshot_floats(const Config& cfg, uint32_t rows);
  // A fresh session whose snapshot_spans(from, pos) were just written from
  // a snapshot taken at position pos (and whose K/V rows of [0, from) are
  // in its blocks): it continues at pos, exactly as if tokens 0..pos-1 had
  // been fed. Any model; BadField if the session has already run.
  ErrorOr<void, Error> resume_from_snapshot(uint32_t pos);

  // Rollback: positions computed and then not accepted (a speculative
  // token the model did not confirm). The state of a session is its KV
  // rows, one per position, plus, for linear-attention layers, a recurrent
  // state that every token changes in place: the first can move back by
  // forgetting rows (they are overwritten when positions are fed again),
  // the second only by going back to a copy taken earlier, a checkpoint.
  //
  // keep_checkpoint() copies the recurrent state at position() into the
  // session's checkpoint room (SessionOptions::checkpoint); a model
  // without linear layers has nothing to copy and needs no room.
  ErrorOr<void, Error> keep_checkpoint();
  // rewind(pos): continue at position pos <= position(), as if only tokens
  // 0..pos-1 had been fed. A model with linear layers can go back only to
  // its checkpoint's position (BadField otherwise: the caller recomputes
  // from there). argmax() and logits() need a feed after a rewind.
  ErrorOr<void, Error> rewind(uint32_t pos);
  // The position of the kept checkpoint, or kNoCheckpoint.
  static constexpr uint32_t kNoCheckpoint = 0xffffffffu;
  uint32_t checkpoint_position() const { return ckpt_pos_; }

  // THE place that knows where a K/V row is: full-attention layer `slot`
  // (index among the full layers), position pos < kv_capacity(). Either a
  // contiguous [n_full][runtime_seq_len][kv_dim] array per K and V in the
  // session's memory, or, paged, row pos % B of block table[pos / B].
  KvRows kv_rows(uint32_t slot, uint32_t pos) const {
    if (opt_.paged_kv) {
      uint32_t B = pool_->block_size;
      size_t row = ((size_t(table_[pos / B]) * n_full_ + slot) * B + pos % B) * cfg_->kv_dim();
      return {pool_->k + row, pool_->v + row};
    }
    size_t row = (size_t(slot) * cfg_->runtime_seq_len + pos) * cfg_->kv_dim();
    return {kcache_ + row, vcache_ + row};
  }

 private:
  friend class Batch;
  float* conv_state(uint32_t slot) const {  // [conv_dim][conv_kernel], oldest input first
    return conv_ + size_t(slot) * cfg_->conv_dim() * cfg_->conv_kernel;
  }
  float* ssm_state(uint32_t slot, uint32_t head) const {  // [k_head_dim][v_head_dim]
    const Config& c = *cfg_;
    return ssm_ + (size_t(slot) * c.lin_v_heads + head) * c.lin_k_dim * c.lin_v_dim;
  }
  // Where those two sit in the snapshot stream (snapshot_spans): every
  // conv window first, then every DeltaNet head's state.
  size_t conv_offset(uint32_t slot) const { return size_t(slot) * cfg_->conv_dim() * cfg_->conv_kernel; }
  size_t ssm_offset(uint32_t slot, uint32_t head) const {
    const Config& c = *cfg_;
    return conv_offset(n_linear_) + (size_t(slot) * c.lin_v_heads + head) * c.lin_k_dim * c.lin_v_dim;
  }

  const Model* model_ = nullptr;
  const Config* cfg_ = nullptr;
  const MatvecOps* ops_ = nullptr;
  SessionOptions opt_;
  uint32_t pos_ = 0;         // tokens fed so far = position of the next one
  Phase last_phase_ = Phase::Prefill;
  WorkCounts work_[2];       // per Phase
  // State, in the caller's memory:
  float* hidden_ = nullptr;  // [dim] final RMS-normed vector of the last token fed (classifier input)
  float* kcache_ = nullptr;  // [n_full][runtime_seq_len][kv_dim] keys (only via kv_rows)
  float* vcache_ = nullptr;  // [n_full][runtime_seq_len][kv_dim] values (only via kv_rows)
  const KvPool* pool_ = nullptr;     // paged: the shared pool (only via kv_rows)
  const uint32_t* table_ = nullptr;  // paged: block of each block-size run of positions
  // cfg_->n_full_layers(), kept: kv_rows() runs for every position of every
  // head, and the count walks all the layers (1% of a decode step's real time).
  uint32_t n_full_ = 0;
  uint32_t n_linear_ = 0;    // cfg_->n_linear_layers(), kept for the same reason
  uint32_t n_table_ = 0;
  float* conv_ = nullptr;    // [n_linear][conv_dim][conv_kernel] last inputs of the causal conv
  float* ssm_ = nullptr;     // [n_linear][v_heads][k_dim][v_dim] DeltaNet recurrent states
  // SessionOptions::checkpoint: copies of conv_ and ssm_ taken at ckpt_pos_
  // (kNoCheckpoint: none kept, or the model has no linear layers).
  float* ckpt_conv_ = nullptr;
  float* ckpt_ssm_ = nullptr;
  uint32_t ckpt_pos_ = kNoCheckpoint;
  uint8_t slot_[kMaxLayers] = {};  // layer -> index among its kind (full or linear)
  LayerObserver obs_ = nullptr;
  void* obs_ctx_ = nullptr;
  Batch own_;                // scratch for this session's own passes
};

}  // namespace llm
