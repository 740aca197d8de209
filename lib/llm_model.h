// A loaded model: the validated configuration plus views into caller-owned
// bundle bytes (zero-copy). Immutable after load(), so one Model can serve
// any number of Sessions (and harts) at once.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "llm_config.h"
#include "llm_error.h"
#include "matvec.h"

namespace llm {

struct Bytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// Where bundle files come from. get() returns the whole content of a file
// ("CFG.BIN", "EMB.BIN", "L07.BIN", ...) or false if it does not exist. The
// bytes must stay valid and unchanged while a Model uses them, and must be
// 4-byte aligned (float arrays are used in place). get() is called at most
// once per file, in the order CFG, LTY, EMB, NRM, ROP, L00, L01, ...
class BundleSource {
 public:
  virtual bool get(const char* name, Bytes* out) {
    (void)name;
    (void)out;
    return false;
  }

 protected:
  ~BundleSource() = default;
};

// A BundleSource over files already in memory (tests, the kernel service).
class MemoryBundle : public BundleSource {
 public:
  static constexpr uint32_t kMaxFiles = kMaxLayers + 8;
  // Returns false when full or the name is too long (> 11 chars).
  bool add(const char* name, const void* data, size_t size);
  bool get(const char* name, Bytes* out) override;

 private:
  struct Entry {
    char name[12];
    Bytes bytes;
  };
  Entry files_[kMaxFiles] = {};
  uint32_t n_ = 0;
};

// Weight views of one layer (pointers into the layer's blob).
struct LayerView {
  const float* in_norm = nullptr;
  const float* post_norm = nullptr;
  // full attention (llama and qwen)
  const float* q_norm = nullptr;   // qwen with the q/k-norm flag
  const float* k_norm = nullptr;
  Matrix wq, wk, wv, wo;
  // linear attention (qwen Gated DeltaNet)
  const float* conv = nullptr;     // [conv_dim][conv_kernel]
  const float* dt_bias = nullptr;  // [v_heads]
  const float* a_log = nullptr;    // [v_heads]
  const float* gnorm = nullptr;    // [v_head_dim]
  Matrix in_qkv, in_z, in_a, in_b, out;
  // MLP
  Matrix gate, up, down;
};

class Model {
 public:
  constexpr Model() = default;

  // Reads and validates every file of the bundle; on success the model keeps
  // pointers into the bytes `src` returned.
  ErrorOr<void, Error> load(BundleSource& src);

  // Sets the context, the positions one request may use, to `context`
  // (llm_rope.h's context_for gives it): config().runtime_seq_len becomes
  // it, so sessions, batches and KV pools are sized by it. Up to the
  // bundle's runtime_seq_len the bundle's ROP.BIN serves; a longer context
  // needs `table`, rope_table_floats(context) floats that the caller keeps
  // for the model's lifetime: it gets the bundle's rows, then computed ones
  // (llm_rope.h), after checking that the bundle's last row is what the
  // computation gives (a bundle whose table follows another rule keeps its
  // own length: the error says so). A context beyond seq_len is an error.
  uint64_t rope_table_floats(uint32_t context) const {
    return context > bundle_rows_ ? uint64_t(context) * cfg_.rot_dim() : 0;
  }
  ErrorOr<void, Error> set_context(uint32_t context, float* table);
  uint32_t bundle_rope_rows() const { return bundle_rows_; }

  bool loaded() const { return loaded_; }
  const Config& config() const { return cfg_; }
  const char* family_name() const { return cfg_.is_qwen() ? "qwen3.5" : "llama"; }
  uint64_t n_params() const { return cfg_.n_params(); }
  uint64_t weight_bytes() const { return bytes_; }  // bytes of all files in use

  Matrix embedding() const;                // vocab_size x dim, also the classifier
  const float* final_norm() const { return nrm_; }
  const float* rope_row(uint32_t pos) const { return rop_ + size_t(pos) * cfg_.rot_dim(); }
  LayerView layer(uint32_t l) const;

 private:
  Config cfg_;
  const uint8_t* emb_ = nullptr;
  const float* nrm_ = nullptr;
  const float* rop_ = nullptr;      // [runtime_seq_len][rot_dim]: ROP.BIN or a longer table
  uint32_t bundle_rows_ = 0;        // rows of ROP.BIN (the bundle's runtime_seq_len)
  const uint8_t* layers_[kMaxLayers] = {};
  uint64_t bytes_ = 0;
  bool loaded_ = false;
};

}  // namespace llm
