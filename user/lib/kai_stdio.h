// Formatted output and line input on file descriptors (no FILE*, no buffering
// across calls: each printf ends in one write()).
//
// Conversions: %d %i %u %x %X %o %p %s %c %f %F %e %% ; length modifiers
// hh h l ll z t j ; flags - 0 + space # ; width and precision (also *).
#pragma once
#include <stdarg.h>
#include <stddef.h>

extern "C" {
int printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
int fprintf(int fd, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
int snprintf(char* buf, size_t size, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
int vsnprintf(char* buf, size_t size, const char* fmt, va_list ap);
int vfprintf(int fd, const char* fmt, va_list ap);
int vprintf(const char* fmt, va_list ap);

int puts(const char* s);        // s and a newline to fd 1
int fputs(const char* s, int fd);
int putchar(int c);

// Reads one line (up to and including '\n') from fd into buf, at most max-1
// bytes, NUL-terminated. Returns the length (0 at end of file) or -errno.
// Reads one byte per system call, so it never consumes input past the line.
long getline(int fd, char* buf, long max);
}
