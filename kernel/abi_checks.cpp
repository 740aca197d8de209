// Where the limits promised in the user/kernel ABI meet the ones the kernel
// and the inference runtime are built with. Each fact has one home (the
// ABI header for what user programs see, lib/ for the runtime, kernel/ai for
// the service's buffers); these checks make a change to one of them that
// forgets the other a build error instead of a silent mismatch.
#include <kai/ai_abi.h>
#include "ai/service.h"
#include "llm_config.h"

// A prompt the ABI accepts must fit the runtime's prompt buffer.
static_assert(KAI_AI_MAX_PROMPT == llm::kMaxPrompt,
              "KAI_AI_MAX_PROMPT (ai_abi.h) and llm::kMaxPrompt (lib/llm_config.h) differ");
// ai_wait can return at most what a request slot holds.
static_assert(KAI_AI_MAX_OUTPUT == ai::kMaxOutput,
              "KAI_AI_MAX_OUTPUT (ai_abi.h) and ai::kMaxOutput (kernel/ai/service.h) differ");
