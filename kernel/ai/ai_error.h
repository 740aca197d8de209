// One error type for the AI service. An error says two things: the errno a
// user sees (the system call's return value, or kai_ai_result.error for a
// request that failed while running), and a message naming the step and the
// file or field ("CFG.BIN: n_kv_heads=0 must be non-zero", "prefix reuse:
// position 300 beyond the KV cache"), the way the runtime's llm::Error names
// file and field. The code is always the real cause: a prefix that cannot be
// resumed is not reported as "no memory". Fixed size, no allocation.
#pragma once
#include <stddef.h>
#include "../error.h"
#include "llm_error.h"

namespace ai {

struct Error {
  Errno code = Errno::Invalid;
  char message[120] = {};

  // "step: detail" (detail may be null).
  static Error make(Errno code, const char* step, const char* detail = nullptr) {
    Error e;
    e.code = code;
    e.append(step);
    if (detail) {
      e.append(": ");
      e.append(detail);
    }
    return e;
  }
  // The runtime's error, its code mapped to the errno a user is given.
  static Error from(const char* step, const llm::Error& runtime) {
    return make(errno_for(runtime.code), step, runtime.message);
  }

  static Errno errno_for(llm::ErrorCode c) {
    switch (c) {
      case llm::ErrorCode::NoMemory: return Errno::NoMem;
      case llm::ErrorCode::MissingFile: return Errno::NoEnt;
      case llm::ErrorCode::PromptTooLong: return Errno::TooBig;
      case llm::ErrorCode::TokenOutOfRange: return Errno::Range;
      case llm::ErrorCode::RequestTooLong: return Errno::FileTooBig;
      default: return Errno::Invalid;   // a bad file, field, value or request
    }
  }

 private:
  void append(const char* s) {
    size_t n = 0;
    while (n < sizeof(message) - 1 && message[n]) n++;
    while (*s && n < sizeof(message) - 1) message[n++] = *s++;
    message[n] = 0;
  }
};

}  // namespace ai
