// Internal to matvec.cpp: the register-blocked int8 kernels of
// matmul_int8.cpp (see there for how and why they are exact).
#pragma once
#include "matvec.h"

namespace llm {

// rows r..r+rows-1 (rows <= 4) times the items of the packed block starting
// at x[0] (x[0].triple or x[0].pair; at most `left` of its items):
// y[i * stride + k] for item i, row r + k. Returns how many items it did,
// 0 if no packed block starts at x[0].
uint32_t int8_packed(const Matrix& w, const ActVec* x, uint32_t left, uint32_t r, uint32_t rows, float* y,
                     size_t stride);
// Rows r..r+4*blocks-1 times the n items x[0..n) when they are all in one
// packed block (a batch of up to 9 decode steps): the whole range in one call,
// as int8_cross does for one item. False, and nothing done, otherwise.
bool int8_packed_blocks(const Matrix& w, const ActVec* x, uint32_t n, uint32_t r, uint32_t blocks, float* y,
                        size_t stride);
// rows r0..r1-1 (any number) times one item (x.cross packed): y[r - r0].
void int8_cross(const Matrix& w, const ActVec& x, uint32_t r0, uint32_t r1, float* y);

}  // namespace llm
