// RoPE tables beyond the bundle's: a model's context may be longer than the
// runtime_seq_len its ROP.BIN was written for (the course's Qwen bundle has
// 64 rows, the model itself 262,144 positions). The rows past the bundle's
// are computed here, in double precision and with integer-free, libm-free
// code that gives the same bits on the host (x86-64) and in kai (RISC-V):
// only IEEE additions, multiplications and divisions, evaluated in a fixed
// order (-std=c++20 keeps the compiler from fusing them). So the host runner
// with --context N and the kernel with ai.context=N use identical tables.
#pragma once
#include <stdint.h>
#include "llm_config.h"
#include "llm_error.h"

namespace llm {

// sin(x) and cos(x) for |x| < 2^20 (positions times frequencies <= 1), to
// about 1e-16 absolute.
void sincos_d(double x, double* s, double* c);

// Row `pos` of the table ROP.BIN would hold for this config: rot/2 cosines
// then rot/2 sines of pos * theta^(-2i/rot), each rounded to float.
void rope_row_compute(const Config& c, uint32_t pos, float* row);

// The context (positions per request) a model gets when `requested`
// positions are asked for (ai.context, llmrun --context; 0: the default):
//  - requested > 0: that many, at most the model's seq_len;
//  - 0, Qwen family: at least kDefaultQwenContext (and at least the bundle's
//    runtime_seq_len), at most seq_len. Its 6-of-24 attention layers need
//    24 KiB of KV per position at the real shape, so 1024 positions cost
//    24 MiB of the KV pool;
//  - 0, Llama family: the bundle's runtime_seq_len (SmolLM2's 30 attention
//    layers take 45 KiB per position: its 256 already fill 11 MiB per
//    request, and a longer default would let one request take most of the
//    default 96 MiB pool).
constexpr uint32_t kDefaultQwenContext = 1024;
uint32_t context_for(const Config& c, uint32_t requested);

}  // namespace llm
