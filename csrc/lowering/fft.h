// Discrete Fourier transforms over any set of dimensions, as PyTorch's _fft_c2c, _fft_r2c and
// _fft_c2r compute them, by StableHLO's fft (at most three innermost dimensions per op).
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

enum class FftKind : int64_t { C2CForward = 0, C2CInverse = 1, R2C = 2, C2R = 3 };

// One operand; ints = {FftKind, normalization (0: none, 1: 1/sqrt(n), 2: 1/n, n the signal
// size), transformed dims...}. R2C: a real operand whose last transformed dim has n/2+1 entries in
// the output (or n: then the full, two-sided transform). C2R: a complex operand, inverse transform
// to a real output whose last transformed dim has the output's size; the operand's entries beyond
// n/2+1 are ignored, missing ones are zero.
extern const graph::OpDef kFft;

}  // namespace torch_pjrt::lowering
