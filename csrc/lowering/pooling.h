// Pooling lowerings over the trailing spatial dimensions of an operand with any leading dimensions,
// and the flat gather/scatter helpers shared with resize.cpp. Each entry's comment gives its
// operands and attributes; output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Max pooling: operand x; attrs ints: nd, kernel, stride, padding, dilation (nd each). Outputs the
// maxima and, as i64, each maximum's flat index within its spatial plane (PyTorch's indices).
extern const graph::OpDef kMaxPool;
// Operands grad_output and indices (dims of the pooled output); attrs ints: nd. Output: the
// gradient of the input, grad_output summed into the indexed positions of each plane.
extern const graph::OpDef kMaxPoolBackward;
// Average pooling: operand x; attrs ints: nd, kernel, stride, padding (nd each),
// count_include_pad, divisor_override (0 when absent). Average pooling and its gradients sum
// float16/bfloat16 in float32, as PyTorch's CPU kernels do.
extern const graph::OpDef kAvgPool;
// Operand grad_output; attrs as kAvgPool; output type is the input's.
extern const graph::OpDef kAvgPoolBackward;
// Adaptive average pooling: operand x; attrs ints: nd. Windows follow PyTorch's
// [floor(o*in/out), ceil((o+1)*in/out)).
extern const graph::OpDef kAdaptiveAvgPool;
// Operand grad_output; attrs ints: nd; output type is the input's.
extern const graph::OpDef kAdaptiveAvgPoolBackward;
// Adaptive max pooling: operand x; attrs ints: nd. Outputs as kMaxPool (whose backward applies).
extern const graph::OpDef kAdaptiveMaxPool;

// One source position per output position along each spatial axis (axis-major).
using AxisIndices = std::vector<std::vector<int64_t>>;
// x (dims [lead..., in...]) at the given per-axis positions: dims [lead..., out...].
hlo::Value gather_spatial(hlo::Builder& b, hlo::Value x, const AxisIndices& index);
// Sums each tap's `updates` (dims [lead..., out...]) into a zero value of type `out` at the tap's
// per-axis positions.
hlo::Value scatter_add_spatial(hlo::Builder& b, const hlo::TensorType& out,
                               const std::vector<AxisIndices>& index,
                               const std::vector<hlo::Value>& updates);
// A rank-1 constant of `t` (f32/f64 values are spelled exactly; others must be integral).
hlo::Value vector_constant(hlo::Builder& b, const std::vector<double>& values, hlo::ElementType t);

}  // namespace torch_pjrt::lowering
