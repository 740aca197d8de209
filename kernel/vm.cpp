// Sv39 page tables. The kernel table maps all RAM at VA == PA (2 MiB
// megapages wherever alignment allows, so even 4 GiB costs only a few
// table pages) plus the MMIO devices and the trampoline. User tables are
// built from 4 KiB pages only.
#include "vm.h"
#include "boot.h"
#include "kalloc.h"
#include "memlayout.h"
#include "printf.h"
#include "riscv.h"
#include "string.h"
#include "uvm.h"

using namespace riscv;

namespace {

PageTable kernel_pagetable = nullptr;
constexpr uint64_t MEGA = 2ull << 20;

// The level-0 PTE for va, creating intermediate tables if alloc.
// nullptr if missing (or a megapage is in the way, which only the kernel table has).
pte_t* walk(PageTable pt, uint64_t va, bool alloc) {
  if (va >= MAXVA) return nullptr;
  for (int level = 2; level > 0; level--) {
    pte_t* pte = &pt[vpn_index(va, level)];
    if (*pte & PTE_V) {
      if (*pte & (PTE_R | PTE_W | PTE_X)) return nullptr;   // a leaf (megapage)
      pt = reinterpret_cast<PageTable>(pte_to_pa(*pte));
    } else {
      if (!alloc) return nullptr;
      auto* next = static_cast<PageTable>(kalloc());
      if (!next) return nullptr;
      *pte = pa_to_pte(reinterpret_cast<uint64_t>(next)) | PTE_V;
      pt = next;
    }
  }
  return &pt[vpn_index(va, 0)];
}

// A level-1 (2 MiB) leaf slot for va in the kernel table.
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
  perm |= PTE_A | PTE_D | PTE_G;
  while (va < end) {
    if (va % MEGA == 0 && pa % MEGA == 0 && end - va >= MEGA) {
      pte_t* pte = walk_mega(kernel_pagetable, va);
      if (*pte & PTE_V) panic("kvm_map: remap of %p", reinterpret_cast<void*>(va));
      *pte = pa_to_pte(pa) | perm | PTE_V;
      va += MEGA;
      pa += MEGA;
    } else {
      pte_t* pte = walk(kernel_pagetable, va, true);
      if (!pte) panic("kvm_map: cannot map %p", reinterpret_cast<void*>(va));
      if (*pte & PTE_V) panic("kvm_map: remap of %p", reinterpret_cast<void*>(va));
      *pte = pa_to_pte(pa) | perm | PTE_V;
      va += PAGE_SIZE;
      pa += PAGE_SIZE;
    }
  }
}

// The user page for va if it is mapped with PTE_U (and PTE_W if writable), else 0.
uint64_t user_page(PageTable pt, uint64_t va, bool writable) {
  if (!pt || va >= MAXVA) return 0;
  pte_t* pte = walk(pt, va, false);
  if (!pte || !(*pte & PTE_V) || !(*pte & PTE_U)) return 0;
  if (writable && !(*pte & PTE_W)) return 0;
  return pte_to_pa(*pte);
}

}  // namespace

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

void kvm_inithart() {
  sfence_vma();
  KAI_CSR_WRITE(satp, make_satp(reinterpret_cast<uint64_t>(kernel_pagetable)));
  sfence_vma();
}

uint64_t kernel_satp() { return make_satp(reinterpret_cast<uint64_t>(kernel_pagetable)); }

// ---------------------------------------------------------------- user tables

PageTable uvm_create() { return static_cast<PageTable>(kalloc()); }

ErrorOr<void> uvm_map(PageTable pt, uint64_t va, uint64_t pa, uint64_t size, uint64_t perm) {
  for (uint64_t a = page_round_down(va); a < va + size; a += PAGE_SIZE, pa += PAGE_SIZE) {
    pte_t* pte = walk(pt, a, true);
    if (!pte) return Errno::NoMem;
    if (*pte & PTE_V) panic("uvm_map: remap of %p", reinterpret_cast<void*>(a));
    *pte = pa_to_pte(pa) | perm | PTE_V | PTE_A | PTE_D;
  }
  return {};
}

void uvm_unmap(PageTable pt, uint64_t va, uint64_t npages, bool free_pages) {
  for (uint64_t a = va; a < va + npages * PAGE_SIZE; a += PAGE_SIZE) {
    pte_t* pte = walk(pt, a, false);
    if (!pte || !(*pte & PTE_V)) continue;   // holes are fine
    if (free_pages) kfree(reinterpret_cast<void*>(pte_to_pa(*pte)));
    *pte = 0;
  }
}

ErrorOr<uint64_t> uvm_alloc(PageTable pt, uint64_t oldsz, uint64_t newsz, uint64_t perm) {
  if (newsz <= oldsz) return oldsz;
  for (uint64_t a = page_round_up(oldsz); a < newsz; a += PAGE_SIZE) {
    void* page = kalloc();
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

ErrorOr<void> uvm_copy(PageTable from, PageTable to, uint64_t start, uint64_t end) {
  for (uint64_t a = page_round_down(start); a < end; a += PAGE_SIZE) {
    pte_t* pte = walk(from, a, false);
    if (!pte || !(*pte & PTE_V)) continue;
    void* page = kalloc();
    if (!page) {
      uvm_unmap(to, page_round_down(start), (a - page_round_down(start)) / PAGE_SIZE, true);
      return Errno::NoMem;
    }
    memcpy(page, reinterpret_cast<void*>(pte_to_pa(*pte)), PAGE_SIZE);
    uint64_t flags = pte_flags(*pte) & (PTE_R | PTE_W | PTE_X | PTE_U);
    if (uvm_map(to, a, reinterpret_cast<uint64_t>(page), PAGE_SIZE, flags).is_error()) {
      kfree(page);
      uvm_unmap(to, page_round_down(start), (a - page_round_down(start)) / PAGE_SIZE, true);
      return Errno::NoMem;
    }
  }
  return {};
}

// ---------------------------------------------------------------- copies to and from user memory

uint64_t user_va_to_pa(PageTable pt, uint64_t va) {
  uint64_t page = user_page(pt, va, false);
  return page ? page + (va % PAGE_SIZE) : 0;
}

ErrorOr<void> copyout(PageTable pt, uint64_t dst_va, const void* src, uint64_t len) {
  auto* s = static_cast<const char*>(src);
  if (dst_va + len < dst_va) return Errno::Fault;
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
  if (src_va + len < src_va) return Errno::Fault;
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
