// Memory and string functions. memcpy and memset move 8-byte words (64 bytes
// per loop iteration) because big copies (file reads, model buffers) spend
// most of their time here; everything else is plain byte code.
#include "kai.h"

// GCC would otherwise recognise the byte loops below as memset/memcpy and
// turn them into calls to themselves.
#pragma GCC optimize("no-tree-loop-distribute-patterns")

namespace {
using u8 = unsigned char;
typedef uint64_t __attribute__((may_alias)) word;
constexpr size_t W = sizeof(word);

// always_inline: the optimize pragma above keeps GCC from inlining it otherwise,
// and a call per byte in the alignment loops costs a return each under QEMU.
[[gnu::always_inline]] inline bool aligned(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & (W - 1)) == 0;
}
}  // namespace

extern "C" {

void* memset(void* dst, int c, size_t n) {
  u8* d = static_cast<u8*>(dst);
  if (n >= 32) {
    while (!aligned(d)) { *d++ = static_cast<u8>(c); --n; }
    word v = static_cast<u8>(c);
    v |= v << 8; v |= v << 16; v |= v << 32;
    word* dw = reinterpret_cast<word*>(d);
    for (; n >= 8 * W; n -= 8 * W, dw += 8) {
      dw[0] = v; dw[1] = v; dw[2] = v; dw[3] = v;
      dw[4] = v; dw[5] = v; dw[6] = v; dw[7] = v;
    }
    for (; n >= W; n -= W) *dw++ = v;
    d = reinterpret_cast<u8*>(dw);
  }
  while (n--) *d++ = static_cast<u8>(c);
  return dst;
}

void* memcpy(void* __restrict dst, const void* __restrict src, size_t n) {
  u8* d = static_cast<u8*>(dst);
  const u8* s = static_cast<const u8*>(src);
  if (n >= 32) {
    while (!aligned(d)) { *d++ = *s++; --n; }
    word* dw = reinterpret_cast<word*>(d);
    if (aligned(s)) {
      const word* sw = reinterpret_cast<const word*>(s);
      for (; n >= 8 * W; n -= 8 * W, dw += 8, sw += 8) {
        word a = sw[0], b = sw[1], c = sw[2], e = sw[3];
        word f = sw[4], g = sw[5], h = sw[6], i = sw[7];
        dw[0] = a; dw[1] = b; dw[2] = c; dw[3] = e;
        dw[4] = f; dw[5] = g; dw[6] = h; dw[7] = i;
      }
      for (; n >= W; n -= W) *dw++ = *sw++;
      s = reinterpret_cast<const u8*>(sw);
    } else {
      // Source and destination disagree modulo 8: read aligned source words
      // and stitch each destination word from two of them. An aligned word
      // that holds a byte we need never crosses a page, so the extra bytes
      // read are always mapped.
      unsigned shift = (reinterpret_cast<uintptr_t>(s) & (W - 1)) * 8;
      const word* sw = reinterpret_cast<const word*>(reinterpret_cast<uintptr_t>(s) & ~(W - 1));
      const unsigned back = 64 - shift;
      word cur = *sw++;
      size_t words = n / W;
      s += words * W;
      n -= words * W;
      for (; words >= 4; words -= 4, sw += 4, dw += 4) {
        word w1 = sw[0], w2 = sw[1], w3 = sw[2], w4 = sw[3];
        dw[0] = (cur >> shift) | (w1 << back);
        dw[1] = (w1 >> shift) | (w2 << back);
        dw[2] = (w2 >> shift) | (w3 << back);
        dw[3] = (w3 >> shift) | (w4 << back);
        cur = w4;
      }
      for (; words; --words) {
        word next = *sw++;
        *dw++ = (cur >> shift) | (next << back);
        cur = next;
      }
    }
    d = reinterpret_cast<u8*>(dw);
  }
  while (n--) *d++ = *s++;
  return dst;
}

void* memmove(void* dst, const void* src, size_t n) {
  u8* d = static_cast<u8*>(dst);
  const u8* s = static_cast<const u8*>(src);
  if (d == s || n == 0) return dst;
  if (d + n <= s || s + n <= d) return memcpy(dst, src, n);
  bool words = ((reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s)) & (W - 1)) == 0;
  if (d < s) {  // copy forwards: every read happens before a write reaches it
    if (words) {
      while (n && !aligned(d)) { *d++ = *s++; --n; }
      for (; n >= W; n -= W, d += W, s += W) *reinterpret_cast<word*>(d) = *reinterpret_cast<const word*>(s);
    }
    while (n--) *d++ = *s++;
  } else {      // copy backwards
    d += n; s += n;
    if (words) {
      while (n && !aligned(d)) { *--d = *--s; --n; }
      for (; n >= W; n -= W) { d -= W; s -= W; *reinterpret_cast<word*>(d) = *reinterpret_cast<const word*>(s); }
    }
    while (n--) *--d = *--s;
  }
  return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
  const u8* x = static_cast<const u8*>(a);
  const u8* y = static_cast<const u8*>(b);
  if (aligned(x) && aligned(y))
    for (; n >= W && *reinterpret_cast<const word*>(x) == *reinterpret_cast<const word*>(y); n -= W) {
      x += W; y += W;
    }
  for (; n; --n, ++x, ++y)
    if (*x != *y) return *x < *y ? -1 : 1;
  return 0;
}

void* memchr(const void* s, int c, size_t n) {
  const u8* p = static_cast<const u8*>(s);
  for (; n; --n, ++p)
    if (*p == static_cast<u8>(c)) return const_cast<u8*>(p);
  return nullptr;
}

size_t strlen(const char* s) {
  const char* p = s;
  while (*p) ++p;
  return static_cast<size_t>(p - s);
}

size_t strnlen(const char* s, size_t max) {
  size_t n = 0;
  while (n < max && s[n]) ++n;
  return n;
}

int strcmp(const char* a, const char* b) {
  while (*a && *a == *b) { ++a; ++b; }
  return static_cast<int>(static_cast<u8>(*a)) - static_cast<int>(static_cast<u8>(*b));
}

int strncmp(const char* a, const char* b, size_t n) {
  for (; n; --n, ++a, ++b) {
    if (*a != *b) return static_cast<int>(static_cast<u8>(*a)) - static_cast<int>(static_cast<u8>(*b));
    if (*a == 0) return 0;
  }
  return 0;
}

char* strcpy(char* dst, const char* src) {
  char* d = dst;
  while ((*d++ = *src++)) {}
  return dst;
}

char* strncpy(char* dst, const char* src, size_t n) {
  size_t i = 0;
  for (; i < n && src[i]; ++i) dst[i] = src[i];
  for (; i < n; ++i) dst[i] = 0;
  return dst;
}

size_t strlcpy(char* dst, const char* src, size_t size) {
  size_t len = strlen(src);
  if (size) {
    size_t k = len < size - 1 ? len : size - 1;
    memcpy(dst, src, k);
    dst[k] = 0;
  }
  return len;
}

char* strcat(char* dst, const char* src) {
  strcpy(dst + strlen(dst), src);
  return dst;
}

char* strchr(const char* s, int c) {
  for (;; ++s) {
    if (*s == static_cast<char>(c)) return const_cast<char*>(s);
    if (*s == 0) return nullptr;
  }
}

char* strrchr(const char* s, int c) {
  const char* last = nullptr;
  for (;; ++s) {
    if (*s == static_cast<char>(c)) last = s;
    if (*s == 0) return const_cast<char*>(last);
  }
}

char* strstr(const char* h, const char* needle) {
  size_t n = strlen(needle);
  if (n == 0) return const_cast<char*>(h);
  for (; *h; ++h)
    if (*h == *needle && strncmp(h, needle, n) == 0) return const_cast<char*>(h);
  return nullptr;
}

char* strdup(const char* s) {
  size_t n = strlen(s) + 1;
  char* p = static_cast<char*>(malloc(n));
  if (p) memcpy(p, s, n);
  return p;
}

}  // extern "C"
