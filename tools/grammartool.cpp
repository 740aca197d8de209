// grammartool: the runtime's grammar compiler (lib/grammar_*.cpp) on the
// host, so tests can compare its automata with Python's re and json.
//
// Reads commands from stdin, one per line, answers one line each; every
// text travels as hex so any byte (newline included) can be tested:
//   R HEX          compile a regex     -> "ok states=N classes=C" | "error MESSAGE"
//   J HEX          compile a JSON schema (lib/grammar_json.h)
//                                      -> "ok states=N classes=C regex=HEX" | "error MESSAGE"
//   M HEX          does the last compiled grammar match these bytes? -> 1 | 0
//   G SEED MAXLEN  a random text the grammar accepts, as HEX ("none" if it
//                  cannot finish near MAXLEN bytes)
// Exit status 0 at end of input.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "grammar_dfa.h"
#include "grammar_json.h"

namespace {

std::string unhex(const char* s) {
  std::string out;
  auto v = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  for (; s[0] && s[1] && s[0] != '\n'; s += 2) out.push_back(char(v(s[0]) << 4 | v(s[1])));
  return out;
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

uint64_t rng_state = 1;
uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return uint32_t((rng_state >> 33) % n);
}

// Bytes per class, and each state's distance (in bytes) to an accepting state.
std::string random_text(const llm::Dfa& d, uint32_t max_len) {
  std::vector<uint32_t> dist(d.n_states, 0xFFFFFFFF);
  for (uint32_t s = 0; s < d.n_states; s++)
    if (d.accepting(s)) dist[s] = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t s = 0; s < d.n_states; s++)
      for (uint32_t b = 0; b < 256; b++) {
        uint16_t t = d.step(s, uint8_t(b));
        if (t != llm::kDeadState && dist[t] != 0xFFFFFFFF && dist[t] + 1 < dist[s]) {
          dist[s] = dist[t] + 1;
          changed = true;
        }
      }
  }
  std::string out;
  uint32_t s = 0;
  for (;;) {
    if (d.accepting(s) && (rnd(4) == 0 || out.size() >= max_len || !(d.flags[s] & llm::Dfa::kHasExit))) return out;
    std::vector<uint8_t> choices;
    bool hurry = out.size() >= max_len;
    for (uint32_t b = 0; b < 256; b++) {
      uint16_t t = d.step(s, uint8_t(b));
      if (t == llm::kDeadState) continue;
      if (hurry && dist[t] >= dist[s]) continue;   // head for the nearest match
      choices.push_back(uint8_t(b));
    }
    if (choices.empty() || out.size() > 4 * max_len + 64) return "\x01none";
    uint8_t b = choices[rnd(uint32_t(choices.size()))];
    out.push_back(char(b));
    s = d.step(s, b);
  }
}

}  // namespace

int main() {
  std::vector<uint8_t> scratch(llm::kGrammarScratchBytes), dfa_mem(size_t(8) << 20);
  llm::Dfa dfa;
  bool have = false;
  std::vector<char> line(1 << 20);
  while (fgets(line.data(), int(line.size()), stdin)) {
    const char* l = line.data();
    if (l[0] == 'R' || l[0] == 'J') {
      llm::Arena a(scratch.data(), scratch.size()), out(dfa_mem.data(), dfa_mem.size());
      std::string text = unhex(l + 2);
      std::string regex;
      llm::Result<llm::Dfa> r = llm::Error{};
      if (l[0] == 'R') {
        r = llm::compile_regex(text.data(), text.size(), a, out);
      } else {
        std::vector<char> rx(llm::kMaxPatternBytes);
        auto n = llm::json_schema_to_regex(text.data(), text.size(), a, rx.data(), rx.size());
        if (n.is_error()) r = n.error();
        else {
          regex.assign(rx.data(), n.value());
          r = llm::compile_regex(rx.data(), n.value(), a, out);
        }
      }
      if (r.is_error()) {
        have = false;
        printf("error %s\n", r.error().message);
      } else {
        dfa = r.value();
        have = true;
        printf("ok states=%u classes=%u", dfa.n_states, dfa.n_classes);
        if (l[0] == 'J') printf(" regex=%s", hex(regex).c_str());
        printf("\n");
      }
    } else if (l[0] == 'M') {
      std::string s = unhex(l + 2);
      printf("%d\n", have && dfa.matches(reinterpret_cast<const uint8_t*>(s.data()), s.size()) ? 1 : 0);
    } else if (l[0] == 'G') {
      unsigned long long seed = 0;
      unsigned max_len = 0;
      if (!have || sscanf(l + 2, "%llu %u", &seed, &max_len) != 2) {
        printf("none\n");
      } else {
        rng_state = seed * 2654435761ull + 1;
        std::string t = random_text(dfa, max_len);
        printf("%s\n", t == "\x01none" ? "none" : hex(t).c_str());
      }
    } else {
      printf("error unknown command\n");
    }
    fflush(stdout);
  }
  return 0;
}
