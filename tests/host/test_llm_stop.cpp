// The stop rule (lib/llm_stop.h): which rule ends generation and in what
// order, and which packed stop-sequence lists are accepted.
#include <catch2/catch.hpp>
#include <vector>
#include "llm_stop.h"

namespace {

using llm::Finish;
using llm::StopCheck;

Finish finish(const llm::StopRule& rule, const std::vector<uint32_t>& out) {
  return llm::finish_reason(rule, out.data(), uint32_t(out.size()));
}

StopCheck check(const std::vector<uint32_t>& stop, uint32_t vocab = 100) {
  return llm::check_stop_sequences(stop.data(), uint32_t(stop.size()), vocab);
}

}  // namespace

TEST_CASE("generation ends at max_tokens and not before", "[stop]") {
  llm::StopRule rule;
  rule.max_tokens = 3;
  CHECK(finish(rule, {}) == Finish::None);
  CHECK(finish(rule, {5}) == Finish::None);
  CHECK(finish(rule, {5, 6}) == Finish::None);
  CHECK(finish(rule, {5, 6, 7}) == Finish::Length);
}

TEST_CASE("an end-of-sequence id ends generation only when asked for", "[stop]") {
  const uint32_t eos[] = {2, 9};
  llm::StopRule rule;
  rule.max_tokens = 10;
  CHECK(finish(rule, {4, 9}) == Finish::None);   // n_eos 0: not asked
  rule.eos = eos;
  rule.n_eos = 2;
  CHECK(finish(rule, {4, 9}) == Finish::EndOfSequence);
  CHECK(finish(rule, {2}) == Finish::EndOfSequence);
  CHECK(finish(rule, {9, 4}) == Finish::None);   // only the newest token counts
}

TEST_CASE("a stop sequence ends generation when the output ends with it", "[stop]") {
  const uint32_t stop[] = {2, 13, 198, 1, 0};   // "13 198" and "0"
  llm::StopRule rule;
  rule.stop = stop;
  rule.stop_words = 5;
  rule.max_tokens = 10;
  CHECK(finish(rule, {13}) == Finish::None);
  CHECK(finish(rule, {13, 198}) == Finish::StopSequence);
  CHECK(finish(rule, {7, 13, 198}) == Finish::StopSequence);
  CHECK(finish(rule, {198, 13}) == Finish::None);
  CHECK(finish(rule, {13, 7, 198}) == Finish::None);   // not contiguous
  CHECK(finish(rule, {5, 0}) == Finish::StopSequence);  // the second sequence
  CHECK(finish(rule, {0, 5}) == Finish::None);
}

TEST_CASE("the rules are tried in order: end of sequence, stop sequence, length", "[stop]") {
  const uint32_t eos[] = {7};
  const uint32_t stop[] = {1, 7, 2, 3, 4};
  llm::StopRule rule;
  rule.eos = eos;
  rule.n_eos = 1;
  rule.stop = stop;
  rule.stop_words = 5;
  rule.max_tokens = 2;
  CHECK(finish(rule, {5, 7}) == Finish::EndOfSequence);   // both eos and stop "7", at the length
  CHECK(finish(rule, {3, 4}) == Finish::StopSequence);    // stop "3 4" at the length
  CHECK(finish(rule, {4, 3}) == Finish::Length);
}

TEST_CASE("well-formed stop lists are accepted, at every limit", "[stop]") {
  CHECK(check({}) == StopCheck::Ok);
  CHECK(check({1, 0}) == StopCheck::Ok);
  CHECK(check({1, 99}) == StopCheck::Ok);                 // the last id of a 100-token vocabulary
  CHECK(check({8, 1, 2, 3, 4, 5, 6, 7, 8}) == StopCheck::Ok);   // kMaxStopTokens ids
  std::vector<uint32_t> longest;
  for (uint32_t s = 0; s < llm::kMaxStopSequences; s++) {
    longest.push_back(llm::kMaxStopTokens);
    for (uint32_t i = 0; i < llm::kMaxStopTokens; i++) longest.push_back(i);
  }
  REQUIRE(longest.size() == llm::kMaxStopWords);
  CHECK(check(longest) == StopCheck::Ok);
}

TEST_CASE("malformed stop lists are refused", "[stop]") {
  CHECK(check({0}) == StopCheck::BadFormat);                           // empty sequence
  CHECK(check({9, 1, 2, 3, 4, 5, 6, 7, 8, 9}) == StopCheck::BadFormat);   // one id too many
  CHECK(check({3, 1, 2}) == StopCheck::BadFormat);                     // runs past the end
  CHECK(check({1, 5, 0xffffffffu}) == StopCheck::BadFormat);           // a huge length cannot wrap
  CHECK(check({1, 1, 1, 2, 1, 3, 1, 4, 1, 5}) == StopCheck::BadFormat);   // five sequences
  std::vector<uint32_t> too_long(llm::kMaxStopWords + 1, 1);
  CHECK(check(too_long) == StopCheck::BadFormat);
}

TEST_CASE("a stop id outside the vocabulary is refused: it could never match", "[stop]") {
  CHECK(check({1, 100}) == StopCheck::IdOutOfRange);
  CHECK(check({2, 5, 100}, 100) == StopCheck::IdOutOfRange);
  CHECK(check({2, 5, 100}, 101) == StopCheck::Ok);
  // A format error is reported before any id.
  CHECK(check({1, 100, 0}) == StopCheck::BadFormat);
}
