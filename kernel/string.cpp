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
    for (size_t i = 0; i < n / 8; i++) w[i] = v;
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
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) dw[i] = sw[i];
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
