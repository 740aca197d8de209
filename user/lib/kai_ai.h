// Conveniences over the AI system calls (declared in kai_sys.h).
#pragma once
#include <stdint.h>
#include "kai_sys.h"

extern "C" {
// The one way user programs build a submit request: every field of
// struct kai_ai_submit set, the reserved ones zero (the kernel refuses
// anything else there). A field added to the ABI gets its default here.
struct kai_ai_submit ai_request(const char* model, const uint32_t* prompt, uint32_t prompt_len,
                                uint32_t n_predict, uint32_t flags = 0, uint32_t priority = 0);

// Submit and wait in one call. Returns the number of generated tokens
// (copied to out) or -errno; res (may be null) gets the result record.
long ai_call(const char* model, const uint32_t* prompt, uint32_t prompt_len, uint32_t n_predict,
             uint32_t* out, uint32_t capacity, struct kai_ai_result* res);

// Waits (polling ai_info once per 100 ms, at most timeout_s seconds) until
// the named model (or, with name == "", the first model that is ready or
// still loading) is ready; copies
// its name into name_out (KAI_AI_MODEL_NAME_MAX bytes) and its info into
// *mi. Returns 0, or -KAI_ENOENT / -KAI_ENODEV / -KAI_EAGAIN (timeout).
int ai_wait_model_ready(const char* name, int timeout_s, char* name_out, struct kai_ai_model_info* mi);
// The same, for a program's command line: on failure prints
// "PROG: model NAME: why" (no such model, failed to load, still loading)
// and returns the error.
int ai_open_model(const char* prog, const char* name, int timeout_s, char* name_out, struct kai_ai_model_info* mi);

// Latency breakdown of a finished request, in nanoseconds. The one place in
// user space where these formulas are written (tools/bench.py has the same
// ones for the host side):
//   queue   = start - submit + requeued time waiting for a worker (again,
//                                       after a preemption: requeued_us)
//   prefill = first token - start       prompt processing + the first token
//   ttft    = first token - submit      time to first token, queue included
//   tpot    = (finish - first token) / (generated - 1)   time per output
//             token after the first; 0 when only one token was generated
//   total   = finish - submit           end to end
// A timestamp earlier than the one it is measured from counts as 0.
struct ai_latency_ns {
  uint64_t queue, prefill, ttft, tpot, total;
};
struct ai_latency_ns ai_latency_ns_of(const struct kai_ai_result* res);

// The same figures in microseconds (rounded down), for printing.
struct ai_latency {
  uint64_t queue_us;    // start - submit, plus time requeued after preemptions
  uint64_t prefill_us;  // first token - start (prompt processing + first token)
  uint64_t ttft_us;     // first token - submit
  uint64_t tpot_us;     // (finish - first) / (generated - 1), 0 if one token
  uint64_t total_us;    // finish - submit
};
struct ai_latency ai_latency_of(const struct kai_ai_result* res);
const char* ai_state_name(int32_t state);
}

extern "C" {
// ---- generation options shared by the AI programs' command lines ----------
// What a request asks for beyond its prompt: sampling, stop sequences and
// the end-of-sequence flag. ai_generation_option() recognises
//   --temp X  --top-k N  --top-p X  --min-p X  --repeat-penalty X
//   --repeat-last-n N  --seed N  --stop "ID ID ..." (repeatable)  --stop-eos
//   --stop-text "TEXT" (repeatable)
// at argv[*i] (consuming its value: *i advances); returns 1 if it took the
// option, 0 if argv[*i] is none of these, -1 after printing why the value
// is bad ("PROG: --top-p: '1.5' is not a fraction from 0 to 1").
// --stop-text only records the text: the program encodes it once it has the
// model's tokenizer (kai_text_add_stops in kai_text.h), and from then on it
// is a stop sequence like any --stop.
struct ai_generation {
  struct kai_ai_sampling sampling;
  uint32_t stop[KAI_AI_MAX_STOP_WORDS];
  uint32_t stop_words;
  uint32_t flags;   // KAI_AI_STOP_AT_EOS
  const char* stop_text[KAI_AI_MAX_STOP_SEQS];   // --stop-text values, not yet encoded
  uint32_t n_stop_text;
};
int ai_generation_option(const char* prog, int argc, char** argv, int* i, struct ai_generation* g);
// Appends ids[0..n) to g->stop as one sequence; false when n is 0 or above
// KAI_AI_MAX_STOP_TOKENS, or g already holds KAI_AI_MAX_STOP_SEQS sequences.
bool ai_add_stop_ids(struct ai_generation* g, const uint32_t* ids, uint32_t n);
// Copies g's sampling, stop sequences and flags into a request.
void ai_apply_generation(struct kai_ai_submit* req, const struct ai_generation* g);
// "length", "eos", "stop", "cancelled", "failed", "grammar", "prefix", "no-token" or "-".
const char* ai_finish_name(uint32_t reason);

// ---- constrained decoding (kai_ai_submit.grammar) --------------------------
// ai_grammar_option() recognises --regex R and --json-schema FILE at argv[*i]
// (the schema is read into g->text, at most KAI_AI_MAX_GRAMMAR_BYTES);
// returns 1 if it took the option, 0 if argv[*i] is neither, -1 after
// printing why not ("PROG: --json-schema: x.json: cannot open").
struct ai_grammar_choice {
  uint32_t kind;   // KAI_AI_GRAMMAR_*
  char text[KAI_AI_MAX_GRAMMAR_BYTES];
  uint32_t len;
  char error[KAI_AI_ERROR_TEXT_MAX];   // the kernel's message when it refuses the grammar
};
int ai_grammar_option(const char* prog, int argc, char** argv, int* i, struct ai_grammar_choice* g);
// Points req->grammar at g (kept alive by the caller until ai_submit returns).
void ai_apply_grammar(struct kai_ai_submit* req, struct ai_grammar_choice* g);
// "--regex" or "--json-schema": for messages.
const char* ai_grammar_option_name(const struct ai_grammar_choice* g);

// "0.7" -> 700, "1" -> 1000, "1.25" -> 1250: a decimal with at most three
// digits after the point, at most max_milli. 0, or -KAI_EINVAL / -KAI_ERANGE.
int parse_milli(const char* s, uint32_t max_milli, uint32_t* out);
}

// --speculate's choice (lib/llm_speculate.h) into req->spec: NONE, NGRAM, or
// PREDICTED (predicted and the oracle) with prediction[0..n_prediction),
// which the caller keeps alive until ai_submit returns.
namespace llm { struct SpecChoice; }
void ai_apply_speculation(struct kai_ai_submit* req, const llm::SpecChoice& spec, const uint32_t* prediction,
                          uint32_t n_prediction);
