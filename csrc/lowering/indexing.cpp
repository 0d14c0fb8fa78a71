// Indexing lowerings: gathering and scattering at computed coordinates. Where the index tensors do
// not vary along a dimension of self that runs whole along the index space (index_select's other
// dims, an embedding's hidden dim), that dimension is read or written as a window: one gather of
// rows, as JAX emits, rather than one of single elements.
#include "lowering/indexing.h"

#include <algorithm>
#include <string>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// A point gather's or scatter's dimension numbers: the dims of self read at coordinates
// (`points`) and as windows starting at 0 (`windows`, running along `window_space`, dims of the
// index space), and the index space's other dims (`batch`), over which the coordinates vary.
struct Layout {
  std::vector<int64_t> points, windows, window_space, batch;
  std::vector<int64_t> batch_dims;  // their sizes
  std::vector<int64_t> slice_sizes;
};

// Dimension d of self is a window when map[d] names a dimension of the space that no other entry
// names and along which no index operand varies, the windows keeping self's order (gather's
// offset dims follow the operand's). At least one dim is read at coordinates.
Layout layout(const std::vector<hlo::Value>& in, const std::vector<int64_t>& map,
              const std::vector<int64_t>& space) {
  const int64_t s = static_cast<int64_t>(space.size());
  const auto window_ok = [&](int64_t d, int64_t after) {
    const int64_t j = map[d];
    if (j < 0 || j <= after || std::count(map.begin(), map.end(), j) != 1) return false;
    if (space[j] > in[0].type.dims[d]) return false;
    for (int64_t m : map) {
      if (m >= 0) continue;
      const std::vector<int64_t>& dims = in[-m].type.dims;
      const int64_t k = j - (s - static_cast<int64_t>(dims.size()));
      if (k >= 0 && dims[k] != 1) return false;
    }
    return true;
  };
  Layout l;
  for (size_t d = 0; d < map.size(); ++d) {
    const int64_t d64 = static_cast<int64_t>(d);
    if (window_ok(d64, l.window_space.empty() ? -1 : l.window_space.back())) {
      l.windows.push_back(d64);
      l.window_space.push_back(map[d]);
    } else {
      l.points.push_back(d64);
    }
  }
  if (l.points.empty()) {
    l.points.push_back(l.windows.back());
    l.windows.pop_back();
    l.window_space.pop_back();
  }
  for (int64_t j = 0; j < s; ++j) {
    if (std::find(l.window_space.begin(), l.window_space.end(), j) != l.window_space.end())
      continue;
    l.batch.push_back(j);
    l.batch_dims.push_back(space[j]);
  }
  for (size_t d = 0; d < map.size(); ++d) {
    const bool window = std::find(l.windows.begin(), l.windows.end(), d) != l.windows.end();
    l.slice_sizes.push_back(window ? space[map[d]] : 1);
  }
  return l;
}

// Position of space dimension j among l.batch.
int64_t batch_position(const Layout& l, int64_t j) {
  return std::find(l.batch.begin(), l.batch.end(), j) - l.batch.begin();
}

// The coordinates of l.points at every point of the batch dims: i64 of dims batch + [points].
hlo::Value coordinates(hlo::Builder& b, const hlo::TensorType& operand,
                       const std::vector<hlo::Value>& in, const std::vector<int64_t>& map,
                       const std::vector<int64_t>& space, const Layout& l) {
  const hlo::TensorType t{hlo::ElementType::I64, l.batch_dims};
  std::vector<int64_t> column_dims = l.batch_dims;
  column_dims.push_back(1);
  std::vector<hlo::Value> columns;
  for (int64_t d : l.points) {
    hlo::Value c;
    if (map[d] >= 0) {
      c = b.iota(t, batch_position(l, map[d]));
    } else {
      hlo::Value idx = to_type(b, in[-map[d]], hlo::ElementType::I64);
      hlo::Value size = b.splat(static_cast<double>(operand.dims[d]), idx.type);
      hlo::Value negative = b.compare(hlo::Cmp::LT, idx, b.splat(0, idx.type));
      idx = b.select(negative, b.binary("add", idx, size), idx);
      // Its dims along windows have size 1: dropped, the others broadcast to the batch dims.
      const int64_t lead = static_cast<int64_t>(space.size()) - idx.type.rank();
      std::vector<int64_t> kept, to;
      for (int64_t k = 0; k < idx.type.rank(); ++k) {
        const int64_t j = lead + k;
        if (std::find(l.batch.begin(), l.batch.end(), j) == l.batch.end()) continue;
        kept.push_back(idx.type.dims[k]);
        to.push_back(batch_position(l, j));
      }
      if (kept != idx.type.dims) idx = b.reshape(idx, kept);
      c = idx.type.dims == l.batch_dims ? idx : b.broadcast_in_dim(idx, l.batch_dims, to);
    }
    columns.push_back(b.reshape(c, column_dims));
  }
  return columns.size() == 1 ? columns[0]
                             : b.concatenate(columns, static_cast<int64_t>(l.batch.size()));
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
  const Layout l = layout(in, attrs.ints, out.dims);
  hlo::Value coords = coordinates(b, self, in, attrs.ints, out.dims, l);
  std::string sizes = "array<i64";
  for (size_t i = 0; i < l.slice_sizes.size(); ++i)
    sizes += (i ? ", " : ": ") + std::to_string(l.slice_sizes[i]);
  return b.op("gather", {in[0], coords}, {out},
              "dimension_numbers = #stablehlo.gather<offset_dims = " + list(l.window_space) +
                  ", collapsed_slice_dims = " + list(l.points) + ", start_index_map = " +
                  list(l.points) + ", index_vector_dim = " + std::to_string(l.batch.size()) +
                  ">, slice_sizes = " + sizes + ">, indices_are_sorted = false");
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
  // A 0-dim self is scattered as the one element of a rank-1 array, at coordinate 0.
  const hlo::Value operand = self.rank() == 0 ? b.reshape(in[0], {1}) : in[0];
  Layout l;
  hlo::Value coords;
  if (self.rank() == 0) {
    l.points = {0};
    for (size_t j = 0; j < space.size(); ++j) l.batch.push_back(static_cast<int64_t>(j));
    l.batch_dims = space;
    std::vector<int64_t> coord_dims = space;
    coord_dims.push_back(1);
    coords = b.splat(0, hlo::TensorType{hlo::ElementType::I64, coord_dims});
  } else {
    l = layout(in, map, space);
    coords = coordinates(b, self, in, map, space, l);
  }
  std::vector<hlo::Value> result =
      b.op("scatter", {operand, coords, updates}, {operand.type},
           "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = " +
               list(l.window_space) + ", inserted_window_dims = " + list(l.points) +
               ", scatter_dims_to_operand_dims = " + list(l.points) +
               ", index_vector_dim = " + std::to_string(l.batch.size()) +
               ">, indices_are_sorted = false, unique_indices = false",
           b.combiner(self.dtype, combine));
  if (self.rank() == 0) return {b.reshape(result[0], outs[0].dims)};
  return result;
}

}  // namespace

const graph::OpDef kTake{"take", emit_take};
const graph::OpDef kIndexGather{"index_gather", emit_index_gather};
const graph::OpDef kIndexScatter{"index_scatter", emit_index_scatter};

}  // namespace torch_pjrt::lowering
