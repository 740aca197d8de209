// Numbers, memory allocation, sorting, random numbers.
#pragma once
#include <stddef.h>
#include <stdint.h>

extern "C" {
int atoi(const char* s);
long atol(const char* s);
long strtol(const char* s, char** end, int base);
unsigned long strtoul(const char* s, char** end, int base);
long long strtoll(const char* s, char** end, int base);
unsigned long long strtoull(const char* s, char** end, int base);
int abs(int x);
// A whole decimal number in 0..max, nothing else (no sign, no junk, no
// overflow): 0 and *out set, or -KAI_EINVAL (not a number) / -KAI_ERANGE.
// For command lines: atoi("abc") is 0 and strtoul("4294967296") wraps.
int parse_u32(const char* s, uint32_t max, uint32_t* out);
// A numeric command-line option: value as a whole number in [lo, hi], or
// "PROG: OPTION: 'VALUE' is not a number from LO to HI" on standard error and
// exit status 2 (nothing runs).
uint32_t number_option(const char* prog, const char* option, const char* value, uint32_t lo, uint32_t hi);
// For a program that takes no arguments: if there are any, prints
// "PROG: unexpected argument 'ARG' (PROG takes no arguments)" and exits 2.
void no_arguments(const char* prog, int argc, char** argv);
long labs(long x);

// The heap grows with sbrk(); free() returns memory for reuse and gives the
// top of the heap back to the kernel when a large block there is freed.
void* malloc(size_t n);
void free(void* p);
void* calloc(size_t count, size_t size);
void* realloc(void* p, size_t n);
void* aligned_alloc(size_t alignment, size_t n);   // alignment: a power of two
size_t malloc_usable_size(void* p);

struct kai_heap_stats {
  size_t heap_bytes;      // obtained from sbrk and not given back
  size_t used_bytes;      // in allocated blocks, headers included
  size_t free_bytes;      // in free blocks
  size_t free_blocks;
};
void malloc_stats(struct kai_heap_stats* out);

void qsort(void* base, size_t n, size_t size, int (*cmp)(const void*, const void*));

// xorshift64* generator. rand()/srand() use one global state; the
// kai_rng_* functions take an explicit state (seed must not be 0: it is
// replaced by a fixed constant).
#define RAND_MAX 0x7fffffff
int rand();
void srand(unsigned seed);
uint64_t kai_rng_next(uint64_t* state);
uint64_t kai_rng_seed(uint64_t seed);       // a valid state for that seed

[[noreturn]] void abort();
}
