// Choosing the next token from the logits: greedy or sampled.
//
// The same code runs on the cold path (llmrun), in the kernel's AI service
// and in the host runner, and it is a pure function of (logits, parameters,
// generator state, recent tokens): the logits are bit-identical on all three
// (same runtime code), so the same seed gives the same tokens everywhere.
//
// The steps, in this order (each one optional; llama.cpp's sampler chain
// and Hugging Face's logits processors apply them in the same spirit):
//   1. repetition penalty: a token seen in the last `repeat_last_n` tokens
//      has its logit divided by `repeat_penalty` if positive, multiplied if
//      negative (the CTRL paper's rule), so it becomes less likely either way;
//   2. temperature: logits / T (T < 1 sharpens, T > 1 flattens);
//   3. top-k: keep the k largest logits (in falling order; without top-k
//      every token stays, in index order, and nothing is sorted);
//   4. softmax over what is left;
//   5. min-p: drop tokens whose probability is below min_p x the largest;
//   6. top-p (nucleus): keep the smallest prefix, by falling probability,
//      whose total reaches p (ranking only as far as that prefix reaches);
//   7. draw one token with a uniform number from the generator, walking the
//      candidates in their order (the first whose cumulative mass passes it).
// Temperature 0 means greedy: the argmax (lowest index on ties), exactly
// the token the runtime's classifier picks, with no randomness used.
#pragma once
#include <stdint.h>

namespace llm {

struct SamplingParams {
  float temperature = 0;       // 0 = greedy
  uint32_t top_k = 0;          // 0 = off
  float top_p = 1;             // 1 = off
  float min_p = 0;             // 0 = off
  float repeat_penalty = 1;    // 1 = off
  uint32_t repeat_last_n = 64; // how many recent tokens the penalty looks at
  bool greedy() const { return temperature <= 0; }
};

// The largest value of each parameter, in the units the ABI and command
// lines use (thousandths for fractions). A larger value is refused by every
// runner, never quietly clipped:
//   temperature   10000 = T 10 (beyond, every token is nearly equally likely)
//   top_p, min_p  1000 = 1.0 (probability fractions)
//   repeat_penalty 10000 = divide by 10
//   repeat_last_n 256 tokens: the window the runners copy for the penalty
//                 (the kernel's worker and llmrun keep it on the stack)
// top_k has no maximum: a top_k of the vocabulary size or more keeps every
// token, exactly as 0 does. The kernel ABI (include/kai/ai_abi.h) states the
// same numbers; kernel/abi_checks.cpp checks that they agree.
constexpr uint32_t kMaxTemperatureMilli = 10000;
constexpr uint32_t kMaxTopPMilli = 1000;
constexpr uint32_t kMaxMinPMilli = 1000;
constexpr uint32_t kMaxRepeatPenaltyMilli = 10000;
constexpr uint32_t kMaxRepeatLastN = 256;

// True when every parameter is within its maximum above.
bool sampling_in_range(uint32_t temperature, uint32_t top_p, uint32_t min_p, uint32_t repeat_penalty,
                       uint32_t repeat_last_n);

// Sampling parameters travel as whole thousandths (700 = 0.7) on command
// lines and in the kernel ABI, so that every runner turns them into exactly
// the same floats: this is the one place that does. 0 means "off" for
// top_p and repeat_penalty (as 1000 does), 0 for repeat_last_n means 64.
SamplingParams sampling_from_thousandths(uint32_t temperature, uint32_t top_k, uint32_t top_p,
                                         uint32_t min_p, uint32_t repeat_penalty, uint32_t repeat_last_n);
// "0.7" -> 700, "1" -> 1000, "1.25" -> 1250: a decimal with at most three
// digits after the point, at most max. False for anything else.
bool parse_thousandths(const char* s, uint32_t max, uint32_t* out);

// A small, fast, reproducible generator (SplitMix64): the whole state is
// one 64-bit number, so a request's sampling can be replayed from its seed.
struct Rng {
  uint64_t state = 0;
  uint64_t next();
  float uniform();   // in [0, 1), 24 random bits
};
Rng rng_from_seed(uint64_t seed);

// Picks the next token. `logits` (n values) is used as scratch and changed;
// `order` is caller scratch of n entries. `recent` holds the tokens so far
// (prompt and output), the last `n_recent` of which the penalty considers.
uint32_t sample_token(float* logits, uint32_t n, const SamplingParams& p, Rng& rng,
                      const uint32_t* recent, uint32_t n_recent, uint32_t* order);

}  // namespace llm
