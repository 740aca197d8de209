// Physical and virtual memory map of kai on QEMU virt.
//
// physical                      what
//   0x0c000000 .. 0x10000000    PLIC
//   0x10000000                  UART0 (16550), IRQ 10
//   0x10001000 + 0x1000*i       virtio-mmio slot i (i < 8), IRQ 1+i
//   0x80000000 .. 0x80200000    OpenSBI (not ours; PMP-protected)
//   0x80200000 ..               kernel text, data, bss, then the page bitmap,
//                               then free pages up to the end of RAM (from the FDT)
//
// kernel virtual = physical for all of the above, plus the trampoline page at
// the top of the address space (same VA in every page table).
//
// user virtual
//   0x0      .. 0x10000         unmapped (null pointers fault)
//   0x10000  .. sz              program (ELF PT_LOAD segments), then the heap (sbrk)
//   USER_STACK_TOP - USER_STACK_SIZE .. USER_STACK_TOP   the stack
//   TRAPFRAME                   this process's trapframe (not user-accessible)
//   TRAMPOLINE                  trap entry/exit code (not user-accessible)
#pragma once
#include <stdint.h>
#include "riscv.h"

constexpr uint64_t UART0 = 0x10000000;
constexpr int UART0_IRQ = 10;
constexpr uint64_t VIRTIO_MMIO_BASE = 0x10001000;
constexpr uint64_t VIRTIO_MMIO_SIZE = 0x8000;   // 8 slots
constexpr uint64_t PLIC_BASE = 0x0c000000;
constexpr uint64_t PLIC_SIZE = 0x400000;
constexpr uint64_t KERNEL_BASE = 0x80200000;

constexpr uint64_t TRAMPOLINE = riscv::MAXVA - 4096;
constexpr uint64_t TRAPFRAME = TRAMPOLINE - 4096;
constexpr uint64_t USER_STACK_SIZE = 256 * 1024;
constexpr uint64_t USER_STACK_TOP = TRAPFRAME - 16 * 4096;   // a gap below the trapframe
constexpr uint64_t USER_STACK_BOTTOM = USER_STACK_TOP - USER_STACK_SIZE;
// The heap may not grow past this (keeps it well below the stack).
constexpr uint64_t USER_HEAP_LIMIT = 0x2000000000ull;   // 128 GiB

constexpr uint64_t KSTACK_SIZE = 64 * 1024;   // per process / kernel thread (the AI runtime runs on it)

// Linker-script symbols.
extern "C" char _kernel_start[], _etext[], _trampoline[], _kernel_end[];
