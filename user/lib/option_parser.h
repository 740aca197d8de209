// OptionParser: walks a program's arguments once and names a bad one the
// same way in every program (the messages are listed in kai_options.h).
// It uses nothing but lib/llm_util.h and the two functions below, so the
// LLM runner compiles it on the host too (build/host/llmrun); the AI
// programs use CommandLine (kai_options.h), which adds the AI service's
// options (model, sampling, prompt, grammar) to it.
#pragma once
#include <stddef.h>
#include <stdint.h>

// What the parser needs from the system it runs on: kai_options.cpp
// implements them for kai's programs, user/llmrun/platform_host.cpp for the
// host runner.
namespace option_io {
void write(int fd, const char* text);
[[noreturn]] void exit(int status);
}  // namespace option_io

class OptionParser {
 public:
  // usage: the synopsis after "usage: ", printed after an unknown argument.
  OptionParser(const char* prog, const char* usage, int argc, char** argv)
      : prog_(prog), usage_(usage), argc_(argc), argv_(argv) {}

  // Moves to the next argument; false when there are none left.
  bool next() { return ++at_ < argc_; }
  const char* current() const { return argv_[at_]; }
  const char* prog() const { return prog_; }

  // --NAME with no value: true if the current argument is it.
  bool flag(const char* name);
  bool flag(const char* name, bool* out);
  // --NAME that sets bits in a flags word (--int8 -> KAI_AI_INT8).
  bool flag_bits(const char* name, uint32_t bits, uint32_t* flags);

  // --NAME N with N a whole number in lo..hi.
  bool number(const char* name, uint32_t lo, uint32_t hi, uint32_t* out);
  bool number(const char* name, uint32_t lo, uint32_t hi, int* out);   // hi <= INT32_MAX

  // --NAME TEXT: any value, kept as a pointer into argv.
  bool text(const char* name, const char** out);

  // A positional argument (not starting with "--"), at most one of it.
  bool positional(const char** out);

  // --help or -h: prints the usage on standard output and exits with status 0.
  bool help();

  // The current argument is none of this program's: names it, prints the
  // usage line and exits with status 2.
  [[noreturn]] void unknown() const;

  // "PROG: " + the parts, one line on standard error, then exit status 2:
  // for a value the program checks itself (fail({"--speculate: '", v, "' is not ..."})).
  [[noreturn]] void fail(const char* const* parts, size_t n) const;
  template <size_t N>
  [[noreturn]] void fail(const char* const (&parts)[N]) const { fail(parts, N); }

 protected:
  // The value after option name, or exits with "PROG: NAME needs a value".
  const char* value_of(const char* name);

  const char* prog_;
  const char* usage_;
  int argc_;
  char** argv_;
  int at_ = 0;
};
