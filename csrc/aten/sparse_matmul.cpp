// Products of sparse COO "tpu" tensors (SparsePrivateUse1): sparse @ dense (addmm and the forms
// ATen builds on it: mm, torch.sparse.mm, mv, dense @ sparse by transposition), sparse * sparse,
// sparse @ sparse; also index_select, softmax and sum's gradient. Written with dense device ops,
// as sparse_coo.cpp is: gathers of the dense operand's rows at the nonzeros' columns, index_add_
// of the products at their rows; the argument checks are the CPU kernels', in their order.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/ops/mm_native.h>
#include <ATen/ops/mv_native.h>
#include <torch/library.h>

#include <bitset>
#include <vector>

#include "aten/sparse_coo.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;

// A sparse COO tensor of `sizes` over `indices` and `values`.
Tensor sparse_coo(at::IntArrayRef sizes, const Tensor& indices, const Tensor& values,
                  bool coalesced) {
  return at::_sparse_coo_tensor_with_dims_and_tensors(
      indices.size(0), values.dim() - 1, sizes, indices, values, values.scalar_type(), at::kSparse,
      values.device(), /*pin_memory=*/std::nullopt, /*is_coalesced=*/coalesced);
}

bool is_zero(const Scalar& s) { return s.toComplexDouble() == c10::complex<double>(0, 0); }
bool is_one(const Scalar& s) { return s.toComplexDouble() == c10::complex<double>(1, 0); }

// data_ptr<T>'s check, which the CPU kernel's loop makes of its operands.
void check_dtype(const Tensor& t, at::ScalarType expected) {
  TORCH_CHECK(t.scalar_type() == expected, "expected scalar type ", expected, " but found ",
              t.scalar_type());
}

// r = beta * t + alpha * (sparse @ dense), as the CPU's s_addmm_out_sparse_dense_cpu: beta 0
// ignores t (NaN included), except for a sparse operand without nonzeros, where r = t * beta.
Tensor& addmm_into(Tensor& r, const Tensor& t, const Tensor& sparse, const Tensor& dense,
                   const Scalar& beta, const Scalar& alpha) {
  TORCH_CHECK(r.layout() == at::kStrided,
              "addmm_sparse_dense: expected strided result tensor, got tensor with layout ",
              r.layout());
  TORCH_CHECK(t.layout() == at::kStrided,
              "addmm_sparse_dense: expected 't' to have strided layout, got tensor with layout ",
              t.layout());
  TORCH_CHECK(sparse.layout() == at::kSparse && dense.layout() == at::kStrided,
              "addmm_sparse_dense: expected either 'mat1' to have sparse layout and 'mat2' to have "
              "strided layout, got 'mat1' with layout ",
              sparse.layout(), " and 'mat2' with layout ", dense.layout());
  TORCH_CHECK(sparse.sparse_dim() == 2, "addmm: matrices expected, got ", sparse.sparse_dim(),
              "D tensor");
  TORCH_CHECK(sparse.dense_dim() == 0, "addmm: scalar values expected, got ", sparse.dense_dim(),
              "D values");
  TORCH_CHECK(dense.dim() == 2, "addmm: matrices expected, got ", dense.dim(), "D tensor");
  const int64_t dim_i = sparse.size(0), dim_j = sparse.size(1), dim_k = dense.size(1);
  TORCH_CHECK(dense.size(0) == dim_j, "addmm: Argument #3 (dense): Expected dim 0 size ", dim_j,
              ", got ", dense.size(0));
  TORCH_CHECK(t.size(0) == dim_i, "addmm: Argument #1 (t): Expected dim 0 size ", dim_i, ", got ",
              t.size(0));
  TORCH_CHECK(t.size(1) == dim_k, "addmm: Argument #1 (t): Expected dim 1 size ", dim_k, ", got ",
              t.size(1));
  if (sparse._nnz() == 0) {
    const Tensor scaled = t.mul(at::scalar_tensor(beta, r.options()));
    r.resize_({dim_i, dim_k});
    return r.copy_(scaled);
  }
  const Tensor values = sparse._values();
  check_dtype(dense, values.scalar_type());
  check_dtype(r, values.scalar_type());
  const Tensor indices = sparse._indices();
  const Tensor base = is_zero(beta)  ? at::zeros({dim_i, dim_k}, r.options())
                      : is_one(beta) ? t
                                     : t.mul(at::scalar_tensor(beta, r.options()));
  // alpha * value, then times the dense row, as the CPU's axpy.
  const Tensor weights = is_one(alpha) ? values : values.mul(alpha);
  const Tensor products = weights.unsqueeze(1) * dense.index_select(0, indices[1]);
  const Tensor sum = base.index_add(0, indices[0], products);
  r.resize_({dim_i, dim_k});
  return r.copy_(sum);
}

Tensor& addmm_out(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                  const Scalar& alpha, Tensor& out) {
  const c10::MaybeOwned<Tensor> t =
      at::expand_size(self, {mat1.size(0), mat2.size(1)}, "addmm_out");
  return addmm_into(out, *t, mat1, mat2, beta, alpha);
}

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
             const Scalar& alpha) {
  const c10::MaybeOwned<Tensor> t =
      at::expand_size(self, {mat1.size(0), mat2.size(1)}, "addmm_out");
  Tensor out = at::empty({0}, t->options());
  return addmm_into(out, *t, mat1, mat2, beta, alpha);
}

// No broadcasting of self, as on the CPU.
Tensor& addmm_(Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
               const Scalar& alpha) {
  return addmm_into(self, self, mat1, mat2, beta, alpha);
}

Tensor mm(const Tensor& self, const Tensor& mat2) { return at::native::_sparse_mm(self, mat2); }

}  // namespace

// Coordinates both operands hold, found by a binary search of self's (coalesced) positions among
// other's; one synchronization for their number. Dense dims broadcast, as on the CPU.
Tensor sparse_times_sparse(const Tensor& self, const Tensor& other) {
  const int64_t sparse_dim = self.sparse_dim();
  TORCH_CHECK(self.dim() == other.dim() && sparse_dim == other.sparse_dim() &&
                  self.sizes().slice(0, sparse_dim).equals(other.sizes().slice(0, sparse_dim)),
              "mul(): expects sparse inputs with equal dimensionality, number of sparse "
              "dimensions, and shape of sparse dimensions");
  const at::DimVector dense =
      at::infer_size_dimvector(self.sizes().slice(sparse_dim), other.sizes().slice(sparse_dim));
  std::vector<int64_t> sizes = self.sizes().slice(0, sparse_dim).vec();
  sizes.insert(sizes.end(), dense.begin(), dense.end());
  const at::ScalarType type = at::result_type(self, other);
  // Marked coalesced when both operands are, as the CPU's result.
  const bool coalesced = self.is_coalesced() && other.is_coalesced();
  const Tensor a = self.coalesce();
  const Tensor b = other.coalesce();
  if (a._nnz() == 0 || b._nnz() == 0) {
    std::vector<int64_t> empty_sizes{0};
    empty_sizes.insert(empty_sizes.end(), dense.begin(), dense.end());
    return sparse_coo(sizes, at::zeros({sparse_dim, 0}, a._indices().options()),
                      at::zeros(empty_sizes, a._values().options().dtype(type)), true);
  }
  const Tensor wanted = linear_indices(a);
  const Tensor held = linear_indices(b);
  const Tensor pos = at::searchsorted(held, wanted).clamp_max(held.size(0) - 1);
  const Tensor both = at::nonzero(held.index_select(0, pos).eq(wanted)).squeeze(1);
  const Tensor values = a._values().index_select(0, both).to(type) *
                        b._values().index_select(0, pos.index_select(0, both)).to(type);
  return sparse_coo(sizes, a._indices().index_select(1, both), values, coalesced);
}

namespace {

// sparse @ sparse: each nonzero (i, j) of self meets other's nonzeros of row j (a contiguous run
// of coalesced other, found by searchsorted); the products at (i, column) are summed by coalesce.
// One synchronization for the number of pairs, one in coalesce.
Tensor sparse_sparse_matmul(const Tensor& self, const Tensor& other) {
  TORCH_CHECK(
      self.dim() == 2 && other.dim() == 2 && self.dense_dim() == 0 && other.dense_dim() == 0,
      "_sparse_sparse_matmul: expected 2-D sparse matrices with scalar values, got ", self.dim(),
      "-D and ", other.dim(), "-D");
  TORCH_CHECK(self.size(1) == other.size(0), "mat1 and mat2 shapes cannot be multiplied (",
              self.size(0), "x", self.size(1), " and ", other.size(0), "x", other.size(1), ")");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "mat1 dtype ", self.scalar_type(),
              " does not match mat2 dtype ", other.scalar_type());
  const std::vector<int64_t> sizes{self.size(0), other.size(1)};
  const Tensor a = self.coalesce();
  const Tensor b = other.coalesce();
  const Tensor a_indices = a._indices();
  const Tensor b_indices = b._indices();
  const Tensor b_rows = b_indices[0].contiguous();
  const Tensor starts = at::searchsorted(b_rows, a_indices[1]);
  const Tensor counts = at::searchsorted(b_rows, a_indices[1], /*out_int32=*/false,
                                         /*right=*/true) -
                        starts;
  const Tensor ends = counts.cumsum(0);
  const int64_t pairs = a._nnz() == 0 ? 0 : ends[-1].item<int64_t>();
  if (pairs == 0) {
    return sparse_coo(sizes, at::zeros({2, 0}, a_indices.options()),
                      at::zeros({0}, a._values().options()), true);
  }
  const Tensor pair = at::arange(pairs, a_indices.options());
  // The nonzero of self each pair comes from, and its place in that nonzero's run of other's.
  const Tensor from_a = at::searchsorted(ends, pair, /*out_int32=*/false, /*right=*/true);
  const Tensor from_b =
      starts.index_select(0, from_a) + pair - (ends - counts).index_select(0, from_a);
  const Tensor indices =
      at::stack({a_indices[0].index_select(0, from_a), b_indices[1].index_select(0, from_b)});
  const Tensor values = a._values().index_select(0, from_a) * b._values().index_select(0, from_b);
  return sparse_coo(sizes, indices, values, false).coalesce();
}

// index_select over a sparse dim: every (nonzero, position in index) pair whose coordinate matches
// (one synchronization for their number), the coordinate replaced by the position, as the CPU's
// result (uncoalesced unless it has at most one nonzero); negative positions count from the end.
// Over a dense dim, the values are selected. One more synchronization checks the range, as the CPU
// does.
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(
      index.dim() == 1 && index.layout() == at::kStrided && index.scalar_type() == at::kLong,
      "index_select() argument index must be 1-D strided (non-sparse) long-tensor.");
  const Tensor idx = index.to(self._indices().device());
  const int64_t size = self.size(dim);
  const Tensor outside = idx.lt(-size).logical_or(idx.ge(size));
  if (outside.any().item<bool>()) {
    TORCH_CHECK_INDEX(
        false, "index_select(): index contains ", idx.masked_select(outside)[0].item<int64_t>(),
        " that is out of range for tensor of size ", self.sizes(), " at dimension ", dim);
  }
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[dim] = idx.numel();
  const Tensor indices = self._indices();
  if (dim >= self.sparse_dim()) {
    const Tensor values = self._values().index_select(dim - self.sparse_dim() + 1, idx);
    return sparse_coo(sizes, indices.clone(), values, self.is_coalesced());
  }
  const Tensor wrapped = at::where(idx.lt(0), idx + size, idx);
  const Tensor matches = at::nonzero(indices[dim].unsqueeze(1).eq(wrapped.unsqueeze(0)));
  const Tensor nonzero = matches.select(1, 0);
  Tensor selected = indices.index_select(1, nonzero);
  selected.select(0, dim).copy_(matches.select(1, 1));
  return sparse_coo(sizes, selected, self._values().index_select(0, nonzero),
                    /*coalesced=*/nonzero.size(0) <= 1);
}

// Reductions over the lines along `dim` of coalesced `c`, broadcast back to each value: along a
// sparse dim, the nonzeros sharing every other sparse coordinate (numbered by unique: one
// synchronization); along a dense dim, that dim of the values.
class Lines {
 public:
  Lines(const Tensor& c, int64_t dim) {
    if (dim >= c.sparse_dim()) {
      value_dim_ = dim - c.sparse_dim() + 1;
      return;
    }
    const Tensor indices = c._indices();
    Tensor line = at::zeros({c._nnz()}, indices.options());
    for (int64_t d = 0; d < c.sparse_dim(); ++d) {
      if (d != dim) line = line * c.size(d) + indices[d];
    }
    auto [lines, of, counts] = at::_unique2(line, /*sorted=*/true, /*return_inverse=*/true,
                                            /*return_counts=*/false);
    of_ = of;
    count_ = lines.size(0);
  }

  Tensor sum(const Tensor& v) const {
    if (value_dim_ > 0) return v.sum(value_dim_, /*keepdim=*/true);
    return per_line(v).index_add(0, of_, v).index_select(0, of_);
  }

  Tensor max(const Tensor& v) const {
    if (value_dim_ > 0) return std::get<0>(v.max(value_dim_, /*keepdim=*/true));
    std::vector<int64_t> view(v.dim(), 1);
    view[0] = v.size(0);
    return per_line(v)
        .scatter_reduce(0, of_.view(view).expand_as(v), v, "amax", /*include_self=*/false)
        .index_select(0, of_);
  }

 private:
  Tensor per_line(const Tensor& v) const {
    std::vector<int64_t> sizes = v.sizes().vec();
    sizes[0] = count_;
    return at::zeros(sizes, v.options());
  }

  int64_t value_dim_ = 0;
  Tensor of_;
  int64_t count_ = 0;
};

// softmax (or log_softmax) over `dim` of the nonzeros only: each line is normalized by its max and
// the sum of its exponentials. Coalesced, as on the CPU.
Tensor sparse_softmax(const Tensor& self, int64_t dim, bool half_to_float, bool log) {
  TORCH_CHECK(!half_to_float, log ? "_sparse_log_softmax" : "_sparse_softmax",
              ": half_to_float is not supported on tpu");
  dim = at::maybe_wrap_dim(dim, self.dim());
  const Tensor c = self.coalesce();
  if (c._nnz() == 0) return sparse_coo(c.sizes(), c._indices().clone(), c._values().clone(), true);
  const Tensor values = c._values();
  const Lines lines(c, dim);
  const Tensor shifted = values - lines.max(values);
  const Tensor exps = shifted.exp();
  const Tensor sums = lines.sum(exps);
  const Tensor out = log ? shifted - sums.log() : exps / sums;
  return sparse_coo(c.sizes(), c._indices().clone(), out, true);
}

Tensor softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  return sparse_softmax(self, dim, half_to_float, false);
}
Tensor log_softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  return sparse_softmax(self, dim, half_to_float, true);
}

// Their gradients, at output's nonzeros (grad_output's values there, zero where it has none):
// out * (g - sum(g * out)) for softmax, g - exp(out) * sum(g) for log_softmax, over each line.
Tensor sparse_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim,
                               bool log) {
  dim = at::maybe_wrap_dim(dim, output.dim());
  const Tensor out = output.coalesce();
  if (out._nnz() == 0) {
    return sparse_coo(out.sizes(), out._indices().clone(), out._values().clone(), true);
  }
  const Tensor g = grad_output.sparse_mask(out)._values();
  const Tensor y = out._values();
  const Lines lines(out, dim);
  const Tensor grad = log ? g - y.exp() * lines.sum(g) : y * (g - lines.sum(g * y));
  return sparse_coo(out.sizes(), out._indices().clone(), grad, true);
}

Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim,
                        const Tensor& /*self*/) {
  return sparse_softmax_backward(grad_output, output, dim, false);
}
Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim,
                            const Tensor& /*self*/) {
  return sparse_softmax_backward(grad_output, output, dim, true);
}

// torch.sparse.sum's gradient: at each nonzero of coalesced self (as the CPU's), grad (made dense:
// it has the summed dims dropped) at the nonzero's kept sparse coordinates, broadcast over the
// summed dense dims.
Tensor sparse_sum_backward(const Tensor& grad, const Tensor& self, at::IntArrayRef dims) {
  const std::bitset<at::dim_bitset_size> summed = at::dim_list_to_bitset(dims, self.dim());
  const Tensor g = grad.is_sparse() ? grad.to_dense() : grad;
  const Tensor c = self.coalesce();
  const Tensor values = c._values();
  const Tensor indices = c._indices();
  c10::List<std::optional<Tensor>> kept;
  for (int64_t d = 0; d < self.sparse_dim(); ++d) {
    if (!summed[d]) kept.push_back(indices[d]);
  }
  // (nnz, kept dense dims), then the summed dense dims put back as 1s.
  Tensor at_nonzeros = kept.empty() ? g.unsqueeze(0) : at::index(g, kept);
  for (int64_t d = self.sparse_dim(); d < self.dim(); ++d) {
    if (summed[d]) at_nonzeros = at_nonzeros.unsqueeze(d - self.sparse_dim() + 1);
  }
  return sparse_coo(self.sizes(), indices.clone(),
                    at_nonzeros.expand(values.sizes()).to(values.scalar_type()).contiguous(), true);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("addmm", addmm);
  m.impl("addmm.out", addmm_out);
  m.impl("addmm_", addmm_);
  // ATen's device-generic kernels, which reach addmm (dense @ sparse through transposes).
  m.impl("mm", mm);
  m.impl("mm.out", TORCH_FN(at::native::_sparse_mm_out));
  m.impl("mv", TORCH_FN(at::native::mv_sparse));
  m.impl("_sparse_sparse_matmul", sparse_sparse_matmul);
  m.impl("index_select", index_select);
  m.impl("_sparse_softmax", softmax);
  m.impl("_sparse_log_softmax", log_softmax);
  m.impl("_sparse_softmax_backward_data", softmax_backward);
  m.impl("_sparse_log_softmax_backward_data", log_softmax_backward);
  m.impl("_sparse_sum_backward", sparse_sum_backward);
}

}  // namespace torch_pjrt::aten
