// Internal to matvec.cpp: the register-blocked int8 kernels of
// matmul_int8.cpp (see there for how and why they are exact).
#pragma once
#include "matvec.h"

namespace llm {

// rows r..r+rows-1 (rows <= 4) times items x[0..2*pairs) (pairs 1 or 2,
// x[0].pair and x[2].pair packed): y[i * stride + k] for item i, row r + k.
void int8_pairs(const Matrix& w, const ActVec* x, uint32_t pairs, uint32_t r, uint32_t rows, float* y,
                size_t stride);
// rows r..r+rows-1 (rows <= 4) times one item (x.cross packed): y[k].
void int8_cross(const Matrix& w, const ActVec& x, uint32_t r, uint32_t rows, float* y);

}  // namespace llm
