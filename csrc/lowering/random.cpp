// Random ops in plain StableHLO integer arithmetic: Philox4x32-10 (Salmon et al., SC'11) on i64
// lanes holding 32-bit values, then exact transforms of the words into each distribution.
//
// stablehlo.rng_bit_generator needs a ui64 state (XLA rejects i64), which hlo::ElementType cannot
// spell; this is the algorithm behind its PHILOX, counter-based, so the offset selects the blocks.
#include "lowering/random.h"

#include <cmath>
#include <limits>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Builder;
using hlo::ElementType;
using hlo::Value;
using Dims = std::vector<int64_t>;

constexpr int64_t kMask32 = 0xFFFFFFFFLL;

Value constant(Builder& b, int64_t v, const Dims& dims) {
  Value c = b.constant_int(v, ElementType::I64);
  return dims.empty() ? c : b.broadcast_in_dim(c, dims, {});
}

Value binary_c(Builder& b, const char* op, Value x, int64_t c) {
  return b.binary(op, x, constant(b, c, x.type.dims));
}

// Words 0..n-1 of the stream (n > 0), as i64 values in [0, 2^32).
Value philox_words(Builder& b, Value state, int64_t n) {
  const int64_t blocks = (n + 3) / 4;
  const Dims d{blocks};
  Value seed = b.reshape(b.slice(state, {0}, {1}, {1}), {});
  Value first = b.reshape(b.slice(state, {1}, {2}, {1}), {});
  auto lanes = [&](Value scalar) { return b.broadcast_in_dim(scalar, d, {}); };
  Value k0 = lanes(binary_c(b, "and", seed, kMask32));
  Value k1 = lanes(binary_c(b, "shift_right_logical", seed, 32));
  Value counter = b.binary("add", lanes(first), b.iota({ElementType::I64, d}, 0));
  Value c0 = binary_c(b, "and", counter, kMask32);
  Value c1 = binary_c(b, "shift_right_logical", counter, 32);
  Value c2 = constant(b, 0, d), c3 = c2;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = binary_c(b, "and", binary_c(b, "add", k0, 0x9E3779B9LL), kMask32);
      k1 = binary_c(b, "and", binary_c(b, "add", k1, 0xBB67AE85LL), kMask32);
    }
    // 32x32 -> 64-bit products; i64 multiplication wraps, so the bit pattern is exact.
    Value p0 = binary_c(b, "multiply", c0, 0xD2511F53LL);
    Value p1 = binary_c(b, "multiply", c2, 0xCD9E8D57LL);
    Value n0 = b.binary("xor", b.binary("xor", binary_c(b, "shift_right_logical", p1, 32), c1), k0);
    Value n2 = b.binary("xor", b.binary("xor", binary_c(b, "shift_right_logical", p0, 32), c3), k1);
    c1 = binary_c(b, "and", p1, kMask32);
    c3 = binary_c(b, "and", p0, kMask32);
    c0 = n0;
    c2 = n2;
  }
  std::vector<Value> columns;
  for (Value c : {c0, c1, c2, c3}) columns.push_back(b.reshape(c, {blocks, 1}));
  Value all = b.reshape(b.concatenate(columns, 1), {4 * blocks});
  return n == 4 * blocks ? all : b.slice(all, {0}, {n}, {1});
}

// 64-bit values from pairs of words (i64, any bit pattern): word 2i high, word 2i+1 low.
Value words64(Builder& b, Value state, int64_t n) {
  Value w = philox_words(b, state, 2 * n);
  Value hi = b.slice(w, {0}, {2 * n}, {2});
  Value lo = b.slice(w, {1}, {2 * n}, {2});
  return b.binary("or", binary_c(b, "shift_left", hi, 32), lo);
}

// Floating outputs are computed in f64 for f64, else f32.
ElementType compute_type(ElementType t) {
  return t == ElementType::F64 ? ElementType::F64 : ElementType::F32;
}
int64_t words_per_value(ElementType t) { return t == ElementType::F64 ? 2 : 1; }

// n uniforms in [0, 1) of compute_type(t), each k * 2^-m with m the significand bits of t, so
// every value is exactly representable in t.
Value uniform01(Builder& b, Value state, int64_t n, ElementType t) {
  const ElementType ct = compute_type(t);
  int bits = 24;
  if (t == ElementType::F64) bits = 53;
  if (t == ElementType::F16) bits = 11;
  if (t == ElementType::BF16) bits = 8;
  Value k = t == ElementType::F64
                ? binary_c(b, "shift_right_logical", words64(b, state, n), 64 - bits)
                : binary_c(b, "shift_right_logical", philox_words(b, state, n), 32 - bits);
  return b.binary("multiply", b.convert(k, ct), full(b, std::ldexp(1.0, -bits), ct, {n}));
}

Value cst(Builder& b, double v, Value like) { return full(b, v, like.type.dtype, like.type.dims); }

// n standard normals of compute_type(t) by Box-Muller over an even number of uniforms.
Value standard_normal(Builder& b, Value state, int64_t n, ElementType t) {
  const int64_t m = n + (n & 1), h = m / 2;
  Value u = uniform01(b, state, m, t);
  Value u1 = b.slice(u, {0}, {h}, {1});
  Value u2 = b.slice(u, {h}, {m}, {1});
  u1 = b.binary("subtract", cst(b, 1.0, u1), u1);  // (0, 1]: log stays finite
  Value r = b.unary("sqrt", b.binary("multiply", cst(b, -2.0, u1), b.unary("log", u1)));
  Value theta = b.binary("multiply", cst(b, 2.0 * M_PI, u2), u2);
  Value z = b.concatenate({b.binary("multiply", r, b.unary("cosine", theta)),
                           b.binary("multiply", r, b.unary("sine", theta))},
                          0);
  return m == n ? z : b.slice(z, {0}, {n}, {1});
}

Value shaped(Builder& b, Value flat, const hlo::TensorType& out) {
  return b.reshape(to_type(b, flat, out.dtype), out.dims);
}

std::vector<Value> emit_uniform(Builder& b, const std::vector<Value>& in, const graph::Attrs& a,
                                const std::vector<hlo::TensorType>& outs) {
  const int64_t n = outs[0].num_elements();
  Value u = uniform01(b, in[0], n, outs[0].dtype);
  const double from = a.floats.at(0), to = a.floats.at(1);
  Value v =
      to_type(b, b.binary("add", b.binary("multiply", u, cst(b, to - from, u)), cst(b, from, u)),
              outs[0].dtype);
  // Rounding to the output type may reach `to`; PyTorch maps it back to `from`.
  Value top = full(b, to, outs[0].dtype, {n});
  v = b.select(b.compare(hlo::Cmp::EQ, v, top), full(b, from, outs[0].dtype, {n}), v);
  return {b.reshape(v, outs[0].dims)};
}

std::vector<Value> emit_normal(Builder& b, const std::vector<Value>& in, const graph::Attrs& a,
                               const std::vector<hlo::TensorType>& outs) {
  Value z = standard_normal(b, in[0], outs[0].num_elements(), outs[0].dtype);
  z = b.binary("add", b.binary("multiply", z, cst(b, a.floats.at(1), z)),
               cst(b, a.floats.at(0), z));
  return {shaped(b, z, outs[0])};
}

std::vector<Value> emit_bernoulli(Builder& b, const std::vector<Value>& in, const graph::Attrs& a,
                                  const std::vector<hlo::TensorType>& outs) {
  const int64_t n = outs[0].num_elements();
  Value u = uniform01(b, in[0], n, outs[0].dtype);
  Value p = in.size() > 1
                ? b.reshape(broadcast_to(b, to_type(b, in[1], u.type.dtype), outs[0].dims), {n})
                : cst(b, a.floats.at(0), u);
  return {shaped(b, b.compare(hlo::Cmp::LT, u, p), outs[0])};
}

bool wide_range(uint64_t range) { return range == 0 || range > (uint64_t{1} << 32); }

std::vector<Value> emit_random_int(Builder& b, const std::vector<Value>& in, const graph::Attrs& a,
                                   const std::vector<hlo::TensorType>& outs) {
  const int64_t n = outs[0].num_elements();
  const int64_t from = a.ints.at(0), range = a.ints.at(1);
  Value r;
  if (!wide_range(static_cast<uint64_t>(range))) {
    r = binary_c(b, "remainder", philox_words(b, in[0], n), range);
  } else if (range == 0) {
    r = words64(b, in[0], n);  // the whole 2^64 range
  } else if (range > 0) {
    r = binary_c(b, "remainder", binary_c(b, "shift_right_logical", words64(b, in[0], n), 1),
                 range);
  } else {
    // range >= 2^63: x mod range for unsigned x is x - range when x >= range (unsigned compare:
    // flip the sign bits and compare signed).
    Value x = words64(b, in[0], n);
    const int64_t flip = std::numeric_limits<int64_t>::min();
    Value ge = b.compare(hlo::Cmp::GE, binary_c(b, "xor", x, flip), constant(b, range ^ flip, {n}));
    r = b.select(ge, binary_c(b, "subtract", x, range), x);
  }
  return {shaped(b, binary_c(b, "add", r, from), outs[0])};
}

std::vector<Value> emit_exponential(Builder& b, const std::vector<Value>& in, const graph::Attrs& a,
                                    const std::vector<hlo::TensorType>& outs) {
  Value u = uniform01(b, in[0], outs[0].num_elements(), outs[0].dtype);
  // -log(1 - u) / lambda with u in [0, 1)
  Value e = b.unary("negate", b.unary("log_plus_one", b.unary("negate", u)));
  return {shaped(b, b.binary("divide", e, cst(b, a.floats.at(0), e)), outs[0])};
}

std::vector<Value> emit_log_normal(Builder& b, const std::vector<Value>& in, const graph::Attrs& a,
                                   const std::vector<hlo::TensorType>& outs) {
  Value z = standard_normal(b, in[0], outs[0].num_elements(), outs[0].dtype);
  z = b.binary("add", b.binary("multiply", z, cst(b, a.floats.at(1), z)),
               cst(b, a.floats.at(0), z));
  return {shaped(b, b.unary("exponential", z), outs[0])};
}

std::vector<Value> emit_cauchy(Builder& b, const std::vector<Value>& in, const graph::Attrs& a,
                               const std::vector<hlo::TensorType>& outs) {
  Value u = uniform01(b, in[0], outs[0].num_elements(), outs[0].dtype);
  // median + sigma * tan(pi * (u - 1/2))
  Value t = b.unary("tan",
                    b.binary("multiply", cst(b, M_PI, u), b.binary("subtract", u, cst(b, 0.5, u))));
  Value c = b.binary("add", cst(b, a.floats.at(0), t),
                     b.binary("multiply", cst(b, a.floats.at(1), t), t));
  return {shaped(b, c, outs[0])};
}

std::vector<Value> emit_geometric(Builder& b, const std::vector<Value>& in, const graph::Attrs& a,
                                  const std::vector<hlo::TensorType>& outs) {
  Value u = uniform01(b, in[0], outs[0].num_elements(), outs[0].dtype);
  // ceil(log(v) / log1p(-p)) with v = 1 - u in (0, 1]; v = 1 would give 0 trials, so clamp to 1.
  Value v = b.binary("subtract", cst(b, 1.0, u), u);
  Value k = b.unary("ceil",
                    b.binary("divide", b.unary("log", v), cst(b, std::log1p(-a.floats.at(0)), v)));
  return {shaped(b, b.binary("maximum", k, cst(b, 1.0, k)), outs[0])};
}

std::vector<Value> emit_randperm(Builder& b, const std::vector<Value>& in, const graph::Attrs&,
                                 const std::vector<hlo::TensorType>& outs) {
  const int64_t n = outs[0].num_elements();
  Value keys = words64(b, in[0], n);
  Value index = b.iota({ElementType::I64, {n}}, 0);
  const hlo::TensorType s{ElementType::I64, {}};
  std::string less =
      b.region({s, s, s, s}, [&](const std::vector<std::string>& args, const std::string& prefix) {
        Builder::RegionBody body;
        body.lines = "      " + prefix + "lt = \"stablehlo.compare\"(" + args[0] + ", " + args[1] +
                     ") {comparison_direction = #stablehlo<comparison_direction LT>} : "
                     "(tensor<i64>, tensor<i64>) -> tensor<i1>\n";
        body.returned = {prefix + "lt"};
        body.returned_types = {hlo::TensorType{ElementType::Bool, {}}};
        return body;
      });
  auto sorted = b.op("sort", {keys, index}, {keys.type, index.type},
                     "dimension = 0 : i64, is_stable = true", less);
  return {shaped(b, sorted[1], outs[0])};
}

// input * mask * scale computed as PyTorch does (NaN * 0 stays NaN), in the compute type.
Value masked_scale(Builder& b, Value x, Value mask, double scale, ElementType t) {
  const ElementType ct = compute_type(t);
  Value v = b.binary("multiply", to_type(b, x, ct), b.convert(mask, ct));
  return to_type(b, b.binary("multiply", v, full(b, scale, ct, v.type.dims)), t);
}

std::vector<Value> emit_dropout(Builder& b, const std::vector<Value>& in, const graph::Attrs& a,
                                const std::vector<hlo::TensorType>& outs) {
  const int64_t n = outs[0].num_elements();
  const double p1m = 1.0 - a.floats.at(0);
  Value u = uniform01(b, in[0], n, outs[0].dtype);
  Value mask = b.reshape(b.compare(hlo::Cmp::LT, u, cst(b, p1m, u)), outs[0].dims);
  return {masked_scale(b, in[1], mask, p1m == 0 ? 0.0 : 1.0 / p1m, outs[0].dtype), mask};
}

std::vector<Value> emit_dropout_backward(Builder& b, const std::vector<Value>& in,
                                         const graph::Attrs& a,
                                         const std::vector<hlo::TensorType>& outs) {
  Value grad = broadcast_to(b, in[0], outs[0].dims);
  Value mask = broadcast_to(b, in[1], outs[0].dims);
  return {masked_scale(b, grad, mask, a.floats.at(0), outs[0].dtype)};
}

}  // namespace

const graph::OpDef kUniform{"uniform", emit_uniform};
const graph::OpDef kNormal{"normal", emit_normal};
const graph::OpDef kBernoulli{"bernoulli", emit_bernoulli};
const graph::OpDef kRandomInt{"random_int", emit_random_int};
const graph::OpDef kExponential{"exponential", emit_exponential};
const graph::OpDef kLogNormal{"log_normal", emit_log_normal};
const graph::OpDef kCauchy{"cauchy", emit_cauchy};
const graph::OpDef kGeometric{"geometric", emit_geometric};
const graph::OpDef kRandperm{"randperm", emit_randperm};
const graph::OpDef kDropout{"dropout", emit_dropout};
const graph::OpDef kDropoutBackward{"dropout_backward", emit_dropout_backward};

int64_t words(const graph::OpDef& op, const graph::Attrs& attrs,
              const std::vector<hlo::TensorType>& outs) {
  const int64_t n = outs.at(0).num_elements();
  const int64_t per = words_per_value(outs[0].dtype);
  if (&op == &kNormal || &op == &kLogNormal) return (n + (n & 1)) * per;
  if (&op == &kRandomInt) return wide_range(static_cast<uint64_t>(attrs.ints.at(1))) ? 2 * n : n;
  if (&op == &kRandperm) return 2 * n;
  return n * per;
}

}  // namespace torch_pjrt::lowering
