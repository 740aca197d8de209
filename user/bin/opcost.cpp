// opcost [--passes N]: what one instruction of each kind costs in real time.
//
//   opcost: ns per instruction, fastest of 3 runs of 2000000 passes x 32 copies (real time)
//   add         0.45 ns   1.0x add
//   fcvt.s.l   14.20 ns  31.6x add
//   ...
//
// Why: exact mode (QEMU -icount) counts every instruction as one
// nanosecond, but a student waits in real time, and under QEMU the kinds of
// instruction cost very different amounts. An integer add becomes one or two
// host instructions in the translated code. A float instruction becomes a
// call into QEMU's software float library (RISC-V's rounding modes and
// exception flags must come out exactly as the spec says): a multiply or an
// add can take a fast path that uses the host's FPU once the "inexact" flag
// is set, while a conversion between integer and float, or between float
// and double, always goes the long way. So code that does the same number of
// instructions can take very different real times, and this table says by
// how much (docs/runtime.md, "What each kind of instruction costs").
//
// How: each case runs a loop whose body is 32 copies of one instruction
// (inline assembly, so the compiler can neither drop nor change it) on
// values that stay normal numbers; the time of the loop divided by 32 x passes
// is the instruction's cost, the loop's own counter and branch included
// (one add and one branch per 32: small against every case but `add` itself).
#include "float_bits.h"
#include "kai.h"

namespace {

constexpr uint32_t kCopies = 32;
constexpr uint32_t kDefaultPasses = 2'000'000;
constexpr int kRuns = 3;

#define KAI_X4(s) s s s s
#define KAI_X8(s) KAI_X4(s) KAI_X4(s)
#define KAI_X32(s) KAI_X8(s) KAI_X8(s) KAI_X8(s) KAI_X8(s)

// One case: a name and a loop of `passes` passes of 32 copies.
struct Case {
  const char* name;
  const char* what;   // why it costs what it costs, in a few words
  void (*loop)(uint32_t passes);
};

// The operands live in registers the asm names; "+f"/"+r" on the result keeps
// each copy from being hoisted out of the loop as a loop invariant.
void loop_add(uint32_t passes) {
  uint64_t a = 1, b = 3;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("add %0, %0, %1\n") : "+r"(a) : "r"(b));
}
void loop_mul(uint32_t passes) {
  uint64_t a = 1, b = 3;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("mul %0, %0, %1\n") : "+r"(a) : "r"(b));
}
void loop_lw(uint32_t passes) {
  static int32_t cell = 7;
  uint64_t a = 0;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("lw %0, 0(%1)\n") : "+r"(a) : "r"(&cell));
}
void loop_fadd_s(uint32_t passes) {
  float a = 1.5f, b = 1.0e-3f;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fadd.s %0, %0, %1\n") : "+f"(a) : "f"(b));
}
void loop_fmul_s(uint32_t passes) {
  float a = 1.5f, b = 1.0000001f;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fmul.s %0, %0, %1\n") : "+f"(a) : "f"(b));
}
void loop_fmadd_s(uint32_t passes) {
  float a = 1.5f, b = 0.999f, c = 1.0e-3f;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fmadd.s %0, %0, %1, %2\n") : "+f"(a) : "f"(b), "f"(c));
}
void loop_fadd_d(uint32_t passes) {
  double a = 1.5, b = 1.0e-9;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fadd.d %0, %0, %1\n") : "+f"(a) : "f"(b));
}
void loop_fdiv_s(uint32_t passes) {
  float a = 1.5f, b = 1.0000001f;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fdiv.s %0, %0, %1\n") : "+f"(a) : "f"(b));
}
void loop_fmul_d(uint32_t passes) {
  double a = 1.5, b = 1.0000000001;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fmul.d %0, %0, %1\n") : "+f"(a) : "f"(b));
}
void loop_flt_s(uint32_t passes) {
  float a = 1.5f, b = 2.5f;
  uint64_t r = 0;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("flt.s %0, %1, %2\n") : "+r"(r) : "f"(a), "f"(b));
}
void loop_fsgnjx_s(uint32_t passes) {   // fabs/fneg are sign injections
  float a = 1.5f, b = -2.5f;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fsgnjx.s %0, %0, %1\n") : "+f"(a) : "f"(b));
}
void loop_fcvt_s_l(uint32_t passes) {   // int64 -> float: a matvec's total
  float a = 0;
  uint64_t b = 123456789;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fcvt.s.l %0, %1\n") : "+f"(a) : "r"(b));
}
void loop_fcvt_s_w(uint32_t passes) {   // int32 -> float: an int8 weight
  float a = 0;
  uint64_t b = 100;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fcvt.s.w %0, %1\n") : "+f"(a) : "r"(b));
}
void loop_fcvt_l_d(uint32_t passes) {   // double -> int64: exp's fixed point
  double a = 123456.789;
  uint64_t r = 0;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fcvt.l.d %0, %1, rtz\n") : "+r"(r) : "f"(a));
}
void loop_fcvt_w_s(uint32_t passes) {   // float -> int32: quantizing activations
  float a = 1234.567f;
  uint64_t r = 0;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fcvt.w.s %0, %1, rtz\n") : "+r"(r) : "f"(a));
}
void loop_fcvt_d_s(uint32_t passes) {   // float -> double: widening is exact
  float a = 1.5f;
  double r = 0;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fcvt.d.s %0, %1\n") : "+f"(r) : "f"(a));
}
void loop_fcvt_s_d(uint32_t passes) {   // double -> float: rounds
  double a = 1.0000000001;
  float r = 0;
  for (uint32_t i = 0; i < passes; i++) asm volatile(KAI_X32("fcvt.s.d %0, %1\n") : "+f"(r) : "f"(a));
}

// The same conversions done on the bits (lib/float_bits.h), 32 per pass.
// The empty asm hides the value from the compiler, so each call is made.
void loop_float_of_double(uint32_t passes) {
  double a = 1.0000000001;
  for (uint32_t i = 0; i < passes; i++) {
    for (uint32_t k = 0; k < kCopies; k++) {
      asm volatile("" : "+f"(a));
      float r = llm::float_of_double(a);
      asm volatile("" : : "f"(r));
    }
  }
}
void loop_int_of_double(uint32_t passes) {
  double a = 123456.789;
  for (uint32_t i = 0; i < passes; i++) {
    for (uint32_t k = 0; k < kCopies; k++) {
      asm volatile("" : "+f"(a));
      int64_t r = llm::int_of_double(a);
      asm volatile("" : : "r"(r));
    }
  }
}

const Case kCases[] = {
    {"add", "integer: inline host code", loop_add},
    {"mul", "integer: inline host code", loop_mul},
    {"lw", "load: inline, through QEMU's TLB", loop_lw},
    {"fsgnjx.s", "sign bits (fabs, fneg): inline", loop_fsgnjx_s},
    {"fadd.s", "soft float, host-FPU fast path", loop_fadd_s},
    {"fmul.s", "soft float, host-FPU fast path", loop_fmul_s},
    {"fmadd.s", "soft float, host-FPU fast path", loop_fmadd_s},
    {"fdiv.s", "soft float, host-FPU fast path", loop_fdiv_s},
    {"fadd.d", "soft float, host-FPU fast path", loop_fadd_d},
    {"fmul.d", "soft float, host-FPU fast path", loop_fmul_d},
    {"flt.s", "soft float compare", loop_flt_s},
    {"fcvt.d.s", "soft float conversion, exact", loop_fcvt_d_s},
    {"fcvt.s.w", "soft float conversion", loop_fcvt_s_w},
    {"fcvt.s.l", "soft float conversion", loop_fcvt_s_l},
    {"fcvt.s.d", "soft float conversion, rounds", loop_fcvt_s_d},
    {"fcvt.w.s", "soft float conversion, truncates", loop_fcvt_w_s},
    {"fcvt.l.d", "soft float conversion, truncates", loop_fcvt_l_d},
    {"float_of_double", "fcvt.s.d on the bits (float_bits.h)", loop_float_of_double},
    {"int_of_double", "fcvt.l.d on the bits (float_bits.h)", loop_int_of_double},
};

// Picoseconds per instruction of one case: the fastest of kRuns runs (the
// host can only ever slow a run down).
uint64_t cost_ps(const Case& c, uint32_t passes) {
  uint64_t best = ~0ull;
  for (int run = 0; run < kRuns; run++) {
    uint64_t t0 = clock_ns();
    c.loop(passes);
    uint64_t ns = clock_ns() - t0;
    if (ns < best) best = ns;
  }
  return best * 1000 / (uint64_t(passes) * kCopies);
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t passes = kDefaultPasses;
  for (int i = 1; i < argc; i++) {
    char* end = nullptr;
    if (strcmp(argv[i], "--passes") == 0 && i + 1 < argc) {
      unsigned long n = strtoul(argv[++i], &end, 10);
      if (*end != 0 || n == 0 || n > 1'000'000'000ul) {
        fprintf(2, "opcost: --passes %s: want a whole number 1..1000000000\n", argv[i]);
        return 2;
      }
      passes = static_cast<uint32_t>(n);
    } else {
      fprintf(2, "opcost: unknown argument %s\nusage: opcost [--passes N]\n", argv[i]);
      return 2;
    }
  }
  // One inexact operation first: QEMU's fast path for float add, multiply
  // and divide needs the "inexact" exception flag already set (it cannot
  // tell from the host FPU whether this operation would have set it), and a
  // program's first float instructions usually set it within a few
  // operations, as they do here.
  volatile float third = 1.0f;
  third = third / 3.0f;

  printf("opcost: ns per instruction, fastest of %d runs of %u passes x %u copies (real time)\n", kRuns, passes,
         kCopies);
  uint64_t add_ps = 0;
  for (const Case& c : kCases) {
    uint64_t ps = cost_ps(c, passes);
    if (add_ps == 0) add_ps = ps ? ps : 1;
    uint64_t times10 = ps * 10 / add_ps;
    printf("%-15s %4lu.%02lu ns  %4lu.%lux add   %s\n", c.name, (unsigned long)(ps / 1000),
           (unsigned long)(ps % 1000 / 10), (unsigned long)(times10 / 10), (unsigned long)(times10 % 10), c.what);
  }
  return 0;
}
