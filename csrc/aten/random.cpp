// Random ops on "tpu". Each call takes (seed, offset) from the device generator under its mutex,
// passes them to the program as a small uploaded i64[2] operand (so one compiled program serves
// every call of a shape), and advances the offset past the words the op consumes. PyTorch's
// distribution templates do the argument checks, so messages match the CPU's.
#include "lowering/random.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/TensorFactories.h>
#include <torch/library.h>

#include <mutex>

#include "aten/device_checks.h"
#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "aten/trace.h"
#include "device/generator.h"
#include "device/runtime_state.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;
using Gen = std::optional<at::Generator>;

// Records random op `op` with the generator state prepended to `inputs`.
std::vector<graph::DataPtr> record_random(const graph::OpDef& op,
                                          std::vector<graph::DataPtr> inputs, graph::Attrs attrs,
                                          std::vector<hlo::TensorType> outs, int device,
                                          const Gen& gen) {
  const int64_t words = lowering::words(op, attrs, outs);
  auto* g = at::get_generator_or_default<device::Generator>(
      gen, device::default_generator(static_cast<c10::DeviceIndex>(device)));
  int64_t state[2];
  trace::draw_random_state(g, words, state);
  auto buffer = device::client().buffer_from_host(state, hlo::ElementType::I64, {2}, device);
  graph::DataPtr leaf = graph::from_buffer(std::move(buffer));
  trace::note_random(
      leaf, words,
      !gen.has_value() || g == at::check_generator<device::Generator>(device::default_generator(
                                   static_cast<c10::DeviceIndex>(device))));
  inputs.insert(inputs.begin(), std::move(leaf));
  return graph::record(op, std::move(inputs), std::move(attrs), std::move(outs), device);
}

// Fills `self` (any strides) with one random op's output.
void fill_random(const Tensor& self, const graph::OpDef& op, graph::Attrs attrs,
                 std::vector<graph::DataPtr> inputs, const Gen& gen,
                 const graph::CheckPtr& check = nullptr) {
  if (self.numel() == 0) return;
  const int device = device_index(self);
  auto v = record_random(op, std::move(inputs), std::move(attrs),
                         {tensor_type(self.scalar_type(), self.sizes())}, device, gen);
  graph::depends_on(v[0], check);
  write(self, v[0]);
  finish_op();
}

// Kernels for PyTorch's distribution templates (the RNG parameter is unused).
template <typename RNG>
struct UniformKernel {
  void operator()(at::TensorIteratorBase& iter, double from, double to, Gen gen) {
    fill_random(iter.tensor(0), lowering::kUniform, {{}, {from, to}}, {}, gen);
  }
};

template <typename RNG>
struct NormalKernel {
  void operator()(const Tensor& self, double mean, double std, Gen gen) {
    TORCH_CHECK(at::isFloatingType(self.scalar_type()),
                "\"normal_kernel_cpu\" not implemented for '", at::toString(self.scalar_type()),
                "'");
    at::assert_no_internal_overlap(self);  // the check the CPU's TensorIterator makes
    fill_random(self, lowering::kNormal, {{}, {mean, std}}, {}, gen);
  }
};

template <typename RNG>
struct ExponentialKernel {
  void operator()(at::TensorIteratorBase& iter, double lambda, Gen gen) {
    const Tensor& self = iter.tensor(0);
    TORCH_CHECK(
        at::isFloatingType(self.scalar_type()),
        "Exponential distribution is a continuous probability distribution. dtype must be a "
        "floating point but you specified ",
        self.dtype());
    fill_random(self, lowering::kExponential, {{}, {lambda}}, {}, gen);
  }
};

template <typename RNG>
struct LogNormalKernel {
  void operator()(at::TensorIteratorBase& iter, double mean, double std, Gen gen) {
    fill_random(iter.tensor(0), lowering::kLogNormal, {{}, {mean, std}}, {}, gen);
  }
};

template <typename RNG>
struct CauchyKernel {
  void operator()(at::TensorIteratorBase& iter, double median, double sigma, Gen gen) {
    fill_random(iter.tensor(0), lowering::kCauchy, {{}, {median, sigma}}, {}, gen);
  }
};

template <typename RNG>
struct GeometricKernel {
  void operator()(at::TensorIteratorBase& iter, double p, Gen gen) {
    fill_random(iter.tensor(0), lowering::kGeometric, {{}, {p}}, {}, gen);
  }
};

// random_() without bounds draws from [0, 2^digits] for floats, [0, max] for integers, {0, 1}
// for bool: the range of from = 0.
uint64_t default_range(at::ScalarType t) {
  switch (t) {
    case at::kBool:
      return 2;
    case at::kHalf:
      return (uint64_t{1} << 11) + 1;
    case at::kBFloat16:
      return (uint64_t{1} << 8) + 1;
    case at::kFloat:
      return (uint64_t{1} << 24) + 1;
    case at::kDouble:
      return (uint64_t{1} << 53) + 1;
    default: {
      uint64_t range = 0;
      AT_DISPATCH_INTEGRAL_TYPES(t, "random_", [&] {
        range = static_cast<uint64_t>(std::numeric_limits<scalar_t>::max()) + 1;
      });
      return range;
    }
  }
}

template <typename RNG>
struct RandomKernel {
  void operator()(at::TensorIteratorBase& iter, Gen gen) {
    const Tensor& self = iter.tensor(0);
    fill_random(self, lowering::kRandomInt,
                {{0, static_cast<int64_t>(default_range(self.scalar_type()))}, {}}, {}, gen);
  }
};

template <typename RNG>
struct RandomFromToKernel {
  void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t from, Gen gen) {
    fill_random(iter.tensor(0), lowering::kRandomInt, {{from, static_cast<int64_t>(range)}, {}}, {},
                gen);
  }
  // The full 64-bit range.
  void operator()(at::TensorIteratorBase& iter, Gen gen) {
    fill_random(iter.tensor(0), lowering::kRandomInt, {{0, 0}, {}}, {}, gen);
  }
};

template <typename RNG>
struct BernoulliKernel {
  void operator()(const Tensor& self, double p, Gen gen) {
    fill_random(self, lowering::kBernoulli, {{}, {p}}, {}, gen);
  }
  void operator()(const Tensor& self, const Tensor& p, Gen gen) {
    const int device = common_device("bernoulli_", {&self, &p});
    (void)p.expand(self.sizes());  // PyTorch's broadcast check and message
    // Probabilities outside [0, 1] raise the CPU's error (a device-side assert on CUDA).
    auto check = check_unit_interval(
        "bernoulli", p,
        {graph::CheckKind::Runtime,
         "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
         "be improved?  If so, please report an enhancement request to PyTorch.)",
         "", false});
    fill_random(
        self, lowering::kBernoulli, {},
        {operand(p, at::isFloatingType(p.scalar_type()) ? p.scalar_type() : at::kFloat, device)},
        gen, check);
  }
};

namespace t = at::native::templates;
using R = device::Generator;

Tensor& uniform_(Tensor& self, double from, double to, Gen gen) {
  return t::uniform_impl_<UniformKernel, R>(self, from, to, gen);
}
Tensor& normal_(Tensor& self, double mean, double std, Gen gen) {
  return t::normal_impl_<NormalKernel, R>(self, mean, std, gen);
}
Tensor normal_tt(const Tensor& mean, const Tensor& std, Gen gen) {
  return t::normal_impl<NormalKernel, R>(mean, std, gen);
}
Tensor normal_tf(const Tensor& mean, double std, Gen gen) {
  return t::normal_impl<NormalKernel, R>(mean, std, gen);
}
Tensor normal_ft(double mean, const Tensor& std, Gen gen) {
  return t::normal_impl<NormalKernel, R>(mean, std, gen);
}
Tensor& normal_tt_out(const Tensor& mean, const Tensor& std, Gen gen, Tensor& out) {
  return t::normal_out_impl<NormalKernel, R>(out, mean, std, gen);
}
Tensor& normal_tf_out(const Tensor& mean, double std, Gen gen, Tensor& out) {
  return t::normal_out_impl<NormalKernel, R>(out, mean, std, gen);
}
Tensor& normal_ft_out(double mean, const Tensor& std, Gen gen, Tensor& out) {
  return t::normal_out_impl<NormalKernel, R>(out, mean, std, gen);
}
Tensor& exponential_(Tensor& self, double lambda, Gen gen) {
  return t::exponential_impl_<ExponentialKernel, R>(self, lambda, gen);
}
Tensor& log_normal_(Tensor& self, double mean, double std, Gen gen) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "\"log_normal_cpu\" not implemented for '",
              at::toString(self.scalar_type()), "'");
  return t::log_normal_impl_<LogNormalKernel, R>(self, mean, std, gen);
}
Tensor& cauchy_(Tensor& self, double median, double sigma, Gen gen) {
  return t::cauchy_impl_<CauchyKernel, R>(self, median, sigma, gen);
}
Tensor& geometric_(Tensor& self, double p, Gen gen) {
  return t::geometric_impl_<GeometricKernel, R>(self, p, gen);
}
Tensor& random_(Tensor& self, Gen gen) { return t::random_impl<RandomKernel, R>(self, gen); }
Tensor& random_from(Tensor& self, int64_t from, std::optional<int64_t> to, Gen gen) {
  return t::random_from_to_impl<RandomFromToKernel, R>(self, from, to, gen);
}
Tensor& random_to(Tensor& self, int64_t to, Gen gen) { return random_from(self, 0, to, gen); }
Tensor& bernoulli_float(Tensor& self, double p, Gen gen) {
  return t::bernoulli_impl_<BernoulliKernel, R>(self, p, gen);
}
Tensor& bernoulli_tensor(Tensor& self, const Tensor& p, Gen gen) {
  return t::bernoulli_impl_<BernoulliKernel, R>(self, p, gen);
}
Tensor& bernoulli_out(const Tensor& self, Gen gen, Tensor& out) {
  return t::bernoulli_out_impl<BernoulliKernel, R>(out, self, gen);
}

// Sorting random 64-bit keys; n is known on the host, so no synchronization.
Tensor& randperm_out(int64_t n, Gen gen, Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  TORCH_CHECK(!gen.has_value() || out.device() == gen->device(), "Expected a '", out.device(),
              "' generator device but found '", gen->device(), "'");
  at::native::check_supported_max_int_with_precision(n, out);
  out.resize_({n});
  if (n == 0) return out;
  fill_random(out, lowering::kRandperm, {}, {}, gen);
  return out;
}

std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          std::optional<bool> train) {
  if (input.numel() == 0) return {input, at::empty_like(input)};
  const auto bool_options = input.options().dtype(at::kBool);
  if (train.has_value() && !*train) return {input.clone(), at::ones_like(input, bool_options)};
  const double p1m = 1. - p;
  if (!at::isFloatingType(input.scalar_type())) {
    // As the CPU does it (its mul_ rejects the float scale for integer inputs).
    Tensor mask = at::empty_like(input, bool_options);
    mask.bernoulli_(p1m);
    return {input.mul(mask).mul_(p1m == 0 ? 0. : 1. / p1m), mask};
  }
  TORCH_CHECK(0 <= p1m && p1m <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p1m);
  const int device = common_device("native_dropout", {&input});
  const std::vector<int64_t> sizes = input.sizes().vec();
  auto v = record_random(lowering::kDropout, {read(input)}, {{}, {p}},
                         {tensor_type(input.scalar_type(), sizes), tensor_type(at::kBool, sizes)},
                         device, std::nullopt);
  Tensor out = make_tensor(v[0], input.scalar_type(), device);
  Tensor mask = make_tensor(v[1], at::kBool, device);
  finish_op();
  return {out, mask};
}

Tensor native_dropout_backward(const Tensor& grad, const Tensor& mask, double scale) {
  if (!at::isFloatingType(grad.scalar_type()) || mask.scalar_type() != at::kBool) {
    return grad * mask * scale;
  }
  return to_new(elementwise(lowering::kDropoutBackward, "native_dropout_backward", {&grad, &mask},
                            grad.scalar_type(), {{}, {scale}}));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("uniform_", uniform_);
  m.impl("normal_", normal_);
  m.impl("normal.Tensor_Tensor", normal_tt);
  m.impl("normal.Tensor_float", normal_tf);
  m.impl("normal.float_Tensor", normal_ft);
  m.impl("normal.Tensor_Tensor_out", normal_tt_out);
  m.impl("normal.Tensor_float_out", normal_tf_out);
  m.impl("normal.float_Tensor_out", normal_ft_out);
  m.impl("exponential_", exponential_);
  m.impl("log_normal_", log_normal_);
  m.impl("cauchy_", cauchy_);
  m.impl("geometric_", geometric_);
  m.impl("random_", random_);
  m.impl("random_.from", random_from);
  m.impl("random_.to", random_to);
  m.impl("bernoulli_.float", bernoulli_float);
  m.impl("bernoulli_.Tensor", bernoulli_tensor);
  m.impl("bernoulli.out", bernoulli_out);
  m.impl("randperm.generator_out", randperm_out);
  m.impl("native_dropout", native_dropout);
  m.impl("native_dropout_backward", native_dropout_backward);
}

}  // namespace torch_pjrt::aten
