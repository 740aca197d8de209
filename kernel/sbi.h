// Calls into OpenSBI (the M-mode firmware) through `ecall`.
#pragma once
#include <stdint.h>

namespace sbi {

struct Result { long error; long value; };

Result call(uint64_t ext, uint64_t fid, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0);
void set_timer(uint64_t stime_value);
// Starts hart `hartid` in S-mode at physical address `start` with a1 = opaque.
long hart_start(uint64_t hartid, uint64_t start, uint64_t opaque);
[[noreturn]] void shutdown();
// Raises a supervisor software interrupt on the harts in mask (bit i = hart base+i).
void send_ipi(uint64_t hart_mask, uint64_t hart_mask_base);
void console_putchar_legacy(int c);

}  // namespace sbi
