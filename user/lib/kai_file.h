// Whole files into memory: the one reader behind a chat template, a
// tokenizer (kai_text.cpp) and a model bundle read in user space (perfbench).
#pragma once
#include <stddef.h>
#include <stdint.h>

// The whole file at path in one heap buffer (aligned to `align` bytes, a
// power of two, when align is not 0), followed by a NUL byte so that a text
// file is a C string; *size is its length. Free it with free(). nullptr on
// failure, with *err the open's or fstat's error, -KAI_ENOMEM, or -KAI_EIO
// when the file could not be read whole.
uint8_t* read_whole_file(const char* path, size_t* size, int* err, size_t align = 0);
