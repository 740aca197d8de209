// KAI_SKIP(stream-expr): report a test as skipped (missing data) and return.
// See catch_main.cpp for how it reaches the JUnit results.
#pragma once
#include <sstream>
#include <string>

void kai_record_skip(const std::string& why);

#define KAI_SKIP(msg)                         \
  do {                                        \
    std::ostringstream kai_skip_os;           \
    kai_skip_os << msg;                       \
    WARN("SKIPPED: " << kai_skip_os.str());   \
    kai_record_skip(kai_skip_os.str());       \
    return;                                   \
  } while (0)
