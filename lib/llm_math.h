// Scalar and vector math for the inference runtime, without libm.
// exp/log are evaluated in double precision (range reduction + polynomial),
// so the float results are within about 1 ulp (relative error < 1.2e-7);
// sqrt uses the hardware instruction on RISC-V and x86-64.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace llm {

double exp_d(double x);   // |x| <= ~709; accurate to ~1e-15 relative
double log_d(double x);   // x > 0
float exp_f(float x);
float log_f(float x);
float log1p_f(float x);   // x > -1
float sqrt_f(float x);
float sigmoid_f(float x);
float silu_f(float x);
float softplus_f(float x);

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]  (w may be null: no weight).
// out may alias x.
void rmsnorm(float* out, const float* x, const float* w, uint32_t n, float eps);
// x /= sqrt(sum(x^2) + eps) (L2 normalisation as in Gated DeltaNet).
void l2norm(float* x, uint32_t n, float eps);
// In-place softmax over n values.
void softmax(float* x, uint32_t n);
// RoPE, rotate-halves convention, on the first `rot` dims of one head:
// (x[i], x[i+rot/2]) -> (x[i]c - x[i+rot/2]s, x[i]s + x[i+rot/2]c) with
// c = cs[i], s = cs[rot/2 + i] (one row of ROP.BIN).
void rope(float* head, const float* cs, uint32_t rot);
float dot(const float* a, const float* b, uint32_t n);

}  // namespace llm
