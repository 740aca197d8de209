// Token masks (lib/grammar_mask.h) on a hand-made vocabulary whose answers
// are worked out by hand below, then on the real tokenizers in build/models
// (byte-level BPE and SentencePiece with byte fallback): the cached masks
// with their shared-prefix walk equal a plain walk of every token, and
// grammar_advance agrees with them. The regex and JSON-schema compilers are
// compared with Python in tests/tools/test_grammar.py.
#include <catch2/catch.hpp>
#include <string.h>
#include <string>
#include <vector>
#include "grammar_dfa.h"
#include "grammar_json.h"
#include "grammar_mask.h"
#include "llm_test_util.h"

namespace {

struct Compiled {
  std::vector<uint8_t> scratch = std::vector<uint8_t>(llm::kGrammarScratchBytes);
  std::vector<uint8_t> memory = std::vector<uint8_t>(1 << 20);
  llm::Dfa dfa;
  explicit Compiled(const std::string& pattern) {
    llm::Arena a(scratch.data(), scratch.size()), out(memory.data(), memory.size());
    auto r = llm::compile_regex(pattern.data(), pattern.size(), a, out);
    REQUIRE_FALSE(r.is_error());
    dfa = r.value();
  }
};

// A vocabulary of strings; "<eos>" is the end of sequence, "" a token that
// adds nothing (like llama2.c's <s>). n_logits may exceed the list (padding).
struct TinyVocab {
  std::vector<std::string> tokens;
  static llm::TokenUse use(const void* ctx, uint32_t id, llm::TokenBytes* b) {
    const std::string& t = static_cast<const TinyVocab*>(ctx)->tokens[id];
    if (t == "<eos>") return llm::TokenUse::Eos;
    if (t.empty()) return llm::TokenUse::Never;
    *b = {reinterpret_cast<const uint8_t*>(t.data()), uint32_t(t.size())};
    return llm::TokenUse::Text;
  }
  llm::VocabView view(uint32_t n_logits) const {
    llm::VocabView v;
    v.n_logits = n_logits;
    v.n_real = uint32_t(tokens.size());
    v.ctx = this;
    v.use = use;
    return v;
  }
};

std::vector<uint32_t> allowed_ids(llm::TokenMasks& m, uint16_t state, uint32_t n_logits) {
  const uint32_t* bits = m.mask(state);
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < n_logits; i++)
    if (llm::mask_allows(bits, i)) ids.push_back(i);
  return ids;
}

}  // namespace

TEST_CASE("masks on a tiny vocabulary: live tokens, EOS only when accepting, never padding", "[grammar]") {
  //                      0    1    2     3     4      5        6    7   8
  TinyVocab v{{"a", "b", "ab", "ba", "abc", "<eos>", "c", "", "cc"}};
  Compiled g("(ab)+c?");
  llm::VocabView view = v.view(12);   // ids 9..11 are padding rows
  llm::TokenMasks m;
  std::vector<uint8_t> mem(llm::TokenMasks::bytes_needed(g.dfa, view, 8));
  REQUIRE(m.init(g.dfa, view, mem.data(), mem.size(), 8));

  // At the start "a", "ab" and "abc" can begin a match; nothing else.
  CHECK(allowed_ids(m, 0, 12) == std::vector<uint32_t>{0, 2, 4});
  CHECK(m.allowed(0) == 3);
  // After "ab" (accepting): another "a"/"ab"/"abc", a final "c", or the end.
  uint16_t after_ab = llm::grammar_advance(g.dfa, view, 0, 2);
  REQUIRE(after_ab != llm::kDeadState);
  CHECK(g.dfa.accepting(after_ab));
  CHECK(allowed_ids(m, after_ab, 12) == std::vector<uint32_t>{0, 2, 4, 5, 6});
  // After "abc": complete; only the end of sequence.
  uint16_t after_abc = llm::grammar_advance(g.dfa, view, 0, 4);
  CHECK(g.dfa.complete(after_abc));
  CHECK(allowed_ids(m, after_abc, 12) == std::vector<uint32_t>{5});
  // After "a": only "b"-starting tokens that continue: "b" alone ("ba" would
  // need "aba...", which is fine: "ab" then "a" -- so "ba" is live too).
  uint16_t after_a = llm::grammar_advance(g.dfa, view, 0, 0);
  CHECK(allowed_ids(m, after_a, 12) == std::vector<uint32_t>{1, 3});
  // A disallowed token, the empty token and padding lead to the dead state.
  CHECK(llm::grammar_advance(g.dfa, view, 0, 1) == llm::kDeadState);
  CHECK(llm::grammar_advance(g.dfa, view, 0, 7) == llm::kDeadState);
  CHECK(llm::grammar_advance(g.dfa, view, 0, 10) == llm::kDeadState);
  CHECK(llm::grammar_advance(g.dfa, view, 0, 5) == llm::kDeadState);   // EOS before a match
  CHECK(llm::grammar_advance(g.dfa, view, after_ab, 5) == after_ab);   // EOS after one
  // The cache: four states seen once each, then hits.
  uint64_t misses = m.misses;
  m.mask(0);
  m.mask(after_ab);
  CHECK(m.misses == misses);
}

TEST_CASE("a one-slot cache recomputes evicted masks identically", "[grammar]") {
  TinyVocab v{{"a", "b", "ab", "ba", "abc", "<eos>", "c", "", "cc"}};
  Compiled g("(a|b)*c");
  llm::VocabView view = v.view(9);
  llm::TokenMasks small, big;
  std::vector<uint8_t> m1(llm::TokenMasks::bytes_needed(g.dfa, view, 1)), m2(llm::TokenMasks::bytes_needed(g.dfa, view, 64));
  REQUIRE(small.init(g.dfa, view, m1.data(), m1.size(), 1));
  REQUIRE(big.init(g.dfa, view, m2.data(), m2.size(), 64));
  for (int round = 0; round < 3; round++)
    for (uint16_t s = 0; s < g.dfa.n_states; s++) CHECK(allowed_ids(small, s, 9) == allowed_ids(big, s, 9));
  CHECK(small.misses == 3 * g.dfa.n_states);
  CHECK(big.misses == g.dfa.n_states);
  CHECK_FALSE(small.init(g.dfa, view, m1.data(), m1.size() - 1, 1));   // too little memory is refused
}

TEST_CASE("apply_mask leaves allowed logits and sets the rest to -infinity", "[grammar]") {
  uint32_t mask[2] = {0x5u, 0x1u};   // ids 0, 2, 32
  std::vector<float> logits(40, 1.5f);
  llm::apply_mask(logits.data(), 40, mask);
  for (uint32_t i = 0; i < 40; i++) {
    if (i == 0 || i == 2 || i == 32) CHECK(logits[i] == 1.5f);
    else CHECK(logits[i] == -__builtin_inff());
  }
}

TEST_CASE("real tokenizers: cached masks equal a walk of every token", "[grammar]") {
  const char* bundles[] = {"tiny-chat", "stories260K"};
  const char* patterns[] = {"(yes|no)", "\\{\"a\":-?[0-9]{1,3}\\}", "[A-Z][a-z ]*\\.", "Once upon a time.*"};
  int checked = 0;
  for (const char* b : bundles) {
    std::vector<uint8_t> tok;
    if (!testutil::read_file(testutil::models_dir() + "/" + b + "/TOK.BIN", &tok)) {
      WARN("skipped " << b << ": no TOK.BIN in " << testutil::models_dir() << " (make test-models)");
      continue;
    }
    auto t = llm::load_tokenizer(tok.data(), tok.size());
    REQUIRE_FALSE(t.is_error());
    llm::Tokenizer tk = t.value();
    uint32_t n_logits = tk.vocab_size + 7;   // a padded model
    llm::VocabView sorted = llm::vocab_from_tokenizer(tk, n_logits);
    llm::VocabView plain = sorted;
    plain.order = nullptr;
    for (const char* p : patterns) {
      Compiled g(p);
      llm::TokenMasks a, c;
      std::vector<uint8_t> ma(llm::TokenMasks::bytes_needed(g.dfa, sorted, 1024)), mc(ma.size());
      REQUIRE(a.init(g.dfa, sorted, ma.data(), ma.size(), 1024));
      REQUIRE(c.init(g.dfa, plain, mc.data(), mc.size(), 1024));
      for (uint16_t s = 0; s < g.dfa.n_states; s++) {
        std::vector<uint32_t> want;
        for (uint32_t id = 0; id < n_logits; id++)
          if (llm::grammar_advance(g.dfa, sorted, s, id) != llm::kDeadState) want.push_back(id);
        CHECK(allowed_ids(a, s, n_logits) == want);
        CHECK(allowed_ids(c, s, n_logits) == want);
        CHECK(a.allowed(s) == want.size());
        for (uint32_t id = tk.vocab_size; id < n_logits; id++) CHECK_FALSE(llm::mask_allows(a.mask(s), id));
        checked++;
      }
      // The shared-prefix walk takes fewer steps than walking each token alone.
      CHECK(a.steps < c.steps);
    }
  }
  if (checked == 0) WARN("no tokenizer found: nothing checked");
}

TEST_CASE("SentencePiece byte tokens add their byte; <s> is never allowed", "[grammar]") {
  std::vector<uint8_t> tok;
  if (!testutil::read_file(testutil::models_dir() + "/stories260K/TOK.BIN", &tok)) {
    WARN("skipped: no stories260K TOK.BIN (make test-models)");
    return;
  }
  llm::Tokenizer tk = llm::load_tokenizer(tok.data(), tok.size()).value();
  llm::VocabView v = llm::vocab_from_tokenizer(tk, tk.vocab_size);
  Compiled g("\\{");
  // "<0x7B>" is the byte '{'.
  uint32_t brace = llm::kNoToken;
  for (uint32_t id = 0; id < tk.vocab_size; id++) {
    llm::TokenBytes b = llm::token_bytes(tk, id);
    if ((tk.token_flags[id] & llm::kTokenByte) && std::string(reinterpret_cast<const char*>(b.data), b.size) == "<0x7B>")
      brace = id;
  }
  REQUIRE(brace != llm::kNoToken);
  uint16_t s = llm::grammar_advance(g.dfa, v, 0, brace);
  CHECK(s != llm::kDeadState);
  CHECK(g.dfa.complete(s));
  CHECK(llm::grammar_advance(g.dfa, v, 0, tk.bos_id) == llm::kDeadState);
}

TEST_CASE("a JSON schema compiles to a DFA that takes its canonical instance", "[grammar]") {
  const std::string schema = R"({"type":"object","properties":{"answer":{"enum":["yes","no"]},"n":{"type":"integer","minimum":1,"maximum":12}}})";
  std::vector<uint8_t> scratch(llm::kGrammarScratchBytes), memory(1 << 20);
  llm::Arena a(scratch.data(), scratch.size()), out(memory.data(), memory.size());
  std::vector<char> rx(llm::kMaxPatternBytes);
  auto n = llm::json_schema_to_regex(schema.data(), schema.size(), a, rx.data(), rx.size());
  REQUIRE_FALSE(n.is_error());
  CHECK(a.used == 0);   // scratch given back
  auto d = llm::compile_regex(rx.data(), n.value(), a, out);
  REQUIRE_FALSE(d.is_error());
  auto ok = [&](const char* s) { return d.value().matches(reinterpret_cast<const uint8_t*>(s), strlen(s)); };
  CHECK(ok(R"({"answer":"yes","n":12})"));
  CHECK(ok(R"({"answer":"no","n":1})"));
  CHECK_FALSE(ok(R"({"answer":"no","n":13})"));
  CHECK_FALSE(ok(R"({"answer":"maybe","n":1})"));
  CHECK_FALSE(ok(R"({"n":1,"answer":"no"})"));
}
