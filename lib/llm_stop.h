// When generation ends: the stop rule, one copy for every runner (the
// kernel's AI service, llmrun in the guest and on the host).
//
// After each new token the runner asks finish_reason(), which tries, in
// this order:
//   1. end of sequence: the newest token is one of the model's
//      end-of-sequence ids (only when the caller asked to stop there);
//   2. stop sequence: the output ends with one of the stop sequences;
//   3. length: max_tokens tokens have been generated.
// The first rule that holds names why generation ended; the token that
// triggered it is kept in the output (a stop sequence is the output's last
// tokens). Only generated tokens are matched, never the prompt, so a prompt
// that happens to end with a stop sequence still gets its first token.
//
// Stop sequences travel packed, as the kernel ABI carries them
// (kai_ai_submit.stop in include/kai/ai_abi.h): each one's length, then its
// ids, one after another. {2, 13, 198,  1, 0} is the two sequences "13 198"
// and "0". check_stop_sequences() says whether a packed list is well formed
// for a vocabulary; finish_reason() trusts that it is.
#pragma once
#include <stdint.h>

namespace llm {

constexpr uint32_t kMaxStopSequences = 4;   // sequences per request
constexpr uint32_t kMaxStopTokens = 8;      // ids in one sequence
// The longest packed list: every sequence at its longest, each with its length word.
constexpr uint32_t kMaxStopWords = kMaxStopSequences * (kMaxStopTokens + 1);

enum class Finish : uint8_t { None, Length, EndOfSequence, StopSequence };

struct StopRule {
  const uint32_t* eos = nullptr;    // end-of-sequence ids; n_eos 0: do not stop at them
  uint32_t n_eos = 0;
  const uint32_t* stop = nullptr;   // packed stop sequences, well formed
  uint32_t stop_words = 0;          // words in stop[]; 0: none
  uint32_t max_tokens = 0;          // n_predict: at most this many tokens
};

// Why generation ends now that `output` holds n_output generated tokens,
// or Finish::None to go on.
Finish finish_reason(const StopRule& rule, const uint32_t* output, uint32_t n_output);

enum class StopCheck : uint8_t {
  Ok,
  BadFormat,      // too many words or sequences, a length of 0 or above
                  // kMaxStopTokens, or a length running past the end
  IdOutOfRange,   // well formed, but an id >= vocab_size: it could never be generated
};
// Checks a packed list (any format error is reported before any id).
StopCheck check_stop_sequences(const uint32_t* stop, uint32_t stop_words, uint32_t vocab_size);

}  // namespace llm
