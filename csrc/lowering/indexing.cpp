// Indexing lowerings: gathering and scattering single elements at computed coordinates.
#include "lowering/indexing.h"

#include <string>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

std::string range_list(int64_t n) {
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(i);
  return s + "]";
}

// The coordinates of every point of `space`: i64 of dims space + [rank(operand)].
hlo::Value coordinates(hlo::Builder& b, const hlo::TensorType& operand,
                       const std::vector<hlo::Value>& in, const std::vector<int64_t>& map,
                       const std::vector<int64_t>& space) {
  const hlo::TensorType t{hlo::ElementType::I64, space};
  std::vector<int64_t> column_dims = space;
  column_dims.push_back(1);
  std::vector<hlo::Value> columns;
  for (size_t d = 0; d < map.size(); ++d) {
    hlo::Value c;
    if (map[d] >= 0) {
      c = b.iota(t, map[d]);
    } else {
      hlo::Value idx = to_type(b, in[-map[d]], hlo::ElementType::I64);
      hlo::Value size = b.splat(static_cast<double>(operand.dims[d]), idx.type);
      hlo::Value negative = b.compare(hlo::Cmp::LT, idx, b.splat(0, idx.type));
      idx = b.select(negative, b.binary("add", idx, size), idx);
      c = broadcast_to(b, idx, space);
    }
    columns.push_back(b.reshape(c, column_dims));
  }
  return columns.size() == 1 ? columns[0]
                             : b.concatenate(columns, static_cast<int64_t>(space.size()));
}

bool empty(const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (d == 0) return true;
  return false;
}

std::vector<hlo::Value> emit_take(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs&, const std::vector<hlo::TensorType>&) {
  hlo::Value flat = in[0].type.rank() == 1 ? in[0] : b.reshape(in[0], {in[0].type.num_elements()});
  return {b.gather_1d(flat, in[1])};
}

std::vector<hlo::Value> emit_index_gather(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                          const graph::Attrs& attrs,
                                          const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& self = in[0].type;
  const hlo::TensorType& out = outs[0];
  if (empty(out.dims)) return {b.splat(0, out)};
  if (self.rank() == 0) return {b.broadcast_in_dim(in[0], out.dims, {})};
  const int64_t rank = self.rank();
  hlo::Value coords = coordinates(b, self, in, attrs.ints, out.dims);
  std::string ones = "array<i64: 1";
  for (int64_t i = 1; i < rank; ++i) ones += ", 1";
  ones += ">";
  return b.op("gather", {in[0], coords}, {out},
              "dimension_numbers = #stablehlo.gather<collapsed_slice_dims = " + range_list(rank) +
                  ", start_index_map = " + range_list(rank) +
                  ", index_vector_dim = " + std::to_string(out.rank()) +
                  ">, slice_sizes = " + ones + ", indices_are_sorted = false");
}

std::vector<hlo::Value> emit_index_scatter(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                           const graph::Attrs& attrs,
                                           const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& self = in[0].type;
  const std::vector<int64_t>& space = in[1].type.dims;
  if (empty(space) || empty(self.dims)) return {in[0]};
  const int64_t mode = attrs.ints[0];
  const std::vector<int64_t> map(attrs.ints.begin() + 1, attrs.ints.end());
  hlo::Value updates = to_type(b, in[1], self.dtype);
  const bool is_bool = self.dtype == hlo::ElementType::Bool;
  const char* combine = nullptr;
  if (mode == kAccumulate) combine = is_bool ? "or" : "add";
  if (mode == kMultiply) combine = is_bool ? "and" : "multiply";
  if (mode == kMax) combine = is_bool ? "or" : "maximum";
  if (mode == kMin) combine = is_bool ? "and" : "minimum";
  // A 0-dim self is scattered as the one element of a rank-1 array.
  const hlo::Value operand = self.rank() == 0 ? b.reshape(in[0], {1}) : in[0];
  const hlo::TensorType& op_type = operand.type;
  const int64_t rank = op_type.rank();
  std::vector<int64_t> coord_dims = space;
  coord_dims.push_back(1);
  const hlo::Value coords = self.rank() == 0
                                ? b.splat(0, hlo::TensorType{hlo::ElementType::I64, coord_dims})
                                : coordinates(b, op_type, in, map, space);
  std::vector<hlo::Value> result = b.op(
      "scatter", {operand, coords, updates}, {op_type},
      "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = " + range_list(rank) +
          ", scatter_dims_to_operand_dims = " + range_list(rank) + ", index_vector_dim = " +
          std::to_string(space.size()) + ">, indices_are_sorted = false, unique_indices = false",
      b.combiner(self.dtype, combine));
  if (self.rank() == 0) return {b.reshape(result[0], outs[0].dims)};
  return result;
}

}  // namespace

const graph::OpDef kTake{"take", emit_take};
const graph::OpDef kIndexGather{"index_gather", emit_index_gather};
const graph::OpDef kIndexScatter{"index_scatter", emit_index_scatter};

}  // namespace torch_pjrt::lowering
