// Where the limits promised in the user/kernel ABI meet the ones the kernel
// and the inference runtime are built with. Each fact has one home (the
// ABI header for what user programs see, lib/ for the runtime, kernel/ai for
// the service's buffers); these checks make a change to one of them that
// forgets the other a build error instead of a silent mismatch.
#include <kai/ai_abi.h>
#include "ai/service.h"
#include "llm_config.h"
#include "llm_sample.h"
#include "llm_stop.h"
#include "llm_speculate.h"

// The service checks prompts with the runtime's limit for a caller that sets
// the context, and copies one in through one page (sys_ai.cpp, IdPage).
static_assert(KAI_AI_MAX_PROMPT == llm::kMaxContextPrompt,
              "KAI_AI_MAX_PROMPT (ai_abi.h) and llm::kMaxContextPrompt (lib/llm_config.h) differ");
static_assert(KAI_AI_MAX_PROMPT * sizeof(uint32_t) <= 4096, "a prompt's ids fit one page");
// ai_wait can return at most what a request slot holds.
static_assert(KAI_AI_MAX_OUTPUT == ai::kMaxOutput,
              "KAI_AI_MAX_OUTPUT (ai_abi.h) and ai::kMaxOutput (kernel/ai/limits.h) differ");
// The sampling limits the ABI promises are the ones the sampler honours.
static_assert(KAI_AI_MAX_TEMPERATURE_MILLI == llm::kMaxTemperatureMilli &&
                  KAI_AI_MAX_TOP_P_MILLI == llm::kMaxTopPMilli && KAI_AI_MAX_MIN_P_MILLI == llm::kMaxMinPMilli &&
                  KAI_AI_MAX_REPEAT_PENALTY_MILLI == llm::kMaxRepeatPenaltyMilli,
              "a KAI_AI_MAX_*_MILLI (ai_abi.h) and llm::kMax*Milli (lib/llm_sample.h) differ");
static_assert(KAI_AI_MAX_REPEAT_LAST_N == llm::kMaxRepeatLastN,
              "KAI_AI_MAX_REPEAT_LAST_N (ai_abi.h) and llm::kMaxRepeatLastN (lib/llm_sample.h) differ");
// Stop sequences are checked and matched by lib/llm_stop.h in the ABI's format.
static_assert(KAI_AI_MAX_STOP_SEQS == llm::kMaxStopSequences && KAI_AI_MAX_STOP_TOKENS == llm::kMaxStopTokens &&
                  KAI_AI_MAX_STOP_WORDS == llm::kMaxStopWords,
              "the stop-sequence limits of ai_abi.h and lib/llm_stop.h differ");
// A request may ask for at most as many proposed tokens as an iteration plans.
static_assert(KAI_AI_MAX_DRAFTS == ai::kMaxDrafts,
              "KAI_AI_MAX_DRAFTS (ai_abi.h) and ai::kMaxDrafts (kernel/ai/limits.h) differ");
// ai, aibatch and llmrun parse --speculate K with the runtime's limit, and
// the n-gram proposer's default is the runtime's.
static_assert(KAI_AI_MAX_DRAFTS == llm::kMaxSpecDrafts && KAI_AI_DEFAULT_NGRAM == llm::kDefaultNgram,
              "the speculation limits of ai_abi.h and lib/llm_speculate.h differ");
// The grammar limits of the ABI, the kernel's buffers and the compiler agree.
#include "grammar.h"
#include "ai/ai_error.h"
static_assert(KAI_AI_MAX_GRAMMAR_BYTES == llm::kMaxGrammarBytes && ai::kMaxGrammarBytes == llm::kMaxGrammarBytes,
              "the grammar size limits of ai_abi.h, kernel/ai/limits.h and lib/grammar.h differ");
static_assert(ai::kGrammarScratchBytes == llm::kGrammarScratchBytes && ai::kGrammarTableBytes == llm::kMaxDfaBytes,
              "the grammar compiler's memory (kernel/ai/limits.h, lib/grammar*.h) differ");
static_assert(KAI_AI_GRAMMAR_REGEX == uint32_t(llm::GrammarKind::Regex) &&
                  KAI_AI_GRAMMAR_JSON == uint32_t(llm::GrammarKind::JsonSchema),
              "KAI_AI_GRAMMAR_* (ai_abi.h) and llm::GrammarKind (lib/grammar.h) differ");
static_assert(KAI_AI_ERROR_TEXT_MAX == sizeof(ai::Error::message),
              "KAI_AI_ERROR_TEXT_MAX (ai_abi.h) and ai::Error's message (kernel/ai/ai_error.h) differ");
