// The compiler may turn byte loops into calls to memset/memcpy; the optimize
// attribute stops it from doing so *inside* these functions (which would recurse).
#include "string.h"
#include <stdint.h>

#define NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))

extern "C" {

NO_LIBCALL void* memset(void* dst, int c, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  if ((reinterpret_cast<uintptr_t>(d) & 7) == 0 && (n & 7) == 0) {
    uint64_t v = static_cast<unsigned char>(c);
    v |= v << 8; v |= v << 16; v |= v << 32;
    auto* w = reinterpret_cast<uint64_t*>(d);
    size_t words = n / 8, i = 0;
    for (; i + 8 <= words; i += 8) {   // unrolled: loop overhead dominates under QEMU
      w[i] = v; w[i + 1] = v; w[i + 2] = v; w[i + 3] = v;
      w[i + 4] = v; w[i + 5] = v; w[i + 6] = v; w[i + 7] = v;
    }
    for (; i < words; i++) w[i] = v;
    return dst;
  }
  for (size_t i = 0; i < n; i++) d[i] = static_cast<unsigned char>(c);
  return dst;
}

NO_LIBCALL void* memcpy(void* dst, const void* src, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  if (((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 7) == 0) {
    auto* dw = reinterpret_cast<uint64_t*>(d);
    auto* sw = reinterpret_cast<const uint64_t*>(s);
    size_t words = n / 8, i = 0;
    for (; i + 8 <= words; i += 8) {   // unrolled: loop overhead dominates under QEMU
      uint64_t a = sw[i], b = sw[i + 1], c = sw[i + 2], e = sw[i + 3];
      uint64_t f = sw[i + 4], g = sw[i + 5], h = sw[i + 6], k = sw[i + 7];
      dw[i] = a; dw[i + 1] = b; dw[i + 2] = c; dw[i + 3] = e;
      dw[i + 4] = f; dw[i + 5] = g; dw[i + 6] = h; dw[i + 7] = k;
    }
    for (; i < words; i++) dw[i] = sw[i];
    for (size_t i = words * 8; i < n; i++) d[i] = s[i];
    return dst;
  }
  for (size_t i = 0; i < n; i++) d[i] = s[i];
  return dst;
}

NO_LIBCALL void* memmove(void* dst, const void* src, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  if (d == s || n == 0) return dst;
  if (d < s || d >= s + n) return memcpy(dst, src, n);
  while (n > 0) {
    n--;
    d[n] = s[n];
  }
  return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
  auto* x = static_cast<const unsigned char*>(a);
  auto* y = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i]) return x[i] - y[i];
  return 0;
}

NO_LIBCALL size_t strlen(const char* s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

int strcmp(const char* a, const char* b) {
  while (*a && *a == *b) a++, b++;
  return static_cast<unsigned char>(*a) - static_cast<unsigned char>(*b);
}

int strncmp(const char* a, const char* b, size_t n) {
  for (; n > 0; n--, a++, b++) {
    if (*a != *b) return static_cast<unsigned char>(*a) - static_cast<unsigned char>(*b);
    if (*a == 0) return 0;
  }
  return 0;
}

NO_LIBCALL char* strncpy(char* dst, const char* src, size_t n) {
  size_t i = 0;
  for (; i < n && src[i]; i++) dst[i] = src[i];
  for (; i < n; i++) dst[i] = 0;
  return dst;
}

}  // extern "C"

char* safestrcpy(char* dst, const char* src, size_t n) {
  if (n == 0) return dst;
  size_t i = 0;
  for (; i + 1 < n && src[i]; i++) dst[i] = src[i];
  dst[i] = 0;
  return dst;
}
