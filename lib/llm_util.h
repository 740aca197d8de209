// Small freestanding helpers for the inference runtime: little-endian loads
// from byte buffers (bundle files may place float arrays at any byte offset,
// so they are never read through a misaligned float*), zero/copy loops, and a
// bounded text builder used for error messages and the runner's output.
// No libc: this header is compiled into the kernel, user programs and host.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace llm {

inline uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline float load_f32(const uint8_t* p) { return __builtin_bit_cast(float, load_u32(p)); }
inline bool is_finite(float f) {
  return (__builtin_bit_cast(uint32_t, f) & 0x7f800000u) != 0x7f800000u;
}

inline void zero_floats(float* p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = 0.0f;
}
inline void copy_floats(float* dst, const float* src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = src[i];
}
inline bool str_eq(const char* a, const char* b) {
  while (*a && *a == *b) { a++; b++; }
  return *a == *b;
}
inline size_t str_len(const char* s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

// Appends text and numbers into a fixed buffer, always NUL-terminated,
// silently truncating when full (a message is never worth a crash).
class TextBuf {
 public:
  constexpr TextBuf(char* buf, size_t cap) : buf_(buf), cap_(cap) {
    if (cap_) buf_[0] = 0;
  }
  TextBuf& str(const char* s) {
    while (*s) put(*s++);
    return *this;
  }
  TextBuf& chr(char c) { put(c); return *this; }
  TextBuf& u64(uint64_t v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = char('0' + v % 10); v /= 10; } while (v);
    while (n) put(tmp[--n]);
    return *this;
  }
  TextBuf& i64(int64_t v) {
    if (v < 0) { put('-'); return u64(uint64_t(0) - uint64_t(v)); }
    return u64(uint64_t(v));
  }
  // Plain decimal with up to 6 significant decimals; enough for messages.
  TextBuf& f32(float f) {
    if (f != f) return str("nan");
    if (f < 0) { put('-'); f = -f; }
    if (!is_finite(f)) return str("inf");
    if (f >= 1e15f) return str(">1e15");
    uint64_t ip = uint64_t(f);
    double frac = double(f) - double(ip);
    if (f != 0 && f < 1e-4f) {  // small values: scientific, e.g. 1e-06
      int e = 0;
      double m = f;
      while (m < 1.0) { m *= 10; e++; }
      uint64_t mi = uint64_t(m * 1000 + 0.5);
      u64(mi / 1000);
      if (mi % 1000) { put('.'); put(char('0' + mi / 100 % 10)); put(char('0' + mi / 10 % 10)); put(char('0' + mi % 10)); }
      str("e-");
      if (e < 10) put('0');
      return u64(uint64_t(e));
    }
    u64(ip);
    uint64_t fd = uint64_t(frac * 1000000 + 0.5);
    if (fd >= 1000000) fd = 999999;
    if (fd) {
      put('.');
      char d[6];
      for (int i = 5; i >= 0; i--) { d[i] = char('0' + fd % 10); fd /= 10; }
      int last = 5;
      while (last > 0 && d[last] == '0') last--;
      for (int i = 0; i <= last; i++) put(d[i]);
    }
    return *this;
  }
  const char* c_str() const { return buf_; }
  size_t size() const { return len_; }
  void clear() { len_ = 0; if (cap_) buf_[0] = 0; }

 private:
  void put(char c) {
    if (len_ + 1 < cap_) { buf_[len_++] = c; buf_[len_] = 0; }
  }
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
};

}  // namespace llm
