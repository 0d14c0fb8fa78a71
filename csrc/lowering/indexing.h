// Indexing lowerings. Each entry's comment gives its operands and attributes; output types always
// come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Gathers elements of operand 0 (any shape, read row-major) at the i64 positions of operand 1.
extern const graph::OpDef kTake;

// Point gathers and scatters over an "index space" (the output dims for kIndexGather, the dims of
// operand 1 for kIndexScatter). For each dimension d of operand 0 the element coordinate is given
// by map[d]: map[d] >= 0 is the position along index-space dimension map[d]; map[d] < 0 names
// operand -map[d], an integer tensor broadcast (trailing dims aligned) to the index space whose
// negative values count from the end of dimension d. Out-of-range coordinates must be rejected
// beforehand. A dimension d with map[d] >= 0 along which no index tensor varies is read or
// written as a window (index_select's and an embedding's rows), not element by element.
// kIndexGather: operands (self, indices...); ints = map.
extern const graph::OpDef kIndexGather;
// kIndexScatter: operands (self, updates, indices...); ints = (mode, map...). Updates are
// converted to self's element type and combined with what is there: mode 0 replaces, 1 adds,
// 2 multiplies, 3 takes the maximum, 4 the minimum. Result has self's type.
extern const graph::OpDef kIndexScatter;
enum ScatterMode : int64_t { kReplace = 0, kAccumulate = 1, kMultiply = 2, kMax = 3, kMin = 4 };

}  // namespace torch_pjrt::lowering
