// CommandLine: see kai_options.h for the messages every AI program prints.
#include "kai_options.h"
#include "kai.h"
#include "kai_prompt.h"

// The parser's output and exit, on kai (option_parser.h).
void option_io::write(int fd, const char* text) { ::write(fd, text, strlen(text)); }
void option_io::exit(int status) { ::exit(status); }

bool CommandLine::model(const char** out, const char* name) {
  if (!flag(name)) return false;
  const char* v = value_of(name);
  // The service's names are at most KAI_AI_MODEL_NAME_MAX - 1 characters: a
  // longer one would be cut and might then name another model.
  if (strlen(v) >= KAI_AI_MODEL_NAME_MAX) {
    fprintf(2, "%s: %s: '%s' is longer than %d characters\n", prog_, name, v, KAI_AI_MODEL_NAME_MAX - 1);
    exit(2);
  }
  *out = v;
  return true;
}

bool CommandLine::model(char (&out)[KAI_AI_MODEL_NAME_MAX], const char* name) {
  const char* v;
  if (!model(&v, name)) return false;
  strlcpy(out, v, sizeof out);
  return true;
}

bool CommandLine::generation(ai_generation* g) {
  int taken = ai_generation_option(prog_, argc_, argv_, &at_, g);
  if (taken < 0) exit(2);   // ai_generation_option said why
  return taken > 0;
}

bool CommandLine::grammar(ai_grammar_choice* g) {
  int taken = ai_grammar_option(prog_, argc_, argv_, &at_, g);
  if (taken < 0) exit(2);   // ai_grammar_option said why
  return taken > 0;
}

bool CommandLine::prompt(PromptChoice* p, uint32_t* ids, uint32_t cap) {
  if (text("--prompt-file", &p->file) || flag("--stdin", &p->from_stdin)) return true;
  const char* a = current();
  if (ids == nullptr || a[0] == '-') return false;
  if (p->n_args == cap) {
    fprintf(2, "%s: more than %u prompt tokens\n", prog_, cap);
    exit(2);
  }
  if (!parse_prompt_token(prog_, p->n_args, a, &ids[p->n_args])) exit(2);
  p->n_args++;
  return true;
}

long read_prompt_choice(const char* prog, const PromptChoice& p, uint32_t* ids, uint32_t cap, const char* ways,
                        int extra_ways) {
  if ((p.n_args > 0) + (p.file != nullptr) + p.from_stdin + extra_ways > 1) {
    fprintf(2, "%s: give the prompt one way: %s\n", prog, ways);
    return -1;
  }
  if (p.file == nullptr && !p.from_stdin) return p.n_args;
  long n = read_prompt_ids(prog, p.file, ids, cap);
  return n < 0 ? -1 : n;
}
