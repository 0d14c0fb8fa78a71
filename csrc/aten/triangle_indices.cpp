// tril_indices and triu_indices on "tpu": the coordinates of a row x col matrix's lower (upper)
// triangle, row by row as the CPU orders them, computed on the device from each row's column range.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// The number of elements of a row x col matrix on or below diagonal `offset`: row r holds
// clamp(r + offset + 1, 0, col) of them (offset already clamped, so nothing overflows).
int64_t lower_count(int64_t row, int64_t col, int64_t offset) {
  const int64_t a = offset + 1;
  const int64_t partial_begin = std::max<int64_t>(0, 1 - a);  // rows with 0 < r + a < col
  const int64_t partial_end = std::min(row, col - a);
  const int64_t full_begin = std::max<int64_t>(0, col - a);  // rows with r + a >= col
  int64_t n = 0;
  if (partial_end > partial_begin) {
    n += (partial_end - partial_begin) * (partial_begin + partial_end - 1 + 2 * a) / 2;
  }
  if (row > full_begin) n += (row - full_begin) * col;
  return n;
}

Tensor triangle_indices(const char* name, bool lower, int64_t row, int64_t col, int64_t offset,
                        std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                        std::optional<at::Device> device) {
  TORCH_CHECK(row >= 0, "row must be non-negative, got", row);
  TORCH_CHECK(col >= 0, "col must be non-negative, got", col);
  TORCH_CHECK(!layout || *layout == at::kStrided, "only support layout=torch.strided, got",
              *layout);
  const at::ScalarType type = dtype.value_or(at::kLong);
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kLong || type == at::kInt, "\"", name,
                              "\" not implemented for '", c10::toString(type), "'");
  // Past these bounds every row is full or empty.
  offset = std::clamp(offset, -row - 1, col + 1);
  const int64_t n =
      lower ? lower_count(row, col, offset) : row * col - lower_count(row, col, offset - 1);
  const auto options = at::TensorOptions().dtype(at::kLong).device(device);
  if (n == 0) return at::empty({2, 0}, options.dtype(type));
  OneOp op;
  // Row r's columns are [first, first + count); element k of the result lies in the row whose
  // running count first exceeds k.
  const Tensor r = at::arange(row, options);
  const Tensor first = lower ? at::zeros_like(r) : at::clamp(r + offset, 0, col);
  const Tensor end = lower ? at::clamp(r + (offset + 1), 0, col) : at::full_like(r, col);
  const Tensor count = end - first;
  const Tensor ends = at::cumsum(count, 0);
  const Tensor k = at::arange(n, options);
  const Tensor rows = at::searchsorted(ends, k, /*out_int32=*/false, /*right=*/true);
  const Tensor cols = k - (ends - count).index_select(0, rows) + first.index_select(0, rows);
  Tensor result = at::stack({rows, cols}).to(type);
  op.finish();
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("tril_indices", [](int64_t row, int64_t col, int64_t offset,
                            std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                            std::optional<at::Device> device, std::optional<bool>) {
    return triangle_indices("tril_indices", true, row, col, offset, dtype, layout, device);
  });
  m.impl("triu_indices", [](int64_t row, int64_t col, int64_t offset,
                            std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                            std::optional<at::Device> device, std::optional<bool>) {
    return triangle_indices("triu_indices", false, row, col, offset, dtype, layout, device);
  });
}

}  // namespace torch_pjrt::aten
