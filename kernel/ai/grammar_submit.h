// ai_submit's side of constrained decoding (grammar_submit.cpp).
#pragma once
#include <kai/ai_abi.h>
#include "ai_error.h"
#include "request_grammar.h"

namespace ai {

// The fields' shape (ai_abi.h, kai_ai_grammar): a known kind with 1 ..
// kMaxGrammarBytes bytes of text, or NONE with nothing; reserved zero.
bool grammar_shape_ok(const kai_ai_grammar& g);

// Copies in g's text and compiles it for model `model`'s vocabulary:
// nullptr for KAI_AI_GRAMMAR_NONE. The compiler's message of a refused
// grammar also goes to g.error_text. Sleeps (file reads, the compile lock):
// call without ai::lock.
ErrorOr<RequestGrammar*, Error> compile_submitted_grammar(const kai_ai_grammar& g, int model);

}  // namespace ai
