// Prompts of token ids from a file or standard input, for the AI programs'
// --prompt-file F and --stdin options (ai, aibench, coldwarm; llmrun reads
// the same two formats with its own code, which also runs on the host).
//
// A prompt file is either binary, like a bundle's PMT.BIN (a little-endian
// u32 count, then that many u32 ids), or text: decimal ids separated by
// spaces, tabs, commas or newlines. --stdin reads text until end of input.
//
// Every failure is printed as "PROG: WHERE: why" and nothing is returned
// that a caller could submit by mistake:
//   missing file        "ai: /p.txt: cannot open (No such file or directory)"
//   bad token           "ai: /p.txt: prompt token 2: 'x7' is not a token id (not a number)"
//   empty               "ai: standard input: empty prompt (no token ids)"
//   out of vocabulary   "ai: prompt token 1: id 99999 out of range (model LLAMA has 320 tokens)"
#pragma once
#include <stdint.h>

extern "C" {
// Reads the prompt of path (nullptr: standard input) into ids[0..cap).
// The number of ids (at least 1), or -KAI_Exxx after printing why.
long read_prompt_ids(const char* prog, const char* path, uint32_t* ids, uint32_t cap);

// True if every id is below vocab; otherwise prints the first bad one with
// its position and the model's size, and returns false.
bool prompt_ids_in_vocab(const char* prog, const uint32_t* ids, uint32_t n, const char* model, uint32_t vocab);

// One token id given on a command line (position: its index in the prompt):
// true and *id, or false after "PROG: prompt token N: 'ARG' is not a token id (why)".
bool parse_prompt_token(const char* prog, uint32_t position, const char* arg, uint32_t* id);
}
