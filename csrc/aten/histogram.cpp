// torch.histogram and the pieces torch.histogramdd is composed of (_histogramdd_bin_edges,
// _histogramdd_from_bin_cts, _histogramdd_from_bin_tensors) on the device, as compositions of its
// own ops: edges as the CPU's linspace computes them (from the data's range when none is given),
// each element's bin by searchsorted over the edges (an element on the last edge counts in the last
// bin; elements outside are not counted), counts or weights summed by scatter_add. No host read.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// The input as [N, D] rows (histogram: D = 1 over every element).
Tensor rows(const Tensor& self, int64_t dims) { return self.reshape({-1, dims}); }

// The weight's shape must be the input's without its innermost dimension (`self` and `weight` as
// the CPU's message shows them: histogram's as [N, 1] and [N]).
void check_weight(const Tensor& self, const std::optional<Tensor>& weight) {
  if (!weight || !weight->defined()) return;
  TORCH_CHECK(weight->sizes() == self.sizes().slice(0, self.dim() - 1),
              "torch.histogramdd: if weight tensor is provided it should have the same shape as "
              "the input tensor excluding its innermost dimension, but got input with shape ",
              self.sizes(), " and weight with shape ", weight->sizes());
}

// PyTorch's checks of bin counts and ranges, run by the CPU kernel on an empty input of the same
// dtype.
void check_bin_counts(const Tensor& self, int64_t dims, at::IntArrayRef bins,
                      std::optional<at::ArrayRef<double>> range) {
  const Tensor empty = at::empty({0, dims}, self.options().device(at::kCPU));
  at::_histogramdd_from_bin_cts(empty, bins, range, std::nullopt, false);
}

// Edges [bins + 1] from lo to hi (0-d tensors of the input's dtype), as the CPU's linspace: the
// first half stepped up from lo, the second half down from hi.
Tensor linear_edges(const Tensor& lo, const Tensor& hi, int64_t bins) {
  const Tensor i = at::arange(bins + 1, lo.options());
  const Tensor step = (hi - lo) / static_cast<double>(bins);
  return at::where(i < static_cast<double>((bins + 1) / 2), lo + step * i,
                   hi - step * (static_cast<double>(bins) - i));
}

// Per dimension, the edges of `bins[d]` equal bins over range, else over the data's range; a
// range of one value widens by 0.5 either side, as the CPU.
std::vector<Tensor> bin_edges(const Tensor& x, at::IntArrayRef bins,
                              std::optional<at::ArrayRef<double>> range) {
  std::vector<Tensor> edges;
  for (int64_t d = 0; d < x.size(1); ++d) {
    Tensor lo;
    Tensor hi;
    if (range) {
      lo = at::scalar_tensor((*range)[2 * d], x.options());
      hi = at::scalar_tensor((*range)[2 * d + 1], x.options());
    } else if (x.size(0) > 0) {
      lo = x.select(1, d).min();
      hi = x.select(1, d).max();
    } else {
      lo = at::zeros({}, x.options());
      hi = at::zeros({}, x.options());
    }
    const Tensor same = lo == hi;
    edges.push_back(
        linear_edges(at::where(same, lo - 0.5, lo), at::where(same, hi + 0.5, hi), bins[d]));
  }
  return edges;
}

// The histogram of rows `x` [N, D] over `edges` (one sorted edge tensor per dimension).
Tensor count(const Tensor& x, const std::vector<Tensor>& edges, const std::optional<Tensor>& weight,
             bool density) {
  const int64_t n = x.size(0);
  std::vector<int64_t> shape;
  int64_t total = 1;
  for (const Tensor& e : edges) {
    shape.push_back(e.size(0) - 1);
    total *= e.size(0) - 1;
  }
  Tensor flat = at::zeros({n}, x.options().dtype(at::kLong));
  Tensor inside = at::ones({n}, x.options().dtype(at::kBool));
  for (size_t d = 0; d < edges.size(); ++d) {
    const Tensor& e = edges[d];
    const int64_t last = e.size(0) - 2;
    const Tensor v = x.select(1, static_cast<int64_t>(d)).contiguous();
    const Tensor pos = (at::searchsorted(e, v, /*out_int32=*/false, /*right=*/true) - 1)
                           .clamp(0, std::max<int64_t>(last, 0));
    inside = inside & (v >= e[0]) & (v <= e[-1]) & (last >= 0);
    flat = flat * shape[d] + pos;
  }
  const Tensor target = at::where(inside, flat, total);
  const Tensor w = weight && weight->defined() ? weight->reshape({-1}).to(x.scalar_type())
                                               : at::ones({n}, x.options());
  Tensor hist = at::zeros({total + 1}, x.options()).scatter_add(0, target, w).narrow(0, 0, total);
  hist = hist.reshape(shape);
  if (density) {
    hist = hist / hist.sum();
    for (size_t d = 0; d < edges.size(); ++d) {
      std::vector<int64_t> view(edges.size(), 1);
      view[d] = shape[d];
      hist = hist / edges[d].diff().reshape(view);
    }
  }
  return hist;
}

std::vector<Tensor> histogramdd_bin_edges(const Tensor& self, at::IntArrayRef bins,
                                          std::optional<at::ArrayRef<double>> range,
                                          const std::optional<Tensor>& weight, bool density) {
  const int64_t dims = self.size(-1);
  check_weight(self, weight);
  check_bin_counts(self, dims, bins, range);
  return bin_edges(rows(self, dims), bins, range);
}

Tensor histogramdd_from_bin_cts(const Tensor& self, at::IntArrayRef bins,
                                std::optional<at::ArrayRef<double>> range,
                                const std::optional<Tensor>& weight, bool density) {
  const int64_t dims = self.size(-1);
  check_weight(self, weight);
  check_bin_counts(self, dims, bins, range);
  const Tensor x = rows(self, dims);
  return count(x, bin_edges(x, bins, range), weight, density);
}

Tensor histogramdd_from_bin_tensors(const Tensor& self, at::TensorList bins,
                                    const std::optional<Tensor>& weight, bool density) {
  const int64_t dims = self.size(-1);
  check_weight(self, weight);
  TORCH_CHECK(static_cast<int64_t>(bins.size()) == dims, "torch.histogramdd(): expected ", dims,
              " sequences of bin edges for each of the ", dims,
              " dimensions of the input, but got ", bins.size(), " sequences");
  std::vector<Tensor> edges;
  for (size_t d = 0; d < bins.size(); ++d) {
    TORCH_CHECK(bins[d].dtype() == self.dtype(),
                "torch.histogramdd: input tensor and bins "
                "tensors should have the same dtype, but got input ",
                self.dtype(), " and bins for dimension ", d, " ", bins[d].dtype());
    TORCH_CHECK(bins[d].dim() == 1, "torch.histogramdd(): bins tensor should have one dimension,",
                " but got ", bins[d].dim(), " dimensions in the bins tensor for dimension ", d);
    TORCH_CHECK(bins[d].numel() > 0,
                "torch.histogramdd(): bins tensor should have at least 1 "
                "element, but got ",
                bins[d].numel(), " elements in the bins tensor for dimension ", d);
    edges.push_back(bins[d].contiguous());
  }
  return count(rows(self, dims), edges, weight, density);
}

std::tuple<Tensor, Tensor> histogram_bin_ct(const Tensor& self, int64_t bins,
                                            std::optional<at::ArrayRef<double>> range,
                                            const std::optional<Tensor>& weight, bool density) {
  const Tensor x = rows(self, 1);
  check_weight(
      x, weight && weight->defined() ? std::optional<Tensor>(weight->reshape({-1})) : std::nullopt);
  check_bin_counts(self, 1, {bins}, range);
  std::vector<Tensor> edges = bin_edges(x, {bins}, range);
  return {count(x, edges, weight, density), edges[0]};
}

std::tuple<Tensor, Tensor> histogram_bins_tensor(const Tensor& self, const Tensor& bins,
                                                 const std::optional<Tensor>& weight,
                                                 bool density) {
  const std::optional<Tensor> flat =
      weight && weight->defined() ? std::optional<Tensor>(weight->reshape({-1})) : std::nullopt;
  return {histogramdd_from_bin_tensors(self.reshape({-1, 1}), {bins}, flat, density), bins.clone()};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_histogramdd_bin_edges", histogramdd_bin_edges);
  m.impl("_histogramdd_from_bin_cts", histogramdd_from_bin_cts);
  m.impl("_histogramdd_from_bin_tensors", histogramdd_from_bin_tensors);
  m.impl("histogram.bin_ct", histogram_bin_ct);
  m.impl("histogram.bins_tensor", histogram_bins_tensor);
}

}  // namespace torch_pjrt::aten
