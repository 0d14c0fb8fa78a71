// Device-side checks of an operand's values (graph/checks.h): what a program computes, next to an
// op's result, to tell whether the op's data was valid.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

enum CheckMode : int64_t {
  kOutOfRange = 0,  // invalid: outside [lo, hi) and not one of the allowed values
  kZero = 1,        // invalid: zero (an integer divisor)
  kOutsideUnit = 2  // invalid: outside [0, 1], NaN included (a probability)
};

// Operand 0: any shape and element type. ints = (mode, lo, hi, allowed values...). Output: i64[2],
// the row-major position of the first invalid element (-1 when all are valid) and that element's
// value converted to i64.
extern const graph::OpDef kCheck;

}  // namespace torch_pjrt::lowering
