#include "sbi.h"

namespace sbi {

namespace {
constexpr uint64_t EXT_TIME = 0x54494D45;   // "TIME"
constexpr uint64_t EXT_HSM = 0x48534D;      // "HSM"
constexpr uint64_t EXT_SRST = 0x53525354;   // "SRST"
constexpr uint64_t EXT_IPI = 0x735049;      // "sPI"
constexpr uint64_t LEGACY_SET_TIMER = 0;
constexpr uint64_t LEGACY_PUTCHAR = 1;
constexpr uint64_t LEGACY_SHUTDOWN = 8;
}  // namespace

Result call(uint64_t ext, uint64_t fid, uint64_t a0, uint64_t a1, uint64_t a2) {
  register uint64_t r_a0 asm("a0") = a0;
  register uint64_t r_a1 asm("a1") = a1;
  register uint64_t r_a2 asm("a2") = a2;
  register uint64_t r_a6 asm("a6") = fid;
  register uint64_t r_a7 asm("a7") = ext;
  asm volatile("ecall" : "+r"(r_a0), "+r"(r_a1) : "r"(r_a2), "r"(r_a6), "r"(r_a7) : "memory");
  return {static_cast<long>(r_a0), static_cast<long>(r_a1)};
}

void set_timer(uint64_t t) {
  if (call(EXT_TIME, 0, t).error != 0) call(LEGACY_SET_TIMER, 0, t);
}

long hart_start(uint64_t hartid, uint64_t start, uint64_t opaque) {
  return call(EXT_HSM, 0, hartid, start, opaque).error;
}

void shutdown() {
  call(EXT_SRST, 0, 0 /* shutdown */, 0 /* no reason */);
  call(LEGACY_SHUTDOWN, 0);
  for (;;) asm volatile("wfi");
}

void send_ipi(uint64_t mask, uint64_t base) { call(EXT_IPI, 0, mask, base); }

void console_putchar_legacy(int c) { call(LEGACY_PUTCHAR, 0, static_cast<uint64_t>(c)); }

}  // namespace sbi
