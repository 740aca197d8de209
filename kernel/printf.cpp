// kprintf/panic/ksnprintf on one small formatter that writes through a sink.
#include "printf.h"
#include <stdint.h>
#include "error.h"
#include "console.h"
#include "spinlock.h"
#include "riscv.h"
#include "cpu.h"
#include "sbi.h"

volatile bool g_panicked = false;

namespace {

Spinlock print_lock{"printf"};

struct Sink {
  void (*put)(Sink&, char);
  char* buf = nullptr;
  unsigned long size = 0;
  unsigned long len = 0;
};

void put_console(Sink&, char c) { console_putc_sync(c); }
void put_buffer(Sink& s, char c) {
  if (s.len + 1 < s.size) s.buf[s.len] = c;
  s.len++;
}

void emit_number(Sink& s, uint64_t v, unsigned base, bool negative, int width, bool zero_pad,
                 bool left) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  int total = n + (negative ? 1 : 0);
  if (!left && !zero_pad)
    for (int i = total; i < width; i++) s.put(s, ' ');
  if (negative) s.put(s, '-');
  if (!left && zero_pad)
    for (int i = total; i < width; i++) s.put(s, '0');
  while (n) s.put(s, tmp[--n]);
  if (left)
    for (int i = total; i < width; i++) s.put(s, ' ');
}

void format(Sink& s, const char* fmt, va_list ap) {
  for (; *fmt; fmt++) {
    if (*fmt != '%') {
      s.put(s, *fmt);
      continue;
    }
    fmt++;
    bool zero_pad = false, left = false;
    for (;; fmt++) {
      if (*fmt == '0') zero_pad = true;
      else if (*fmt == '-') left = true;
      else break;
    }
    int width = 0;
    while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
    int longs = 0;
    while (*fmt == 'l') longs++, fmt++;
    if (*fmt == 'z') longs = 1, fmt++;
    switch (*fmt) {
      case 'd':
      case 'i': {
        int64_t v = longs ? va_arg(ap, long) : va_arg(ap, int);
        bool neg = v < 0;
        emit_number(s, neg ? -static_cast<uint64_t>(v) : static_cast<uint64_t>(v), 10, neg,
                    width, zero_pad, left);
        break;
      }
      case 'u':
      case 'x': {
        uint64_t v = longs ? va_arg(ap, unsigned long) : va_arg(ap, unsigned int);
        emit_number(s, v, *fmt == 'u' ? 10 : 16, false, width, zero_pad, left);
        break;
      }
      case 'p': {
        s.put(s, '0');
        s.put(s, 'x');
        emit_number(s, reinterpret_cast<uint64_t>(va_arg(ap, void*)), 16, false, width, zero_pad,
                    left);
        break;
      }
      case 's': {
        const char* str = va_arg(ap, const char*);
        if (!str) str = "(null)";
        int n = 0;
        while (str[n]) n++;
        if (!left)
          for (int i = n; i < width; i++) s.put(s, ' ');
        for (int i = 0; i < n; i++) s.put(s, str[i]);
        if (left)
          for (int i = n; i < width; i++) s.put(s, ' ');
        break;
      }
      case 'c': s.put(s, static_cast<char>(va_arg(ap, int))); break;
      case '%': s.put(s, '%'); break;
      case 0: return;
      default:
        s.put(s, '%');
        s.put(s, *fmt);
    }
  }
}

}  // namespace

void kvprintf(const char* fmt, va_list ap) {
  bool locking = !g_panicked;
  if (locking) {
    print_lock.acquire();
    uart_sync_begin();
  }
  Sink s{put_console};
  format(s, fmt, ap);
  if (locking) {
    uart_sync_end();
    print_lock.release();
  }
}

void kprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kvprintf(fmt, ap);
  va_end(ap);
}

int ksnprintf(char* buf, unsigned long size, const char* fmt, ...) {
  Sink s{put_buffer, buf, size, 0};
  va_list ap;
  va_start(ap, fmt);
  format(s, fmt, ap);
  va_end(ap);
  if (size) buf[s.len < size ? s.len : size - 1] = 0;
  return static_cast<int>(s.len);
}

void panic(const char* fmt, ...) {
  riscv::intr_off();
  bool first = !g_panicked;
  g_panicked = true;   // other harts stop at their next trap (timer within 10 ms)
  if (first) {
    Sink s{put_console};
    kprintf("\npanic on hart %d: ", static_cast<int>(this_cpu_hartid()));
    va_list ap;
    va_start(ap, fmt);
    format(s, fmt, ap);
    va_end(ap);
    kprintf("\n  scause 0x%lx sepc 0x%lx stval 0x%lx\n", riscv::read_scause(), riscv::read_sepc(),
            riscv::read_stval());
    // Interrupt the other harts: their trap handlers see g_panicked and stop.
    for (int i = 0; i < ncpu; i++)
      if (i != cpu_index() && cpus[i].started) sbi::send_ipi(1, cpus[i].hartid);
  }
  for (;;) asm volatile("wfi");
}

// The error path of MUST (kernel/error.h): a call that was not supposed to
// fail did. Reported, not fatal.
void must_failed(const char* call, const char* why, int err, const char* file, int line) {
  kprintf("kernel: %s:%d: %s failed (error %d) although %s\n", file, line, call, err, why);
}
