// exec(): builds a fresh address space from an ELF64 file and the argument
// strings, and only then swaps it in, so a failed exec leaves the caller intact.
#include "elf.h"
#include "fs/fs.h"
#include "kalloc.h"
#include "mem_policy.h"
#include "memlayout.h"
#include "mmap.h"
#include "process.h"
#include "string.h"
#include "uvm.h"

namespace {

uint64_t pte_perm(uint32_t flags) {
  uint64_t perm = riscv::PTE_U;
  if (flags & PF_R) perm |= riscv::PTE_R;
  if (flags & PF_W) perm |= riscv::PTE_W;
  if (flags & PF_X) perm |= riscv::PTE_X;
  return perm;
}

// Reads [off, off+n) of ip into user memory at va (already mapped); ip locked.
ErrorOr<void> load_segment(PageTable pt, fs::Inode* ip, uint64_t va, uint64_t off, uint64_t n) {
  while (n > 0) {
    uint64_t pa = user_va_to_pa(pt, va);
    if (!pa) return Errno::NoExec;
    uint64_t chunk = PAGE_SIZE - va % PAGE_SIZE;
    if (chunk > n) chunk = n;
    uint64_t got = TRY(fs::readi(ip, false, pa, off, chunk));
    if (got != chunk) return Errno::NoExec;
    va += chunk;
    off += chunk;
    n -= chunk;
  }
  return {};
}

// Maps the pages of [start, end) that are not mapped yet; sz is the highest
// end so far (segments come in increasing address order).
ErrorOr<uint64_t> map_segment(PageTable pt, uint64_t sz, uint64_t start, uint64_t end,
                              uint64_t perm) {
  uint64_t from = page_round_down(start);
  if (from < page_round_up(sz)) from = page_round_up(sz);
  if (end > from) TRY(uvm_alloc(pt, from, end, perm & ~riscv::PTE_U));
  return end > sz ? end : sz;
}

// `mapped` tracks how far pages were mapped, so a failure can free them.
ErrorOr<uint64_t> load_program(PageTable pt, fs::Inode* ip, uint64_t& entry, uint64_t& mapped) {
  ElfHeader eh;
  uint64_t got = TRY(fs::readi(ip, false, reinterpret_cast<uint64_t>(&eh), 0, sizeof eh));
  if (got != sizeof eh || eh.magic != ELF_MAGIC || eh.elf[0] != 2 /* 64-bit */ ||
      eh.machine != ELF_MACHINE_RISCV || eh.type != ELF_TYPE_EXEC ||
      eh.phentsize != sizeof(ProgramHeader))
    return Errno::NoExec;
  uint64_t sz = 0;
  for (uint16_t i = 0; i < eh.phnum; i++) {
    ProgramHeader ph;
    got = TRY(fs::readi(ip, false, reinterpret_cast<uint64_t>(&ph),
                        eh.phoff + i * sizeof ph, sizeof ph));
    if (got != sizeof ph) return Errno::NoExec;
    if (ph.type != PT_LOAD || ph.memsz == 0) continue;
    uint64_t end = ph.vaddr + ph.memsz;
    if (ph.memsz < ph.filesz || end < ph.vaddr || end > USER_HEAP_LIMIT || ph.vaddr < sz)
      return Errno::NoExec;
    // Refuse up front rather than drain every free page and then give up.
    // The old image is still held while the new one is built: both count.
    uint64_t more = mem::process_pages(end) - mem::process_pages(sz);
    TRY(mem::admit_growth(more, mem::process_pages(end)));
    sz = TRY(map_segment(pt, sz, ph.vaddr, end, pte_perm(ph.flags)));
    mapped = sz;
    TRY(load_segment(pt, ip, ph.vaddr, ph.off, ph.filesz));
  }
  if (sz == 0) return Errno::NoExec;
  entry = eh.entry;
  return page_round_up(sz);
}

// Pushes argv strings and the argv array on the new stack; returns sp.
ErrorOr<uint64_t> push_arguments(PageTable pt, char* const argv[], uint64_t& argc) {
  uint64_t sp = USER_STACK_TOP;
  uint64_t ustack[MAXARG + 1];
  for (argc = 0; argv[argc]; argc++) {
    if (argc >= MAXARG) return Errno::TooBig;
    uint64_t len = strlen(argv[argc]) + 1;
    if (len > sp - USER_STACK_BOTTOM) return Errno::TooBig;
    sp = (sp - len) & ~15ull;
    if (sp < USER_STACK_BOTTOM) return Errno::TooBig;
    TRY(copyout(pt, sp, argv[argc], len));
    ustack[argc] = sp;
  }
  ustack[argc] = 0;
  uint64_t bytes = (argc + 1) * sizeof(uint64_t);
  sp = (sp - bytes) & ~15ull;
  if (sp < USER_STACK_BOTTOM) return Errno::TooBig;
  TRY(copyout(pt, sp, ustack, bytes));
  return sp;
}

}  // namespace

ErrorOr<uint64_t> exec(const char* path, char* const argv[]) {
  Process* p = current_process();
  PageTable pt = proc_pagetable(p);
  if (!pt) return Errno::NoMem;
  uint64_t sz = 0, entry = 0;

  ErrorOr<uint64_t> loaded = Errno::NoExec;
  {
    fs::Transaction tx;
    auto ip_or = fs::namei(path);
    if (ip_or.is_error()) {
      proc_free_pagetable(pt, 0);
      return ip_or.error();
    }
    fs::Inode* ip = ip_or.value();
    fs::ilock(ip);
    if (fs::inode_type(ip) == KAI_T_FILE) loaded = load_program(pt, ip, entry, sz);
    else loaded = fs::inode_type(ip) == KAI_T_DIR ? Errno::IsDir : Errno::Perm;
    fs::iunlockput(ip);
  }
  if (loaded.is_error()) {
    proc_free_pagetable(pt, sz);
    return loaded.error();
  }
  sz = loaded.value();

  uint64_t argc = 0;
  auto stack = uvm_alloc(pt, USER_STACK_BOTTOM, USER_STACK_TOP, riscv::PTE_R | riscv::PTE_W);
  ErrorOr<uint64_t> sp = stack.is_error() ? ErrorOr<uint64_t>(stack.error())
                                          : push_arguments(pt, argv, argc);
  if (sp.is_error()) {
    proc_free_pagetable(pt, sz);
    return sp.error();
  }

  // Commit: nothing can fail from here on.
  const char* last = path;
  for (const char* s = path; *s; s++)
    if (*s == '/') last = s + 1;
  safestrcpy(p->name, last, sizeof p->name);
  PageTable old = p->pagetable;
  uint64_t old_sz = p->sz;
  if (old) vm_release_all(p, old);   // mappings do not survive exec
  p->pagetable = pt;
  p->sz = p->heap_start = sz;
  memset(p->trapframe->x, 0, sizeof p->trapframe->x);
  memset(p->trapframe->f, 0, sizeof p->trapframe->f);
  p->trapframe->fcsr = 0;
  p->trapframe->epc = entry;
  p->trapframe->x[REG_SP] = sp.value();
  p->trapframe->x[REG_A1] = sp.value();
  if (old) proc_free_pagetable(old, old_sz);
  return argc;   // becomes a0
}
