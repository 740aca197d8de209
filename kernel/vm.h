// Virtual memory: Sv39 page tables, the kernel direct map, user copies.
#pragma once
#include <stdint.h>
#include "error.h"

using pte_t = uint64_t;
using PageTable = pte_t*;   // a page-table page (512 entries)

// Physical address backing user virtual address `va` in page table `pt`, or
// 0 if it is unmapped or not user-accessible. Lets drivers DMA straight into
// a process's pages (the kernel direct-maps all RAM, so PA == kernel VA).
uint64_t user_va_to_pa(PageTable pt, uint64_t va);

// Copies between kernel memory and a user address space; fail with
// Errno::Fault on any unmapped, non-user or out-of-range address.
ErrorOr<void> copyout(PageTable pt, uint64_t dst_va, const void* src, uint64_t len);
ErrorOr<void> copyin(PageTable pt, void* dst, uint64_t src_va, uint64_t len);
// Copies a NUL-terminated string of at most max bytes (including NUL);
// Errno::NameTooLong if no NUL within max. Returns the length without NUL.
ErrorOr<uint64_t> copyinstr(PageTable pt, char* dst, uint64_t src_va, uint64_t max);

// either_copyout/either_copyin (to or from the *current process's* space)
// are in proc.h: this layer knows page tables, not processes.
