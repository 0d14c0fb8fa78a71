// Sparse COO tensors on "tpu" (SparsePrivateUse1): PyTorch's SparseTensorImpl, whose indices and
// values are dense "tpu" tensors. Construction, accessors, copies, resizing and to_dense are ATen's
// device-generic kernels; what the CPU and CUDA write as loops (coalesce, dense += sparse,
// sparse + sparse) is written here with dense ops, so it runs on the device. Enough for
// nn.Embedding(sparse=True) with SGD, and sparse tensors built, moved, added and densified.
#include "aten/sparse_coo.h"

#include <ATen/ATen.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_sparse_sum_native.h>
#include <ATen/ops/_to_dense_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/conj_physical_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/sum_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/zero_native.h>
#include <torch/library.h>

#include <vector>

namespace torch_pjrt::aten {

using at::Tensor;

Tensor linear_indices(const Tensor& self) {
  const Tensor indices = self._indices();
  Tensor linear = at::zeros({indices.size(1)}, indices.options());
  for (int64_t d = 0; d < self.sparse_dim(); ++d) linear = linear * self.size(d) + indices[d];
  return linear;
}

namespace {

// A sparse tensor over `indices` and `values`, marked coalesced or not.
Tensor sparse_of(const Tensor& like, const Tensor& indices, const Tensor& values, bool coalesced) {
  return at::_sparse_coo_tensor_with_dims_and_tensors(
      like.sparse_dim(), like.dense_dim(), like.sizes(), indices, values, values.scalar_type(),
      at::kSparse, values.device(), /*pin_memory=*/std::nullopt, /*is_coalesced=*/coalesced);
}

// The sparse coordinates of each nonzero, one index tensor per sparse dim (for index/index_put_).
c10::List<std::optional<Tensor>> coordinates(const Tensor& sparse) {
  const Tensor indices = sparse._indices();
  c10::List<std::optional<Tensor>> rows;
  for (int64_t d = 0; d < sparse.sparse_dim(); ++d) rows.push_back(indices[d]);
  return rows;
}

// values * alpha, skipped for alpha 1.
Tensor times(Tensor values, const at::Scalar& alpha) {
  if (alpha.isIntegral(true) && alpha.toLong() == 1) return values;
  return values.mul(alpha);
}

// add's promoted type of self and other, which out must be able to hold.
at::ScalarType sum_type(const Tensor& self, const Tensor& other, const Tensor& out) {
  const at::ScalarType type = at::result_type(self, other);
  TORCH_CHECK(at::canCast(type, out.scalar_type()), "result type ", type,
              " can't be cast to the desired output type ", out.scalar_type());
  return type;
}

// Sorted by the row-major position of their sparse coordinates, duplicates summed: as the CPU's
// coalesce. One synchronization (the number of distinct coordinates).
Tensor coalesce(const Tensor& self) {
  const int64_t sparse_dim = self.sparse_dim();
  const Tensor indices = self._indices();
  const Tensor values = self._values();
  if (self._nnz() == 0) return sparse_of(self, indices.clone(), values.clone(), true);
  if (sparse_dim == 0) {  // every value sits at the one (empty) coordinate
    return sparse_of(self, at::zeros({0, 1}, indices.options()),
                     values.sum(0, true, values.scalar_type()), true);
  }
  const Tensor linear = linear_indices(self);
  auto [unique, inverse, counts] = at::_unique2(linear, /*sorted=*/true, /*return_inverse=*/true,
                                                /*return_counts=*/false);
  std::vector<int64_t> summed_sizes = values.sizes().vec();
  summed_sizes[0] = unique.size(0);
  const Tensor summed = at::zeros(summed_sizes, values.options()).index_add_(0, inverse, values);
  std::vector<Tensor> rows(sparse_dim);
  Tensor rest = unique;
  for (int64_t d = sparse_dim - 1; d >= 0; --d) {
    rows[d] = rest.remainder(self.size(d));
    rest = rest.div(self.size(d), "floor");
  }
  return sparse_of(self, at::stack(rows), summed, true);
}

void check_sizes(const Tensor& self, const Tensor& other) {
  TORCH_CHECK(self.sizes().equals(other.sizes()), "add: expected 'self' and 'other' to have same ",
              "size, but self has size ", self.sizes(), " while other has size ", other.sizes(),
              " (FYI: dense-sparse addition does not currently support broadcasting)");
}

// out = self + alpha * other for a dense self and out and a sparse other: the values accumulated
// into out at their coordinates.
Tensor& add_dense_sparse(const Tensor& self, const Tensor& other, const at::Scalar& alpha,
                         Tensor& out) {
  check_sizes(self, other);
  const at::ScalarType type = sum_type(self, other, out);
  if (!out.is_same(self)) out.resize_(self.sizes()).copy_(self);
  if (other._nnz() == 0) return out;
  const c10::List<std::optional<Tensor>> rows = coordinates(other);
  const Tensor values = times(other._values().to(type), alpha);
  // Without sparse dims, every value sits at the one (empty) coordinate: their sum is added.
  const auto accumulate = [&](Tensor target) -> Tensor {
    return rows.empty() ? target.add_(values.sum(0))
                        : target.index_put_(rows, values, /*accumulate=*/true);
  };
  if (out.scalar_type() == type) {
    accumulate(out);
    return out;
  }
  // Accumulated in the promoted type, then stored in out's, as the CPU's kernel computes.
  out.copy_(accumulate(out.to(type)));
  return out;
}

Tensor& add_out(const Tensor& self, const Tensor& other, const at::Scalar& alpha, Tensor& out) {
  if (!self.is_sparse()) {
    TORCH_CHECK(!out.is_sparse(), "add: expected a dense output for a dense 'self'");
    return add_dense_sparse(self, other, alpha, out);
  }
  TORCH_CHECK(other.is_sparse(),
              "add(sparse, dense) is not supported. Use add(dense, sparse) instead.");
  TORCH_CHECK(out.is_sparse(), "add: expected a sparse output for two sparse tensors");
  check_sizes(self, other);
  TORCH_CHECK(self.sparse_dim() == other.sparse_dim(),
              "add: expected 'self' and 'other' to have the same number of sparse dimensions");
  sum_type(self, other, out);
  const Tensor scaled = times(other._values().to(out.scalar_type()), alpha);
  Tensor sum = sparse_of(self, at::cat({self._indices(), other._indices()}, 1),
                         at::cat({self._values().to(out.scalar_type()), scaled}), false);
  // Two coalesced operands give a coalesced sum on the CPU.
  if (self.is_coalesced() && other.is_coalesced()) sum = coalesce(sum);
  out.sparse_resize_(sum.sizes(), sum.sparse_dim(), sum.dense_dim());
  at::native::copy_sparse_wrapper_(out, sum, false);
  return out;
}

Tensor add(const Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  const at::ScalarType type = at::result_type(self, other);
  Tensor out = self.is_sparse() ? at::empty({0}, self.options().dtype(type).layout(at::kSparse))
                                : at::empty(self.sizes(), self.options().dtype(type));
  return add_out(self, other, alpha, out);
}

Tensor& add_(Tensor& self, const Tensor& other, const at::Scalar& alpha) {
  return add_out(self, other, alpha, self);
}

// sparse * scalar and sparse / scalar (a 0-dim dense operand): the values scaled, the coordinates
// kept. Products with a dense array are not lowered.
Tensor scaled(const Tensor& self, const Tensor& other, bool divide) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      self.is_sparse() && !other.is_sparse() && other.dim() == 0, divide ? "div" : "mul",
      ": on tpu, a sparse tensor ",
      divide ? "divides by only a scalar" : "multiplies only a scalar or a sparse tensor");
  const Tensor values = divide ? self._values().div(other) : self._values().mul(other);
  return sparse_of(self, self._indices().clone(), values, self.is_coalesced());
}

Tensor mul(const Tensor& self, const Tensor& other) {
  if (self.is_sparse() && other.is_sparse()) return sparse_times_sparse(self, other);
  return other.is_sparse() && !self.is_sparse() ? scaled(other, self, false)
                                                : scaled(self, other, false);
}
Tensor div(const Tensor& self, const Tensor& other) { return scaled(self, other, true); }
Tensor& scale_(Tensor& self, const Tensor& other, bool divide) {
  at::native::copy_sparse_wrapper_(self, scaled(self, other, divide), false);
  return self;
}
Tensor& mul_(Tensor& self, const Tensor& other) {
  if (!self.is_sparse() || !other.is_sparse()) return scale_(self, other, false);
  at::native::copy_sparse_wrapper_(self, sparse_times_sparse(self, other), false);
  return self;
}
Tensor& div_(Tensor& self, const Tensor& other) { return scale_(self, other, true); }

void check_mask(const Tensor& self, const Tensor& mask) {
  TORCH_CHECK(mask.sizes().equals(self.sizes()) && mask.sparse_dim() == self.sparse_dim(),
              "_sparse_mask_projection(): operands have incompatible sizes or sparse dims");
}

// self's values (duplicates summed) at mask's coordinates, zero where self has none, with mask's
// indices (sparse_mask of a sparse self): found by a binary search of mask's positions among
// self's sorted ones.
Tensor sparse_at_mask(const Tensor& self, const Tensor& mask) {
  check_mask(self, mask);
  const Tensor source = self.coalesce();
  const Tensor mask_indices = mask._indices();
  std::vector<int64_t> sizes = source._values().sizes().vec();
  sizes[0] = mask._nnz();
  if (source._nnz() == 0 || mask._nnz() == 0) {
    return sparse_of(mask, mask_indices.clone(), at::zeros(sizes, source._values().options()),
                     mask.is_coalesced());
  }
  const Tensor positions = linear_indices(source);
  const Tensor wanted = linear_indices(mask);
  const Tensor at = at::searchsorted(positions, wanted).clamp_max(positions.size(0) - 1);
  std::vector<int64_t> view(sizes.size(), 1);
  view[0] = sizes[0];
  const Tensor found = positions.index_select(0, at).eq(wanted).view(view);
  const Tensor values = at::where(found, source._values().index_select(0, at),
                                  at::zeros({}, source._values().options()));
  return sparse_of(mask, mask_indices.clone(), values, mask.is_coalesced());
}

// _sparse_mask_projection, as the CPU's: self's nonzeros (its indices, duplicates kept), each value
// times the number of mask's nonzeros at its coordinates (accumulate_matches) or zeroed where mask
// has none; counted by binary searches among mask's sorted positions.
Tensor sparse_mask_projection(const Tensor& self, const Tensor& mask, bool accumulate_matches) {
  check_mask(self, mask);
  const Tensor values = self._values();
  const Tensor zero = at::zeros({}, values.options());
  if (self._nnz() == 0 || mask._nnz() == 0) {
    return sparse_of(self, self._indices().clone(), at::zeros_like(values), self.is_coalesced());
  }
  const Tensor sorted = std::get<0>(linear_indices(mask).sort());
  const Tensor wanted = linear_indices(self);
  Tensor count = at::searchsorted(sorted, wanted, /*out_int32=*/false, /*right=*/true) -
                 at::searchsorted(sorted, wanted);
  std::vector<int64_t> view(values.dim(), 1);
  view[0] = values.size(0);
  count = count.view(view);
  const Tensor projected = accumulate_matches ? values * count.to(values.scalar_type()) : values;
  return sparse_of(self, self._indices().clone(), at::where(count.gt(0), projected, zero),
                   self.is_coalesced());
}

// self's elements at mask's coordinates, as a sparse tensor with mask's indices.
Tensor sparse_mask(const Tensor& self, const Tensor& mask) {
  if (self.is_sparse()) return sparse_at_mask(self, mask);
  TORCH_CHECK(mask.sizes().equals(self.sizes()), "sparse_mask(): operands have incompatible ",
              "sizes; self has size ", self.sizes(), " but mask has size ", mask.sizes());
  const Tensor values = mask._nnz() == 0 ? mask._values().to(self.scalar_type()).clone()
                                         : at::index(self, coordinates(mask));
  return sparse_of(mask, mask._indices().clone(), values, mask.is_coalesced());
}

// ATen's (device-generic; named here to pick the overload).
Tensor sparse_sum(const Tensor& self, at::IntArrayRef dim) {
  return at::native::_sparse_sum(self, dim);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_sparse_coo_tensor_with_dims_and_tensors",
         TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(at::native::new_with_dims_sparse));
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
  m.impl("clone", TORCH_FN(at::native::clone_sparse));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_wrapper_));
  m.impl("copy_sparse_to_sparse_", TORCH_FN(at::native::copy_sparse_));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_));
  m.impl("_to_dense", TORCH_FN(at::native::sparse_to_dense));
  m.impl("_coalesce", coalesce);
  m.impl("add.out", add_out);
  m.impl("add.Tensor", add);
  m.impl("add_.Tensor", add_);
  // ATen's: add with -alpha.
  m.impl("sub.Tensor", TORCH_FN(at::native::sub_sparse));
  m.impl("sub_.Tensor", TORCH_FN(at::native::sub_sparse_));
  m.impl("sub.out", TORCH_FN(at::native::sub_out_sparse));
  m.impl("sum", TORCH_FN(at::native::sum_coo));
  m.impl("sum.dim_IntList", TORCH_FN(at::native::sum_sparse_coo));
  m.impl("_sparse_sum.dim", sparse_sum);
  m.impl("conj_physical.out", TORCH_FN(at::native::conj_physical_out_sparse));
  m.impl("mul.Tensor", mul);
  m.impl("mul_.Tensor", mul_);
  m.impl("div.Tensor", div);
  m.impl("div_.Tensor", div_);
  m.impl("sparse_mask", sparse_mask);
  m.impl("_sparse_mask_projection", sparse_mask_projection);
}

}  // namespace torch_pjrt::aten
