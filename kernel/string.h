// Freestanding string/memory functions for the kernel (C linkage: the
// compiler itself emits calls to memcpy/memset/memmove).
#pragma once
#include <stddef.h>

extern "C" {
void* memset(void* dst, int c, size_t n);
void* memcpy(void* dst, const void* src, size_t n);
void* memmove(void* dst, const void* src, size_t n);
int memcmp(const void* a, const void* b, size_t n);
size_t strlen(const char* s);
int strcmp(const char* a, const char* b);
int strncmp(const char* a, const char* b, size_t n);
char* strncpy(char* dst, const char* src, size_t n);
}
// Like strncpy but always NUL-terminates (n > 0).
char* safestrcpy(char* dst, const char* src, size_t n);
