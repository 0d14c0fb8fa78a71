// Lowerings of strided views: reading and writing (sizes, strides, offset) over a storage, and
// reading a storage's bytes as another element type. Each entry's comment gives its operands and
// attributes; output types always come from the caller.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Views over a storage (operand 0, row-major, any shape). ints: view_attrs(...).
// kViewRead: the view's elements, dims = sizes. kViewWrite: operand 0 with the view's elements
// replaced by operand 1 (dims = sizes, same element type); result has operand 0's type.
// An optional last operand (rank-0 i64) is the offset at run time, in place of the attribute's
// (then 0): views that differ only in offset share one program.
extern const graph::OpDef kViewRead;
extern const graph::OpDef kViewWrite;
// kBitcast: operand 0's row-major bytes read as the output type (any dims, the same byte size;
// no attributes). bool is one byte 0/1 and a byte reads as true when nonzero, as in PyTorch.
extern const graph::OpDef kBitcast;
graph::Attrs view_attrs(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        int64_t offset);

}  // namespace torch_pjrt::lowering
