// Sv39 page tables. The kernel table maps all RAM at VA == PA (2 MiB
// megapages wherever alignment allows, so even 4 GiB costs only a few
// table pages) plus the MMIO devices and the trampoline. User tables are
// built from 4 KiB pages only.
//
//   walk, walk_mega      find (or make) the PTE for a virtual address
//   kvm_*, kernel_satp   the kernel's table, and turning paging on
//   uvm_*                build, grow, shrink, copy and free a user table
//   copyin/copyout/...   copies to and from user memory, checked page by page
//
// What the hardware does (RISC-V privileged spec, "Sv39"):
//
// A virtual address has 39 meaningful bits: three 9-bit indices and a
// 12-bit offset into the 4 KiB page.
//
//     38      30 29      21 20      12 11          0
//    | VPN[2]   | VPN[1]   | VPN[0]   | page offset |
//
// Bits 63..39 must all equal bit 38, or the access faults; kai uses only
// addresses below MAXVA = 2^38, so they are always 0. A page-table page is
// one 4 KiB page of 512 eight-byte entries (PTEs), so one 9-bit index
// selects one entry. A PTE is
//
//     63    54 53            10 9  8 7 6 5 4 3 2 1 0
//    | 0      | PPN            | RSW |D|A|G|U|X|W|R|V|
//
// PPN is the physical page number (physical address >> 12; pa_to_pte and
// pte_to_pa move it into and out of place). V: the entry is valid (else any
// use of it faults). R, W, X: the page may be read, written, executed; an
// entry with V set and R, W, X all clear is not a mapping but a pointer to
// the next level's table. U: user mode may use the page (and the kernel,
// with sstatus.SUM clear as in kai, may not). G: the mapping exists in
// every address space. A, D: the page has been accessed, written (dirty).
//
// To translate, the hart starts at the root table named by the satp
// register and, for level 2, 1, 0, reads entry VPN[level] of the current
// table: invalid -> page fault; R, W or X set -> a leaf, done; otherwise go
// down to the table its PPN names. A leaf found at level 1 maps a whole
// 2 MiB megapage (its PPN must be 2 MiB-aligned, or the access faults).
// walk() below follows the same path in software.
//
// The hart caches translations in a TLB, and nothing keeps that cache in
// step with the tables in memory: after changing a PTE or satp the kernel
// must execute sfence.vma before relying on the change.
#include "vm.h"
#include "boot.h"
#include "kalloc.h"
#include "mem_policy.h"
#include "memlayout.h"
#include "printf.h"
#include "riscv.h"
#include "string.h"
#include "uvm.h"

using namespace riscv;

namespace {

// Written once by kvm_init on the boot hart, before any other hart starts;
// read-only afterwards.
PageTable kernel_pagetable = nullptr;
constexpr uint64_t MEGA = 2ull << 20;

// Whether walk() may create missing tables, and for whom: a user table's
// pages belong to its process and go through the memory policy like its
// data pages (mem_policy.h), so sbrk is charged for the tables it needs.
enum class Tables { Existing, Kernel, Process };

void* table_page(Tables who) {
  return who == Tables::Process ? mem::take_page(mem::For::Process) : kalloc();
}

// The level-0 PTE for va, creating intermediate tables unless Existing.
// nullptr if missing (or a megapage is in the way, which only the kernel table has).
// The table pages are reached through their physical addresses: the kernel
// maps all RAM at VA == PA, so a PPN << 12 is also a pointer it can use.
pte_t* walk(PageTable pt, uint64_t va, Tables alloc) {
  if (va >= MAXVA) return nullptr;   // beyond it the hardware would need bits 63..39 set
  for (int level = 2; level > 0; level--) {
    pte_t* pte = &pt[vpn_index(va, level)];
    if (*pte & PTE_V) {
      if (*pte & (PTE_R | PTE_W | PTE_X)) return nullptr;   // a leaf (megapage)
      pt = reinterpret_cast<PageTable>(pte_to_pa(*pte));
    } else {
      if (alloc == Tables::Existing) return nullptr;
      // A zeroed page: 512 invalid entries, so the new table maps nothing
      // until entries are written into it.
      auto* next = static_cast<PageTable>(table_page(alloc));
      if (!next) return nullptr;
      // V alone (R, W, X clear): a pointer to the next level, not a leaf.
      *pte = pa_to_pte(reinterpret_cast<uint64_t>(next)) | PTE_V;
      pt = next;
    }
  }
  return &pt[vpn_index(va, 0)];
}

// A level-1 (2 MiB) leaf slot for va in the kernel table. One megapage
// entry replaces a whole level-0 table of 512 entries, and one TLB entry
// covers 2 MiB instead of 4 KiB: the direct map of 1 GiB of RAM needs 512
// entries in one table page instead of 262,144 in 512 pages.
pte_t* walk_mega(PageTable pt, uint64_t va) {
  pte_t* pte = &pt[vpn_index(va, 2)];
  if (!(*pte & PTE_V)) {
    auto* next = static_cast<PageTable>(kalloc());
    if (!next) panic("kvm: out of memory");
    *pte = pa_to_pte(reinterpret_cast<uint64_t>(next)) | PTE_V;
  }
  auto* l1 = reinterpret_cast<PageTable>(pte_to_pa(*pte));
  return &l1[vpn_index(va, 1)];
}

// Maps [va, va+size) to pa in the kernel table, megapages where possible.
void kvm_map(uint64_t va, uint64_t pa, uint64_t size, uint64_t perm) {
  uint64_t end = va + size;
  // A and D preset: the spec lets a hart either set them itself or raise a
  // page fault when they are clear. kai never reads them (it has no page
  // replacement), so it sets both and runs on either kind of hart. G: these
  // mappings are the kernel's, meant to be the same in every address space
  // (today every switch of satp flushes the whole TLB anyway).
  perm |= PTE_A | PTE_D | PTE_G;
  while (va < end) {
    // A megapage needs va and pa both 2 MiB-aligned and a whole 2 MiB to map.
    if (va % MEGA == 0 && pa % MEGA == 0 && end - va >= MEGA) {
      pte_t* pte = walk_mega(kernel_pagetable, va);
      if (*pte & PTE_V) panic("kvm_map: remap of %p", reinterpret_cast<void*>(va));
      *pte = pa_to_pte(pa) | perm | PTE_V;
      va += MEGA;
      pa += MEGA;
    } else {
      pte_t* pte = walk(kernel_pagetable, va, Tables::Kernel);
      if (!pte) panic("kvm_map: cannot map %p", reinterpret_cast<void*>(va));
      if (*pte & PTE_V) panic("kvm_map: remap of %p", reinterpret_cast<void*>(va));
      *pte = pa_to_pte(pa) | perm | PTE_V;
      va += PAGE_SIZE;
      pa += PAGE_SIZE;
    }
  }
}

// Set once at boot by mmap.cpp: resolves a fault the kernel meets while
// copying to or from user memory (a mapping's page not yet faulted in, a
// private page still shared). Returns true if the page is now there.
bool (*user_fault_handler)(PageTable pt, uint64_t va, bool write) = nullptr;
void (*user_sync_handler)(PageTable pt) = nullptr;

uint64_t user_page_now(PageTable pt, uint64_t va, bool writable) {
  if (!pt || va >= MAXVA) return 0;
  pte_t* pte = walk(pt, va, Tables::Existing);
  if (!pte || !(*pte & PTE_V) || !(*pte & PTE_U)) return 0;
  if (writable && !(*pte & PTE_W)) return 0;
  return pte_to_pa(*pte);
}

// The user page for va if it is mapped with PTE_U (and PTE_W if writable), else 0.
// Checking PTE_U is what keeps a system call from being turned against the
// kernel: the trampoline and trapframe pages are in every user table too,
// but without U, so a read() into the trapframe's address fails with EFAULT
// instead of overwriting the saved registers. Checking PTE_W keeps the
// kernel from writing where the program itself may not (its text).
// A page of a mapping that is not there yet is faulted in first, as the
// hardware's access would have done.
uint64_t user_page(PageTable pt, uint64_t va, bool writable) {
  if (user_sync_handler) user_sync_handler(pt);
  uint64_t page = user_page_now(pt, va, writable);
  if (!page && pt && va < MAXVA && user_fault_handler && user_fault_handler(pt, va, writable))
    page = user_page_now(pt, va, writable);
  return page;
}

}  // namespace

// Builds the kernel's table: devices read-write, text read-execute, the
// rest of RAM read-write but not executable (a stray jump into data
// faults instead of running it), and the trampoline at the top of the
// address space, where every user table maps it too.
void kvm_init() {
  kernel_pagetable = static_cast<PageTable>(kalloc());
  if (!kernel_pagetable) panic("kvm_init: out of memory");
  kvm_map(UART0, UART0, PAGE_SIZE, PTE_R | PTE_W);
  kvm_map(VIRTIO_MMIO_BASE, VIRTIO_MMIO_BASE, VIRTIO_MMIO_SIZE, PTE_R | PTE_W);
  kvm_map(PLIC_BASE, PLIC_BASE, PLIC_SIZE, PTE_R | PTE_W);
  uint64_t text_end = page_round_up(reinterpret_cast<uint64_t>(_etext));
  kvm_map(KERNEL_BASE, KERNEL_BASE, text_end - KERNEL_BASE, PTE_R | PTE_X);
  uint64_t ram_end = g_boot.ram_base + g_boot.ram_size;
  kvm_map(text_end, text_end, ram_end - text_end, PTE_R | PTE_W);
  kvm_map(TRAMPOLINE, reinterpret_cast<uint64_t>(_trampoline), PAGE_SIZE, PTE_R | PTE_X);
}

// Turns paging on for this hart. satp holds MODE (bits 63..60: 8 = Sv39),
// an address-space id (bits 59..44: 0, kai does not use ASIDs) and the
// root table's physical page number (bits 43..0); make_satp builds it.
// The code keeps running across the write because the kernel is mapped at
// VA == PA: the next instruction's address means the same thing before and
// after.
void kvm_inithart() {
  // Before: the table's entries were written with ordinary stores (on the
  // boot hart, perhaps not this one); the fence orders them before the
  // hardware walker's reads that the new satp will cause.
  sfence_vma();
  KAI_CSR_WRITE(satp, make_satp(reinterpret_cast<uint64_t>(kernel_pagetable)));
  // After: drop any translation the TLB may hold from before the switch.
  sfence_vma();
}

uint64_t kernel_satp() { return make_satp(reinterpret_cast<uint64_t>(kernel_pagetable)); }

// ---------------------------------------------------------------- user tables

// A user table is in use by the hardware only while its process runs in
// user mode (and in the trampoline), and the trampoline executes
// sfence.vma around every switch of satp. The kernel itself always runs
// on the kernel table and reaches user memory through the direct map
// (user_page below), never through the user's addresses. So the functions
// below change a user table with plain stores and no fence of their own:
// the next return to user space flushes the TLB. (grow_process in
// proc.cpp also fences after shrinking, for the hart that runs it.)

void uvm_set_fault_handler(bool (*fn)(PageTable pt, uint64_t va, bool write)) { user_fault_handler = fn; }
void uvm_set_sync_handler(void (*fn)(PageTable pt)) { user_sync_handler = fn; }

pte_t* uvm_pte(PageTable pt, uint64_t va) {
  pte_t* pte = walk(pt, va, Tables::Existing);
  return pte && (*pte & PTE_V) ? pte : nullptr;
}

PageTable uvm_create() {   // zeroed: maps nothing
  return static_cast<PageTable>(mem::take_page(mem::For::Process));
}

pte_t* uvm_slot(PageTable pt, uint64_t va) { return walk(pt, va, Tables::Existing); }

void uvm_fill(pte_t* slot, uint64_t pa, uint64_t perm) {
  // A remap would lose track of the old page (a leak, or two owners).
  if (*slot & PTE_V) panic("uvm_fill: remap of a valid slot");
  *slot = pa_to_pte(pa) | perm | PTE_V | PTE_A | PTE_D;   // A, D preset as in kvm_map
}

ErrorOr<void> uvm_map(PageTable pt, uint64_t va, uint64_t pa, uint64_t size, uint64_t perm) {
  for (uint64_t a = page_round_down(va); a < va + size; a += PAGE_SIZE, pa += PAGE_SIZE) {
    pte_t* pte = walk(pt, a, Tables::Process);
    if (!pte) return Errno::NoMem;
    if (*pte & PTE_V) panic("uvm_map: remap of %p", reinterpret_cast<void*>(a));
    uvm_fill(pte, pa, perm);
  }
  return {};
}

// The table pages themselves stay (uvm_free_tables frees them at exit).
// free_pages is false for pages the process does not own: the trampoline
// (one shared page of kernel text) and the trapframe (freed by proc.cpp).
void uvm_unmap(PageTable pt, uint64_t va, uint64_t npages, bool free_pages) {
  for (uint64_t a = va; a < va + npages * PAGE_SIZE; a += PAGE_SIZE) {
    pte_t* pte = walk(pt, a, Tables::Existing);
    if (!pte || !(*pte & PTE_V)) continue;   // holes are fine
    if (free_pages) kfree(reinterpret_cast<void*>(pte_to_pa(*pte)));
    *pte = 0;
  }
}

ErrorOr<uint64_t> uvm_alloc(PageTable pt, uint64_t oldsz, uint64_t newsz, uint64_t perm) {
  if (newsz <= oldsz) return oldsz;
  for (uint64_t a = page_round_up(oldsz); a < newsz; a += PAGE_SIZE) {
    void* page = mem::take_page(mem::For::Process);
    if (!page) {
      uvm_dealloc(pt, a, oldsz);
      return Errno::NoMem;
    }
    if (uvm_map(pt, a, reinterpret_cast<uint64_t>(page), PAGE_SIZE, perm | PTE_U).is_error()) {
      kfree(page);
      uvm_dealloc(pt, a, oldsz);
      return Errno::NoMem;
    }
  }
  return newsz;
}

uint64_t uvm_dealloc(PageTable pt, uint64_t oldsz, uint64_t newsz) {
  if (newsz >= oldsz) return oldsz;
  uint64_t from = page_round_up(newsz), to = page_round_up(oldsz);
  if (to > from) uvm_unmap(pt, from, (to - from) / PAGE_SIZE, true);
  return newsz;
}

namespace {
// Depth first: a table page is freed after every table below it. Only
// pointer entries (V without R, W, X) are followed; the caller has already
// unmapped every leaf, so no data page is freed here.
void free_tables(PageTable pt, int level) {
  for (int i = 0; i < 512; i++) {
    pte_t pte = pt[i];
    if ((pte & PTE_V) && !(pte & (PTE_R | PTE_W | PTE_X)) && level > 0)
      free_tables(reinterpret_cast<PageTable>(pte_to_pa(pte)), level - 1);
  }
  kfree(pt);
}
}  // namespace

void uvm_free_tables(PageTable pt) { free_tables(pt, 2); }

// fork's copy, copy-on-write: no page is copied now. Each page is shared
// (one more reference, kpage_get); a writable one loses PTE_W in both tables
// and gains PTE_COW, so the first store of either process traps and
// uvm_resolve_cow() gives that process its own copy. Only the table pages
// are new. On failure the pages shared so far are unmapped again (the
// parent keeps its pages, read-only-COW until it writes them), so the
// half-built child holds nothing but its table pages.
//
// With cow false every page is copied at once instead, as before
// copy-on-write: fork then needs all the memory up front, but the child can
// never meet a store it has no memory for (fork in proc.cpp says when).
ErrorOr<void> uvm_copy(PageTable from, PageTable to, uint64_t start, uint64_t end, bool cow) {
  for (uint64_t a = page_round_down(start); a < end; a += PAGE_SIZE) {
    pte_t* pte = walk(from, a, Tables::Existing);
    if (!pte || !(*pte & PTE_V)) continue;
    if (!cow) {
      void* page = mem::take_page(mem::For::Process);
      uint64_t flags = pte_flags(*pte) & (PTE_R | PTE_W | PTE_X | PTE_U | PTE_COW);
      if (flags & PTE_COW) flags = (flags & ~PTE_COW) | PTE_W;   // a private copy is writable
      if (page) memcpy(page, reinterpret_cast<void*>(pte_to_pa(*pte)), PAGE_SIZE);
      if (!page || uvm_map(to, a, reinterpret_cast<uint64_t>(page), PAGE_SIZE, flags).is_error()) {
        if (page) kfree(page);
        uvm_unmap(to, page_round_down(start), (a - page_round_down(start)) / PAGE_SIZE, true);
        return Errno::NoMem;
      }
      continue;
    }
    if (*pte & PTE_W) *pte = (*pte & ~PTE_W) | PTE_COW;
    uint64_t flags = pte_flags(*pte) & (PTE_R | PTE_X | PTE_U | PTE_COW);
    void* page = reinterpret_cast<void*>(pte_to_pa(*pte));
    kpage_get(page);
    if (uvm_map(to, a, reinterpret_cast<uint64_t>(page), PAGE_SIZE, flags).is_error()) {
      kfree(page);
      uvm_unmap(to, page_round_down(start), (a - page_round_down(start)) / PAGE_SIZE, true);
      return Errno::NoMem;
    }
  }
  return {};
}

bool uvm_resolve_cow(PageTable pt, uint64_t va) {
  pte_t* pte = uvm_pte(pt, va);
  if (!pte || !(*pte & PTE_COW) || !(*pte & PTE_U)) return false;
  void* old = reinterpret_cast<void*>(pte_to_pa(*pte));
  uint64_t flags = (pte_flags(*pte) & ~PTE_COW) | PTE_W;
  if (kpage_refs(old) == 1) {   // the other holders are gone: the page is ours
    *pte = pa_to_pte(reinterpret_cast<uint64_t>(old)) | flags;
    return true;
  }
  // The page is the process's already (fork admitted it, mem::admit_growth):
  // its copy may come from the kernel's reserve rather than kill the process
  // because another took the free memory since.
  void* copy = mem::take_page(mem::For::Process);
  if (!copy) copy = kalloc();
  if (!copy) return false;
  memcpy(copy, old, PAGE_SIZE);
  *pte = pa_to_pte(reinterpret_cast<uint64_t>(copy)) | flags;
  kfree(old);   // this table's reference to the shared page
  return true;
}

// ---------------------------------------------------------------- copies to and from user memory
// Each copy walks the user's table in software, one page at a time, and
// moves bytes through the kernel's direct map of the physical page. A user
// buffer is contiguous only in virtual memory: its pages may be anywhere in
// RAM, so a copy never crosses a page boundary in one piece. Every page is
// checked (mapped, U, and W for copyout) before it is touched, so a bad
// pointer anywhere in the range is EFAULT, never a kernel page fault.

uint64_t user_va_to_pa(PageTable pt, uint64_t va) {
  uint64_t page = user_page(pt, va, false);
  return page ? page + (va % PAGE_SIZE) : 0;
}

ErrorOr<void> copyout(PageTable pt, uint64_t dst_va, const void* src, uint64_t len) {
  auto* s = static_cast<const char*>(src);
  if (dst_va + len < dst_va) return Errno::Fault;   // wraps around: no such range
  while (len > 0) {
    uint64_t page = user_page(pt, dst_va, true);
    if (!page) return Errno::Fault;
    uint64_t off = dst_va % PAGE_SIZE;
    uint64_t n = PAGE_SIZE - off < len ? PAGE_SIZE - off : len;
    memmove(reinterpret_cast<void*>(page + off), s, n);
    len -= n;
    s += n;
    dst_va += n;
  }
  return {};
}

ErrorOr<void> copyin(PageTable pt, void* dst, uint64_t src_va, uint64_t len) {
  auto* d = static_cast<char*>(dst);
  if (src_va + len < src_va) return Errno::Fault;   // wraps around: no such range
  while (len > 0) {
    uint64_t page = user_page(pt, src_va, false);
    if (!page) return Errno::Fault;
    uint64_t off = src_va % PAGE_SIZE;
    uint64_t n = PAGE_SIZE - off < len ? PAGE_SIZE - off : len;
    memmove(d, reinterpret_cast<void*>(page + off), n);
    len -= n;
    d += n;
    src_va += n;
  }
  return {};
}

ErrorOr<uint64_t> copyinstr(PageTable pt, char* dst, uint64_t src_va, uint64_t max) {
  uint64_t copied = 0;
  while (copied < max) {
    uint64_t page = user_page(pt, src_va, false);
    if (!page) return Errno::Fault;
    uint64_t off = src_va % PAGE_SIZE;
    const char* p = reinterpret_cast<const char*>(page + off);
    for (uint64_t i = 0; i < PAGE_SIZE - off && copied < max; i++, copied++) {
      dst[copied] = p[i];
      if (p[i] == 0) return copied;
    }
    src_va += PAGE_SIZE - off;
  }
  if (max > 0) dst[max - 1] = 0;
  return Errno::NameTooLong;
}
