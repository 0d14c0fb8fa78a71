// Reading and writing strided views of a storage. A storage is a row-major array; a view is
// (sizes, strides, offset) over it, exactly as in PyTorch. Dense layouts (possibly permuted or
// broadcast) lower to slice/reshape/transpose/broadcast; anything else to a gather or scatter of
// computed element indices. The offset is a constant or a runtime i64 operand (then slices are
// dynamic). A storage read as another element type is a bitcast of its bytes.
#include "lowering/views.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

struct View {
  std::vector<int64_t> sizes, strides;
  int64_t offset;
  std::optional<hlo::Value> runtime_offset;  // replaces `offset` when set
  int64_t numel() const {
    return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
  }
};

// `offset_operand`: the runtime offset's position in `in`, when the node has one.
View decode(const graph::Attrs& a, const std::vector<hlo::Value>& in, size_t offset_operand) {
  const size_t rank = (a.ints.size() - 1) / 2;
  View v;
  v.sizes.assign(a.ints.begin(), a.ints.begin() + rank);
  v.strides.assign(a.ints.begin() + rank, a.ints.begin() + 2 * rank);
  v.offset = a.ints.back();
  if (in.size() > offset_operand) v.runtime_offset = in[offset_operand];
  return v;
}

// The rank-0 i64 start of the view's first element.
hlo::Value start_of(hlo::Builder& b, const View& v) {
  return v.runtime_offset ? *v.runtime_offset : b.constant_int(v.offset, hlo::ElementType::I64);
}

// Elements [offset, offset + n) of rank-1 `flat`.
hlo::Value block_of(hlo::Builder& b, hlo::Value flat, const View& v, int64_t n) {
  if (v.runtime_offset) return b.dynamic_slice(flat, {*v.runtime_offset}, {n});
  if (v.offset == 0 && n == flat.type.dims[0]) return flat;
  return b.slice(flat, {v.offset}, {v.offset + n}, {1});
}

hlo::Value flatten(hlo::Builder& b, hlo::Value v) {
  return v.type.rank() == 1 ? v : b.reshape(v, {v.type.num_elements()});
}

// Row-major element index of every element of the view, as i64 of the view's dims.
hlo::Value element_indices(hlo::Builder& b, const View& v) {
  const hlo::TensorType t{hlo::ElementType::I64, v.sizes};
  hlo::Value idx = v.runtime_offset ? b.broadcast_in_dim(*v.runtime_offset, v.sizes, {})
                                    : b.splat(static_cast<double>(v.offset), t);
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] == 1 || v.strides[d] == 0) continue;
    hlo::Value term = b.iota(t, static_cast<int64_t>(d));
    if (v.strides[d] != 1) term = b.binary("multiply", term, b.splat(v.strides[d], t));
    idx = b.binary("add", idx, term);
  }
  return idx;
}

bool is_contiguous(const View& v) {
  int64_t expected = 1;
  for (size_t d = v.sizes.size(); d-- > 0;) {
    if (v.sizes[d] == 1) continue;
    if (v.strides[d] != expected) return false;
    expected *= v.sizes[d];
  }
  return true;
}

// Reads a view without size-1 or stride-0 dims: a contiguous block, possibly permuted, or a gather.
hlo::Value read_dense_or_gather(hlo::Builder& b, hlo::Value flat, const View& v) {
  const size_t rank = v.sizes.size();
  std::vector<int64_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return v.strides[x] > v.strides[y]; });
  View sorted{{}, {}, v.offset, v.runtime_offset};
  for (int64_t d : order) {
    sorted.sizes.push_back(v.sizes[d]);
    sorted.strides.push_back(v.strides[d]);
  }
  if (!is_contiguous(sorted)) return b.gather_1d(flat, element_indices(b, v));
  hlo::Value block = b.reshape(block_of(b, flat, v, v.numel()), sorted.sizes);
  // Dimension d of the view is dimension position(d) of the sorted block.
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[order[i]] = static_cast<int64_t>(i);
  bool identity = true;
  for (size_t i = 0; i < rank; ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  return identity ? block : b.transpose(block, perm);
}

std::vector<hlo::Value> emit_view_read(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                       const graph::Attrs& attrs,
                                       const std::vector<hlo::TensorType>&) {
  const View v = decode(attrs, in, 1);
  hlo::Value flat = flatten(b, in[0]);
  // Size-1 and stride-0 dims carry no layout: read the others, then broadcast back.
  View kept{{}, {}, v.offset, v.runtime_offset};
  std::vector<int64_t> kept_dims;
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] == 1 || v.strides[d] == 0) continue;
    kept.sizes.push_back(v.sizes[d]);
    kept.strides.push_back(v.strides[d]);
    kept_dims.push_back(static_cast<int64_t>(d));
  }
  hlo::Value value = kept.sizes.empty() ? b.reshape(block_of(b, flat, v, 1), {})
                                        : read_dense_or_gather(b, flat, kept);
  if (kept.sizes.size() == v.sizes.size()) return {value};
  return {b.broadcast_in_dim(value, v.sizes, kept_dims)};
}

std::vector<hlo::Value> emit_view_write(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                        const graph::Attrs& attrs,
                                        const std::vector<hlo::TensorType>& outs) {
  const View v = decode(attrs, in, 2);
  hlo::Value flat = flatten(b, in[0]);
  const int64_t n = v.numel();
  hlo::Value result;
  if (is_contiguous(v)) {
    hlo::Value update = flatten(b, in[1]);
    if (!v.runtime_offset && v.offset == 0 && n == flat.type.dims[0]) {
      result = update;
    } else {
      result = b.dynamic_update_slice(flat, update, {start_of(b, v)});
    }
  } else {
    result = b.scatter_1d(flat, element_indices(b, v), in[1]);
  }
  return {b.reshape(result, outs[0].dims)};
}

// A flat complex array as the flat array of its interleaved (real, imag) parts, and back: complex
// types have no bit layout in StableHLO, their parts do.
hlo::Value complex_to_parts(hlo::Builder& b, hlo::Value v) {
  const int64_t n = v.type.num_elements();
  hlo::Value re = b.reshape(b.unary("real", v), {n, 1});
  hlo::Value im = b.reshape(b.unary("imag", v), {n, 1});
  return b.reshape(b.concatenate({re, im}, 1), {2 * n});
}

hlo::Value parts_to_complex(hlo::Builder& b, hlo::Value v) {
  const int64_t n = v.type.num_elements() / 2;
  v = b.reshape(v, {n, 2});
  hlo::Value re = b.reshape(b.slice(v, {0, 0}, {n, 1}, {1, 1}), {n});
  hlo::Value im = b.reshape(b.slice(v, {0, 1}, {n, 2}, {1, 1}), {n});
  return b.complex(re, im);
}

std::vector<hlo::Value> emit_bitcast(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                     const graph::Attrs&,
                                     const std::vector<hlo::TensorType>& outs) {
  using hlo::ElementType;
  const hlo::TensorType& out = outs[0];
  hlo::Value v = flatten(b, in[0]);
  if (v.type.dtype == ElementType::Bool) v = b.convert(v, ElementType::U8);
  if (runtime::is_complex(v.type.dtype)) v = complex_to_parts(b, v);
  const bool to_complex = runtime::is_complex(out.dtype);
  const ElementType to =
      out.dtype == ElementType::Bool ? ElementType::U8 : runtime::real_part_type(out.dtype);
  const int64_t from_size = static_cast<int64_t>(runtime::element_size(v.type.dtype));
  const int64_t to_size = static_cast<int64_t>(runtime::element_size(to));
  const int64_t n = out.num_elements() * (to_complex ? 2 : 1);
  if (v.type.num_elements() * from_size != n * to_size) {
    throw std::invalid_argument("lowering::bitcast: " + in[0].type.str() + " and " + out.str() +
                                " differ in byte size");
  }
  if (from_size > to_size) {
    v = b.reshape(b.bitcast_convert(v, to), {n});
  } else if (from_size < to_size) {
    v = b.bitcast_convert(b.reshape(v, {n, to_size / from_size}), to);
  } else if (v.type.dtype != to) {
    v = b.bitcast_convert(v, to);
  }
  if (out.dtype == ElementType::Bool) v = b.compare(hlo::Cmp::NE, v, full(b, 0, to, {n}));
  if (to_complex) v = parts_to_complex(b, v);
  return {b.reshape(v, out.dims)};
}

}  // namespace

const graph::OpDef kViewRead{"view_read", emit_view_read};
const graph::OpDef kViewWrite{"view_write", emit_view_write};
const graph::OpDef kBitcast{"bitcast", emit_bitcast};

graph::Attrs view_attrs(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        int64_t offset) {
  graph::Attrs a;
  a.ints.reserve(2 * sizes.size() + 1);
  a.ints.insert(a.ints.end(), sizes.begin(), sizes.end());
  a.ints.insert(a.ints.end(), strides.begin(), strides.end());
  a.ints.push_back(offset);
  return a;
}

}  // namespace torch_pjrt::lowering
