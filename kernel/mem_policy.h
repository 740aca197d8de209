// The memory policy: who may take the last free pages.
//
// Two kinds of page leave the allocator. The kernel's own (the AI workers'
// working memory, model weights and KV caches, kernel-thread stacks, the
// kernel's page table) come from kalloc() and may take the very last page.
// Every page the kernel takes *on behalf of a process* (its user pages and
// the page-table pages that map them, its kernel stack and trapframe, exec's
// argument copies, pipes, the large-read path's request lists, read-ahead
// buffers) comes through mem::take_page()
// or mem::take_contiguous() below, which refuse (the caller returns ENOMEM)
// rather than dip into a reserve kept for the kernel's progress (one
// exception, For::Kernel: a few pages held only during one system call):
//
//   free pages
//   |<- RESERVE ->|<- HEADROOM ->|<------------- everything else ---------->|
//    kernel only   small          any process
//                  processes
//
// - RESERVE: only kalloc() goes below it. A process that takes all it can
//   still leaves the kernel enough to serve the others: mostly what an AI
//   worker allocates at its first request (measured in docs/kernel.md). The
//   file system needs none of it: a log commit allocates nothing.
// - HEADROOM: a process whose address space is (or would become) larger than
//   SMALL_PROCESS_PAGES may not grow into it (sbrk, exec, fork are refused).
//   So after one big process took all it could, a shell can still fork, exec
//   a small program, make a pipe, sbrk a page, and write a file.
// Sizes and consumers: the table in docs/kernel.md, "Memory policy".
//
// The hard floor is enforced per page, atomically, inside the allocator
// (kalloc_keep): no race between two processes can take the reserve. The
// admission checks (admit_growth) are the early, whole-request answer that
// keeps sbrk(500 MiB) from taking 499 MiB and then giving it all back.
#pragma once
#include <stdint.h>
#include "error.h"

namespace mem {

// The one place where the policy's sizes are defined (in 4 KiB pages).
// Neither floor is more than 1/RAM_SHARE of the memory (a 64 MiB machine).
// `mem.reserve_pages=N` on the kernel command line replaces the reserve
// (tests set 0 to show that a log commit needs no memory at all).
constexpr uint64_t RESERVE_PAGES = 3072;          // 12 MiB: the kernel's own progress
constexpr uint64_t HEADROOM_PAGES = 4096;         // 16 MiB: left for small processes
constexpr uint64_t SMALL_PROCESS_PAGES = 1024;    // 4 MiB: may use the headroom
constexpr uint64_t RAM_SHARE = 8;

// Sets the floors from the memory size and the command line; called once
// at boot, after kalloc_init().
void init();
// Free pages plus the page cache's evictable ones (kept clean, nobody maps
// them): what an allocation can get. meminfo's free_pages and ^P report it.
uint64_t available_pages();
// The floors in force.
uint64_t reserve_pages();
uint64_t headroom_pages();

// On whose behalf a page is taken.
enum class For {
  Process,   // a process's memory, or kernel memory it holds (pipe, kernel stack): above RESERVE
  Cache,     // a speed-up a process can do without (read-ahead): above RESERVE + HEADROOM
  // The kernel's own working memory for one system call, given back before
  // it returns and bounded (the large-read path's 5-page segment table:
  // 64 processes at once hold 320 pages, a tenth of RESERVE): may go into
  // RESERVE, like kalloc(). Without it a read at the floor runs one block
  // per disk request.
  Kernel,
};

// A zeroed page, or nullptr when taking it would leave too few free pages.
void* take_page(For who);
// A zeroed, physically contiguous region of at least `bytes`, or nullptr.
void* take_contiguous(uint64_t bytes, For who);

// Worst-case pages held by a user process whose program and heap end at sz:
// the data pages, one level-0 page-table page per 2 MiB and one level-1 page
// per 1 GiB of [0, sz), plus what every process has (root table, stack and
// its tables, trampoline and trapframe tables, trapframe, kernel stack).
uint64_t process_pages(uint64_t sz);

// ENOMEM unless `more` pages may go to a process that will then hold
// `after` pages (sbrk, exec, fork): they must fit above the reserve, and
// above the headroom too unless the process stays small.
ErrorOr<void> admit_growth(uint64_t more, uint64_t after);

}  // namespace mem
