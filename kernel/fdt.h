// Just enough of a flattened-device-tree reader to learn what QEMU gave us:
// RAM size, the hart ids, and the timebase frequency.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "param.h"

struct BootInfo {
  uint64_t ram_base = 0x80000000;
  uint64_t ram_size = 128ull << 20;   // fallback if the FDT has no memory node
  uint64_t timebase_hz = 10000000;    // QEMU virt's timebase
  int nharts = 0;
  uint64_t hart_ids[NCPU] = {};
  char bootargs[256] = {};            // /chosen/bootargs: QEMU's -append string
};

// Fills `info` from the device tree at `fdt` (physical address).
void fdt_parse(uint64_t fdt, BootInfo& info);

// The integer value of "key=N" in the boot arguments (e.g. "ai.workers=2"),
// or `fallback` when absent or malformed.
int64_t bootarg_int(const BootInfo& info, const char* key, int64_t fallback);
// The text value of "key=word" copied into out (NUL-terminated, at most
// size-1 bytes); false when the key is absent or the value does not fit.
bool bootarg_str(const BootInfo& info, const char* key, char* out, size_t size);
