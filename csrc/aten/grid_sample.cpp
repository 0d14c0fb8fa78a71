// grid_sampler_2d/3d and their backwards (F.grid_sample), composed of native device ops: each
// output point reads a few taps per spatial dim (1 nearest, 2 bilinear, 4 bicubic); the taps of all
// dims combine into one gather (forward) and one scatter_add (input gradient), weighted by the
// product of the per-dim weights. Coordinates follow PyTorch's CPU kernel (unnormalize, then
// border/reflection padding; bicubic pads each tap instead), with its vectorized clip that sends
// NaN to 0. Half and bfloat16 compute in float32.
#include <ATen/ATen.h>
#include <ATen/native/GridSamplerUtils.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;
using at::native::GridSamplerInterpolation;
using at::native::GridSamplerPadding;

constexpr double kCubicA = -0.75;  // PyTorch's bicubic convolution constant

void check_args(const char* op, const Tensor& input, const Tensor& grid, int64_t interpolation,
                int64_t padding, int64_t nd) {
  at::native::check_grid_sampler_common(input, grid);
  if (nd == 2) {
    at::native::check_grid_sampler_2d(input, grid);
  } else {
    at::native::check_grid_sampler_3d(input, grid, interpolation);
  }
  // The CPU kernel reads out of range modes as garbage; refuse them.
  TORCH_CHECK(interpolation >= 0 && interpolation <= 2, op,
              "(): interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got ",
              interpolation);
  TORCH_CHECK(padding >= 0 && padding <= 2, op,
              "(): padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ", padding);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(input.scalar_type()), "\"", op,
                              "\" not implemented for '", input.scalar_type(), "'");
  TORCH_CHECK(grid.scalar_type() == input.scalar_type(), "expected scalar type ",
              input.scalar_type(), " but found ", grid.scalar_type());
}

// Clip to [0, size - 1], NaN to 0 (the CPU's vectorized clip); grad: 1 strictly inside.
std::pair<Tensor, Tensor> clip(const Tensor& c, int64_t size) {
  Tensor clipped = at::where(c.isnan(), 0.0, c.clamp(0, size - 1));
  return {clipped, ((c > 0) & (c < size - 1)).to(c.scalar_type())};
}

// PyTorch's border/reflection padding of source coordinate `c` in a dim of `size`, with its
// derivative.
std::pair<Tensor, Tensor> pad(const Tensor& c, int64_t size, GridSamplerPadding padding,
                              bool align_corners) {
  if (padding == GridSamplerPadding::Zeros) return {c, at::ones_like(c)};
  if (padding == GridSamplerPadding::Border) return clip(c, size);
  if (align_corners && size == 1) return {at::zeros_like(c), at::zeros_like(c)};
  // Reflect about [min, min + span]: the pixel centres' range, or the pixels' edges.
  const double min = align_corners ? 0.0 : -0.5;
  const double span = align_corners ? size - 1 : size;
  const Tensor shifted = c - min;
  const Tensor sign = at::where(shifted < 0, -1.0, 1.0).to(c.scalar_type());
  const Tensor in = shifted.abs();
  const Tensor extra = in.fmod(span);
  const Tensor even = (in / span).floor().fmod(2) == 0;
  const Tensor reflected = at::where(even, extra + min, span - extra + min);
  auto [clipped, clip_grad] = clip(reflected, size);
  return {clipped, at::where(even, sign, -sign) * clip_grad};
}

Tensor unnormalize(const Tensor& g, int64_t size, bool align_corners) {
  return align_corners ? (g + 1) * ((size - 1) / 2.0) : ((g + 1) * size - 1) / 2.0;
}

// The taps of one spatial dim: coordinates, weights and d(weight)/d(coordinate), each [N, T, P].
struct Taps {
  Tensor coord, weight, dweight, valid;
  Tensor grad_mult;  // d(source coordinate)/d(grid coordinate), [N, P]
};

Taps dim_taps(const Tensor& g, int64_t size, GridSamplerInterpolation interpolation,
              GridSamplerPadding padding, bool align_corners) {
  const double unnorm_grad = align_corners ? (size - 1) / 2.0 : size / 2.0;
  const Tensor source = unnormalize(g, size, align_corners);
  Taps t;
  if (interpolation == GridSamplerInterpolation::Bicubic) {
    // Bicubic pads each tap, not the source coordinate.
    const Tensor x0 = source.floor();
    const Tensor f = source - x0;
    std::vector<Tensor> coords;
    for (int i = -1; i <= 2; ++i) coords.push_back(pad(x0 + i, size, padding, align_corners).first);
    // Cubic convolution of distances 1 + f, f, 1 - f, 2 - f and their derivatives in f.
    const double a = kCubicA;
    auto near = [a](const Tensor& x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
    auto far = [a](const Tensor& x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
    auto dnear = [a](const Tensor& x) { return (3 * (a + 2) * x - 2 * (a + 3)) * x; };
    auto dfar = [a](const Tensor& x) { return (3 * a * x - 10 * a) * x + 8 * a; };
    t.coord = at::stack(coords, 1);
    t.weight = at::stack({far(f + 1), near(f), near(1 - f), far(2 - f)}, 1);
    t.dweight = at::stack({dfar(f + 1), dnear(f), -dnear(1 - f), -dfar(2 - f)}, 1);
    t.grad_mult = at::full_like(g, unnorm_grad);
  } else {
    auto [c, pad_grad] = pad(source, size, padding, align_corners);
    t.grad_mult = pad_grad * unnorm_grad;
    if (interpolation == GridSamplerInterpolation::Nearest) {
      t.coord = c.round().unsqueeze(1);  // half to even, as the CPU's nearbyint
      t.weight = at::ones_like(t.coord);
      t.dweight = at::zeros_like(t.coord);
    } else {
      const Tensor x0 = c.floor();
      const Tensor f = c - x0;
      t.coord = at::stack({x0, x0 + 1}, 1);
      t.weight = at::stack({1 - f, f}, 1);
      t.dweight = at::stack({at::full_like(f, -1), at::ones_like(f)}, 1);
    }
  }
  t.valid = (t.coord >= 0) & (t.coord < size);  // false for NaN
  return t;
}

// All taps of all dims for input [N, C, spatial...] and grid [N, out..., nd], flattened to
// T = prod(taps per dim) per output point; P output points.
struct Sampling {
  int64_t n, c, p, nd;
  std::vector<Taps> dims;  // input spatial dim order (d, h, w)
  Tensor index;            // [N, C, T * P] flat spatial index, 0 where invalid
  Tensor valid;            // [N, T..., P]
  // [N, T..., P], not masked: a NaN coordinate's NaN weight times the 0 read makes NaN, as on
  // the CPU.
  Tensor weight;

  // Per-dim tensor [N, T, P] viewed as [N, 1.., T, 1.., P] at spatial dim s.
  Tensor spread(const Tensor& t, int64_t s) const {
    std::vector<int64_t> shape(nd + 2, 1);
    shape[0] = n;
    shape[1 + s] = t.size(1);
    shape[nd + 1] = p;
    return t.reshape(shape);
  }
  // The tap dims of a [N, T..., P] tensor, or of [N, C, T..., P] with `first` 2.
  std::vector<int64_t> tap_dims(int64_t first) const {
    std::vector<int64_t> d;
    for (int64_t s = 0; s < nd; ++s) d.push_back(first + s);
    return d;
  }
};

Sampling sample(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding,
                bool align_corners) {
  Sampling sm;
  sm.nd = input.dim() - 2;
  sm.n = input.size(0);
  sm.c = input.size(1);
  sm.p = grid.numel() / std::max<int64_t>(1, sm.n * sm.nd);
  const Tensor g = grid.reshape({sm.n, sm.p, sm.nd});
  Tensor flat;
  int64_t stride = 1;
  for (int64_t s = sm.nd - 1; s >= 0; --s) {
    // grid's last dim holds (x, y[, z]): the input's spatial dims from the last.
    const int64_t size = input.size(2 + s);
    sm.dims.insert(sm.dims.begin(),
                   dim_taps(g.select(2, sm.nd - 1 - s), size,
                            static_cast<GridSamplerInterpolation>(interpolation),
                            static_cast<GridSamplerPadding>(padding), align_corners));
    stride *= size;
  }
  for (int64_t s = 0; s < sm.nd; ++s) {
    const Tensor v = sm.spread(sm.dims[s].valid, s);
    const Tensor w = sm.spread(sm.dims[s].weight, s);
    sm.valid = s == 0 ? v : sm.valid & v;
    sm.weight = s == 0 ? w : sm.weight * w;
  }
  stride = 1;
  for (int64_t s = sm.nd - 1; s >= 0; --s) {
    const Tensor coord = at::where(sm.valid, sm.spread(sm.dims[s].coord, s), 0.0).to(at::kLong);
    flat = s == sm.nd - 1 ? coord : flat + coord * stride;
    stride *= input.size(2 + s);
  }
  sm.index = flat.reshape({sm.n, 1, -1}).expand({sm.n, sm.c, flat.numel() / sm.n});
  return sm;
}

at::ScalarType compute_type(const Tensor& t) {
  return at::isReducedFloatingType(t.scalar_type()) ? at::kFloat : t.scalar_type();
}

std::vector<int64_t> output_sizes(const Tensor& input, const Tensor& grid) {
  std::vector<int64_t> sizes{input.size(0), input.size(1)};
  for (int64_t i = 1; i < grid.dim() - 1; ++i) sizes.push_back(grid.size(i));
  return sizes;
}

// Input values at the taps, [N, C, T..., P], 0 where invalid.
Tensor gather_taps(const Tensor& x, const Sampling& sm) {
  std::vector<int64_t> shape{sm.n, sm.c};
  for (const Taps& t : sm.dims) shape.push_back(t.coord.size(1));
  shape.push_back(sm.p);
  const Tensor vals = x.reshape({sm.n, sm.c, -1}).gather(2, sm.index).reshape(shape);
  return at::where(sm.valid.unsqueeze(1), vals, 0.0);
}

Tensor grid_sampler(const char* op, int64_t nd, const Tensor& input, const Tensor& grid,
                    int64_t interpolation, int64_t padding, bool align_corners) {
  check_args(op, input, grid, interpolation, padding, nd);
  const auto sizes = output_sizes(input, grid);
  if (c10::multiply_integers(sizes) == 0) return at::empty(sizes, input.options());
  OneOp one;
  const auto ct = compute_type(input);
  const Tensor x = input.to(ct);
  const Sampling sm = sample(x, grid.to(ct), interpolation, padding, align_corners);
  Tensor out = (gather_taps(x, sm) * sm.weight.unsqueeze(1)).sum(sm.tap_dims(2));
  out = out.reshape(sizes).to(input.scalar_type());
  one.finish();
  return out;
}

std::tuple<Tensor, Tensor> grid_sampler_backward(const char* op, int64_t nd,
                                                 const Tensor& grad_output, const Tensor& input,
                                                 const Tensor& grid, int64_t interpolation,
                                                 int64_t padding, bool align_corners,
                                                 std::array<bool, 2> output_mask) {
  check_args(op, input, grid, interpolation, padding, nd);
  const auto sizes = output_sizes(input, grid);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(sizes), op,
              "(): expected grad_output of sizes ", at::IntArrayRef(sizes), " but got ",
              grad_output.sizes());
  const auto contiguous = at::MemoryFormat::Contiguous;
  Tensor grad_input = output_mask[0] ? at::zeros_like(input, contiguous) : Tensor();
  Tensor grad_grid = at::zeros_like(grid, contiguous);
  const bool grid_grad = interpolation != static_cast<int64_t>(GridSamplerInterpolation::Nearest);
  if (c10::multiply_integers(sizes) == 0 || (!output_mask[0] && !grid_grad)) {
    return {grad_input, grad_grid};
  }
  OneOp one;
  const auto ct = compute_type(input);
  const Tensor x = input.to(ct);
  const Sampling sm = sample(x, grid.to(ct), interpolation, padding, align_corners);
  std::vector<int64_t> go_shape{sm.n, sm.c};
  go_shape.insert(go_shape.end(), sm.nd, 1);
  go_shape.push_back(sm.p);
  const Tensor go = grad_output.to(ct).reshape(go_shape);
  if (output_mask[0]) {
    const Tensor contrib = at::where(sm.valid.unsqueeze(1), go * sm.weight.unsqueeze(1), 0.0)
                               .reshape({sm.n, sm.c, -1});
    grad_input = at::zeros({sm.n, sm.c, x.numel() / std::max<int64_t>(1, sm.n * sm.c)}, x.options())
                     .scatter_add(2, sm.index, contrib)
                     .reshape(input.sizes())
                     .to(input.scalar_type());
  }
  if (grid_grad) {
    // d(out)/d(coordinate of dim s): the tap weights with dim s's replaced by its derivative.
    const Tensor vg = (gather_taps(x, sm) * go).sum(1);  // [N, T..., P]
    std::vector<Tensor> coords(sm.nd);
    for (int64_t s = 0; s < sm.nd; ++s) {
      Tensor w = sm.spread(sm.dims[s].dweight, s);
      for (int64_t o = 0; o < sm.nd; ++o) {
        if (o != s) w = w * sm.spread(sm.dims[o].weight, o);
      }
      coords[sm.nd - 1 - s] = (vg * w).sum(sm.tap_dims(1)) * sm.dims[s].grad_mult;
    }
    grad_grid = at::stack(coords, -1).reshape(grid.sizes()).to(grid.scalar_type());
  }
  one.finish();
  return {grad_input, grad_grid};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", [](const Tensor& input, const Tensor& grid, int64_t interpolation,
                               int64_t padding, bool align_corners) {
    return grid_sampler("grid_sampler_2d", 2, input, grid, interpolation, padding, align_corners);
  });
  m.impl("grid_sampler_3d", [](const Tensor& input, const Tensor& grid, int64_t interpolation,
                               int64_t padding, bool align_corners) {
    return grid_sampler("grid_sampler_3d", 3, input, grid, interpolation, padding, align_corners);
  });
  m.impl("grid_sampler_2d_backward", [](const Tensor& grad_output, const Tensor& input,
                                        const Tensor& grid, int64_t interpolation, int64_t padding,
                                        bool align_corners, std::array<bool, 2> output_mask) {
    return grid_sampler_backward("grid_sampler_2d_backward", 2, grad_output, input, grid,
                                 interpolation, padding, align_corners, output_mask);
  });
  m.impl("grid_sampler_3d_backward", [](const Tensor& grad_output, const Tensor& input,
                                        const Tensor& grid, int64_t interpolation, int64_t padding,
                                        bool align_corners, std::array<bool, 2> output_mask) {
    return grid_sampler_backward("grid_sampler_3d_backward", 3, grad_output, input, grid,
                                 interpolation, padding, align_corners, output_mask);
  });
}

}  // namespace torch_pjrt::aten
