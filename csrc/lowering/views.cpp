// Reading and writing strided views of a storage. A storage is a row-major array; a view is
// (sizes, strides, offset) over it, exactly as in PyTorch. Dense layouts (possibly permuted or
// broadcast), and slices of a reshaped block of the storage (step slices, narrowed rows: the q/k/v
// split of a fused projection), lower to slice/reshape/transpose/broadcast and dynamic slice
// updates; anything else (overlapping windows, runtime offsets of such views) to a gather or
// scatter of computed element indices. The offset is a constant or a runtime i64 operand (then
// slices are dynamic). A storage read as another element type is a bitcast of its bytes.
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

// A view's dims sorted by stride, largest first: `order` (view dims) and the view in that order.
struct Sorted {
  std::vector<int64_t> order;
  View view;
};

Sorted sort_by_stride(const View& v) {
  Sorted s{std::vector<int64_t>(v.sizes.size()), {{}, {}, v.offset, v.runtime_offset}};
  std::iota(s.order.begin(), s.order.end(), 0);
  std::stable_sort(s.order.begin(), s.order.end(),
                   [&](int64_t x, int64_t y) { return v.strides[x] > v.strides[y]; });
  for (int64_t d : s.order) {
    s.view.sizes.push_back(v.sizes[d]);
    s.view.strides.push_back(v.strides[d]);
  }
  return s;
}

// A view (without size-1 or stride-0 dims, sorted by stride) that is the leading corner of a
// reshaped block of the storage: the `length` elements from the view's offset on, as `base` dims,
// each view dim a leading range (`sizes`) of one base dim; a step slice adds a trailing base dim
// of extent = the last stride, of which the first position is taken. Holds when each stride
// divides the one above it and each dim fits in the ratio, i.e. the view does not wrap onto
// itself. Such views lower to (dynamic) slices instead of gathers, whatever the offset, since
// the block starts at it.
struct StridedBlock {
  int64_t length = 0;
  // Elements the block may run past the view's last one (the storage is padded by as many).
  int64_t excess = 0;
  std::vector<int64_t> base, sizes;
};

std::optional<StridedBlock> strided_block(const View& sorted) {
  if (sorted.numel() == 0) return std::nullopt;
  const std::vector<int64_t>& n = sorted.sizes;
  const std::vector<int64_t>& s = sorted.strides;
  const size_t rank = n.size();
  StridedBlock blk;
  blk.base.push_back(n[0]);
  blk.sizes.push_back(n[0]);
  for (size_t i = 1; i < rank; ++i) {
    if (s[i - 1] % s[i] != 0 || n[i] > s[i - 1] / s[i]) return std::nullopt;
    blk.base.push_back(s[i - 1] / s[i]);
    blk.sizes.push_back(n[i]);
  }
  if (s[rank - 1] > 1) {
    blk.base.push_back(s[rank - 1]);
    blk.sizes.push_back(1);
  }
  blk.length = n[0] * s[0];
  int64_t last = 0;  // the view's last element, from its first
  for (size_t i = 0; i < rank; ++i) last += (n[i] - 1) * s[i];
  blk.excess = blk.length - (last + 1);
  return blk;
}

// The storage padded with zeros so that the block from the view's offset fits, and that block.
struct Region {
  hlo::Value padded, block;
};

Region region_of(hlo::Builder& b, hlo::Value flat, const View& v, const StridedBlock& blk) {
  const int64_t have = flat.type.dims[0];
  // A constant offset needs padding only past the storage's end; a runtime one, the most any
  // offset of a valid view can need.
  const int64_t pad = v.runtime_offset ? blk.excess : v.offset + blk.length - have;
  hlo::Value padded = flat;
  if (pad > 0) {
    padded = b.op("pad", {flat, full(b, 0, flat.type.dtype, {})},
                  {hlo::TensorType{flat.type.dtype, {have + pad}}},
                  "edge_padding_low = array<i64: 0>, edge_padding_high = array<i64: " +
                      std::to_string(pad) + ">, interior_padding = array<i64: 0>")[0];
  }
  hlo::Value block = v.runtime_offset
                         ? b.dynamic_slice(padded, {*v.runtime_offset}, {blk.length})
                         : (v.offset == 0 && blk.length == padded.type.dims[0]
                                ? padded
                                : b.slice(padded, {v.offset}, {v.offset + blk.length}, {1}));
  return {padded, b.reshape(block, blk.base)};
}

// Dimension d of the view is dimension perm[d] of its sorted order; identity when unchanged.
std::vector<int64_t> sorted_position(const Sorted& s) {
  std::vector<int64_t> perm(s.order.size());
  for (size_t i = 0; i < s.order.size(); ++i) perm[s.order[i]] = static_cast<int64_t>(i);
  return perm;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Where a constant-offset strided view (sorted) lies in the block that starts at its offset
// rounded down to the largest stride: that block's start, and the view's start and end in its
// dims. Such a block ending within the storage needs no padding, where the block from the offset
// itself would run past the end (the second half of each row: a rotary embedding's rotate_half).
struct Anchored {
  int64_t anchor;
  std::vector<int64_t> start, limit;
};

std::optional<Anchored> anchored(int64_t storage_size, const View& sorted,
                                 const StridedBlock& blk) {
  const int64_t rem = sorted.offset % sorted.strides[0];
  Anchored a{sorted.offset - rem, {}, {}};
  if (a.anchor + blk.length > storage_size) return std::nullopt;
  // The block's dims have the view's strides, then 1 for a step slice's trailing dim.
  std::vector<int64_t> strides = sorted.strides;
  if (strides.size() < blk.base.size()) strides.push_back(1);
  for (size_t i = 0; i < blk.base.size(); ++i) {
    a.start.push_back(rem / strides[i] % blk.base[i]);
    a.limit.push_back(a.start[i] + blk.sizes[i]);
    if (a.limit[i] > blk.base[i]) return std::nullopt;
  }
  return a;
}

// Reads a view without size-1 or stride-0 dims: a contiguous block, possibly permuted, a slice of
// a reshaped block (strided_block), or else a gather.
hlo::Value read_dense_or_gather(hlo::Builder& b, hlo::Value flat, const View& v) {
  const Sorted sorted = sort_by_stride(v);
  hlo::Value block;
  if (is_contiguous(sorted.view)) {
    block = b.reshape(block_of(b, flat, v, v.numel()), sorted.view.sizes);
  } else if (const auto blk = strided_block(sorted.view)) {
    std::vector<int64_t> ones(blk->base.size(), 1);
    const int64_t have = flat.type.dims[0];
    const auto a = v.runtime_offset || v.offset + blk->length <= have
                       ? std::nullopt
                       : anchored(have, sorted.view, *blk);
    if (a) {
      hlo::Value whole = b.slice(flat, {a->anchor}, {a->anchor + blk->length}, {1});
      block = b.slice(b.reshape(whole, blk->base), a->start, a->limit, ones);
    } else {
      const Region r = region_of(b, flat, v, *blk);
      block = b.slice(r.block, std::vector<int64_t>(blk->base.size(), 0), blk->sizes, ones);
    }
    block = b.reshape(block, sorted.view.sizes);
  } else {
    return b.gather_1d(flat, element_indices(b, v));
  }
  const std::vector<int64_t> perm = sorted_position(sorted);
  return is_identity(perm) ? block : b.transpose(block, perm);
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

// Writes `update` into a view that strided_block describes (size-1 dims allowed, no stride-0 dims
// of more than one element): the block is read, its slice replaced, and the block written back.
std::optional<hlo::Value> write_strided(hlo::Builder& b, hlo::Value flat, const View& v,
                                        hlo::Value update) {
  View kept{{}, {}, v.offset, v.runtime_offset};
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] == 1) continue;
    if (v.strides[d] == 0) return std::nullopt;
    kept.sizes.push_back(v.sizes[d]);
    kept.strides.push_back(v.strides[d]);
  }
  const Sorted sorted = sort_by_stride(kept);
  const auto blk = strided_block(sorted.view);
  if (!blk) return std::nullopt;
  // The update in the sorted order, shaped as the block's slice.
  update = b.reshape(update, kept.sizes);
  if (!is_identity(sorted.order)) update = b.transpose(update, sorted.order);
  update = b.reshape(update, blk->sizes);
  const Region r = region_of(b, flat, kept, *blk);
  const hlo::Value zero = b.constant_int(0, hlo::ElementType::I64);
  hlo::Value block =
      b.dynamic_update_slice(r.block, update, std::vector<hlo::Value>(blk->base.size(), zero));
  hlo::Value padded =
      b.dynamic_update_slice(r.padded, b.reshape(block, {blk->length}), {start_of(b, kept)});
  const int64_t size = flat.type.dims[0];
  return padded.type.dims[0] == size ? padded : b.slice(padded, {0}, {size}, {1});
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
  } else if (auto written = write_strided(b, flat, v, in[1])) {
    result = *written;
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
