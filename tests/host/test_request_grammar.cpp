// The kernel's side of a constrained request (kernel/ai/request_grammar.h),
// built for the host: compile into one region, mask a row of logits for the
// state after the output so far, walk again when the output changes, say
// when the output is a match or complete, refuse a bad grammar with its
// position, and fail (not hang) when no token can continue. The vocabulary
// is the worked example of docs/constrained-decoding.md; the answers are
// worked out by hand there.
#include <catch2/catch.hpp>
#include <math.h>
#include <string.h>
#include <string>
#include <vector>
#include "../../kernel/ai/limits.h"
#include "../../kernel/ai/request_grammar.h"

namespace {

// "<eos>" is the end of sequence; every other entry is a text token.
const std::vector<std::string> kTokens = {"a", "b", "ab", "ba", "abc", "<eos>", "c", "cc"};
enum : uint32_t { A, B, AB, BA, ABC, EOS, C, CC, kVocab };

llm::TokenUse use(const void*, uint32_t id, llm::TokenBytes* b) {
  const std::string& t = kTokens[id];
  if (t == "<eos>") return llm::TokenUse::Eos;
  *b = {reinterpret_cast<const uint8_t*>(t.data()), uint32_t(t.size())};
  return llm::TokenUse::Text;
}

llm::VocabView view() {
  llm::VocabView v;
  v.n_logits = v.n_real = kVocab;
  v.use = use;
  return v;
}

struct Built {
  std::vector<uint8_t> scratch = std::vector<uint8_t>(ai::kGrammarScratchBytes);
  std::vector<uint8_t> table = std::vector<uint8_t>(ai::kGrammarTableBytes);
  llm::VocabView vocab = view();
  ErrorOr<ai::RequestGrammar*, ai::Error> build(llm::GrammarKind kind, const std::string& text) {
    return ai::grammar_build(kind, text.data(), uint32_t(text.size()), vocab, scratch.data(), table.data());
  }
};

// The ids a masked row of zeros leaves finite.
std::vector<uint32_t> allowed_after(ai::RequestGrammar* g, const std::vector<uint32_t>& output) {
  float logits[kVocab] = {};
  auto r = ai::grammar_mask(g, output.data(), uint32_t(output.size()), logits, kVocab);
  REQUIRE_FALSE(r.is_error());
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < kVocab; i++)
    if (!isinf(logits[i])) ids.push_back(i);
  return ids;
}

}  // namespace

TEST_CASE("request grammar: masks follow the output, EOS only after a match", "[grammar][ai]") {
  Built b;
  auto built = b.build(llm::GrammarKind::Regex, "(ab)+c?");
  REQUIRE_FALSE(built.is_error());
  ai::RequestGrammar* g = built.value();
  CHECK(allowed_after(g, {}) == std::vector<uint32_t>{A, AB, ABC});
  CHECK_FALSE(ai::grammar_matched(g));
  CHECK(allowed_after(g, {AB}) == std::vector<uint32_t>{A, AB, ABC, EOS, C});
  CHECK(ai::grammar_matched(g));
  CHECK_FALSE(ai::grammar_complete(g));
  CHECK(allowed_after(g, {AB, A}) == std::vector<uint32_t>{B, BA});
  CHECK_FALSE(ai::grammar_matched(g));
  // The output got shorter (a request recomputed from its tokens): walked again.
  CHECK(allowed_after(g, {AB}) == std::vector<uint32_t>{A, AB, ABC, EOS, C});
  CHECK(allowed_after(g, {}) == std::vector<uint32_t>{A, AB, ABC});
  uint32_t done[] = {ABC};
  ai::grammar_sync(g, done, 1);
  CHECK(ai::grammar_complete(g));
  CHECK(allowed_after(g, {ABC}) == std::vector<uint32_t>{EOS});
  ai::grammar_free(g);
}

TEST_CASE("request grammar: refused grammars name the position; unspellable ones fail", "[grammar][ai]") {
  Built b;
  auto bad = b.build(llm::GrammarKind::Regex, "a(b");
  REQUIRE(bad.is_error());
  CHECK(bad.error().code == Errno::Invalid);
  CHECK(std::string(bad.error().message) == "regex: unbalanced ( at 1");
  auto schema = b.build(llm::GrammarKind::JsonSchema, "{\"type\":\"object\",\"pattern\":\"x\"}");
  REQUIRE(schema.is_error());
  CHECK(schema.error().code == Errno::Invalid);
  CHECK(std::string(schema.error().message).rfind("json-schema: ", 0) == 0);
  // No token of the vocabulary starts with x: an error, not an empty draw.
  auto stuck = b.build(llm::GrammarKind::Regex, "x");
  REQUIRE_FALSE(stuck.is_error());
  float logits[kVocab] = {};
  auto r = ai::grammar_mask(stuck.value(), nullptr, 0, logits, kVocab);
  REQUIRE(r.is_error());
  CHECK(r.error().code == Errno::Invalid);
  CHECK(std::string(r.error().message).find("no token can continue the match") != std::string::npos);
  ai::grammar_free(stuck.value());
}
