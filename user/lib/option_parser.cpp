// OptionParser: see option_parser.h; the messages are kai_options.h's.
#include "option_parser.h"
#include "llm_util.h"

bool OptionParser::flag(const char* name) { return llm::str_eq(current(), name); }

bool OptionParser::flag(const char* name, bool* out) {
  if (!flag(name)) return false;
  *out = true;
  return true;
}

bool OptionParser::flag_bits(const char* name, uint32_t bits, uint32_t* flags) {
  if (!flag(name)) return false;
  *flags |= bits;
  return true;
}

void OptionParser::fail(const char* const* parts, size_t n) const {
  char line[256];
  llm::TextBuf b(line, sizeof line);
  b.str(prog_).str(": ");
  for (size_t i = 0; i < n; i++) b.str(parts[i]);
  b.str("\n");
  option_io::write(2, line);
  option_io::exit(2);
}

const char* OptionParser::value_of(const char* name) {
  if (at_ + 1 >= argc_) fail({name, " needs a value"});
  return argv_[++at_];
}

bool OptionParser::number(const char* name, uint32_t lo, uint32_t hi, uint32_t* out) {
  if (!flag(name)) return false;
  const char* v = value_of(name);
  // Digits only, and no more than hi: "12x" and "-1" are not numbers.
  uint64_t x = 0;
  bool ok = *v != 0;
  for (const char* p = v; *p && ok; p++) {
    ok = *p >= '0' && *p <= '9';
    x = x * 10 + uint64_t(*p - '0');
    if (x > hi) ok = false;
  }
  if (!ok || x < lo) {
    char range[64];
    llm::TextBuf(range, sizeof range).str("' is not a number from ").u64(lo).str(" to ").u64(hi);
    fail({name, ": '", v, range});
  }
  *out = uint32_t(x);
  return true;
}

bool OptionParser::number(const char* name, uint32_t lo, uint32_t hi, int* out) {
  uint32_t v;
  if (!number(name, lo, hi > 0x7fffffffu ? 0x7fffffffu : hi, &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

bool OptionParser::text(const char* name, const char** out) {
  if (!flag(name)) return false;
  *out = value_of(name);
  return true;
}

bool OptionParser::positional(const char** out) {
  if (current()[0] == '-' || *out != nullptr) return false;
  *out = current();
  return true;
}

bool OptionParser::help() {
  if (!flag("--help") && !flag("-h")) return false;
  option_io::write(1, "usage: ");
  option_io::write(1, usage_);
  option_io::write(1, "\n");
  option_io::exit(0);
}

void OptionParser::unknown() const {
  const char* a = current();
  option_io::write(2, prog_);
  option_io::write(2, a[0] == '-' ? ": unknown option " : ": unexpected argument '");
  option_io::write(2, a);
  option_io::write(2, a[0] == '-' ? "\nusage: " : "'\nusage: ");
  option_io::write(2, usage_);
  option_io::write(2, "\n");
  option_io::exit(2);
}
