// ai [--model NAME] [--predict N] [--int8] [--priority P] [--align-tick] [--timing]
//    [--stream] [sampling and stop options] TOK...:
// one request to the kernel's AI service (the warm path). Prints the
// generated ids on one line, then the latency breakdown from the kernel's
// timestamps. --priority: 0 (default, first) .. 15, used by the priority
// policy. --align-tick: submit right after a timer tick, so that in exact
// mode (qemu_run --deterministic) the figures repeat from boot to boot.
// --stream: print each token as the kernel publishes it (ai_read), and say
// when the first one arrived. --text "...": the prompt as text, encoded with
// the bundle's TOK.BIN; it implies --stream (the answer streams as text) and
// --stop-eos (it stops at the model's end-of-sequence id). --prompt-file F /
// --stdin: token ids from a file (text or PMT.BIN) or standard input
// (kai_prompt.h). Sampling (--temp, --top-k, --top-p, --min-p,
// --repeat-penalty, --repeat-last-n, --seed) and stopping (--stop "IDS",
// --stop-text "TEXT" encoded with TOK.BIN, --stop-eos): see
// ai_generation_option() in kai_ai.h; greedy by default.
// --speculate ngram:K | predicted:K | oracle:K:A | none: speculative decoding
// with up to K (1..8) proposed tokens a pass (kai_ai_submit.spec): ngram is
// prompt lookup; predicted drafts from --prediction FILE (token ids, as a
// prompt file), the answer the client expects; oracle (the lab,
// docs/experiments.md) runs the request once, replaces each token of that
// answer with probability 1 - A by another id (deterministic), and runs it
// again with that as its prediction; the figures are the second run's.
// Without --speculate the boot options (ai.drafts, ai.proposer) decide.
// --adaptive: the drafts per pass move in 0..K, the number that pays best
// for the share of drafts kept so far (KAI_AI_SPEC_ADAPTIVE,
// lib/llm_draft_control.h).
// --regex R | --json-schema FILE: constrained decoding (kai_ai_submit.grammar,
// docs/constrained-decoding.md): the kernel compiles the grammar at submit
// (a refused one is named with its position and nothing runs), masks every
// draw, stops at EOS or when nothing may follow (finish=grammar); a request
// cut by --predict before a match says finish=prefix. Not with --speculate.
#include "kai.h"
#include "kai_ai.h"
#include "kai_options.h"
#include "kai_prompt.h"
#include "kai_text.h"
#include "llm_speculate.h"

namespace {

constexpr const char* kUsage =
    "ai [--model NAME] [--predict N] [--int8] [--priority P] [--align-tick] [--timing] [--stream]\n"
    "          [--temp X] [--top-k N] [--top-p X] [--min-p X] [--repeat-penalty X] [--repeat-last-n N]\n"
    "          [--seed N] [--stop \"ID ...\"] [--stop-text \"TEXT\"] [--stop-eos]\n"
    "          [--speculate ngram:K|predicted:K|oracle:K:A|none] [--adaptive] [--prediction FILE]\n"
    "          [--regex R | --json-schema FILE]\n"
    "          (TOK... | --prompt-file F | --stdin | --text \"...\")\n"
    "  --text implies --stream and --stop-eos; --stop-text is encoded with the model's TOK.BIN";

// The command line, as given.
struct Options {
  const char* model = "";
  uint32_t predict = 16;
  uint32_t flags = 0, priority = 0;
  bool timing = false, align_tick = false, stream = false;
  const char* text = nullptr;          // --text: the prompt as text, the answer as text
  PromptChoice prompt;                 // token ids, --prompt-file F or --stdin
  ai_generation gen;
  ai_grammar_choice grammar;
  const char* speculate = nullptr;     // --speculate: as given, for the messages
  const char* prediction_file = nullptr;
  llm::SpecChoice spec;
};

// The request's ids: the prompt, and the answer the client expects (--prediction).
uint32_t prompt[KAI_AI_MAX_PROMPT + 1];
uint32_t prediction[KAI_AI_MAX_PREDICTION];

// Reads the command line into o and prompt[]; returns the number of prompt
// ids (0 with --text), or exits with status 2 naming what is wrong.
uint32_t parse_options(int argc, char** argv, Options& o) {
  CommandLine args("ai", kUsage, argc, argv);
  while (args.next()) {
    if (args.help() || args.model(&o.model) || args.number("--predict", 1, KAI_AI_MAX_OUTPUT, &o.predict) ||
        args.number("--priority", 0, KAI_AI_MAX_PRIORITY, &o.priority) ||
        args.flag_bits("--int8", KAI_AI_INT8, &o.flags) || args.timing(&o.timing) ||
        args.flag("--stream", &o.stream) || args.flag("--align-tick", &o.align_tick) ||
        args.flag("--adaptive", &o.spec.adaptive) || args.text("--text", &o.text) ||
        args.text("--speculate", &o.speculate) || args.text("--prediction", &o.prediction_file) ||
        args.generation(&o.gen) || args.grammar(&o.grammar) || args.prompt(&o.prompt, prompt, KAI_AI_MAX_PROMPT))
      continue;
    args.unknown();
  }
  auto refuse = [](const char* why) {
    fprintf(2, "ai: %s\n", why);
    exit(2);
  };
  if (o.speculate && !llm::parse_speculate(o.speculate, &o.spec)) {
    fprintf(2, "ai: --speculate: '%s' is not ngram:K, predicted:K, oracle:K:A or none (K 1..8, A 0..1)\n",
            o.speculate);
    exit(2);
  }
  if (o.prompt.n_args + (o.text != nullptr) + (o.prompt.file != nullptr) + o.prompt.from_stdin == 0) {
    fprintf(2, "usage: %s\n", kUsage);
    exit(2);
  }
  if ((o.prompt.n_args > 0) + (o.text != nullptr) + (o.prompt.file != nullptr) + o.prompt.from_stdin > 1)
    refuse("give the prompt one way: token ids, --prompt-file, --stdin or --text");
  if (o.spec.adaptive && (o.speculate == nullptr || o.spec.kind == llm::SpecKind::None))
    refuse("--adaptive needs --speculate ngram:K, predicted:K or oracle:K:A");
  if (o.grammar.kind != KAI_AI_GRAMMAR_NONE && o.speculate) {
    fprintf(2, "ai: --speculate cannot be combined with %s (drafts are not checked against the grammar)\n",
            ai_grammar_option_name(&o.grammar));
    exit(2);
  }
  if ((o.spec.kind == llm::SpecKind::Predicted) != (o.prediction_file != nullptr))
    refuse(o.prediction_file ? "--prediction needs --speculate predicted:K"
                             : "--speculate predicted:K needs --prediction FILE");
  if (o.text && o.text[0] == 0) refuse("--text: empty prompt (nothing to encode)");
  long n = read_prompt_choice("ai", o.prompt, prompt, KAI_AI_MAX_PROMPT, "token ids, --prompt-file, --stdin or --text");
  if (n < 0) exit(2);
  return uint32_t(n);
}

// Everything the model can refuse, checked before anything is submitted so
// that a bad argument is named: prompt ids, --stop ids, the context, and
// --prediction's ids (read here). The number of prediction ids, or -1.
long check_against_model(const Options& o, uint32_t n, const char* name, const kai_ai_model_info& mi) {
  if (!prompt_ids_in_vocab("ai", prompt, n, name, mi.vocab_size)) return -1;
  const ai_generation& gen = o.gen;
  for (uint32_t at = 0; at < gen.stop_words; at += 1 + gen.stop[at]) {
    for (uint32_t k = 1; k <= gen.stop[at]; k++) {
      if (gen.stop[at + k] >= mi.vocab_size) {
        fprintf(2, "ai: --stop: id %u out of range (model %s has %u tokens)\n", gen.stop[at + k], name,
                mi.vocab_size);
        return -1;
      }
    }
  }
  if (n + o.predict > mi.runtime_seq_len) {
    fprintf(2, "ai: prompt (%u tokens) + --predict %u exceeds model %s's runtime_seq_len %u\n", n, o.predict, name,
            mi.runtime_seq_len);
    return -1;
  }
  if (!o.prediction_file) return 0;
  long got = read_prompt_ids("ai", o.prediction_file, prediction, KAI_AI_MAX_PREDICTION);
  for (long i = 0; i < got; i++) {
    if (prediction[i] >= mi.vocab_size) {
      fprintf(2, "ai: --prediction: token %ld: id %u out of range (model %s has %u tokens)\n", i, prediction[i],
              name, mi.vocab_size);
      return -1;
    }
  }
  return got;
}

// The oracle's first run: the answer, without speculation; the second run's
// prediction is that answer, corrupted (llm_speculate.h). The number of
// prediction ids, or -1 after saying why.
long oracle_prediction(const Options& o, const kai_ai_submit& req, uint32_t vocab, uint32_t* out) {
  kai_ai_submit plain = req;
  plain.spec.proposer = KAI_AI_PROPOSER_NONE;
  int64_t first = ai_submit(&plain);
  long got = first < 0 ? first : ai_wait(first, out, o.predict, nullptr);
  if (got < 0) {
    fprintf(2, "ai: --speculate %s: the oracle's first run: %s\n", o.speculate, strerror(got));
    return -1;
  }
  uint32_t n = uint32_t(got) < KAI_AI_MAX_PREDICTION ? uint32_t(got) : KAI_AI_MAX_PREDICTION;
  // Which ids are replaced follows --seed (as llmrun's oracle does), so a
  // lab can average over several corruption patterns of one acceptance.
  llm::corrupt_prediction(out, n, o.spec.acceptance_milli, 1 + req.sampling.seed, vocab, prediction);
  return n;
}

// Streaming: prints tokens (or their text) as the kernel publishes them; the
// client's own clock says when the first one reached it (the kernel's
// t_first_token_ns says when it was known). That time, or 0.
uint64_t stream_answer(const Options& o, int64_t id, uint32_t* out, llm::Decoder& decoder) {
  uint64_t t_first_seen = 0;
  uint32_t from = 0;
  for (;;) {
    kai_ai_status st{};
    long k = ai_read(id, from, out + from, o.predict - from, &st, nullptr);
    if (k <= 0) break;
    if (from == 0) {
      t_first_seen = clock_ns();
      if (o.text) printf("%s", o.text);
    }
    for (long j = 0; j < k; j++) {
      if (o.text) kai_text_put(decoder, out[from + j], 1);
      else printf(from + j ? " %u" : "%u", out[from + j]);
    }
    from += uint32_t(k);
  }
  if (o.text) kai_text_end(decoder, 1);
  printf("\n");
  return t_first_seen;
}

// A request that failed: says which argument was wrong, not only the
// error's name. The exit status.
int report_failure(const Options& o, long got, uint32_t n, const char* name, const kai_ai_model_info& mi) {
  if (got == -KAI_ERANGE) {
    for (uint32_t i = 0; i < n; i++)
      if (prompt[i] >= mi.vocab_size)
        fprintf(2, "ai: prompt token %u: id %u out of range (model %s has %u tokens)\n", i, prompt[i], name,
                mi.vocab_size);
  } else if (got == -KAI_EFBIG) {
    fprintf(2, "ai: prompt (%u tokens) + --predict %u exceeds model %s's runtime_seq_len %u\n", n, o.predict,
            name, mi.runtime_seq_len);
  } else if (o.grammar.kind != KAI_AI_GRAMMAR_NONE && o.grammar.error[0]) {
    fprintf(2, "ai: %s: %s\n", ai_grammar_option_name(&o.grammar), o.grammar.error);   // nothing was submitted
    return 2;
  } else {
    fprintf(2, "ai: %s\n", strerror(got));
  }
  return 1;
}

// The latency breakdown from the kernel's timestamps.
void print_figures(const Options& o, const char* name, const kai_ai_result& res, uint64_t t_submit,
                   uint64_t t_first_seen) {
  ai_latency l = ai_latency_of(&res);
  // Mean batch size over the iterations this request took part in, x100.
  uint32_t batch_x100 = res.iterations ? uint32_t(uint64_t(res.batch_sum) * 100 / res.iterations) : 0;
  if (o.timing) {
    printf("timing model=%s path=warm prompt=%u gen=%u queue_us=%lu ttft_us=%lu prefill_us=%lu tpot_us=%lu total_us=%lu iterations=%u mean_batch=%u.%02u finish=%s drafted=%u accepted=%u\n",
           name, res.n_prompt, res.n_generated, l.queue_us, l.ttft_us, l.prefill_us, l.tpot_us, l.total_us,
           res.iterations, batch_x100 / 100, batch_x100 % 100, ai_finish_name(res.finish_reason), res.drafted,
           res.accepted);
  } else {
    printf("model %s: queue wait %lu us, TTFT %lu us (prefill %lu us), TPOT %lu us, end-to-end %lu us (worker %u, queue depth at submit %u, %u iterations, mean batch %u.%02u)\n",
           name, l.queue_us, l.ttft_us, l.prefill_us, l.tpot_us, l.total_us, res.worker, res.queue_depth_at_submit,
           res.iterations, batch_x100 / 100, batch_x100 % 100);
  }
  if (o.speculate && !o.timing)
    printf("speculate %s: drafted %u, accepted %u\n", o.speculate, res.drafted, res.accepted);
  if (o.stream && t_first_seen) {
    // Both clocks are the same `time` CSR: comparable directly.
    printf("stream: first token reached ai %lu us after submit; the request finished %lu us after submit\n",
           (unsigned long)((t_first_seen - t_submit) / 1000),
           (unsigned long)((res.t_finish_ns > t_submit ? res.t_finish_ns - t_submit : 0) / 1000));
  }
}

}  // namespace

int main(int argc, char** argv) {
  static Options o;
  uint32_t n = parse_options(argc, argv, o);
  char name[KAI_AI_MODEL_NAME_MAX];
  kai_ai_model_info mi{};
  if (ai_open_model("ai", o.model, 600, name, &mi) < 0) return 1;
  // Text mode: the bundle's tokenizer (TOK.BIN) turns the prompt into ids
  // (with BOS when the model's prompts start with one) and the answer back
  // into text as it streams; generation stops at the end-of-sequence id.
  static KaiText tokenizer;
  if (o.text || o.gen.n_stop_text) {
    char err[160];
    if (tokenizer.open(name, err, sizeof err) < 0) {
      fprintf(2, "ai: %s%s\n", o.text ? "" : "--stop-text: ", err);
      return 1;
    }
    if (kai_text_add_stops("ai", tokenizer, &o.gen) < 0) return 2;
  }
  if (o.text) {
    char err[160];
    long got = tokenizer.encode(o.text, prompt, KAI_AI_MAX_PROMPT, true, err, sizeof err);
    if (got <= 0) {
      fprintf(2, "ai: --text: %s\n", got == 0 ? "no tokens" : err);
      return 2;
    }
    n = uint32_t(got);
    o.stream = true;
    o.gen.flags |= KAI_AI_STOP_AT_EOS;
  }
  long n_prediction = check_against_model(o, n, name, mi);
  if (n_prediction < 0) return 2;
  llm::Decoder decoder = tokenizer.decoder();   // used in text mode only
  decoder.set_at_start(false);   // the prompt's text is printed as given, before the answer
  uint32_t* out = static_cast<uint32_t*>(malloc(o.predict * sizeof(uint32_t) + 4));
  kai_ai_result res{};
  kai_ai_submit req = ai_request(name, prompt, n, o.predict, o.flags, o.priority);
  ai_apply_generation(&req, &o.gen);
  ai_apply_grammar(&req, &o.grammar);
  if (o.spec.kind == llm::SpecKind::Oracle) {
    n_prediction = oracle_prediction(o, req, mi.vocab_size, out);
    if (n_prediction < 0) return 1;
  }
  if (o.speculate) ai_apply_speculation(&req, o.spec, prediction, uint32_t(n_prediction));
  // sleep() returns in a timer interrupt's wake-up: what follows starts at
  // the same phase of the 10 ms tick in every boot. Three ticks, so that the
  // console has finished sending the echo of our command line (the UART's
  // interrupts come at the serial line's pace, ~87 us a character).
  if (o.align_tick) sleep(3);
  uint64_t t_submit = clock_ns();
  int64_t id = ai_submit(&req);
  uint64_t t_first_seen = o.stream && id > 0 ? stream_answer(o, id, out, decoder) : 0;
  long got = id < 0 ? id : ai_wait(id, out, o.predict, &res);
  if (got < 0) return report_failure(o, got, n, name, mi);
  if (!o.stream) {
    for (long i = 0; i < got; i++) printf(i ? " %u" : "%u", out[i]);
    printf("\n");
  }
  if (res.finish_reason == KAI_AI_FINISH_NO_TOKEN) {
    fprintf(2, "ai: request failed: %s: no token can continue the match (the vocabulary cannot spell what the grammar needs)\n",
            ai_grammar_option_name(&o.grammar));
    return 1;
  }
  if (res.state != KAI_AI_DONE) {
    fprintf(2, "ai: request %s (%s)\n", ai_state_name(res.state), strerror(res.error));
    return 1;
  }
  print_figures(o, name, res, t_submit, t_first_seen);
  free(out);
  return 0;
}
