// UserPtr<T>: an address in the calling process's memory, as a type.
//
// System-call arguments arrive as plain integers in a0..a5. An integer that
// names user memory must never be turned into a kernel pointer and
// dereferenced: the kernel would read or write whatever the process mapped
// there (or another process's page, or the kernel itself, for a hostile
// address). UserPtr keeps the address and offers no operator* and no
// operator->, so the only way to the memory is copy_from_user/copy_to_user,
// which check every page against the process's page table and fail with
// Errno::Fault. The compiler then catches the mistake a student would make.
//
// Typical use in a system call:
//   UserPtr<kai_stat> out = arg_ptr<kai_stat>(1);
//   TRY(copy_to_user(out, &st));
//
// Paths that serve both user and kernel buffers (readi, writei, the console)
// keep the (bool user, uint64_t addr) pair of either_copyin/either_copyout;
// UserPtr::addr() hands the raw address to them.
#pragma once
#include <stdint.h>
#include <type_traits>
#include "error.h"
#include "proc.h"
#include "syscall.h"

template <typename T>
class UserPtr {
 public:
  constexpr UserPtr() = default;
  constexpr explicit UserPtr(uint64_t addr) : addr_(addr) {}

  constexpr uint64_t addr() const { return addr_; }
  constexpr bool is_null() const { return addr_ == 0; }
  // The element i places further on (user memory holding an array of T).
  // Wrap-around is harmless: the page-table check rejects the result.
  constexpr UserPtr operator+(uint64_t i) const { return UserPtr(addr_ + i * sizeof(T)); }

 private:
  uint64_t addr_ = 0;
};

// The n-th system-call argument (a0..a5) as a pointer into the caller's memory.
template <typename T>
UserPtr<T> arg_ptr(int n) {
  return UserPtr<T>(arg_raw(n));
}

// The current process's page table, or Errno::Fault for a kernel thread
// (which has no user memory to copy from).
inline ErrorOr<PageTable> user_pagetable() {
  Process* p = current_process();
  if (!p || !p->pagetable) return Errno::Fault;
  return p->pagetable;
}

// Copies count objects of T from kernel memory at src to user memory at dst.
template <typename T>
ErrorOr<void> copy_to_user(UserPtr<T> dst, const T* src, uint64_t count = 1) {
  static_assert(std::is_trivially_copyable_v<T>, "only plain data crosses the user boundary");
  PageTable pt = TRY(user_pagetable());
  return copyout(pt, dst.addr(), src, count * sizeof(T));
}

// Copies count objects of T from user memory at src to kernel memory at dst.
template <typename T>
ErrorOr<void> copy_from_user(T* dst, UserPtr<T> src, uint64_t count = 1) {
  static_assert(std::is_trivially_copyable_v<T>, "only plain data crosses the user boundary");
  PageTable pt = TRY(user_pagetable());
  return copyin(pt, dst, src.addr(), count * sizeof(T));
}

// Copies a NUL-terminated user string of at most max bytes (NUL included)
// into dst. Returns its length; Errno::NameTooLong if no NUL within max.
inline ErrorOr<uint64_t> copy_string_from_user(char* dst, UserPtr<char> src, uint64_t max) {
  PageTable pt = TRY(user_pagetable());
  return copyinstr(pt, dst, src.addr(), max);
}
