// Internal to matvec.cpp: the register-blocked int8 kernels of
// matmul_int8.cpp (see there for how and why they are exact).
#pragma once
#include "matvec.h"

namespace llm {

// Rows r0..r1-1 (any number) times the items of the packed block starting
// at x[0] (x[0].triple or x[0].pair; at most `left` of its items), every
// whole 4-row block in one call: y[i * stride + (r - r0)] for item i, row r.
// Returns how many items it did, 0 if no packed block starts at x[0].
uint32_t int8_packed(const Matrix& w, const ActVec* x, uint32_t left, uint32_t r0, uint32_t r1, float* y,
                     size_t stride);
// rows r0..r1-1 (any number) times one item (x.cross packed): y[r - r0].
void int8_cross(const Matrix& w, const ActVec& x, uint32_t r0, uint32_t r1, float* y);

}  // namespace llm
