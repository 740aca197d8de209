// lib/float_bits.h against the host's conversion instructions, bit for bit.
// x86-64's conversions follow IEEE 754 as RISC-V's do (round to nearest even
// by default, truncation for a C++ cast to integer), so the host's results
// are the ones the guest's fcvt instructions give.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "float_bits.h"

namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
uint64_t bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
double double_of(uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}

}  // namespace

TEST_CASE("float_of_double rounds as the conversion does, ties and edges included", "[float_bits]") {
  std::mt19937_64 rng(11);
  auto check = [](double d) {
    float want = float(d), got = llm::float_of_double(d);
    INFO("double bits " << std::hex << bits(d));
    REQUIRE((bits(got) == bits(want) || (want != want && got != got)));
  };
  // Random bit patterns over every exponent: normal, subnormal, huge, inf, NaN.
  for (int i = 0; i < 1000000; i++) check(double_of(rng()));
  // Random mantissas with exponents around the float range and its edges.
  for (int i = 0; i < 1000000; i++) {
    uint64_t exponent = 880 + rng() % 290;   // 2^-143 .. 2^146
    check(double_of((rng() & 0x800fffffffffffffull) | (exponent << 52)));
  }
  // Exact ties (low 29 bits = 2^28) with odd and even kept parts, and the
  // values that round up into the next binade or to infinity.
  for (uint64_t exponent : {897ull, 900ull, 1023ull, 1149ull, 1150ull})
    for (uint64_t kept : {0ull, 1ull, 2ull, 0x7ffffeull, 0x7fffffull})
      for (uint64_t low : {0ull, 1ull, 0x0fffffffull, 0x10000000ull, 0x10000001ull, 0x1fffffffull})
        for (uint64_t sign : {0ull, 1ull})
          check(double_of(sign << 63 | exponent << 52 | kept << 29 | low));
  for (double d : {0.0, -0.0, 1.0, -1.0, 3.4028235677973366e38, 3.4028234663852886e38, 1.1754943508222875e-38,
                   1.1754942807573643e-38, 1e-300, 1e300})
    check(d);
}

TEST_CASE("int_of_double truncates as the conversion does below 2^63", "[float_bits]") {
  std::mt19937_64 rng(13);
  for (int i = 0; i < 1000000; i++) {
    uint64_t exponent = rng() % (1023 + 63);   // |d| < 2^63, down to zero and subnormals
    double d = double_of((rng() & 0x800fffffffffffffull) | (exponent << 52));
    INFO("d = " << d);
    REQUIRE(llm::int_of_double(d) == int64_t(d));
  }
  for (double d : {0.0, -0.0, 0.5, -0.5, 0.9999999999999999, 1.0, -1.0, 1.5, -1.5, 4503599627370495.5,
                   9223372036854774784.0, -9223372036854774784.0})
    CHECK(llm::int_of_double(d) == int64_t(d));
}
