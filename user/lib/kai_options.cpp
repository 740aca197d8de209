// CommandLine: see kai_options.h for the messages every AI program prints.
#include "kai_options.h"
#include "kai.h"
#include "kai_prompt.h"

bool CommandLine::flag(const char* name) { return strcmp(current(), name) == 0; }

bool CommandLine::flag(const char* name, bool* out) {
  if (!flag(name)) return false;
  *out = true;
  return true;
}

bool CommandLine::flag_bits(const char* name, uint32_t bits, uint32_t* flags) {
  if (!flag(name)) return false;
  *flags |= bits;
  return true;
}

const char* CommandLine::value_of(const char* name) {
  if (at_ + 1 >= argc_) {
    fprintf(2, "%s: %s needs a value\n", prog_, name);
    exit(2);
  }
  return argv_[++at_];
}

bool CommandLine::number(const char* name, uint32_t lo, uint32_t hi, uint32_t* out) {
  if (!flag(name)) return false;
  *out = number_option(prog_, name, value_of(name), lo, hi);
  return true;
}

bool CommandLine::number(const char* name, uint32_t lo, uint32_t hi, int* out) {
  uint32_t v;
  if (!number(name, lo, hi > 0x7fffffffu ? 0x7fffffffu : hi, &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

bool CommandLine::text(const char* name, const char** out) {
  if (!flag(name)) return false;
  *out = value_of(name);
  return true;
}

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

bool CommandLine::positional(const char** out) {
  if (current()[0] == '-' || *out != nullptr) return false;
  *out = current();
  return true;
}

void CommandLine::unknown() const {
  const char* a = current();
  if (a[0] == '-') fprintf(2, "%s: unknown option %s\n", prog_, a);
  else fprintf(2, "%s: unexpected argument '%s'\n", prog_, a);
  fprintf(2, "usage: %s\n", usage_);
  exit(2);
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
