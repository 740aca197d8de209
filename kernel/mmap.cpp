// Memory mappings and page faults (mmap.h).
//
//   find_area, find_gap          the process's table of mappings
//   fault_in                     one page of one mapping: the fault path
//   handle_page_fault, copy_fault   the two ways into it (a trap, a copy)
//   vm_fork, vm_release_all, vm_prefault
//   write_back                   shared writable maps' stores to the file
//   sys_mmap, sys_munmap, sys_madvise, sys_msync, sys_vmstat
#include "mmap.h"
#include <kai/mman_abi.h>
#include "fs/file.h"
#include "fs/fs.h"
#include "fs/log.h"
#include "fs/page_cache.h"
#include "fs/bio.h"
#include "kalloc.h"
#include "mem_policy.h"
#include "printf.h"
#include "memlayout.h"
#include "process.h"
#include "riscv.h"
#include "string.h"
#include "syscall.h"
#include "user_ptr.h"
#include "uvm.h"

using namespace riscv;

namespace {

// Where mappings go: above the highest program break, below the stack.
constexpr uint64_t MAP_BASE = USER_HEAP_LIMIT;
constexpr uint64_t MAP_TOP = USER_STACK_BOTTOM - (1ull << 30);
// Pages read by one major fault (one disk request), by advice.
constexpr uint32_t FILL_NORMAL = 16;       // 64 KiB
constexpr uint32_t FILL_SEQUENTIAL = 256;  // 1 MiB
// A fault also maps the cached pages of its aligned block of this many.
constexpr uint64_t FAULT_AROUND = 16;

VmArea* find_area(Process* p, uint64_t va) {
  for (VmArea& a : p->vmas)
    if (a.used() && va >= a.start && va < a.end) return &a;
  return nullptr;
}

// A free range of len bytes: at hint if it fits there, else the lowest.
uint64_t find_gap(Process* p, uint64_t hint, uint64_t len) {
  auto clash = [&](uint64_t at) -> const VmArea* {
    for (const VmArea& a : p->vmas)
      if (a.used() && at < a.end && a.start < at + len) return &a;
    return nullptr;
  };
  if (hint && hint % PAGE_SIZE == 0 && hint >= MAP_BASE && hint <= MAP_TOP - len && !clash(hint)) return hint;
  uint64_t at = MAP_BASE;
  while (at <= MAP_TOP - len) {
    const VmArea* c = clash(at);
    if (!c) return at;
    at = c->end;
  }
  return 0;
}

uint64_t file_pages(uint64_t size) { return (size + PAGE_SIZE - 1) / PAGE_SIZE; }

// A shared writable file mapping: its stores go to the page-cache page
// itself, and from there back to the file.
bool writes_back(const VmArea& a) {
  return a.ip && (a.flags & KAI_MAP_SHARED) && (a.prot & KAI_PROT_WRITE);
}

uint64_t file_index(const VmArea& a, uint64_t va) { return (a.offset + (va - a.start)) / PAGE_SIZE; }

// Maps the cached pages of the file around va (its aligned block of
// FAULT_AROUND pages, within the area) that are not mapped yet: read-only,
// so a private area's first store still copies. A cached page is within the
// file (truncation drops pages from the cache), so no size check is needed.
//
// Its cost is per page, so it is written for runs: one page-table walk per
// level-0 table (the slots of consecutive pages are consecutive), and one
// page-cache lock for the whole block (page_cache_peek_run). A warm start of
// a mapped model maps every page of the bundle this way, about 2,000 faults of
// 16 pages (docs/experiments.md, "The cold-start spectrum", row (d)).
void fault_around(PageTable pt, const VmArea& a, uint64_t va) {
  static_assert(FAULT_AROUND <= 32, "page_cache_peek_run takes a 32-bit mask");
  uint64_t from = va - (va - a.start) % (FAULT_AROUND * PAGE_SIZE);
  uint32_t n = static_cast<uint32_t>(((a.end - from) / PAGE_SIZE < FAULT_AROUND) ? (a.end - from) / PAGE_SIZE
                                                                                 : FAULT_AROUND);
  pte_t* slots[FAULT_AROUND];   // nullptr: no level-0 table there yet
  uint32_t want = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t v = from + i * PAGE_SIZE;
    if (i == 0 || v % UVM_TABLE_SPAN == 0) slots[i] = uvm_slot(pt, v);
    else slots[i] = slots[i - 1] ? slots[i - 1] + 1 : nullptr;
    if (!slots[i] || !(*slots[i] & PTE_V)) want |= 1u << i;   // va itself is mapped already
  }
  if (!want) return;
  uint8_t* pages[FAULT_AROUND];
  fs::page_cache_peek_run(a.ip, file_index(a, from), n, want, pages);
  for (uint32_t i = 0; i < n; i++) {
    if (!pages[i]) continue;
    auto pa = reinterpret_cast<uint64_t>(pages[i]);
    if (slots[i]) {
      uvm_fill(slots[i], pa, PTE_R | PTE_U);
    } else if (uvm_map(pt, from + i * PAGE_SIZE, pa, PAGE_SIZE, PTE_R | PTE_U).is_error()) {
      for (uint32_t j = i; j < n; j++)   // no memory for a table: give back what is left
        if (pages[j]) kfree(pages[j]);
      return;
    }
  }
}

// ---- read-ahead for sequential mappings
// A major fault waits for the disk, and a process that computes between its
// faults (a model's forward pass over its weights) would otherwise leave the
// disk idle meanwhile. So a minor fault in a MADV_SEQUENTIAL mapping asks a kernel
// thread, "prefetch", to read the file's next window (FILL_SEQUENTIAL pages)
// into the page cache while the process goes on; when the process gets
// there, its faults are minor (or wait for the inode lock the thread holds
// while its request is in flight). Advice only: a full queue drops the job.
struct PrefetchJob {
  fs::Inode* ip = nullptr;   // one reference, dropped when done
  uint64_t index = 0;        // first file page of the window
};
constexpr int PREFETCH_QUEUE = 8;
Spinlock prefetch_lock{"prefetch"};
PrefetchJob prefetch_queue[PREFETCH_QUEUE];   // (prefetch_lock)
int prefetch_head = 0, prefetch_count = 0;    // (prefetch_lock)
PrefetchJob prefetch_running;                 // (prefetch_lock) being read now
bool prefetch_started = false;                // (prefetch_lock)
char prefetch_chan;                           // its address: the thread's sleep channel

void prefetch_thread(void*) {
  for (;;) {
    PrefetchJob job;
    {
      SpinlockGuard guard(prefetch_lock);
      while (prefetch_count == 0) sleep(&prefetch_chan, prefetch_lock);
      job = prefetch_queue[prefetch_head];
      prefetch_head = (prefetch_head + 1) % PREFETCH_QUEUE;
      prefetch_count--;
      prefetch_running = job;
    }
    fs::ilock(job.ip);
    if (job.index < file_pages(fs::inode_size(job.ip))) {
      auto got = fs::page_cache_get(job.ip, job.index, FILL_SEQUENTIAL, nullptr);
      if (!got.is_error()) kfree(got.value());
    }
    fs::iunlock(job.ip);
    {
      fs::Transaction tx;
      fs::iput(job.ip);
    }
    SpinlockGuard guard(prefetch_lock);
    prefetch_running = PrefetchJob{};
  }
}

// Queues the window of ip starting at index unless it is cached, queued or
// being read already.
void prefetch(fs::Inode* ip, uint64_t index) {
  if (fs::page_cache_has(ip, index)) return;
  bool start = false;
  {
    SpinlockGuard guard(prefetch_lock);
    if (prefetch_running.ip == ip && prefetch_running.index == index) return;
    for (int i = 0; i < prefetch_count; i++) {
      const PrefetchJob& j = prefetch_queue[(prefetch_head + i) % PREFETCH_QUEUE];
      if (j.ip == ip && j.index == index) return;
    }
    if (prefetch_count == PREFETCH_QUEUE) return;
    prefetch_queue[(prefetch_head + prefetch_count) % PREFETCH_QUEUE] = {fs::idup(ip), index};
    prefetch_count++;
    start = !prefetch_started;
    prefetch_started = true;
    wakeup(&prefetch_chan);
  }
  if (start && kthread_create("prefetch", prefetch_thread, nullptr).is_error()) {
    SpinlockGuard guard(prefetch_lock);
    prefetch_started = false;   // try again at the next fault (the job waits in the queue)
  }
}

// After a fault at file page index of a sequential area: the next window.
void prefetch_after(const VmArea& a, uint64_t index) {
  if (a.advice == KAI_MADV_SEQUENTIAL) prefetch(a.ip, (index / FILL_SEQUENTIAL + 1) * FILL_SEQUENTIAL);
}

// Maps a file page (one reference, the caller's) at va of area a: the page
// itself, read-only; for a store to a shared area the page itself, writable
// and dirty; for a store to a private area a private copy. nullptr, or why
// it failed.
//
// Why dirty pages are found by a first-store fault and not by the PTE's D
// bit: a shared writable area maps each page read-only at first, so the
// first store traps here, and the one line that marks the cache page dirty
// is the whole of the dirty tracking: a student can put a breakpoint on it.
// The D bit would be set silently by the hardware in every page table that
// maps the page, and kai keeps no reverse map from a page to those tables,
// so nobody could collect it before an eviction. After a write-back (msync)
// the page is mapped read-only again, so the next store faults again.
const char* map_file_page(Process* p, const VmArea& a, uint64_t va, uint8_t* page, bool write) {
  uint64_t perm = PTE_R | PTE_U;
  if (write && writes_back(a)) {   // the page itself: the file's bytes change
    fs::page_cache_mark_dirty(a.ip, file_index(a, va), page);
    perm |= PTE_W;
  } else if (write) {   // a store to a private area: copy
    void* copy = mem::take_page(mem::For::Process);
    if (!copy) {
      kfree(page);
      return "out of memory for a private copy";
    }
    memcpy(copy, page, PAGE_SIZE);
    kfree(page);
    page = static_cast<uint8_t*>(copy);
    perm |= PTE_W;
  }
  if (uvm_map(p->pagetable, va, reinterpret_cast<uint64_t>(page), PAGE_SIZE, perm).is_error()) {
    kfree(page);
    return "out of memory for a page table";
  }
  return nullptr;
}

// Maps page va of area a for an access (write or not) that the area's
// protection allows. nullptr, or why it failed.
const char* fault_in(Process* p, const VmArea& a, uint64_t va, bool write) {
  va = page_round_down(va);
  PageTable pt = p->pagetable;
  uint64_t writable = (a.prot & KAI_PROT_WRITE) ? PTE_W : 0;
  if (pte_t* pte = uvm_pte(pt, va)) {
    // Present: only a store to a page mapped read-only in a writable area
    // faults here. A shared file area's page: its first store since it was
    // mapped or written back; it becomes writable and dirty, never a copy.
    // A private area's page is shared (with the page cache, or with a
    // forked relative): copy it, unless this mapping is its only holder.
    if (!write || (*pte & PTE_W)) return nullptr;   // already resolved
    void* old = reinterpret_cast<void*>(pte_to_pa(*pte));
    if (writes_back(a)) {
      fs::page_cache_mark_dirty(a.ip, file_index(a, va), static_cast<uint8_t*>(old));
      *pte |= PTE_W;
      sfence_vma();
    } else if (kpage_refs(old) == 1) {
      *pte |= PTE_W;
    } else {
      void* copy = mem::take_page(mem::For::Process);
      if (!copy) return "out of memory for a private copy";
      memcpy(copy, old, PAGE_SIZE);
      *pte = pa_to_pte(reinterpret_cast<uint64_t>(copy)) | (pte_flags(*pte) | PTE_W);
      kfree(old);
    }
    p->vm.minor_faults++;
    return nullptr;
  }
  if (!a.ip) {   // anonymous: a zeroed page
    void* page = mem::take_page(mem::For::Process);
    if (!page) return "out of memory";
    if (uvm_map(pt, va, reinterpret_cast<uint64_t>(page), PAGE_SIZE, PTE_R | writable | PTE_U).is_error()) {
      kfree(page);
      return "out of memory for a page table";
    }
    p->vm.minor_faults++;
    return nullptr;
  }
  uint64_t off = a.offset + (va - a.start);
  // A minor fault needs no inode lock: a cached page is within the file, and
  // the lock may be held by the prefetch thread while its request is in flight.
  if (uint8_t* cached = fs::page_cache_peek(a.ip, off / PAGE_SIZE)) {
    if (const char* why = map_file_page(p, a, va, cached, write)) return why;
    p->vm.minor_faults++;
    if (a.advice != KAI_MADV_RANDOM) fault_around(pt, a, va);
    prefetch_after(a, off / PAGE_SIZE);
    return nullptr;
  }
  fs::ilock(a.ip);
  uint64_t size = fs::inode_size(a.ip);
  if (off >= page_round_up(size)) {
    fs::iunlock(a.ip);
    return "access beyond the end of the mapped file";
  }
  fs::PageFill fill;
  uint32_t ahead = a.advice == KAI_MADV_SEQUENTIAL ? FILL_SEQUENTIAL : a.advice == KAI_MADV_RANDOM ? 1 : FILL_NORMAL;
  auto got = fs::page_cache_get(a.ip, off / PAGE_SIZE, ahead, &fill);
  if (got.is_error()) {
    fs::iunlock(a.ip);
    return got.error() == Errno::NoMem ? "out of memory for the page cache" : "I/O error reading the mapped file";
  }
  if (const char* why = map_file_page(p, a, va, got.value(), write)) {
    fs::iunlock(a.ip);
    return why;
  }
  if (fill.major) p->vm.major_faults++;
  else p->vm.minor_faults++;
  p->vm.disk_bytes += fill.disk_bytes;
  if (a.advice != KAI_MADV_RANDOM) fault_around(pt, a, va);
  fs::iunlock(a.ip);
  // No prefetch after a major fault: a program that touches one page of
  // each file (a loader checking headers) would keep the disk busy with
  // windows nobody reads soon. A minor fault in a window is a reader
  // streaming through it: that one asks for the next.
  return nullptr;
}

// The protection check every fault makes first.
const char* check_access(const VmArea* a, Access access) {
  if (!a) return "no mapping at this address";
  if (access == Access::Execute) return "execute in a mapping (mappings are never executable)";
  if (a->prot == KAI_PROT_NONE) return "access to a PROT_NONE mapping";
  if (access == Access::Write && !(a->prot & KAI_PROT_WRITE)) return "write to a read-only mapping";
  return nullptr;
}

// vm.cpp's copy-fault handler: the kernel copying to or from the current
// process's memory found a page of a mapping missing (or shared, for a write).
bool copy_fault(PageTable pt, uint64_t va, bool write) {
  Process* p = current_process();
  if (!p || p->pagetable != pt) return false;   // exec's new table, or another process
  VmArea* a = find_area(p, va);
  if (!a) return write && uvm_resolve_cow(pt, va);   // the program, heap or stack after fork
  if (check_access(a, write ? Access::Write : Access::Read)) return false;
  if (a->ip && fs::iholding(a->ip)) return false;   // would deadlock: EFAULT instead
  return fault_in(p, *a, va, write) == nullptr;
}

// ---- write-back of shared writable mappings
// Writes back the pages of [lo, hi) of area a that may hold stores not yet
// in the file: those this process maps writable (mapped by a store), then
// those the cache holds dirty (stores of a mapping that let go of the page,
// MADV_DONTNEED). protect (msync): map the written pages read-only again, so
// that the next store faults and marks its page dirty again. Every page
// goes through the log like a write() (page_cache_write_back), a few per
// transaction. Returns the first error; the pages that failed stay dirty.
ErrorOr<void> write_back(PageTable pt, const VmArea& a, uint64_t lo, uint64_t hi, bool protect) {
  if (!writes_back(a)) return {};
  ErrorOr<void> result;
  uint64_t v = lo;
  while (v < hi) {   // on through a failed page: every other page still gets written
    fs::Transaction tx;
    if (auto w = fs::log_writable(); w.is_error()) return w.error();
    fs::ilock(a.ip);
    for (uint32_t written = 0; v < hi && written < fs::WRITEBACK_PAGES_PER_TX; v += PAGE_SIZE) {
      uint64_t index = file_index(a, v);
      uint8_t* page = nullptr;
      if (pte_t* pte = uvm_pte(pt, v); pte && (*pte & PTE_W)) {
        page = reinterpret_cast<uint8_t*>(pte_to_pa(*pte));
        kpage_get(page);   // under writeback: the page stays while it is written
        if (protect) *pte &= ~PTE_W;
      } else {
        page = fs::page_cache_take_dirty(a.ip, index);
      }
      if (!page) continue;
      auto r = fs::page_cache_write_back(a.ip, index, page);
      kfree(page);
      if (r.is_error() && !result.is_error()) result = r;
      written++;
    }
    fs::iunlock(a.ip);
  }
  if (protect) sfence_vma();
  return result;
}

// munmap, exit and exec cannot return a write-back's error to anyone:
// the console says which file lost what.
void write_back_or_say(Process* p, PageTable pt, const VmArea& a, uint64_t lo, uint64_t hi) {
  if (auto r = write_back(pt, a, lo, hi, false); r.is_error())
    kprintf("kai: pid %d (%s): write-back of a shared mapping failed (errno %d): its stores stay in memory only\n",
            p->pid, p->name, int(r.error()));
}

void release(Process* p, PageTable pt, VmArea& a) {
  write_back_or_say(p, pt, a, a.start, a.end);
  uvm_unmap(pt, a.start, (a.end - a.start) / PAGE_SIZE, true);
  fs::Inode* ip = a.ip;
  a = VmArea{};
  if (ip) {
    fs::Transaction tx;   // the last reference to an unlinked file frees it
    fs::iput(ip);
  }
}

// vm.cpp's sync handler: before a copy to or from the current process's memory.
void copy_sync(PageTable pt) {
  Process* p = current_process();
  if (p && p->pagetable == pt) vm_sync_truncations(p);
}

}  // namespace

void vm_init() {
  uvm_set_fault_handler(copy_fault);
  uvm_set_sync_handler(copy_sync);
}

void vm_sync_truncations(Process* p) {
  // The total first: itrunc bumps the file's count before the total, so a
  // new total here means the file's new count is visible below.
  uint64_t total = fs::truncations_total();
  if (total == p->truncations_seen) return;
  p->truncations_seen = total;
  bool unmapped = false;
  for (VmArea& a : p->vmas) {
    if (!a.used() || !a.ip) continue;
    uint64_t now = fs::inode_truncations(a.ip);
    if (now == a.truncations) continue;
    // kai truncates to length 0 only (O_TRUNC), so every page of the area
    // is stale, privately written ones included (Linux unmaps those too).
    a.truncations = now;
    uvm_unmap(p->pagetable, a.start, (a.end - a.start) / PAGE_SIZE, true);
    unmapped = true;
  }
  if (unmapped) sfence_vma();
}

const char* handle_page_fault(Process* p, uint64_t va, Access access) {
  VmArea* a = find_area(p, va);
  if (!a && access == Access::Write && uvm_pte(p->pagetable, page_round_down(va))) {
    // A store to the program, heap or stack: a page fork shares copy-on-write.
    if (uvm_resolve_cow(p->pagetable, page_round_down(va))) {
      p->vm.minor_faults++;
      return nullptr;
    }
    pte_t* pte = uvm_pte(p->pagetable, page_round_down(va));
    return (*pte & PTE_COW) ? "out of memory for a copy-on-write page" : "write to a read-only page";
  }
  if (const char* why = check_access(a, access)) return why;
  return fault_in(p, *a, va, access == Access::Write);
}

ErrorOr<void> vm_fork(Process* parent, Process* child) {
  int done = 0;
  ErrorOr<void> result;
  for (; done < NVMA && !result.is_error(); done++) {
    const VmArea& a = parent->vmas[done];
    if (!a.used()) continue;
    for (uint64_t va = a.start; va < a.end; va += PAGE_SIZE) {
      pte_t* pte = uvm_pte(parent->pagetable, va);
      if (!pte) continue;
      uint64_t flags = pte_flags(*pte) & (PTE_R | PTE_W | PTE_U);
      void* page = reinterpret_cast<void*>(pte_to_pa(*pte));
      if ((a.flags & KAI_MAP_SHARED) || !(flags & PTE_W)) {
        kpage_get(page);   // shared, or read-only: one page for both
      } else {
        void* copy = mem::take_page(mem::For::Process);   // a private written page
        if (!copy) {
          result = Errno::NoMem;
          break;
        }
        memcpy(copy, page, PAGE_SIZE);
        page = copy;
      }
      if (uvm_map(child->pagetable, va, reinterpret_cast<uint64_t>(page), PAGE_SIZE, flags).is_error()) {
        kfree(page);
        result = Errno::NoMem;
        break;
      }
    }
  }
  if (result.is_error()) {
    for (int i = 0; i < done; i++) {
      const VmArea& a = parent->vmas[i];
      if (a.used()) uvm_unmap(child->pagetable, a.start, (a.end - a.start) / PAGE_SIZE, true);
    }
    return result;
  }
  for (int i = 0; i < NVMA; i++) {
    child->vmas[i] = parent->vmas[i];
    if (child->vmas[i].ip) fs::idup(child->vmas[i].ip);
  }
  child->vm = VmCounters{};
  child->truncations_seen = 0;   // its first return to user mode checks the areas' counts
  return {};
}

void vm_release_all(Process* p, PageTable pt) {
  // Pages a truncation detached must not be written back over the file's
  // new bytes (another hart may have truncated it since this process last
  // returned to user mode).
  if (pt == p->pagetable) vm_sync_truncations(p);
  for (VmArea& a : p->vmas)
    if (a.used()) release(p, pt, a);
}

void vm_prefault(uint64_t va, uint64_t n, bool write) {
  Process* p = current_process();
  if (!p || !p->pagetable || n == 0 || va + n < va) return;
  for (const VmArea& a : p->vmas) {
    if (!a.used() || a.end <= va || va + n <= a.start) continue;
    uint64_t from = page_round_down(va > a.start ? va : a.start);
    uint64_t to = va + n < a.end ? va + n : a.end;
    if (check_access(&a, write ? Access::Write : Access::Read)) continue;
    for (uint64_t v = from; v < to; v += PAGE_SIZE) {
      pte_t* pte = uvm_pte(p->pagetable, v);
      if (pte && (!write || (*pte & PTE_W))) continue;
      if (fault_in(p, a, v, write)) break;
    }
  }
}

// ---------------------------------------------------------------- system calls

// mmap(addr, len, prot, flags, fd, offset): the address of the new mapping.
// EINVAL: len 0, offset not page-aligned or negative, unknown prot or flags
// bits, not exactly one of MAP_SHARED / MAP_PRIVATE. EBADF: fd is not open
// (file mappings). ENODEV: fd is not a regular file. EACCES: fd not open
// for reading, or MAP_SHARED with PROT_WRITE and fd not open for writing.
// EBUSY: MAP_SHARED with PROT_WRITE of a loaded model's file (pinned: its
// pages are the service's weights). ENOMEM: no free slot or address range.
SyscallResult sys_mmap() {
  Process* p = current_process();
  uint64_t hint = arg_raw(0), len = arg_raw(1);
  int64_t prot = arg_int(2), flags = arg_int(3), fd = arg_int(4), offset = arg_int(5);
  if (len == 0 || len > MAP_TOP - MAP_BASE) return Errno::Invalid;
  if (prot & ~int64_t(KAI_PROT_READ | KAI_PROT_WRITE)) return Errno::Invalid;
  if (flags & ~int64_t(KAI_MAP_SHARED | KAI_MAP_PRIVATE | KAI_MAP_ANONYMOUS | KAI_MAP_POPULATE))
    return Errno::Invalid;
  int64_t kind = flags & (KAI_MAP_SHARED | KAI_MAP_PRIVATE);
  if (kind != KAI_MAP_SHARED && kind != KAI_MAP_PRIVATE) return Errno::Invalid;
  bool anonymous = flags & KAI_MAP_ANONYMOUS;
  fs::File* f = nullptr;
  if (!anonymous) {
    if (offset < 0 || offset % PAGE_SIZE) return Errno::Invalid;
    if (fd < 0 || fd >= NOFILE || !p->ofile[fd]) return Errno::BadFd;
    f = p->ofile[fd];
    if (f->kind != fs::File::Kind::Inode) return Errno::NoDevice;
    fs::ilock(f->ip);
    bool regular = fs::inode_type(f->ip) == KAI_T_FILE;
    fs::iunlock(f->ip);
    if (!regular) return Errno::NoDevice;
    if (!f->readable) return Errno::Access;
    if (kind == KAI_MAP_SHARED && (prot & KAI_PROT_WRITE)) {
      if (!f->writable) return Errno::Access;
      if (fs::page_cache_file_pinned(f->ip)) return Errno::Busy;
    }
    if (uint64_t(offset) + len < uint64_t(offset)) return Errno::Invalid;
  }
  len = page_round_up(len);
  VmArea* slot = nullptr;
  for (VmArea& a : p->vmas)
    if (!a.used()) {
      slot = &a;
      break;
    }
  if (!slot) return Errno::NoMem;
  uint64_t start = find_gap(p, hint, len);
  if (!start) return Errno::NoMem;
  *slot = VmArea{start, start + len, uint32_t(prot), uint32_t(kind | (anonymous ? KAI_MAP_ANONYMOUS : 0)),
                 KAI_MADV_NORMAL, anonymous ? nullptr : fs::idup(f->ip), anonymous ? 0 : uint64_t(offset),
                 anonymous ? 0 : fs::inode_truncations(f->ip)};
  if (flags & KAI_MAP_POPULATE) {
    // Read ahead in big runs, then map every page (stops at the end of the
    // file or on the first failure, as Linux's populate does).
    slot->advice = KAI_MADV_SEQUENTIAL;
    bool write = (prot & KAI_PROT_WRITE) && anonymous;
    for (uint64_t va = start; va < start + len; va += PAGE_SIZE) {
      if (uvm_pte(p->pagetable, va)) continue;
      if (fault_in(p, *slot, va, write)) break;
    }
    slot->advice = KAI_MADV_NORMAL;
  }
  return start;
}

// munmap(addr, len): unmaps every page of [addr, addr + len) (a part of a
// mapping leaves the rest mapped; a range with nothing mapped is fine).
// EINVAL: addr not page-aligned, len 0, or the range outside the mapping area.
SyscallResult sys_munmap() {
  Process* p = current_process();
  uint64_t addr = arg_raw(0), len = arg_raw(1);
  if (addr % PAGE_SIZE || len == 0 || addr < MAP_BASE || len > MAP_TOP - addr) return Errno::Invalid;
  uint64_t end = page_round_up(addr + len);
  vm_sync_truncations(p);   // no write-back of pages a truncation detached (vm_release_all)
  // A hole in the middle of a mapping needs a second slot: find it first.
  for (const VmArea& a : p->vmas) {
    if (a.used() && a.start < addr && end < a.end) {
      bool have = false;
      for (const VmArea& b : p->vmas) have |= !b.used();
      if (!have) return Errno::NoMem;
    }
  }
  for (VmArea& a : p->vmas) {
    if (!a.used() || a.end <= addr || end <= a.start) continue;
    uint64_t lo = addr > a.start ? addr : a.start;
    uint64_t hi = end < a.end ? end : a.end;
    if (lo == a.start && hi == a.end) {
      release(p, p->pagetable, a);
      continue;
    }
    write_back_or_say(p, p->pagetable, a, lo, hi);
    uvm_unmap(p->pagetable, lo, (hi - lo) / PAGE_SIZE, true);   // part of the mapping goes
    if (lo == a.start) {
      a.offset += hi - a.start;
      a.start = hi;
    } else if (hi == a.end) {
      a.end = lo;
    } else {
      for (VmArea& b : p->vmas) {
        if (b.used()) continue;
        b = a;
        b.offset += hi - a.start;
        b.start = hi;
        if (b.ip) fs::idup(b.ip);
        break;
      }
      a.end = lo;
    }
  }
  sfence_vma();
  return uint64_t(0);
}

// madvise(addr, len, advice): NORMAL, RANDOM and SEQUENTIAL set how far a
// fault reads ahead in the mappings the range touches; WILLNEED reads the
// range's file pages into the page cache now; DONTNEED unmaps the range's
// pages (the next touch faults: file pages come back from the cache, a
// private page's changes and anonymous data are gone).
// EINVAL: addr not page-aligned, len 0, unknown advice. ENOMEM: part of the
// range is not mapped.
SyscallResult sys_madvise() {
  Process* p = current_process();
  uint64_t addr = arg_raw(0), len = arg_raw(1);
  int64_t advice = arg_int(2);
  if (addr % PAGE_SIZE || len == 0 || addr + len < addr) return Errno::Invalid;
  if (advice < KAI_MADV_NORMAL || advice > KAI_MADV_DONTNEED) return Errno::Invalid;
  uint64_t end = page_round_up(addr + len);
  vm_sync_truncations(p);   // no write-back of pages a truncation detached (vm_release_all)
  for (uint64_t v = addr; v < end; v += PAGE_SIZE) {
    VmArea* a = find_area(p, v);
    if (!a) return Errno::NoMem;
    v = a->end - PAGE_SIZE;   // skip to the next area
  }
  for (VmArea& a : p->vmas) {
    if (!a.used() || a.end <= addr || end <= a.start) continue;
    uint64_t lo = addr > a.start ? addr : a.start;
    uint64_t hi = end < a.end ? end : a.end;
    if (advice == KAI_MADV_DONTNEED) {
      // A shared writable area's stores stay: its written pages stay in the
      // cache, dirty, for msync, munmap or exit to write back (a page the
      // cache has no room for is written back now).
      bool uncached = false;
      for (uint64_t v = lo; writes_back(a) && v < hi; v += PAGE_SIZE)
        if (pte_t* pte = uvm_pte(p->pagetable, v); pte && (*pte & PTE_W))
          uncached |= !fs::page_cache_mark_dirty(a.ip, file_index(a, v), reinterpret_cast<uint8_t*>(pte_to_pa(*pte)));
      if (uncached) write_back_or_say(p, p->pagetable, a, lo, hi);
      uvm_unmap(p->pagetable, lo, (hi - lo) / PAGE_SIZE, true);
    } else if (advice == KAI_MADV_WILLNEED) {
      if (!a.ip) continue;
      fs::ilock(a.ip);
      uint64_t pages = file_pages(fs::inode_size(a.ip));
      for (uint64_t index = (a.offset + lo - a.start) / PAGE_SIZE;
           index < (a.offset + hi - a.start) / PAGE_SIZE && index < pages; index++) {
        fs::PageFill fill;
        auto got = fs::page_cache_get(a.ip, index, FILL_SEQUENTIAL, &fill);
        if (got.is_error()) break;   // advice: a failure is not an error
        kfree(got.value());
        p->vm.disk_bytes += fill.disk_bytes;
      }
      fs::iunlock(a.ip);
    } else {
      a.advice = uint32_t(advice);
    }
  }
  sfence_vma();
  return uint64_t(0);
}

// msync(addr, len, flags): writes the stores of the shared writable
// mappings in [addr, addr + len) back to their files (MS_SYNC: done when it
// returns; MS_ASYNC is done the same way, at once; MS_INVALIDATE has
// nothing to do: a map shows the cached page itself, so it is never stale).
// Other mappings in the range are fine and untouched. EINVAL: addr not
// page-aligned, unknown flags, or both MS_SYNC and MS_ASYNC. ENOMEM: part of
// the range is not mapped. EIO (or ENOSPC, EROFS): a page could not be
// written; it stays dirty.
SyscallResult sys_msync() {
  Process* p = current_process();
  uint64_t addr = arg_raw(0), len = arg_raw(1);
  int64_t flags = arg_int(2);
  if (addr % PAGE_SIZE || addr + len < addr) return Errno::Invalid;
  if (flags & ~int64_t(KAI_MS_ASYNC | KAI_MS_SYNC | KAI_MS_INVALIDATE)) return Errno::Invalid;
  if ((flags & KAI_MS_ASYNC) && (flags & KAI_MS_SYNC)) return Errno::Invalid;
  uint64_t end = page_round_up(addr + len);
  for (uint64_t v = addr; v < end; v += PAGE_SIZE) {
    VmArea* a = find_area(p, v);
    if (!a) return Errno::NoMem;
    v = a->end - PAGE_SIZE;   // skip to the next area
  }
  vm_sync_truncations(p);   // no write-back of pages a truncation detached (vm_release_all)
  ErrorOr<void> result;
  for (VmArea& a : p->vmas) {
    if (!a.used() || a.end <= addr || end <= a.start) continue;
    uint64_t lo = addr > a.start ? addr : a.start;
    uint64_t hi = end < a.end ? end : a.end;
    if (auto r = write_back(p->pagetable, a, lo, hi, true); r.is_error() && !result.is_error()) result = r;
  }
  TRY(result);
  return uint64_t(0);
}

SyscallResult sys_vmstat() {
  Process* p = current_process();
  kai_vmstat st{p->vm.major_faults, p->vm.minor_faults, p->vm.disk_bytes, 0, 0, 0};
  auto count = [&](uint64_t from, uint64_t to, bool mapping) {
    for (uint64_t v = page_round_down(from); v < to; v += PAGE_SIZE) {
      pte_t* pte = uvm_pte(p->pagetable, v);
      if (!pte || !(*pte & PTE_U)) continue;
      st.resident_pages++;
      st.mapped_pages += mapping;
      st.shared_pages += kpage_refs(reinterpret_cast<void*>(pte_to_pa(*pte))) > 1;
    }
  };
  count(0, p->sz, false);
  count(USER_STACK_BOTTOM, USER_STACK_TOP, false);
  for (const VmArea& a : p->vmas)
    if (a.used()) count(a.start, a.end, true);
  TRY(copy_to_user(arg_ptr<kai_vmstat>(0), &st));
  return uint64_t(0);
}

// dropcaches(): evicts every page-cache page nobody maps, and forgets every
// buffer-cache block nobody holds (a cold start on purpose: coldwarm's cold
// runs, Linux's /proc/sys/vm/drop_caches); without the second, a cold run
// found the bundle's directory, inodes and small files still cached.
// Returns the pages freed. Any process may: it costs the others speed,
// never data.
SyscallResult sys_dropcaches() {
  uint64_t pages = fs::page_cache_evict(0, true);
  fs::bdrop_unheld();
  return pages;
}
