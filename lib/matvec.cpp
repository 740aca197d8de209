#include "matvec.h"

namespace llm {
namespace {

float row_dot_q8(const int8_t* w, const float* x, uint32_t n) {
  // Four partial sums: shorter dependency chains, same result for every
  // caller (the order is fixed), and the compiler keeps it scalar.
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  uint32_t c = 0;
  for (; c + 4 <= n; c += 4) {
    s0 += float(w[c]) * x[c];
    s1 += float(w[c + 1]) * x[c + 1];
    s2 += float(w[c + 2]) * x[c + 2];
    s3 += float(w[c + 3]) * x[c + 3];
  }
  for (; c < n; c++) s0 += float(w[c]) * x[c];
  return (s0 + s1) + (s2 + s3);
}

float row_dot_f32(const float* w, const float* x, uint32_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  uint32_t c = 0;
  for (; c + 4 <= n; c += 4) {
    s0 += w[c] * x[c];
    s1 += w[c + 1] * x[c + 1];
    s2 += w[c + 2] * x[c + 2];
    s3 += w[c + 3] * x[c + 3];
  }
  for (; c < n; c++) s0 += w[c] * x[c];
  return (s0 + s1) + (s2 + s3);
}

float row_float(const Matrix& w, const ActVec& x, uint32_t r) {
  if (w.f) return row_dot_f32(w.f + size_t(r) * w.cols, x.x, w.cols);
  return w.scale(r) * row_dot_q8(w.q + size_t(r) * w.cols, x.x, w.cols);
}

float row_int8(const Matrix& w, const ActVec& x, uint32_t r) {
  if (w.f || !x.q) return row_float(w, x, r);
  const int8_t* wr = w.q + size_t(r) * w.cols;
  uint32_t n = w.cols;
  uint32_t g = x.group ? x.group : n;
  float acc = 0;
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t c1 = c0 + g < n ? c0 + g : n;
    int32_t s = 0;
    for (uint32_t c = c0; c < c1; c++) s += int32_t(wr[c]) * int32_t(x.q[c]);
    acc += float(s) * x.qs[gi];
  }
  return acc * w.scale(r);
}

template <float (*Row)(const Matrix&, const ActVec&, uint32_t)>
void matvec_rows(const Matrix& w, const ActVec& x, float* y, uint32_t r0, uint32_t r1) {
  for (uint32_t r = r0; r < r1; r++) y[r] = Row(w, x, r);
}

template <float (*Row)(const Matrix&, const ActVec&, uint32_t)>
ArgMax argmax_rows(const Matrix& w, const ActVec& x, uint32_t r0, uint32_t r1) {
  ArgMax best;
  best.index = r0;
  bool first = true;
  for (uint32_t r = r0; r < r1; r++) {
    float v = Row(w, x, r);
    if (first || v > best.value) {  // strict: the lowest index wins ties
      best.index = r;
      best.value = v;
      first = false;
    }
  }
  return best;
}

}  // namespace

const MatvecOps kMatvecFloat = {"float", MatvecKind::Float, matvec_rows<row_float>, argmax_rows<row_float>};
const MatvecOps kMatvecInt8 = {"int8", MatvecKind::Int8, matvec_rows<row_int8>, argmax_rows<row_int8>};

const MatvecOps& matvec_ops(MatvecKind kind) {
  return kind == MatvecKind::Int8 ? kMatvecInt8 : kMatvecFloat;
}

ActVec quantize_act(const float* x, uint32_t n, uint32_t group, int8_t* q, float* qs) {
  ActVec a;
  a.x = x;
  a.n = n;
  a.q = q;
  a.qs = qs;
  a.group = group;
  uint32_t g = group ? group : n;
  uint32_t gi = 0;
  for (uint32_t c0 = 0; c0 < n; c0 += g, gi++) {
    uint32_t c1 = c0 + g < n ? c0 + g : n;
    float amax = 0;
    for (uint32_t c = c0; c < c1; c++) {
      float v = x[c] < 0 ? -x[c] : x[c];
      if (v > amax) amax = v;
    }
    float s = amax / 127.0f;
    float inv = amax > 0 ? 127.0f / amax : 0.0f;
    for (uint32_t c = c0; c < c1; c++) {
      float v = x[c] * inv;
      // Written so that NaN/inf never reach the float->int conversion.
      int32_t iv = -127;
      if (v >= 127.0f) iv = 127;
      else if (v > -127.0f) iv = int32_t(v >= 0 ? v + 0.5f : v - 0.5f);
      q[c] = int8_t(iv);
    }
    qs[gi] = s;
  }
  return a;
}

}  // namespace llm
