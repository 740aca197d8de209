// Model configuration: CFG.BIN (course v1 Llama, v2 Qwen3.5, kai v3) plus the
// per-layer types of LTY.BIN, parsed and validated before any weight is
// touched. See docs/model-format.md.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "llm_error.h"

namespace llm {

constexpr uint32_t kCfgMagic = 0x31474643;  // "CFG1"
constexpr uint32_t kMaxLayers = 100;         // L00.BIN .. L99.BIN
// Prompt tokens per request. The course's runners take at most 255
// (llmrun keeps that, docs/cold-path.md); a caller that sets the context
// (the kernel's service, `llmrun --context N`) takes up to
// kMaxContextPrompt, one page of ids, within the context.
constexpr uint32_t kMaxPrompt = 255;
constexpr uint32_t kMaxContextPrompt = 1024;

// Sanity limits: a header beyond these is rejected as corrupt.
constexpr uint32_t kMaxDim = 16384;
constexpr uint32_t kMaxHidden = 65536;
constexpr uint32_t kMaxHeads = 256;
constexpr uint32_t kMaxHeadDim = 1024;
constexpr uint32_t kMaxVocab = 1u << 20;
constexpr uint32_t kMaxSeqLen = 1u << 20;
constexpr uint32_t kMaxRuntimeSeqLen = 32768;
constexpr uint32_t kMaxConvKernel = 64;

enum class Family : uint8_t { Llama = 0, Qwen = 1 };
enum class WeightFormat : uint8_t { Q8 = 0, F32 = 1 };
enum class LayerType : uint8_t { Full = 0, Linear = 1 };

constexpr uint32_t kFlagAttnGate = 1u << 0;  // Qwen: q_proj carries gate rows
constexpr uint32_t kFlagQkNorm = 1u << 1;    // Qwen: q_norm/k_norm present

struct Config {
  uint32_t version = 0;
  Family family = Family::Llama;
  uint32_t flags = 0;
  uint32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  uint32_t vocab_size = 0, seq_len = 0, runtime_seq_len = 0;
  float rms_eps = 0, rope_theta = 0;
  uint32_t rope_rotary_dim = 0;
  uint32_t lin_k_heads = 0, lin_v_heads = 0, lin_k_dim = 0, lin_v_dim = 0, conv_kernel = 0;
  WeightFormat weight_format = WeightFormat::Q8;
  LayerType layer_type[kMaxLayers] = {};

  bool is_qwen() const { return family == Family::Qwen; }
  bool attn_gate() const { return is_qwen() && (flags & kFlagAttnGate); }
  bool qk_norm() const { return is_qwen() && (flags & kFlagQkNorm); }
  bool is_linear(uint32_t l) const { return layer_type[l] == LayerType::Linear; }
  uint32_t n_linear_layers() const;
  uint32_t n_full_layers() const { return n_layers - n_linear_layers(); }

  uint32_t q_dim() const { return n_heads * head_dim; }
  uint32_t kv_dim() const { return n_kv_heads * head_dim; }
  uint32_t key_dim() const { return lin_k_heads * lin_k_dim; }
  uint32_t value_dim() const { return lin_v_heads * lin_v_dim; }
  uint32_t conv_dim() const { return 2 * key_dim() + value_dim(); }
  uint32_t rot_dim() const { return rope_rotary_dim; }
  uint32_t q_proj_rows() const { return attn_gate() ? 2 * q_dim() : q_dim(); }

  // Byte sizes of the bundle's files as this header implies.
  uint64_t matrix_bytes(uint64_t rows, uint64_t cols) const {
    return weight_format == WeightFormat::F32 ? rows * cols * 4 : rows * 4 + rows * cols;
  }
  uint64_t emb_bytes() const { return matrix_bytes(vocab_size, dim); }
  uint64_t nrm_bytes() const { return uint64_t(dim) * 4; }
  uint64_t rop_bytes() const { return uint64_t(runtime_seq_len) * rot_dim() * 4; }
  uint64_t lty_bytes() const { return 4 + uint64_t(n_layers) * 4; }
  uint64_t layer_bytes(uint32_t l) const;
  uint64_t n_params() const;  // parameters in EMB, NRM and all layers
};

// Parses CFG.BIN (and LTY.BIN for Qwen; may be null for Llama) into *out.
// Every field is checked; the message names the file and the field.
ErrorOr<void, Error> parse_config(const uint8_t* cfg, size_t cfg_size, const uint8_t* lty,
                                  size_t lty_size, bool have_lty, Config* out);

// Layer file name "Lnn.BIN" into buf[8].
void layer_file_name(uint32_t layer, char buf[8]);

}  // namespace llm
