// The runtime's error value: a machine-readable code plus a human message
// that names the file and the field ("CFG.BIN: n_kv_heads=0 must be
// non-zero"). Used as ErrorOr<T, llm::Error> for loading, session setup and
// request validation alike. Fixed size, no allocation.
#pragma once
#include <stdint.h>
#include "error_or.h"
#include "llm_util.h"

namespace llm {

enum class ErrorCode : uint8_t {
  None = 0,
  MissingFile,      // a bundle file is absent (e.g. LTY.BIN of a Qwen bundle)
  BadSize,          // a file's size disagrees with CFG.BIN
  BadMagic,         // CFG.BIN magic
  BadVersion,       // CFG.BIN version / model_kind / weight_format unknown
  BadField,         // a header field is zero, inconsistent or out of the sane range
  BadValue,         // non-finite weight data (scale, norm, table), bad LTY entry
  BadAlignment,     // caller passed a buffer not aligned for float access
  NoMemory,         // caller memory smaller than needed
  EmptyRequest,     // no prompt tokens or n_predict == 0
  PromptTooLong,    // more than kMaxPrompt prompt tokens
  TokenOutOfRange,  // token id >= vocab_size
  RequestTooLong,   // prompt + predict > runtime_seq_len (or the KV cache is full)
};

struct Error {
  ErrorCode code = ErrorCode::None;
  char message[123] = {};

  // Error::make(code).str("CFG.BIN: ")... builds the message in place.
  static Error make(ErrorCode c) {
    Error e;
    e.code = c;
    return e;
  }
  Error& str(const char* s) { text().str(s); return *this; }
  Error& num(uint64_t v) { text().u64(v); return *this; }
  Error& inum(int64_t v) { text().i64(v); return *this; }
  Error& fnum(float v) { text().f32(v); return *this; }

 private:
  TextBuf text() {
    // Reattach a builder at the current end of the message.
    size_t n = str_len(message);
    return TextBuf(message + n, sizeof(message) - n);
  }
};

template <typename T>
using Result = ErrorOr<T, Error>;

}  // namespace llm
