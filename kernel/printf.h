// Kernel console output.
#pragma once
#include <stdarg.h>

// %d %i %u %x %p %s %c %ld %lu %lx %llu %zu %%, with width and '0' flag.
void kprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void kvprintf(const char* fmt, va_list ap);
// Prints "panic on hart N: message" and stops every hart.
[[noreturn]] void panic(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// snprintf into a buffer; returns the length it would have written.
int ksnprintf(char* buf, unsigned long size, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
