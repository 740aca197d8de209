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
#include "matvec.h"

namespace llm {

struct SessionOptions {
  MatvecKind matvec = MatvecKind::Float;
  uint32_t int8_group = 32;  // int8 activations: values per power-of-two block gain (0 = one block)
};

// Called after each layer with the residual stream x (layer 0..n_layers-1)
// and once more with the final RMS-normed hidden vector (layer == n_layers).
using LayerObserver = void (*)(void* ctx, uint32_t layer, const float* x, uint32_t dim);

// Request checks with the course's wording and one code per cause:
// EmptyRequest (no prompt or n_predict == 0), PromptTooLong (> 255),
// TokenOutOfRange ("token i out of range", i = index in the prompt),
// RequestTooLong ("request too long for runtime_seq_len=N").
ErrorOr<void, Error> check_request(const Config& cfg, const uint32_t* prompt, uint32_t n_prompt,
                                   uint32_t n_predict);

class Session {
 public:
  constexpr Session() = default;

  // Bytes of caller memory a session of this model needs (64-byte aligned).
  static size_t bytes_needed(const Config& cfg);

  // Lays the session out in mem[0..size) and resets it. mem must be
  // 16-byte aligned; it is owned by the caller and must outlive the session.
  ErrorOr<void, Error> init(const Model& model, void* mem, size_t size, const SessionOptions& opt = {});

  // Forget everything: position 0, zero recurrent states.
  void reset();

  // Runs the forward pass for one token at position(), then advances.
  ErrorOr<void, Error> feed(uint32_t token);
  // Greedy next token from the last feed (argmax of the tied classifier,
  // lowest index wins ties). Only valid after at least one feed.
  uint32_t argmax();
  // All vocab_size logits of the last feed into out.
  void logits(float* out);

  // feed() every prompt token, then argmax(): the first generated token.
  ErrorOr<uint32_t, Error> prefill(const uint32_t* tokens, uint32_t n);
  // feed(token) then argmax(): the next generated token.
  ErrorOr<uint32_t, Error> step(uint32_t token);

  uint32_t position() const { return pos_; }
  const float* hidden() const { return hidden_; }  // final RMS-normed vector
  const Model& model() const { return *model_; }
  const MatvecOps& ops() const { return *ops_; }
  void set_observer(LayerObserver fn, void* ctx) { obs_ = fn; obs_ctx_ = ctx; }

 private:
  ActVec prepare(const float* x, uint32_t n);
  void mv(const Matrix& w, const ActVec& a, float* y) { ops_->matvec(w, a, y, 0, w.rows); }
  void attention(const LayerView& L, uint32_t slot);
  void deltanet(const LayerView& L, uint32_t slot);
  void mlp(const LayerView& L);

  const Model* model_ = nullptr;
  const Config* cfg_ = nullptr;
  const MatvecOps* ops_ = nullptr;
  uint32_t group_ = 32;
  uint32_t pos_ = 0;
  bool fed_ = false;
  // activations and scratch
  float *x_ = nullptr, *xb_ = nullptr, *xb2_ = nullptr, *hidden_ = nullptr;
  float *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *att_ = nullptr, *ao_ = nullptr;
  float *hb_ = nullptr, *hb2_ = nullptr, *z_ = nullptr, *ab_ = nullptr, *tmp_ = nullptr;
  int8_t* actq_ = nullptr;
  float* acts_ = nullptr;
  // state
  float *kcache_ = nullptr, *vcache_ = nullptr;  // [n_full][runtime_seq_len][kv_dim]
  float* conv_ = nullptr;                         // [n_linear][conv_dim][conv_kernel]
  float* ssm_ = nullptr;                          // [n_linear][v_heads][k_dim][v_dim]
  uint8_t slot_[kMaxLayers] = {};                 // layer -> index among its kind
  LayerObserver obs_ = nullptr;
  void* obs_ctx_ = nullptr;
};

}  // namespace llm
