// A bump allocator over caller memory, for the grammar compiler.
//
// The grammar code runs in the kernel as well as in user programs and on
// the host, so it owns no heap: the caller hands it one block of bytes and
// every table is carved from it, in order, never freed one by one. The
// block's size is the memory limit; running out is an ordinary error
// ("regex: too large"), not a crash. Resetting `used` frees everything.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace llm {

struct Arena {
  uint8_t* base = nullptr;
  size_t size = 0;
  size_t used = 0;

  Arena() = default;
  Arena(void* memory, size_t bytes) : base(static_cast<uint8_t*>(memory)), size(bytes) {}

  // n zeroed objects of T (trivial types only), aligned for T, or nullptr
  // when the block is full.
  template <typename T>
  T* take(size_t n) {
    size_t align = alignof(T) < 8 ? alignof(T) : 8;
    size_t at = (used + align - 1) & ~(align - 1);
    if (n > (size - at) / sizeof(T) || at > size) return nullptr;
    used = at + n * sizeof(T);
    uint8_t* p = base + at;
    for (size_t i = 0; i < n * sizeof(T); i++) p[i] = 0;
    return reinterpret_cast<T*>(p);
  }
  size_t left() const { return size - used; }
};

}  // namespace llm
