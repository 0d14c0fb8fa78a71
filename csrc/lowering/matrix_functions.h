// Functions of square matrices computed on the device: the matrix exponential.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (a [..., n, n]) -> exp(a), float16/bfloat16 computed in float32; float32/64, complex64/128.
// Scaling and squaring: exp(a) = exp(a / 2^s)^(2^s), with s per matrix the least making
// |a / 2^s|_1 <= 1 and exp of the scaled matrix its Taylor polynomial, of degree 18 for 64-bit
// parts (remainder below 1/19! ~ 8e-18) and 10 for 32-bit ones (1/11! ~ 2.5e-8).
extern const graph::OpDef kMatrixExp;

}  // namespace torch_pjrt::lowering
