// printf and friends. One formatter writes into a Sink, which is either a
// caller's buffer (snprintf) or a small stack buffer flushed to a file
// descriptor with write() (printf): a short printf is one system call, so
// lines from different processes do not interleave character by character.
#include "kai.h"

namespace {

struct Sink {
  char* buf;        // destination (snprintf) or staging buffer (fd output)
  size_t cap;       // bytes available in buf
  size_t len = 0;   // bytes currently in buf (fd) / stored so far (snprintf)
  size_t total = 0; // characters produced
  int fd = -1;      // >= 0: flush to this descriptor
  bool failed = false;

  void flush() {
    size_t off = 0;
    while (off < len && !failed) {
      long r = write(fd, buf + off, len - off);
      if (r <= 0) failed = true; else off += static_cast<size_t>(r);
    }
    len = 0;
  }
  void put(char c) {
    ++total;
    if (fd >= 0) {
      if (len == cap) flush();
      buf[len++] = c;
    } else if (len + 1 < cap) {
      buf[len++] = c;
    }
  }
  void put(const char* s, size_t n) { for (size_t i = 0; i < n; ++i) put(s[i]); }
  void pad(char c, int n) { for (; n > 0; --n) put(c); }
};

struct Spec {
  bool left = false, zero = false, plus = false, space = false, alt = false;
  int width = 0;
  int prec = -1;   // -1: not given
};

// Emits body (with an optional sign/prefix) padded to the field width.
void emit(Sink& out, const Spec& sp, const char* prefix, const char* body, size_t n,
          int min_digits) {
  size_t pre = strlen(prefix);
  int zeros = min_digits > static_cast<int>(n) ? min_digits - static_cast<int>(n) : 0;
  int padding = sp.width - static_cast<int>(pre + n) - zeros;
  if (!sp.left && !sp.zero) out.pad(' ', padding);
  out.put(prefix, pre);
  if (!sp.left && sp.zero) out.pad('0', padding);
  out.pad('0', zeros);
  out.put(body, n);
  if (sp.left) out.pad(' ', padding);
}

void format_int(Sink& out, Spec sp, unsigned long long v, bool negative, int base, bool upper) {
  char digits[32];
  const char* set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  int n = 0;
  while (v) { digits[n++] = set[v % base]; v /= base; }
  char body[32];
  for (int i = 0; i < n; ++i) body[i] = digits[n - 1 - i];
  int min_digits = sp.prec >= 0 ? sp.prec : 1;   // precision 0 and value 0: no digits
  if (sp.prec >= 0) sp.zero = false;
  const char* prefix = negative ? "-" : sp.plus ? "+" : sp.space ? " " : "";
  if (sp.alt && base == 16 && n > 0) prefix = upper ? "0X" : "0x";
  if (sp.alt && base == 8 && n >= min_digits) min_digits = n + 1;
  emit(out, sp, prefix, body, n, min_digits);
}

// Fixed-point (%f) or exponent (%e) output of a double. Digits come from
// exact integer arithmetic on a scaled, rounded value where it fits in 64
// bits (every value a benchmark prints); larger magnitudes lose only digits
// far below the first 17, as any double does.
void format_float(Sink& out, Spec sp, double x, char conv) {
  bool upper = conv == 'F' || conv == 'E';
  bool negative = x < 0 || (x == 0 && 1 / x < 0);
  if (negative) x = -x;
  const char* prefix = negative ? "-" : sp.plus ? "+" : sp.space ? " " : "";
  sp.prec = sp.prec < 0 ? 6 : sp.prec > 18 ? 18 : sp.prec;
  if (x != x || x > 1.7976931348623157e308) {
    sp.zero = false;
    const char* s = x != x ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
    emit(out, sp, prefix, s, 3, 0);
    return;
  }
  int exp10 = 0;
  if (conv == 'e' || conv == 'E') {
    if (x != 0) {
      while (x >= 10) { x /= 10; ++exp10; }
      while (x < 1) { x *= 10; --exp10; }
    }
  }
  double scale = 1;
  for (int i = 0; i < sp.prec; ++i) scale *= 10;
  char body[400];
  int n = 0;
  double scaled = x * scale + 0.5;
  unsigned long long whole, frac;
  if (scaled < 1.8e19) {
    unsigned long long all = static_cast<unsigned long long>(scaled);
    unsigned long long s = static_cast<unsigned long long>(scale);
    whole = all / s;
    frac = all % s;
    if ((conv == 'e' || conv == 'E') && whole >= 10) {  // rounding carried 9.99 -> 10.0
      ++exp10;
      all = static_cast<unsigned long long>((x / 10) * scale + 0.5);
      whole = all / s;
      frac = all % s;
    }
    char tmp[24];
    int k = 0;
    do { tmp[k++] = static_cast<char>('0' + whole % 10); whole /= 10; } while (whole);
    while (k) body[n++] = tmp[--k];
  } else {
    // Huge: beyond 18 digits a double holds no more information, so print
    // the leading digits and fill with zeros.
    int extra = 0;
    while (x >= 1e18) { x /= 10; ++extra; }
    unsigned long long lead = static_cast<unsigned long long>(x + 0.5);
    char tmp[24];
    int k = 0;
    do { tmp[k++] = static_cast<char>('0' + lead % 10); lead /= 10; } while (lead);
    while (k) body[n++] = tmp[--k];
    while (extra-- > 0) body[n++] = '0';
    frac = 0;
  }
  if (sp.prec > 0 || sp.alt) body[n++] = '.';
  char fd[20];
  for (int i = sp.prec - 1; i >= 0; --i) { fd[i] = static_cast<char>('0' + frac % 10); frac /= 10; }
  for (int i = 0; i < sp.prec; ++i) body[n++] = fd[i];
  if (conv == 'e' || conv == 'E') {
    body[n++] = upper ? 'E' : 'e';
    body[n++] = exp10 < 0 ? '-' : '+';
    int e = exp10 < 0 ? -exp10 : exp10;
    if (e >= 100) body[n++] = static_cast<char>('0' + e / 100);
    body[n++] = static_cast<char>('0' + e / 10 % 10);
    body[n++] = static_cast<char>('0' + e % 10);
  }
  emit(out, sp, prefix, body, static_cast<size_t>(n), 0);
}

void format(Sink& out, const char* fmt, va_list ap) {
  for (const char* p = fmt; *p; ++p) {
    if (*p != '%') { out.put(*p); continue; }
    Spec sp;
    for (;; ++p) {   // flags
      char c = p[1];
      if (c == '-') sp.left = true;
      else if (c == '0') sp.zero = true;
      else if (c == '+') sp.plus = true;
      else if (c == ' ') sp.space = true;
      else if (c == '#') sp.alt = true;
      else break;
    }
    ++p;
    if (*p == '*') {
      sp.width = va_arg(ap, int);
      if (sp.width < 0) { sp.left = true; sp.width = -sp.width; }
      ++p;
    } else {
      while (*p >= '0' && *p <= '9') sp.width = sp.width * 10 + (*p++ - '0');
    }
    if (*p == '.') {
      ++p;
      sp.prec = 0;
      if (*p == '*') { sp.prec = va_arg(ap, int); ++p; if (sp.prec < 0) sp.prec = -1; }
      else while (*p >= '0' && *p <= '9') sp.prec = sp.prec * 10 + (*p++ - '0');
    }
    if (sp.left) sp.zero = false;
    int lng = 0;   // 0 int, 1 long, 2 long long, -1 short, -2 char
    for (;; ++p) {
      if (*p == 'l') ++lng;
      else if (*p == 'h') --lng;
      else if (*p == 'z' || *p == 't' || *p == 'j') lng = 1;
      else if (*p == 'L') lng = 2;
      else break;
    }
    char conv = *p;
    switch (conv) {
      case 'd': case 'i': {
        long long v = lng >= 1 ? va_arg(ap, long long)   // long == long long on rv64
                               : static_cast<long long>(va_arg(ap, int));
        if (lng == -1) v = static_cast<short>(v);
        if (lng <= -2) v = static_cast<signed char>(v);
        unsigned long long mag = v < 0 ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
        format_int(out, sp, mag, v < 0, 10, false);
        break;
      }
      case 'u': case 'x': case 'X': case 'o': case 'b': {
        unsigned long long v = lng >= 1 ? va_arg(ap, unsigned long long)
                                        : static_cast<unsigned long long>(va_arg(ap, unsigned));
        if (lng == -1) v = static_cast<unsigned short>(v);
        if (lng <= -2) v = static_cast<unsigned char>(v);
        int base = conv == 'u' ? 10 : conv == 'o' ? 8 : conv == 'b' ? 2 : 16;
        format_int(out, sp, v, false, base, conv == 'X');
        break;
      }
      case 'p': {
        sp.alt = true;
        format_int(out, sp, reinterpret_cast<uintptr_t>(va_arg(ap, void*)), false, 16, false);
        break;
      }
      case 'c': {
        char c = static_cast<char>(va_arg(ap, int));
        sp.zero = false;
        emit(out, sp, "", &c, 1, 0);
        break;
      }
      case 's': {
        const char* s = va_arg(ap, const char*);
        if (s == nullptr) s = "(null)";
        size_t n = sp.prec >= 0 ? strnlen(s, static_cast<size_t>(sp.prec)) : strlen(s);
        sp.zero = false;
        emit(out, sp, "", s, n, 0);
        break;
      }
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
        // %g is printed as %f (no shortest-representation search).
        format_float(out, sp, va_arg(ap, double), conv == 'g' ? 'f' : conv == 'G' ? 'F' : conv);
        break;
      case '%':
        out.put('%');
        break;
      case 0:
        return;   // a lone '%' ends the format
      default:    // unknown conversion: print it as written
        out.put('%');
        out.put(conv);
        break;
    }
  }
}

}  // namespace

extern "C" {

int vsnprintf(char* buf, size_t size, const char* fmt, va_list ap) {
  Sink out{buf, size};
  format(out, fmt, ap);
  if (size) buf[out.len] = 0;
  return static_cast<int>(out.total);
}

int snprintf(char* buf, size_t size, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

int vfprintf(int fd, const char* fmt, va_list ap) {
  char stage[512];
  Sink out{stage, sizeof stage};
  out.fd = fd;
  format(out, fmt, ap);
  out.flush();
  return out.failed ? -KAI_EIO : static_cast<int>(out.total);
}

int fprintf(int fd, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(fd, fmt, ap);
  va_end(ap);
  return n;
}

int vprintf(const char* fmt, va_list ap) { return vfprintf(1, fmt, ap); }

int printf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(1, fmt, ap);
  va_end(ap);
  return n;
}

int fputs(const char* s, int fd) {
  size_t n = strlen(s);
  return write(fd, s, n) == static_cast<long>(n) ? 0 : -KAI_EIO;
}

int puts(const char* s) {
  // One write for the line and its newline, like printf.
  return printf("%s\n", s) < 0 ? -KAI_EIO : 0;
}

int putchar(int c) {
  char ch = static_cast<char>(c);
  return write(1, &ch, 1) == 1 ? static_cast<unsigned char>(ch) : -KAI_EIO;
}

long getline(int fd, char* buf, long max) {
  if (max <= 0) return -KAI_EINVAL;
  long n = 0;
  while (n + 1 < max) {
    char c;
    long r = read(fd, &c, 1);
    if (r < 0) { buf[n] = 0; return n ? n : r; }
    if (r == 0) break;
    buf[n++] = c;
    if (c == '\n') break;
  }
  buf[n] = 0;
  return n;
}

}  // extern "C"
