// Page-table operations for the kernel's own map and for building and
// changing a process's address space (exec, fork, sbrk, exit); kernel/vm.h
// has what every other part of the kernel may use.
#pragma once
#include <stdint.h>
#include "vm.h"

void kvm_init();
void kvm_inithart();
uint64_t kernel_satp();

PageTable uvm_create();
// The valid leaf PTE for va, or nullptr (nothing mapped there).
pte_t* uvm_pte(PageTable pt, uint64_t va);
// Who resolves a fault met by copyin/copyout (mmap.cpp): true if va is now mapped.
void uvm_set_fault_handler(bool (*fn)(PageTable pt, uint64_t va, bool write));
// Set once at boot by mmap.cpp: called with the table before the kernel
// looks up a user page in it (copyin/copyout), so that a page a truncation
// has detached is unmapped first (vm_sync_truncations) and never copied.
void uvm_set_sync_handler(void (*fn)(PageTable pt));
// The level-0 slot for va if its table exists (valid or not), else nullptr.
// The slots of one table are consecutive: those of va + k pages follow
// until the next 2 MiB boundary (UVM_TABLE_SPAN), so a run of pages needs one
// walk per table (fault-around).
constexpr uint64_t UVM_TABLE_SPAN = 512 * 4096;
pte_t* uvm_slot(PageTable pt, uint64_t va);
// Fills an empty slot (from uvm_slot) with a user page, as uvm_map would.
void uvm_fill(pte_t* slot, uint64_t pa, uint64_t perm);
// Maps [va, va+size) to consecutive physical pages starting at pa.
ErrorOr<void> uvm_map(PageTable pt, uint64_t va, uint64_t pa, uint64_t size, uint64_t perm);
// Removes npages mappings at va (skipping holes), optionally freeing the pages.
void uvm_unmap(PageTable pt, uint64_t va, uint64_t npages, bool free_pages);
// Grows [oldsz, newsz) with zeroed user pages; returns newsz or NoMem (nothing kept).
ErrorOr<uint64_t> uvm_alloc(PageTable pt, uint64_t oldsz, uint64_t newsz, uint64_t perm);
// Shrinks to newsz; returns newsz.
uint64_t uvm_dealloc(PageTable pt, uint64_t oldsz, uint64_t newsz);
// Frees the page-table pages themselves (all leaves must be unmapped).
void uvm_free_tables(PageTable pt);
// fork: shares every mapped page of [start, end) with another table,
// copy-on-write (writable pages become read-only + PTE_COW in both); or,
// with cow false, copies every page into fresh ones.
ErrorOr<void> uvm_copy(PageTable from, PageTable to, uint64_t start, uint64_t end, bool cow);
// A store to va met a PTE_COW page: give this table its own writable copy
// (or the page itself if nobody else holds it). false: not a COW page, or
// no memory for the copy.
bool uvm_resolve_cow(PageTable pt, uint64_t va);
