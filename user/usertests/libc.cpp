// usertests: the small libc (formatting, strings, qsort, numbers).
#include "harness.h"

using namespace ut;

namespace {

// ---------------------------------------------------------------- libc

bool expect_fmt(const char* want, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
bool expect_fmt(const char* want, const char* fmt, ...) {
  char buf[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  EXPECT(strcmp(buf, want) == 0 && n == static_cast<int>(strlen(want)),
         "format \"%s\" gave \"%s\", expected \"%s\"", fmt, buf, want);
  return true;
}

int cmp_long(const void* a, const void* b) {
  long x = *static_cast<const long*>(a), y = *static_cast<const long*>(b);
  return x < y ? -1 : x > y;
}

bool t_libc() {
  // printf: integers, widths, floats (the FPU must work in user mode).
  if (!expect_fmt("-42|  -42|-0042|-42  |", "%d|%5d|%05d|%-5d|", -42, -42, -42, -42)) return false;
  if (!expect_fmt("ff FF 0x1f 777", "%x %X %p %o", 255, 255, reinterpret_cast<void*>(0x1f), 0777)) return false;
  if (!expect_fmt("18446744073709551615 -9223372036854775807", "%lu %lld", ~0UL, -9223372036854775807LL)) return false;
  if (!expect_fmt("3.141593 3.14  2.7 -0.50 100", "%f %.2f %4.1f %.2f %.0f", 3.14159265, 3.14159, 2.71828, -0.5, 99.6)) return false;
  if (!expect_fmt("1.500000e+03 nan", "%e %f", 1500.0, __builtin_nan(""))) return false;
  if (!expect_fmt("[hi   ][   hi][he]", "[%-5s][%5s][%.2s]", "hi", "hi", "hello")) return false;
  char small[4];
  EXPECT(snprintf(small, sizeof small, "%s", "abcdef") == 6 && strcmp(small, "abc") == 0, "snprintf truncation");
  // Number parsing.
  EXPECT(strtol("  -123x", nullptr, 10) == -123 && strtol("0x1F", nullptr, 0) == 31 &&
         strtol("017", nullptr, 0) == 15 && atoi("77") == 77, "strtol");
  EXPECT(strtoul("18446744073709551615", nullptr, 10) == ~0UL, "strtoul max");
  // memcpy/memmove/memset over every alignment pair.
  static char a[600], b[600];
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d)
      for (int len : {0, 1, 7, 8, 31, 32, 33, 100, 513}) {
        for (int i = 0; i < 600; ++i) { a[i] = static_cast<char>(i * 7 + 1); b[i] = 0; }
        memcpy(b + d, a + s, len);
        EXPECT(memcmp(b + d, a + s, len) == 0 && b[d + len] == 0 && (d == 0 || b[d - 1] == 0),
               "memcpy(dst+%d, src+%d, %d) wrong", d, s, len);
        memset(b + d, 'z', len);
        for (int i = 0; i < len; ++i) EXPECT(b[d + i] == 'z', "memset(+%d, %d)", d, len);
        EXPECT(b[d + len] == 0, "memset wrote past the end");
        for (int i = 0; i < 600; ++i) a[i] = static_cast<char>(i);
        memmove(a + d, a + s, len);
        for (int i = 0; i < len; ++i)
          EXPECT(a[d + i] == static_cast<char>(s + i), "memmove(+%d, +%d, %d) wrong", d, s, len);
      }
  EXPECT(strcmp("abc", "abd") < 0 && strncmp("abc", "abd", 2) == 0 && strcmp("b", "a") > 0, "strcmp");
  EXPECT(strstr("hello world", "o w") && !strstr("abc", "abd") && strrchr("a/b/c", '/')[1] == 'c', "strstr/strrchr");
  // qsort, including many equal keys.
  static long v[5000];
  uint64_t rng = kai_rng_seed(3);
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 5000; ++i) v[i] = k ? i % 4 : static_cast<long>(kai_rng_next(&rng) % 100000);
    qsort(v, 5000, sizeof v[0], cmp_long);
    for (int i = 1; i < 5000; ++i) EXPECT(v[i - 1] <= v[i], "qsort: not sorted at %d", i);
  }
  EXPECT(strcmp(strerror(-KAI_ENOENT), "No such file or directory") == 0, "strerror");
  return true;
}

const Test kTests[] = {
    {"libc", t_libc},
};
}  // namespace

const TestGroup ut::libc_tests = UT_GROUP(kTests);
