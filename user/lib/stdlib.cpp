// Number parsing, sorting and random numbers.
#include "kai.h"

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// Parses an optionally signed integer; saturates at limit (magnitude) on
// overflow. Returns the magnitude and sets *negative.
unsigned long long parse(const char* s, char** end, int base, unsigned long long limit,
                         bool* negative) {
  const char* p = s;
  while (is_space(*p)) ++p;
  *negative = false;
  if (*p == '+' || *p == '-') *negative = *p++ == '-';
  if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') &&
      digit_value(p[2]) < 16) {
    p += 2;
    base = 16;
  } else if (base == 0) {
    base = p[0] == '0' ? 8 : 10;
  }
  unsigned long long v = 0;
  bool any = false, overflow = false;
  for (; digit_value(*p) < base; ++p) {
    any = true;
    unsigned d = static_cast<unsigned>(digit_value(*p));
    if (v > (limit - d) / static_cast<unsigned>(base)) overflow = true;
    else v = v * static_cast<unsigned>(base) + d;
  }
  if (end) *end = const_cast<char*>(any ? p : s);
  return overflow ? limit : v;
}

}  // namespace

extern "C" {

long long strtoll(const char* s, char** end, int base) {
  bool neg;
  // The negative range is one larger than the positive one.
  unsigned long long m = parse(s, end, base, 0x8000000000000000ULL, &neg);
  if (!neg && m > 0x7fffffffffffffffULL) m = 0x7fffffffffffffffULL;
  return neg ? static_cast<long long>(0ULL - m) : static_cast<long long>(m);
}

unsigned long long strtoull(const char* s, char** end, int base) {
  bool neg;
  unsigned long long m = parse(s, end, base, ~0ULL, &neg);
  return neg ? 0ULL - m : m;
}

long strtol(const char* s, char** end, int base) { return strtoll(s, end, base); }
unsigned long strtoul(const char* s, char** end, int base) { return strtoull(s, end, base); }
int atoi(const char* s) { return static_cast<int>(strtol(s, nullptr, 10)); }
long atol(const char* s) { return strtol(s, nullptr, 10); }
int abs(int x) { return x < 0 ? -x : x; }
long labs(long x) { return x < 0 ? -x : x; }

// ---------------------------------------------------------------- qsort
// Introsort: quicksort with median-of-three pivots, insertion sort for short
// ranges, heapsort when the recursion gets too deep (so the worst case stays
// O(n log n)).

}  // extern "C"

namespace {

struct Sorter {
  char* base;
  size_t size;
  int (*cmp)(const void*, const void*);

  char* at(size_t i) const { return base + i * size; }
  void swap(size_t i, size_t j) const {
    if (i == j) return;
    char* a = at(i);
    char* b = at(j);
    size_t n = size;
    if (((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | n) & 7) == 0) {
      for (; n; n -= 8, a += 8, b += 8) {
        uint64_t t = *reinterpret_cast<uint64_t*>(a);
        *reinterpret_cast<uint64_t*>(a) = *reinterpret_cast<uint64_t*>(b);
        *reinterpret_cast<uint64_t*>(b) = t;
      }
      return;
    }
    for (; n; --n, ++a, ++b) { char t = *a; *a = *b; *b = t; }
  }
  bool less(size_t i, size_t j) const { return cmp(at(i), at(j)) < 0; }

  void insertion(size_t lo, size_t hi) const {   // [lo, hi)
    for (size_t i = lo + 1; i < hi; ++i)
      for (size_t j = i; j > lo && less(j, j - 1); --j) swap(j, j - 1);
  }

  void sift_down(size_t lo, size_t root, size_t n) const {
    for (;;) {
      size_t child = 2 * root + 1;
      if (child >= n) return;
      if (child + 1 < n && less(lo + child, lo + child + 1)) ++child;
      if (!less(lo + root, lo + child)) return;
      swap(lo + root, lo + child);
      root = child;
    }
  }
  void heapsort(size_t lo, size_t hi) const {
    size_t n = hi - lo;
    for (size_t i = n / 2; i-- > 0;) sift_down(lo, i, n);
    for (size_t end = n; end-- > 1;) {
      swap(lo, lo + end);
      sift_down(lo, 0, end);
    }
  }

  void sort(size_t lo, size_t hi, int depth) const {
    while (hi - lo > 16) {
      if (depth-- == 0) { heapsort(lo, hi); return; }
      size_t mid = lo + (hi - lo) / 2, last = hi - 1;
      // Order lo, mid, last; the median ends up at mid, then parks at lo.
      if (less(mid, lo)) swap(mid, lo);
      if (less(last, mid)) swap(last, mid);
      if (less(mid, lo)) swap(mid, lo);
      swap(lo, mid);
      // Hoare partition around the pivot at lo.
      size_t i = lo, j = hi;
      for (;;) {
        do ++i; while (i < hi && less(i, lo));
        do --j; while (less(lo, j));
        if (i >= j) break;
        swap(i, j);
      }
      swap(lo, j);
      // Recurse into the smaller side, loop on the larger one.
      if (j - lo < hi - j - 1) { sort(lo, j, depth); lo = j + 1; }
      else { sort(j + 1, hi, depth); hi = j; }
    }
    insertion(lo, hi);
  }
};

uint64_t g_rand_state = 0x9e3779b97f4a7c15ULL;

}  // namespace

extern "C" {

void qsort(void* base, size_t n, size_t size, int (*cmp)(const void*, const void*)) {
  if (n < 2 || size == 0) return;
  int depth = 0;
  for (size_t k = n; k; k >>= 1) depth += 2;
  Sorter{static_cast<char*>(base), size, cmp}.sort(0, n, depth);
}

uint64_t kai_rng_seed(uint64_t seed) {
  // Mix the seed (splitmix64 step) so that small seeds give unrelated streams.
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z ? z : 0x9e3779b97f4a7c15ULL;
}

uint64_t kai_rng_next(uint64_t* state) {
  uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dULL;
}

int rand() { return static_cast<int>(kai_rng_next(&g_rand_state) >> 33); }
void srand(unsigned seed) { g_rand_state = kai_rng_seed(seed); }

}  // extern "C"

uint32_t number_option(const char* prog, const char* option, const char* value, uint32_t lo, uint32_t hi) {
  uint32_t v;
  if (parse_u32(value, hi, &v) < 0 || v < lo) {
    fprintf(2, "%s: %s: '%s' is not a number from %u to %u\n", prog, option, value, lo, hi);
    exit(2);
  }
  return v;
}

void no_arguments(const char* prog, int argc, char** argv) {
  if (argc > 1) {
    fprintf(2, "%s: unexpected argument '%s' (%s takes no arguments)\n", prog, argv[1], prog);
    exit(2);
  }
}

int parse_u32(const char* s, uint32_t max, uint32_t* out) {
  if (s == nullptr || *s == 0) return -KAI_EINVAL;
  uint64_t v = 0;
  for (const char* p = s; *p; p++) {
    if (*p < '0' || *p > '9') return -KAI_EINVAL;
    v = v * 10 + uint64_t(*p - '0');
    if (v > max) {
      // keep scanning: "12x" with a big prefix is still "not a number"
      for (const char* q = p; *q; q++)
        if (*q < '0' || *q > '9') return -KAI_EINVAL;
      return -KAI_ERANGE;
    }
  }
  *out = static_cast<uint32_t>(v);
  return 0;
}
