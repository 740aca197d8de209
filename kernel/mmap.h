// Memory mappings and page faults: mmap/munmap/madvise, demand paging from
// the page cache (fs/page_cache.h), private copies, and what fork, exec and
// exit do with a process's mappings. docs/virtual-memory.md.
//
// A mapping (VmArea, vm_area.h) is a range of the process's address space
// between USER_HEAP_LIMIT and the stack. mmap() only records it: no page is
// mapped until the process touches one (unless MAP_POPULATE). The first
// touch traps (a load or store page fault) and handle_page_fault() maps:
//   - a file page: the page-cache page itself, read-only (a minor fault if
//     it was cached, a major one if it had to be read: then up to 16 pages,
//     or 256 under MADV_SEQUENTIAL, in one disk request), plus the cached
//     pages around it (fault-around), so a pass over a cached file takes a
//     fault per 16 pages rather than one per page;
//   - a store to a MAP_PRIVATE page: a private copy, read-write;
//   - a store to a MAP_SHARED, PROT_WRITE file page: the page-cache page
//     itself, made writable and marked dirty; msync, munmap, exit and exec
//     write it back to the file (write_back in mmap.cpp);
//   - an anonymous page: a fresh zeroed page.
// An access outside every mapping, a store to a read-only mapping, or a
// page past the end of the file kills only the process, with a message
// naming the address and the cause.
//
// Lock order: a fault takes the mapped file's inode lock, then the page
// cache's. A fault met while the kernel copies to or from user memory
// (copyin/copyout) is resolved the same way unless the process already
// holds that inode's lock (read() of a file into a mapping of the same
// file): then the copy fails with EFAULT rather than deadlock. read() and
// write() fault their buffer in before they lock the file (vm_prefault),
// so that case does not arise from them.
#pragma once
#include <stdint.h>
#include "error.h"
#include "proc.h"

enum class Access { Read, Write, Execute };

// Registers the copy-fault handler with vm.cpp; once at boot.
void vm_init();

// Resolves a user page fault of p at va. nullptr when handled, else why
// the access is not allowed (the caller kills p with that message).
const char* handle_page_fault(Process* p, uint64_t va, Access access);

// fork: the child gets the parent's mappings, sharing read-only and shared
// pages and copying private written ones. NoMem leaves the child with none.
ErrorOr<void> vm_fork(Process* parent, Process* child);
// exit and exec: unmaps every mapping of p from pt and drops its file
// references (may sleep: a transaction for the last reference of a file).
void vm_release_all(Process* p, PageTable pt);
// Truncation: itrunc detaches a file's cached pages, but pages mapped
// before stay in the page tables of the processes that map them, and would
// show the old bytes. So every process, before it returns to user mode
// (usertrapret) and before the kernel copies to or from its memory
// (user_page), unmaps every page of each of its file mappings whose file
// was truncated since (fs::inode_truncations): the next access faults, and
// sees the file as it is now, or, past its end, kills the process. The
// process changes only its own table (the invariant above). Cheap when
// nothing was truncated: one atomic load. On one hart this is exact (the
// truncating process runs, so no other is in user mode); with several, a
// process running in user mode on another hart keeps its old pages until
// its next trap (a timer tick at most): kai has no inter-processor
// interrupts for a TLB shootdown.
void vm_sync_truncations(Process* p);
// Faults in the pages of [va, va + n) that lie in p's mappings (read() and
// write() buffers, before the file's lock is taken). Errors are left to the copy.
void vm_prefault(uint64_t va, uint64_t n, bool write);
