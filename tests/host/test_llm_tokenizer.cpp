// lib/llm_tokenizer: a TOK.BIN built here by hand (independent of
// tools/tokbin.py), the exact rules on it, a fuzz of the loader (every
// truncation, random bit flips: each must end in an error naming TOK.BIN or in
// a tokenizer that encodes and decodes without memory errors under ASan), and
// the real stories260K TOK.BIN against tools/tokenizer.py run at test time.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "llm_test_util.h"
#include "llm_tokenizer.h"
#include "test_skip.h"

namespace {

struct TokWriter {
  std::vector<uint8_t> b;
  void u32(uint32_t v) {
    for (int i = 0; i < 4; i++) b.push_back(uint8_t(v >> (8 * i)));
  }
  void pad() {
    while (b.size() % 4) b.push_back(0);
  }
};

// A small byte-level BPE: tokens 0..255 are the bytes, then "th", "the",
// " the" by three merges, and a special "<|end|>" that is also the EOS.
constexpr uint32_t kTh = 256, kThe = 257, kSpaceThe = 258, kEnd = 259, kVocab = 260;

std::vector<uint8_t> make_tok() {
  std::vector<std::string> tokens;
  for (int i = 0; i < 256; i++) tokens.push_back(std::string(1, char(i)));
  tokens.push_back("th");
  tokens.push_back("the");
  tokens.push_back(" the");
  tokens.push_back("<|end|>");
  struct Merge { uint32_t l, r, rank, out; };
  std::vector<Merge> merges = {{' ', kThe, 2, kSpaceThe}, {'t', 'h', 0, kTh}, {kTh, 'e', 1, kThe}};
  std::sort(merges.begin(), merges.end(), [](auto& a, auto& b) { return a.l != b.l ? a.l < b.l : a.r < b.r; });
  struct Range { uint32_t lo, hi, cls; };
  std::vector<Range> ranges = {{'\t', '\r', 3}, {' ', ' ', 3}, {'0', '9', 2}, {'A', 'Z', 1},
                               {'a', 'z', 1}, {0x4E00, 0x9FFF, 1}};
  TokWriter w;
  uint32_t blob = 0, maxlen = 0;
  for (auto& t : tokens) { blob += uint32_t(t.size()); maxlen = std::max(maxlen, uint32_t(t.size())); }
  uint32_t hdr[32] = {llm::kTokMagic, 1, 1, llm::kTokDigitsSplit, 1, kVocab, llm::kNoToken, 1, kEnd};
  for (int i = 9; i < 16; i++) hdr[i] = llm::kNoToken;
  hdr[16] = uint32_t(merges.size());
  hdr[17] = 1;
  hdr[18] = uint32_t(ranges.size());
  hdr[19] = blob;
  hdr[20] = maxlen;
  for (uint32_t v : hdr) w.u32(v);
  uint32_t off = 0;
  for (auto& t : tokens) { w.u32(off); off += uint32_t(t.size()); }
  w.u32(off);
  for (uint32_t i = 0; i < kVocab; i++) w.b.push_back(i == kEnd ? llm::kTokenSpecial : 0);
  w.pad();
  std::vector<uint32_t> order(kVocab);
  for (uint32_t i = 0; i < kVocab; i++) order[i] = i;
  // ordered by (bytes as unsigned, id): std::string's < compares signed chars
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const auto& x = tokens[a];
    const auto& y = tokens[b];
    int c = memcmp(x.data(), y.data(), std::min(x.size(), y.size()));
    if (c) return c < 0;
    return x.size() != y.size() ? x.size() < y.size() : a < b;
  });
  for (uint32_t id : order) w.u32(id);
  for (uint32_t i = 0; i < 256; i++) w.u32(i);
  for (auto& m : merges) { w.u32(m.l); w.u32(m.r); w.u32(m.rank); w.u32(m.out); }
  w.u32(kEnd);
  for (auto& r : ranges) { w.u32(r.lo); w.u32(r.hi); w.u32(r.cls); }
  for (auto& t : tokens) w.b.insert(w.b.end(), t.begin(), t.end());
  w.pad();
  return w.b;
}

std::vector<uint32_t> enc(const llm::Tokenizer& t, const std::string& s) {
  std::vector<uint32_t> ids(s.size() + 2);
  auto r = llm::encode(t, s.data(), s.size(), ids.data(), uint32_t(ids.size()));
  REQUIRE(!r.is_error());
  ids.resize(r.value());
  return ids;
}

std::string dec(const llm::Tokenizer& t, const std::vector<uint32_t>& ids) {
  std::vector<char> out(ids.size() * llm::Decoder::kMaxPushBytes + 4);
  auto r = llm::decode(t, ids.data(), ids.size(), out.data(), out.size());
  REQUIRE(!r.is_error());
  return std::string(out.data(), r.value());
}

using V = std::vector<uint32_t>;

// A llama2.c-style (scores) tokenizer: <unk> <s> </s>, then " " (optional),
// "a", "b", "ab", " a", "<0x41>"; flags add_bos | dummy_prefix | byte_fallback.
std::vector<uint8_t> make_scores_tok(bool with_space) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", with_space ? " " : "?", "a", "b", "ab", " a", "<0x41>"};
  std::vector<float> scores = {0, 0, 0, -5, -1, -1, -2, -3, 0};
  uint32_t n = uint32_t(tokens.size()), blob = 0;
  for (auto& t : tokens) blob += uint32_t(t.size());
  TokWriter w;
  uint32_t hdr[32] = {llm::kTokMagic, 1, 2, llm::kTokAddBos | llm::kTokDummyPrefix | llm::kTokByteFallback, 0, n, 1, 1, 2};
  for (int i = 9; i < 16; i++) hdr[i] = llm::kNoToken;
  hdr[19] = blob;
  hdr[20] = 6;
  for (uint32_t v : hdr) w.u32(v);
  uint32_t off = 0;
  for (auto& t : tokens) { w.u32(off); off += uint32_t(t.size()); }
  w.u32(off);
  for (uint32_t i = 0; i < n; i++) w.b.push_back(i == 1 || i == 2 ? llm::kTokenSkip : i == 8 ? llm::kTokenByte : 0);
  w.pad();
  for (float f : scores) { uint32_t u; memcpy(&u, &f, 4); w.u32(u); }
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return tokens[a] != tokens[b] ? tokens[a] < tokens[b] : a < b;   // ASCII only: char order is byte order
  });
  for (uint32_t id : order) w.u32(id);
  for (uint32_t b = 0; b < 256; b++) w.u32(b == 'A' ? 8 : llm::kNoToken);
  for (auto& t : tokens) w.b.insert(w.b.end(), t.begin(), t.end());
  w.pad();
  return w.b;
}

}  // namespace

TEST_CASE("hand-built scores TOK.BIN: dummy prefix, merges by score, BOS, byte fallback", "[tokenizer]") {
  auto file = make_scores_tok(true);
  auto r = llm::load_tokenizer(file.data(), file.size());
  INFO((r.is_error() ? r.error().message : ""));
  REQUIRE(!r.is_error());
  const llm::Tokenizer& t = r.value();
  uint32_t ids[16];
  auto e = llm::encode_prompt(t, "abA", 3, ids, 16);
  REQUIRE(!e.is_error());
  // " " a b <0x41>: "ab" (-2) outscores " a" (-3), so " " stays alone
  CHECK(V(ids, ids + e.value()) == V{1, 3, 6, 8});
  CHECK(dec(t, {1, 3, 6, 8}) == "abA");      // BOS skipped, the dummy space dropped
  CHECK(dec(t, {7, 5}) == "ab");               // " a" first: its space is the dummy one
  llm::Decoder d(t);
  d.set_at_start(false);                        // a continuation keeps its space
  char buf[llm::Decoder::kMaxPushBytes];
  CHECK(std::string(buf, d.push(7, buf, sizeof buf).value()) == " a");
  // A buffer sized for the tokens, not the characters: " ", a, b, A start
  // as 4 tokens and end as 3 (a stop text of 8 tokens may hold long words).
  uint32_t three[3];
  auto fits = llm::encode(t, "abA", 3, three, 3);
  REQUIRE(!fits.is_error());
  CHECK(V(three, three + fits.value()) == V{3, 6, 8});
  auto z = llm::encode(t, "z", 1, ids, 16);   // no token, no byte fallback for 'z'
  REQUIRE(z.is_error());
  CHECK(std::string(z.error().message) == "TOK.BIN: no token for byte 0x7A");

  // claims a dummy prefix but has no " " token: an error on encode, never a bad read
  auto nospace = make_scores_tok(false);
  auto t2 = llm::load_tokenizer(nospace.data(), nospace.size());
  REQUIRE(!t2.is_error());
  auto bad = llm::encode(t2.value(), "ab", 2, ids, 16);
  REQUIRE(bad.is_error());
  CHECK(std::string(bad.error().message) == "TOK.BIN: flag dummy_prefix set but no \" \" token");
}

TEST_CASE("hand-built byte-level TOK.BIN: merges, split rule, digits, specials", "[tokenizer]") {
  auto file = make_tok();
  auto r = llm::load_tokenizer(file.data(), file.size());
  INFO((r.is_error() ? r.error().message : ""));
  REQUIRE(!r.is_error());
  const llm::Tokenizer& t = r.value();
  CHECK(enc(t, "the the") == V{kThe, kSpaceThe});
  CHECK(enc(t, "thethe") == V{kThe, kThe});             // one word, merged twice
  CHECK(enc(t, "12") == V{'1', '2'});                  // digits one by one
  CHECK(enc(t, "x<|end|>y") == V{'x', kEnd, 'y'});     // special split out first
  CHECK(enc(t, "a  the") == V{'a', ' ', kSpaceThe});   // the last space leads the word
  CHECK(enc(t, "a  ") == V{'a', ' ', ' '});            // "  " at the end: one piece, no merge
  CHECK(enc(t, "it's") == V{'i', 't', '\'', 's'});
  CHECK(enc(t, "") == V{});
  CHECK(dec(t, {kThe, kSpaceThe, kEnd}) == "the the<|end|>");
  uint32_t eos[8];
  CHECK(llm::eos_ids(t, eos, 8) == 1);
  CHECK(eos[0] == kEnd);
  CHECK(llm::is_eos(t, kEnd));
  CHECK(!llm::is_eos(t, kThe));
  CHECK(!llm::adds_bos(t));
  CHECK(llm::char_class(t, 0x6771) == llm::CharClass::Letter);   // 東
  CHECK(llm::char_class(t, '!') == llm::CharClass::Other);

  uint32_t from_header[8] = {};
  auto h = llm::eos_ids_from_header(file.data(), 128, from_header, 8);
  REQUIRE(!h.is_error());
  CHECK(h.value() == 1);
  CHECK(from_header[0] == kEnd);
  auto short_header = llm::eos_ids_from_header(file.data(), 100, from_header, 8);
  REQUIRE(short_header.is_error());
  CHECK(std::string(short_header.error().message) == "TOK.BIN: size 100 bytes, smaller than the 128-byte header");

  uint32_t small[2];
  // 6 bytes that merge into 2 tokens fit a buffer of 2 (the merge runs in
  // scratch space, not in the caller's buffer).
  auto merged = llm::encode(t, "thethe", 6, small, 2);
  REQUIRE(!merged.is_error());
  CHECK(V(small, small + merged.value()) == V{kThe, kThe});
  auto full = llm::encode(t, "a b c", 5, small, 2);
  REQUIRE(full.is_error());
  CHECK(full.error().code == llm::ErrorCode::NoMemory);
  char out[4];
  uint32_t big = kVocab;
  auto bad = llm::decode(t, &big, 1, out, sizeof out);
  REQUIRE(bad.is_error());
  CHECK(std::string(bad.error().message) == "decode: token 260 >= vocab_size 260");
}

TEST_CASE("decoder holds split UTF-8 and replaces ill-formed bytes like Python", "[tokenizer]") {
  auto file = make_tok();
  auto t = llm::load_tokenizer(file.data(), file.size()).value();
  llm::Decoder d(t, llm::DecodeOptions{true});
  char buf[llm::Decoder::kMaxPushBytes];
  const uint8_t smile[4] = {0xF0, 0x9F, 0x99, 0x82};
  for (int i = 0; i < 3; i++) CHECK(d.push(smile[i], buf, sizeof buf).value() == 0);
  size_t n = d.push(smile[3], buf, sizeof buf).value();
  CHECK(std::string(buf, n) == "\xF0\x9F\x99\x82");
  CHECK(d.push(kEnd, buf, sizeof buf).value() == 0);   // special skipped on request
  // E0 80 is ill-formed at its second byte: U+FFFD, then 0x80 alone: U+FFFD.
  CHECK(dec(t, {0xE0, 0x80, 'a'}) == "\xEF\xBF\xBD\xEF\xBF\xBD" "a");
  CHECK(dec(t, {0xE6, 0x9D}) == "\xEF\xBF\xBD");      // truncated at the end: one U+FFFD
  CHECK(dec(t, {0xFF}) == "\xEF\xBF\xBD");
}

TEST_CASE("TOK.BIN errors name the field", "[tokenizer]") {
  auto good = make_tok();
  auto err = [](std::vector<uint8_t> f) {
    auto r = llm::load_tokenizer(f.data(), f.size());
    return r.is_error() ? std::string(r.error().message) : std::string("ok");
  };
  auto set = [&](size_t word, uint32_t v) {
    auto f = good;
    for (int i = 0; i < 4; i++) f[4 * word + i] = uint8_t(v >> (8 * i));
    return f;
  };
  CHECK(err(good) == "ok");
  CHECK(err(set(1, 7)) == "TOK.BIN: version=7 unknown (expected 1)");
  CHECK(err(set(3, 1u << 9)) == "TOK.BIN: flags=512 has unknown bits");
  CHECK(err(set(5, 0)) == "TOK.BIN: vocab_size=0 must be 1..1048576");
  CHECK(err(set(8, 999)) == "TOK.BIN: eos[0] out of range");
  CHECK(err(set(20, 300)) == "TOK.BIN: max_token_len=300 more than 256");
  CHECK(err(std::vector<uint8_t>(good.begin(), good.begin() + 100)) ==
        "TOK.BIN: size 100 bytes, smaller than the 128-byte header");
  auto shorter = good;
  shorter.resize(good.size() - 4);
  CHECK(err(shorter).rfind("TOK.BIN: size", 0) == 0);
}

TEST_CASE("TOK.BIN fuzz: truncations and bit flips never crash", "[tokenizer][fuzz]") {
  std::vector<std::vector<uint8_t>> seeds = {make_tok(), make_scores_tok(true)};
  std::vector<uint8_t> real;
  if (testutil::read_file(testutil::models_dir() + "/stories260K/TOK.BIN", &real)) seeds.push_back(real);
  std::mt19937 rng(15);
  int loads = 0, valid = 0;
  const std::string texts[] = {"the 12 x<|end|>", "Once upon a time", "\xF0\x9F\x99\x82 \xE6\x9D\xB1\xFF"};
  auto exercise = [&](const std::vector<uint8_t>& f) {
    loads++;
    auto r = llm::load_tokenizer(f.data(), f.size());
    if (r.is_error()) {
      CHECK(std::string(r.error().message).rfind("TOK.BIN: ", 0) == 0);
      return;
    }
    valid++;
    const llm::Tokenizer& t = r.value();
    for (auto& s : texts) {
      std::vector<uint32_t> ids(s.size() + 2);
      auto e = llm::encode_prompt(t, s.data(), s.size(), ids.data(), uint32_t(ids.size()));
      if (e.is_error()) continue;
      std::vector<char> out(e.value() * llm::Decoder::kMaxPushBytes + 4);
      CHECK(!llm::decode(t, ids.data(), e.value(), out.data(), out.size()).is_error());
    }
  };
  for (auto& seed : seeds) {
    for (size_t cut = 0; cut < seed.size(); cut += (cut < 256 ? 1 : 61)) exercise({seed.begin(), seed.begin() + cut});
    for (int i = 0; i < 1500; i++) {
      auto f = seed;
      int flips = 1 + int(rng() % 3);
      for (int k = 0; k < flips; k++) {
        // half the flips in the header and the first tables, where they matter most
        size_t at = (rng() & 1) ? rng() % std::min<size_t>(f.size(), 1200) : rng() % f.size();
        f[at] ^= uint8_t(1u << (rng() % 8));
      }
      exercise(f);
    }
  }
  WARN("fuzz: " << loads << " mutated TOK.BIN files, " << valid << " still valid and encoded/decoded");
  CHECK(valid > 0);
}

TEST_CASE("stories260K TOK.BIN agrees with tools/tokenizer.py", "[tokenizer]") {
  std::string dir = testutil::models_dir() + "/stories260K";
  std::string tok = testutil::shared_models_dir() + "/stories260K/tok512.bin";
  std::vector<uint8_t> file;
  if (!testutil::read_file(dir + "/TOK.BIN", &file) || !testutil::file_exists(tok))
    KAI_SKIP(dir << "/TOK.BIN or " << tok << " missing (make test-models with KAI_SHARED_MODELS, models/README.md)");
  auto r = llm::load_tokenizer(file.data(), file.size());
  REQUIRE(!r.is_error());
  const llm::Tokenizer& t = r.value();
  for (std::string text : {"Once upon a time", "Zebras, \xC3\xA9migr\xC3\xA9s and \xF0\x9F\x99\x82 fall back",
                           "  two  spaces\nand a newline"}) {
    int rc = 0;
    std::string out = testutil::run_command("/usr/bin/python3 tools/tokenizer.py encode --bos --tokenizer " + tok +
                                                " --text '" + text + "'", &rc);
    REQUIRE(rc == 0);
    std::vector<uint32_t> want = testutil::parse_ids(out);
    std::vector<uint32_t> ids(text.size() + 2);
    auto e = llm::encode_prompt(t, text.data(), text.size(), ids.data(), uint32_t(ids.size()));
    REQUIRE(!e.is_error());
    ids.resize(e.value());
    CHECK(ids == want);
    CHECK(dec(t, ids) == text);   // BOS skipped, the dummy prefix's space dropped
  }
}

TEST_CASE("encode fuzz: random bytes, valid UTF-8 round-trips", "[tokenizer][fuzz]") {
  std::vector<std::vector<uint8_t>> files = {make_tok()};
  std::vector<uint8_t> real;
  if (testutil::read_file(testutil::models_dir() + "/stories260K/TOK.BIN", &real)) files.push_back(real);
  std::mt19937 rng(1515);
  // pieces that stress the split rules and UTF-8: ASCII, spaces, digits, 2-4 byte
  // characters, a special token, and lone bytes that are not UTF-8
  const std::string parts[] = {"a", "Z", " ", "  ", "\n", "\t", "7", "'s", "'LL", "!?", "the",
                               "\xC3\xA9", "\xE6\x9D\xB1", "\xF0\x9F\x99\x82", "<|end|>", "\xFF", "\x80", "\xE6\x9D"};
  int round_trips = 0;
  for (auto& file : files) {
    auto t = llm::load_tokenizer(file.data(), file.size()).value();
    for (int i = 0; i < 400; i++) {
      std::string s;
      bool valid = true;
      for (int k = int(rng() % 12); k >= 0; k--) {
        const std::string& p = parts[rng() % (sizeof parts / sizeof parts[0])];
        if (p == "\xFF" || p == "\x80" || p == "\xE6\x9D") valid = false;
        s += p;
      }
      std::vector<uint32_t> ids(s.size() + 2);
      auto e = llm::encode(t, s.data(), s.size(), ids.data(), uint32_t(ids.size()));
      if (e.is_error()) continue;   // a byte without a token: allowed, never a crash
      ids.resize(e.value());
      for (uint32_t id : ids) REQUIRE(id < t.vocab_size);
      std::string back = dec(t, ids);
      if (valid) {
        INFO(s);
        CHECK(back == s);
        round_trips++;
      }
    }
  }
  // About a third of the strings are valid UTF-8: enough of them in each
  // tokenizer (the real one is there only when its model data is).
  CHECK(round_trips > 100 * int(files.size()));
}
