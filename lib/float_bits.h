// Conversions between integers, floats and doubles computed on the bit
// patterns with integer instructions. Each gives exactly the bits the
// conversion instruction gives (round to nearest, ties to even; truncation
// for float -> integer), so a kernel can use either and keep every result.
//
// Why: under QEMU an integer instruction is one or two host instructions,
// while a float instruction is a call into QEMU's software float library.
// The conversions that round or truncate are among the dearest (`opcost`,
// user/bench/opcost.cpp; docs/runtime.md, "What each kind of instruction costs").
//
// Each function handles the common range itself and leaves the rest (values
// too large, subnormal results, NaN, infinity) to the C++ conversion, i.e.
// to the instruction: the rare cases stay right without extra code.
#pragma once
#include <stdint.h>

namespace llm {

// float(d), rounded to nearest even, for results that are normal floats;
// otherwise (subnormal results, overflow, infinity, NaN) the instruction.
// How: a double is sign | 11-bit exponent | 52-bit mantissa, a float
// sign | 8 | 23. Rebias the exponent (1023 -> 127) in place, then drop the
// mantissa's 29 low bits with rounding: add half of the dropped unit, less
// one unless the kept part is odd (ties go to the even neighbour). A carry
// out of the mantissa moves the exponent up by one, as it should; out of
// the largest finite float it gives exactly infinity, as the instruction
// does.
inline float float_of_double(double d) {
  uint64_t bits = __builtin_bit_cast(uint64_t, d);
  uint64_t exponent = (bits >> 52) & 0x7ff;
  // Normal float results: float exponents 1..254 = double exponents 897..1150.
  if (exponent - 897 > 1150 - 897) return float(d);
  uint64_t rebased = ((exponent - 896) << 52) | (bits & 0x000fffffffffffffull);
  uint64_t odd = (rebased >> 29) & 1;
  uint64_t rounded = (rebased + 0x0fffffffull + odd) >> 29;
  return __builtin_bit_cast(float, uint32_t(rounded) | uint32_t(bits >> 32 & 0x80000000u));
}

// int64_t(d), truncated toward zero, for |d| < 2^63 (the caller's range
// checks guarantee it; NaN is not allowed). The value is m * 2^(e - 1075)
// with m the 53-bit mantissa (leading one included), so a shift does it.
inline int64_t int_of_double(double d) {
  uint64_t bits = __builtin_bit_cast(uint64_t, d);
  int64_t e = int64_t((bits >> 52) & 0x7ff) - 1075;
  if (e < -52) return 0;   // |d| < 1, zero and subnormals included
  uint64_t m = (bits & 0x000fffffffffffffull) | (uint64_t(1) << 52);
  uint64_t magnitude = e >= 0 ? m << e : m >> -e;
  return (bits >> 63) ? -int64_t(magnitude) : int64_t(magnitude);
}

}  // namespace llm
