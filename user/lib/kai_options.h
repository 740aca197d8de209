// One command-line parser for the AI programs (benchmarks, test drivers, and
// ai, chat and llmrun, which uses only its OptionParser part: it also
// builds on the host), so every program reads the same options the
// same way and names a bad one the same way:
//
//   missing value    "aibench: --clients needs a value"
//   bad number       "aibench: --clients: 'x' is not a number from 1 to 64"
//   long model name  "aibench: --model: 'ABCDEFGHIJKLMNOPQ' is longer than 15 characters"
//   unknown option   "aibench: unknown option --bogus"      then the usage line
//   extra argument   "aitest: unexpected argument 'extra'"  then the usage line
//
// and exits with status 2 before anything runs. A program walks its
// arguments once; each call below either takes the current argument (and its
// value) and returns true, or leaves it for the next call:
//
//   CommandLine args("aihol", "aihol [--model M] [--clients K] [--int8]", argc, argv);
//   while (args.next()) {
//     if (args.model(o.model) || args.number("--clients", 1, 8, &o.clients) ||
//         args.flag("--int8", &o.int8)) continue;
//     args.unknown();
//   }
//
// Why a class and not a table of options: the programs keep their options in
// their own structs and types, and a chain of calls reads like the option
// list in the usage line; the class holds what every option needs (program
// name, position, usage) so no call repeats it.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "kai_ai.h"
#include "option_parser.h"

// Where a prompt of token ids comes from: ids given as arguments, a file
// (--prompt-file F) or standard input (--stdin). At most one of them.
struct PromptChoice {
  const char* file = nullptr;   // --prompt-file
  bool from_stdin = false;      // --stdin
  uint32_t n_args = 0;          // token ids given as arguments, already in ids[]
};

// OptionParser (option_parser.h) walks the arguments and reads flags,
// numbers and texts; CommandLine adds the options of the AI service.
class CommandLine : public OptionParser {
 public:
  using OptionParser::OptionParser;

  // --model NAME (or another option naming a model, e.g. lateness's --load)
  // into a buffer of KAI_AI_MODEL_NAME_MAX, refusing a name that does not fit.
  bool model(char (&out)[KAI_AI_MODEL_NAME_MAX], const char* name = "--model");
  // The same check, keeping a pointer into argv.
  bool model(const char** out, const char* name = "--model");

  // The sampling and stopping options (--temp, --top-k, --seed, --stop, ...:
  // ai_generation_option in kai_ai.h).
  bool generation(ai_generation* g);

  // --regex R and --json-schema FILE (ai_grammar_option in kai_ai.h).
  bool grammar(ai_grammar_choice* g);

  // --prompt-file F and --stdin; with ids != nullptr also a bare token id
  // (not starting with '-'), appended to ids[0..cap).
  bool prompt(PromptChoice* p, uint32_t* ids = nullptr, uint32_t cap = 0);

  // --timing: the programs that can print their latency figures.
  bool timing(bool* out) { return flag("--timing", out); }
};

// After parsing: checks that the prompt came one way at most (ways: the
// list for the message, "token ids, --prompt-file or --stdin"), and reads a
// file or standard input into ids[0..cap). extra_ways counts other ways the
// program allows (aibench's --prompt N). The number of ids (0 if no way was
// used), or -1 after printing why.
long read_prompt_choice(const char* prog, const PromptChoice& p, uint32_t* ids, uint32_t cap, const char* ways,
                        int extra_ways = 0);
