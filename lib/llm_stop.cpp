// The stop rule: see llm_stop.h for the order of the rules and the packed
// format of stop sequences.
#include "llm_stop.h"

namespace llm {

namespace {

bool ends_with(const uint32_t* output, uint32_t n_output, const uint32_t* seq, uint32_t len) {
  if (len > n_output) return false;
  const uint32_t* tail = output + (n_output - len);
  for (uint32_t i = 0; i < len; i++)
    if (tail[i] != seq[i]) return false;
  return true;
}

}  // namespace

Finish finish_reason(const StopRule& rule, const uint32_t* output, uint32_t n_output) {
  if (n_output == 0) return Finish::None;   // nothing generated yet: nothing can match
  uint32_t last = output[n_output - 1];
  for (uint32_t i = 0; i < rule.n_eos; i++)
    if (rule.eos[i] == last) return Finish::EndOfSequence;
  for (uint32_t at = 0; at < rule.stop_words; at += 1 + rule.stop[at])
    if (ends_with(output, n_output, rule.stop + at + 1, rule.stop[at])) return Finish::StopSequence;
  if (n_output >= rule.max_tokens) return Finish::Length;
  return Finish::None;
}

StopCheck check_stop_sequences(const uint32_t* stop, uint32_t stop_words, uint32_t vocab_size) {
  if (stop_words > kMaxStopWords) return StopCheck::BadFormat;
  uint32_t sequences = 0;
  bool id_out_of_range = false;
  for (uint32_t at = 0; at < stop_words; at += 1 + stop[at]) {
    uint32_t len = stop[at];
    // `len` is at most kMaxStopTokens before `at + 1 + len` is formed, so
    // the sum cannot wrap.
    if (len == 0 || len > kMaxStopTokens || at + 1 + len > stop_words) return StopCheck::BadFormat;
    if (++sequences > kMaxStopSequences) return StopCheck::BadFormat;
    for (uint32_t i = 0; i < len; i++) id_out_of_range |= stop[at + 1 + i] >= vocab_size;
  }
  return id_out_of_range ? StopCheck::IdOutOfRange : StopCheck::Ok;
}

}  // namespace llm
