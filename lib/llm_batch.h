// The batched forward pass: one call advances many tokens at once, each an
// item (session, token). The items may be several consecutive tokens of one
// prompt (prefill: causal among themselves), one next token of each of several
// requests at different positions (batched decode), or a mix.
//
// Why batch: a decode step for one token multiplies every weight once (matrix
// x vector) and is bound by reading the weights; eight requests decoded apart
// read all weights eight times. In a batch every projection and the MLP are
// one matrix x matrix product over the items, so each weight loaded serves
// every item; attention and the Gated DeltaNet recurrence depend on each
// request's own history and run per item.
//
//   Batch b;  TRY(b.init(model, mem, Batch::bytes_needed(cfg, 8), 8, opt));
//   BatchItem items[2] = {{&s1, tok1, Phase::Decode, true, 0}, {&s2, tok2, Phase::Decode, true, 0}};
//   TRY(b.forward(items, 2));      // items[i].next = each request's next token
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "llm_model.h"
#include "llm_rows.h"
#include "matvec.h"

namespace llm {

class Session;

struct SessionOptions {
  MatvecKind matvec = MatvecKind::Float;
  uint32_t int8_group = 32;  // int8 activations: values per power-of-two block gain (0 = one block)
  // The KV cache lives in a shared pool of blocks (Session::set_kv_pages),
  // not in the session's own memory: bytes_needed() leaves it out.
  bool paged_kv = false;
  // Room for one checkpoint of the recurrent state (Session::keep_checkpoint),
  // so that a model with linear-attention layers can move back
  // (Session::rewind). Costs as much memory again as that state (Qwen3.5-0.8B
  // shape: about 19 MiB); models without such layers need none.
  bool checkpoint = false;
};

// Which work counters of a session a token is charged to.
enum class Phase : uint8_t { Prefill, Decode };

// What the forward pass did for one session in one phase, counted where the
// work happens (not from a formula):
//   macs           multiply-adds: rows x cols of every matrix product per item
//                  (projections, MLP, classifier), attention's q.k and p.v,
//                  DeltaNet's causal conv taps and its three state products
//                  (S^T k, S += k delta^T, S^T q; the decay S *= g is a
//                  multiply, not counted). Norms, RoPE and softmax are not.
//   weight_bytes   bytes of weight matrices read (int8 values + row scales, or
//                  f32 values) plus the embedding row. One pass reads a matrix
//                  once for all its items: item i of n is charged
//                  floor(B (i+1) / n) - floor(B i / n) of its B bytes, so the
//                  items' shares add up to exactly B.
//   kv_read_bytes  K and V cache bytes attention reads: rows 0..pos of the
//                  item's KV head, once per KV head (GQA query heads sharing
//                  it read the same rows again from the cache; not counted).
//   kv_write_bytes K and V rows written (one of each per full layer and token).
struct WorkCounts {
  uint64_t macs = 0, weight_bytes = 0, kv_read_bytes = 0, kv_write_bytes = 0;
};

// Where a copy of a session's recurrent state goes in the middle of a pass
// (BatchItem::keep_state): put(ctx, at, src, n) receives n floats that
// belong at float `at` of the session's snapshot stream (the order of
// Session::snapshot_spans: every linear layer's conv window, then every
// DeltaNet head's state). Pieces arrive in any order, and from several
// harts at once (the heads of a layer run on the row team): put must only
// write where `at` says, and the pieces never overlap.
struct StateSink {
  void (*put)(void* ctx, size_t at, const float* src, size_t n) = nullptr;
  void* ctx = nullptr;
};

struct BatchItem {   // one token of one request
  Session* session;  // its KV cache / recurrent state advance by one position
  uint32_t token;    // fed at session->position() (+ earlier items of the same session)
  Phase phase;       // which work counters of the session it is charged to
  bool want_next;    // run the classifier (last prompt token, or a decode token)
  uint32_t next;     // out: greedy next token (argmax, lowest index wins ties)
  // With want_next: nullptr asks for the argmax only (a scan fused into the
  // classifier's product, no vocab_size floats written); otherwise the
  // pass writes all vocab_size logits of this position here (for a
  // sampler, a verifier or a mask), and `next` is left as it was. One
  // product over the vocabulary per position either way.
  float* logits = nullptr;
  // Not null: right after this item, the session's recurrent state (the
  // state at position + 1, as if the pass had ended here) is copied to
  // this sink, layer by layer as the pass goes. Why: a linear layer's state
  // changes in place with every token, so without this the state at a
  // position inside a prompt chunk would exist only if the chunk stopped
  // there, costing a pass over the weights (kernel/ai/kv_checkpoint.h).
  // The K/V rows are per position and need no such copy. Models without
  // linear layers never call it.
  const StateSink* keep_state = nullptr;
};

// Scratch for one forward pass over up to max_items tokens. Holds no request
// state (that lives in the Sessions), so one Batch can serve any sessions of
// its model, one pass at a time.
class Batch {
 public:
  constexpr Batch() = default;

  // Bytes of caller memory for a Batch of max_items items (64-byte multiple).
  static size_t bytes_needed(const Config& cfg, uint32_t max_items);
  // Lays the scratch out in mem[0..size) (16-byte aligned, owned by the caller).
  ErrorOr<void, Error> init(const Model& model, void* mem, size_t size, uint32_t max_items,
                            const SessionOptions& opt);
  void set_parallel(const Parallel* p) { par_ = p; }  // nullptr = serial

  // Items of one session must be consecutive and in position order (a prompt
  // chunk); every session must belong to this Batch's model and use the same
  // SessionOptions (matvec kind, and group for int8); tokens < vocab_size and
  // positions < runtime_seq_len. Otherwise an Error naming the bad item, and
  // nothing changed. Each item's effect == session->feed(token) (+ argmax()
  // when want_next), bit for bit. n == 0 does nothing.
  ErrorOr<void, Error> forward(BatchItem* items, uint32_t n);

  const MatvecOps& ops() const { return *ops_; }

 private:
  friend class Session;
  ErrorOr<void, Error> check(const BatchItem* items, uint32_t n) const;
  ActVec prepare_one(const float* x, uint32_t len, uint32_t slot);
  const ActVec* prepare(const float* x, size_t stride, uint32_t len);
  const ActVec* pack_prepared(uint32_t m);
  // Runs fn(*this, arg, k, part) for every k in [0, count), the range cut
  // into one piece per Parallel part (part p: [count p / P, count (p+1) / P)),
  // so float work that is independent per item (norms, quantising) or per
  // (item, head) (attention) runs on every hart of a row team. Serial on the
  // caller when there is no Parallel, when count < 2, or when a session has
  // an observer (its callback sees the items in order). Each k is computed
  // the same way wherever it runs: the split changes no bit.
  using EachFn = void (*)(Batch& b, const void* arg, uint32_t k, uint32_t part);
  struct EachJob;
  void for_each(uint32_t count, EachFn fn, const void* arg, uint64_t macs);
  // Between two blocks, per item: x += xb2 (the block's output joins the
  // residual stream), the observer's look after a layer, then the next
  // block's input: xb = rmsnorm(x) * norm, prepared for the kernels.
  struct NextInput {
    bool add_output = false;
    int32_t observed_layer = -1;    // >= 0: observers see x after this layer
    const float* norm = nullptr;    // nullptr: no next block (the final norm is separate)
  };
  const ActVec* next_input(const NextInput& step);
  // The matrix products of a block over the items' prepared inputs a,
  // charged to the items (charge_matrix, per matrix) and handed to the
  // Parallel parts as ONE job each (llm_rows.h says why and how):
  //   project        y[i] = w a[i] for every item: one product alone
  //   project_all    independent products over the same inputs (q, k, v)
  //   project_swiglu gate and up, then gate.y[i] = silu(gate.y[i]) * up.y[i]
  void project(const Matrix& w, const ActVec* a, float* y, size_t y_stride);
  void project_all(const Product* list, uint32_t count, const ActVec* a);
  void project_swiglu(const Product& gate, const Product& up, const ActVec* a);
  void classify(const float* rows, size_t stride, const uint32_t* which, uint32_t m, ArgMax* best);
  void classify_logits(const float* rows, size_t stride, const uint32_t* which, uint32_t m);
  void charge_classifier(const uint32_t* which, uint32_t m);
  void charge_matrix(const Matrix& w);
  // Each block takes its prepared input (the items' xb) and leaves its
  // output in xb2.
  void attention(const LayerView& L, uint32_t slot, const ActVec* a);
  void deltanet(const LayerView& L, uint32_t slot, const ActVec* a);
  void mlp(const LayerView& L, const ActVec* a);
  // One (item, head) pair of attention (llm_forward.cpp).
  struct HeadJob;
  static void attend_head(Batch& b, const void* job, uint32_t pair, uint32_t part);
  // One DeltaNet value head for every item of the pass, in item order.
  struct DeltaJob;
  static void delta_head(Batch& b, const void* job, uint32_t head, uint32_t part);
  WorkCounts& work(uint32_t item) const;

  const Model* model_ = nullptr;
  const Config* cfg_ = nullptr;
  const MatvecOps* ops_ = nullptr;
  const Parallel* par_ = nullptr;
  uint32_t group_ = 32;
  uint32_t max_ = 0;
  // The pass in progress: its items, each item's position.
  BatchItem* items_ = nullptr;
  uint32_t n_ = 0;
  uint32_t* pos_ = nullptr;         // [max_items] position of item i in its session
  bool observed_ = false;           // a session of the pass has an observer

  // Activations, one row per item, each row padded to a 64-byte multiple
  // (the *_stride_ values, in floats):
  float* x_ = nullptr;    // [max_items][dim] residual stream
  float* xb_ = nullptr;   // [max_items][dim] RMS-normed input of a block (then the final normed vector)
  float* xb2_ = nullptr;  // [max_items][dim] output of a block, added to x
  float* q_ = nullptr;    // [max_items][max(q_proj_rows, conv_dim)] queries (+gates), or DeltaNet's q|k|v
  float* k_ = nullptr;    // [max_items][kv_dim] this token's key
  float* v_ = nullptr;    // [max_items][kv_dim] this token's value
  float* ao_ = nullptr;   // [max_items][max(q_dim, value_dim)] attention / DeltaNet output per head
  float* hb_ = nullptr;   // [max_items][hidden_dim] MLP gate, then silu(gate) * up
  float* hb2_ = nullptr;  // [max_items][hidden_dim] MLP up
  float* z_ = nullptr;    // [max_items][value_dim] DeltaNet output gate
  float* ab_ = nullptr;   // [max_items][2 * v_heads] DeltaNet a (decay) then b (beta) per head
  size_t dim_stride_ = 0, q_stride_ = 0, kv_stride_ = 0, ao_stride_ = 0, hid_stride_ = 0;
  size_t z_stride_ = 0, ab_stride_ = 0;
  // int8 activations: each item's input vector quantised once per product.
  int8_t* actq_ = nullptr;    // [max_items][max_cols] int8 values
  uint8_t* shift_ = nullptr;  // [max_items][max_cols] power-of-two gain per group (<= one per value)
  size_t actq_stride_ = 0;
  int64_t* pair_ = nullptr;   // [(max_items + 1) / 2][int8_pack_stride(max_cols)] items packed 2 or 3 per word (matmul_int8.cpp)
  uint64_t* cross_ = nullptr; // [max_cols / 2] a lone item packed crosswise (matmul_int8.cpp)
  ActVec* acts_ = nullptr;    // [max_items] the prepared inputs of the current product
  // Per pass, shared by the items (used one item at a time):
  float* att_ = nullptr;      // [kMaxParts][att_stride_] attention scores of one head, per part
  size_t att_stride_ = 0;
  float* tmp_ = nullptr;      // [kMaxParts][tmp_stride_] DeltaNet S^T k then delta, per part
  size_t tmp_stride_ = 0;
  ArgMax* part_best_ = nullptr;  // [kMaxParts + 1][max_items] classifier winners per row range, then overall
  uint32_t* which_ = nullptr;    // [max_items] items that want a next token (argmax ones, then logits ones)
};

}  // namespace llm
