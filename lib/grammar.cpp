// compile_grammar and Constraint (grammar.h).
#include "grammar.h"

namespace llm {

Result<Dfa> compile_grammar(GrammarKind kind, const char* text, size_t len, Arena& scratch, Arena& out) {
  if (kind == GrammarKind::Regex) return compile_regex(text, len, scratch, out);
  if (kind != GrammarKind::JsonSchema) return Error::make(ErrorCode::BadValue).str("grammar: unknown kind");
  size_t mark = scratch.used;
  char* regex = scratch.take<char>(kMaxPatternBytes);
  if (!regex) return Error::make(ErrorCode::NoMemory).str("json-schema: compiler scratch memory too small");
  auto n = json_schema_to_regex(text, len, scratch, regex, kMaxPatternBytes);
  if (n.is_error()) {
    scratch.used = mark;
    return n.error();
  }
  auto dfa = compile_regex(regex, n.value(), scratch, out);
  scratch.used = mark;
  return dfa;
}

Result<uint32_t> Constraint::mask_logits(float* logits, uint32_t n) {
  if (state_ == kDeadState)
    return Error::make(ErrorCode::BadValue).str("grammar: the output left the grammar");
  uint32_t allowed = masks_->allowed(state_);
  if (allowed == 0)
    return Error::make(ErrorCode::BadValue)
        .str("grammar: no token can continue the match (the vocabulary cannot spell what the grammar needs)");
  apply_mask(logits, n, masks_->mask(state_));
  return allowed;
}

void Constraint::replay(const uint32_t* output, uint32_t n) {
  state_ = 0;
  for (uint32_t i = 0; i < n; i++) advance(output[i]);
}

}  // namespace llm
