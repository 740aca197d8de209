// opcost [--passes N]: what one instruction of each kind costs in real time.
//
//   opcost: ns per instruction, fastest of 3 runs of 2000000 passes x 32 copies (real time)
//   add                0.08 ns     1.0x add   integer: inline host code
//   ...
//   fcvt.s.d          10.46 ns   130.8x add   soft float conversion, rounds
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
// tools/instr_mix.py charges an exact-mode profile's instructions these
// costs to predict a workload's real time per instruction.
#include "float_bits.h"
#include "kai.h"

namespace {

constexpr uint32_t kCopies = 32;
constexpr uint32_t kDefaultPasses = 2'000'000;
constexpr int kRuns = 3;

#define KAI_X8(s) s s s s s s s s

// One case: a name and a loop of `passes` passes of 32 copies.
struct Case {
  const char* name;
  const char* what;   // why it costs what it costs, in a few words
  void (*loop)(uint32_t passes);
};

// The copies work on four registers in turn (%0..%3), each its own chain, and
// read %4 (and %5): real code rarely waits for the result of the instruction
// just before, so this times what an instruction costs in a stream of
// independent ones, as the host CPU overlaps them. "+r"/"+f" on the four keeps
// the copies from being hoisted out of the loop.
#define KAI_BINARY(op) op " %0, %0, %4\n" op " %1, %1, %4\n" op " %2, %2, %4\n" op " %3, %3, %4\n"
#define KAI_FUSED(op) op " %0, %0, %4, %5\n" op " %1, %1, %4, %5\n" op " %2, %2, %4, %5\n" op " %3, %3, %4, %5\n"
#define KAI_FROM(op, tail) op " %0, %4" tail "\n" op " %1, %4" tail "\n" op " %2, %4" tail "\n" op " %3, %4" tail "\n"
#define KAI_COMPARE(op) op " %0, %4, %5\n" op " %1, %4, %5\n" op " %2, %4, %5\n" op " %3, %4, %5\n"
#define KAI_LOAD(op) op " %0, 0(%4)\n" op " %1, 0(%4)\n" op " %2, 0(%4)\n" op " %3, 0(%4)\n"
// A taken branch to the next instruction: QEMU ends a translated block at
// every branch, so this times the step from one block to the next (chained
// directly: both lie in one page). The four registers are not touched.
#define KAI_BRANCH "bnez %4, 1f\n1:\n"
#define KAI_BRANCHES KAI_BRANCH KAI_BRANCH KAI_BRANCH KAI_BRANCH

// A loop function: four results of type T in registers of kind C ("r" or
// "f"), starting at `start`; inputs x (and y) of types X (Y) in kinds XC (YC).
#define KAI_LOOP(fn, T, C, start, X, XC, x, Y, YC, y, body)                                       \
  void fn(uint32_t passes) {                                                                    \
    T a = start, b = start, c = start, d = start;                                               \
    X in1 = x;                                                                                  \
    Y in2 = y;                                                                                  \
    for (uint32_t i = 0; i < passes; i++)                                                       \
      asm volatile(KAI_X8(body) : "+" C(a), "+" C(b), "+" C(c), "+" C(d) : XC(in1), YC(in2)); \
  }

int32_t cell = 7;   // what the loads read

KAI_LOOP(loop_add, uint64_t, "r", 1, uint64_t, "r", 3, uint64_t, "r", 0, KAI_BINARY("add"))
KAI_LOOP(loop_mul, uint64_t, "r", 1, uint64_t, "r", 3, uint64_t, "r", 0, KAI_BINARY("mul"))
KAI_LOOP(loop_lw, uint64_t, "r", 0, int32_t*, "r", &cell, uint64_t, "r", 0, KAI_LOAD("lw"))
KAI_LOOP(loop_bnez, uint64_t, "r", 0, uint64_t, "r", 1, uint64_t, "r", 0, KAI_BRANCHES)
KAI_LOOP(loop_fsgnjx_s, float, "f", 1.5f, float, "f", -2.5f, float, "f", 0, KAI_BINARY("fsgnjx.s"))
KAI_LOOP(loop_fadd_s, float, "f", 1.5f, float, "f", 1.0e-3f, float, "f", 0, KAI_BINARY("fadd.s"))
KAI_LOOP(loop_fmul_s, float, "f", 1.5f, float, "f", 1.0000001f, float, "f", 0, KAI_BINARY("fmul.s"))
KAI_LOOP(loop_fmadd_s, float, "f", 1.5f, float, "f", 0.999f, float, "f", 1.0e-3f, KAI_FUSED("fmadd.s"))
KAI_LOOP(loop_fdiv_s, float, "f", 1.5f, float, "f", 1.0000001f, float, "f", 0, KAI_BINARY("fdiv.s"))
KAI_LOOP(loop_fadd_d, double, "f", 1.5, double, "f", 1.0e-9, double, "f", 0, KAI_BINARY("fadd.d"))
KAI_LOOP(loop_fmadd_d, double, "f", 1.5, double, "f", 0.999, double, "f", 1.0e-3, KAI_FUSED("fmadd.d"))
KAI_LOOP(loop_fmul_d, double, "f", 1.5, double, "f", 1.0000000001, double, "f", 0, KAI_BINARY("fmul.d"))
KAI_LOOP(loop_flt_s, uint64_t, "r", 0, float, "f", 1.5f, float, "f", 2.5f, KAI_COMPARE("flt.s"))
// Conversions: the int8 weight of the float kernel, a matvec's total,
// exp's fixed point, SiLU's double result, ...
KAI_LOOP(loop_fcvt_d_s, double, "f", 0, float, "f", 1.5f, uint64_t, "r", 0, KAI_FROM("fcvt.d.s", ""))
KAI_LOOP(loop_fcvt_s_w, float, "f", 0, uint64_t, "r", 100, uint64_t, "r", 0, KAI_FROM("fcvt.s.w", ""))
KAI_LOOP(loop_fcvt_s_l, float, "f", 0, uint64_t, "r", 123456789, uint64_t, "r", 0, KAI_FROM("fcvt.s.l", ""))
KAI_LOOP(loop_fcvt_s_d, float, "f", 0, double, "f", 1.0000000001, uint64_t, "r", 0, KAI_FROM("fcvt.s.d", ""))
KAI_LOOP(loop_fcvt_w_s, uint64_t, "r", 0, float, "f", 1234.567f, uint64_t, "r", 0, KAI_FROM("fcvt.w.s", ", rtz"))
KAI_LOOP(loop_fcvt_l_d, uint64_t, "r", 0, double, "f", 123456.789, uint64_t, "r", 0, KAI_FROM("fcvt.l.d", ", rtz"))

// The same conversions done on the bits (lib/float_bits.h), 32 per pass.
// The empty asm statements hide the value from the compiler, so each call is
// made and its result kept.
template <typename R, R (*convert)(double)>
void loop_on_bits(uint32_t passes, double a) {
  for (uint32_t i = 0; i < passes; i++) {
#pragma GCC unroll 32
    for (uint32_t k = 0; k < kCopies; k++) {
      asm volatile("" : "+f"(a));
      R r = convert(a);
      if constexpr (sizeof(R) == 4) asm volatile("" : : "f"(r));
      else asm volatile("" : : "r"(r));
    }
  }
}
void loop_float_of_double(uint32_t passes) { loop_on_bits<float, llm::float_of_double>(passes, 1.0000000001); }
void loop_int_of_double(uint32_t passes) { loop_on_bits<int64_t, llm::int_of_double>(passes, 123456.789); }

const Case kCases[] = {
    {"add", "integer: inline host code", loop_add},
    {"mul", "integer: inline host code", loop_mul},
    {"lw", "load: inline, through QEMU's TLB", loop_lw},
    {"bnez", "taken branch: ends a translated block", loop_bnez},
    {"fsgnjx.s", "sign bits (fabs, fneg): inline", loop_fsgnjx_s},
    {"fadd.s", "soft float, host-FPU fast path", loop_fadd_s},
    {"fmul.s", "soft float, host-FPU fast path", loop_fmul_s},
    {"fmadd.s", "soft float, host-FPU fast path", loop_fmadd_s},
    {"fdiv.s", "soft float, host-FPU fast path", loop_fdiv_s},
    {"fadd.d", "soft float, host-FPU fast path", loop_fadd_d},
    {"fmul.d", "soft float, host-FPU fast path", loop_fmul_d},
    {"fmadd.d", "soft float, host-FPU fast path", loop_fmadd_d},
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
