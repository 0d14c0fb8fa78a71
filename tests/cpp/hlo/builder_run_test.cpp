// Compiles Builder programs on the CPU PJRT plugin, runs them and checks their outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "hlo/builder.h"
#include "runtime/buffer.h"
#include "runtime/client.h"
#include "runtime/executable.h"
#include "runtime/plugin.h"
#include "test_plugin.h"

namespace torch_pjrt::hlo {
namespace {

using runtime::Buffer;
using BufferPtr = std::shared_ptr<Buffer>;

constexpr ElementType kF32 = ElementType::F32;
constexpr ElementType kI32 = ElementType::I32;
constexpr ElementType kI64 = ElementType::I64;
constexpr ElementType kU8 = ElementType::U8;
constexpr ElementType kBool = ElementType::Bool;

// One client for the whole test binary.
runtime::Client& client() {
  static std::shared_ptr<runtime::Client> c =
      runtime::Client::create(runtime::Plugin::load(test_plugin_path()));
  return *c;
}

// Host data of `type` (T matches its size: uint8_t for bool, uint16_t for f16/bf16).
template <class T>
BufferPtr upload(const std::vector<T>& data, ElementType type, const std::vector<int64_t>& dims) {
  EXPECT_EQ(sizeof(T), runtime::element_size(type));
  return client().buffer_from_host(data.data(), type, dims, 0);
}

std::shared_ptr<runtime::Executable> compile(const Builder& b, const std::vector<Value>& results) {
  return client().compile(b.emit(results));
}

std::vector<BufferPtr> execute(const runtime::Executable& exe, const std::vector<BufferPtr>& args) {
  std::vector<const Buffer*> raw;
  for (const BufferPtr& a : args) raw.push_back(a.get());
  return exe.execute(raw, 0);
}

std::vector<BufferPtr> run(const Builder& b, const std::vector<Value>& results,
                           const std::vector<BufferPtr>& args = {}) {
  return execute(*compile(b, results), args);
}

// Host copy of output `out` after checking that it has the type the builder computed for `v`.
template <class T>
std::vector<T> fetch(const BufferPtr& out, const Value& v) {
  EXPECT_EQ(out->element_type(), v.type.dtype);
  EXPECT_EQ(out->dims(), v.type.dims);
  EXPECT_EQ(sizeof(T), runtime::element_size(v.type.dtype));
  std::vector<T> host(out->num_elements());
  out->to_host(host.data(), host.size() * sizeof(T));
  return host;
}

template <class T>
T fetch1(const BufferPtr& out, const Value& v) {
  std::vector<T> host = fetch<T>(out, v);
  EXPECT_EQ(host.size(), 1u);
  return host.empty() ? T{} : host[0];
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i])))
          << what << " [" << i << "]";
    }
  }
}

template <class T>
std::vector<T> iota_values(size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(i);
  return v;
}

TEST(HloRun, Bf16DotAccumulatesInF32) {
  // bf16 operands with an f32 result: the square of bf16 1 + 2^-7 is 1 + 2^-6 + 2^-14, which
  // bf16 cannot hold, and 256 of them sum to 260.015625 exactly only in f32.
  Builder b;
  Value x = b.parameter({ElementType::BF16, {1, 256}});
  Value y = b.parameter({ElementType::BF16, {256, 1}});
  Value d = b.dot_general(x, y, {}, {}, {1}, {0}, Precision::kHighest, kF32);
  const uint16_t one_plus = 0x3f81;  // bf16 1 + 2^-7
  std::vector<uint16_t> v(256, one_plus);
  auto out =
      run(b, {d}, {upload(v, ElementType::BF16, {1, 256}), upload(v, ElementType::BF16, {256, 1})});
  const double p = 1.0 + 1.0 / 128;
  EXPECT_EQ(fetch<float>(out[0], d), (std::vector<float>{static_cast<float>(256 * p * p)}));
}

TEST(HloRun, ParametersReturnedDirectlyAndTwice) {
  Builder b;
  Value x = b.parameter({kF32, {2, 2}});
  Value y = b.parameter({kI64, {3}});
  Value sum = b.binary("add", x, x);
  auto out =
      run(b, {y, x, sum, x},
          {upload<float>({1, 2, 3, 4}, kF32, {2, 2}), upload<int64_t>({7, -8, 9}, kI64, {3})});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(fetch<int64_t>(out[0], y), (std::vector<int64_t>{7, -8, 9}));
  EXPECT_EQ(fetch<float>(out[1], x), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(fetch<float>(out[2], sum), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(fetch<float>(out[3], x), (std::vector<float>{1, 2, 3, 4}));
}

TEST(HloRun, FloatConstants) {
  Builder b;
  const std::vector<Value> f32 = {b.constant_float(0.1, kF32),      b.constant_float(-2.5, kF32),
                                  b.constant_float(INFINITY, kF32), b.constant_float(NAN, kF32),
                                  b.constant_float(1e-45, kF32),    b.constant_float(-0.0, kF32)};
  Value f64 = b.constant_float(0.1, ElementType::F64);
  const std::vector<Value> f16 = {b.constant_float(1.0 / 3, ElementType::F16),
                                  b.constant_float(65520, ElementType::F16),
                                  b.constant_float(1e-7, ElementType::F16)};
  const std::vector<Value> bf16 = {
      b.constant_float(-0.1, ElementType::BF16),
      b.constant_float(1.0 + 1.0 / 256 + std::ldexp(1.0, -30), ElementType::BF16)};
  std::vector<Value> all = f32;
  all.push_back(f64);
  all.insert(all.end(), f16.begin(), f16.end());
  all.insert(all.end(), bf16.begin(), bf16.end());
  auto out = run(b, all);
  const float want[] = {0.1f, -2.5f, INFINITY, NAN, 1e-45f, -0.0f};
  for (size_t i = 0; i < f32.size(); ++i) {
    const float got = fetch1<float>(out[i], f32[i]);
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got));
    } else {
      EXPECT_EQ(bits_of(got), bits_of(want[i])) << i;
    }
  }
  EXPECT_EQ(fetch1<double>(out[6], f64), 0.1);
  EXPECT_EQ(fetch1<uint16_t>(out[7], f16[0]), 0x3555);
  EXPECT_EQ(fetch1<uint16_t>(out[8], f16[1]), 0x7C00);
  EXPECT_EQ(fetch1<uint16_t>(out[9], f16[2]), 0x0002);
  EXPECT_EQ(fetch1<uint16_t>(out[10], bf16[0]), 0xBDCD);
  EXPECT_EQ(fetch1<uint16_t>(out[11], bf16[1]), 0x3F81);
}

TEST(HloRun, IntegerConstants) {
  Builder b;
  Value i8 = b.constant_int(300, ElementType::I8);
  Value i16 = b.constant_int(-40000, ElementType::I16);
  Value i32 = b.constant_int((int64_t{1} << 40) - 5, kI32);
  Value i64 = b.constant_int(std::numeric_limits<int64_t>::min(), kI64);
  Value u8 = b.constant_int(-1, kU8);
  Value t = b.constant_int(1, kBool);
  Value f = b.constant_int(0, kBool);
  auto out = run(b, {i8, i16, i32, i64, u8, t, f});
  EXPECT_EQ(fetch1<int8_t>(out[0], i8), 44);
  EXPECT_EQ(fetch1<int16_t>(out[1], i16), 25536);
  EXPECT_EQ(fetch1<int32_t>(out[2], i32), -5);
  EXPECT_EQ(fetch1<int64_t>(out[3], i64), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(fetch1<uint8_t>(out[4], u8), 255);
  EXPECT_EQ(fetch1<uint8_t>(out[5], t), 1);
  EXPECT_EQ(fetch1<uint8_t>(out[6], f), 0);
}

TEST(HloRun, SplatAndIota) {
  Builder b;
  Value sf = b.splat(2.5, {kF32, {2, 3}});
  Value si = b.splat(-7, {kI32, {4}});
  Value sb = b.splat(1, {kBool, {2}});
  Value sh = b.splat(1.5, {ElementType::BF16, {3}});
  Value i1 = b.iota({kI64, {2, 3}}, 1);
  Value i0 = b.iota({kF32, {2, 3}}, 0);
  Value iu = b.iota({kU8, {4}}, 0);
  auto out = run(b, {sf, si, sb, sh, i1, i0, iu});
  EXPECT_EQ(fetch<float>(out[0], sf), std::vector<float>(6, 2.5f));
  EXPECT_EQ(fetch<int32_t>(out[1], si), std::vector<int32_t>(4, -7));
  EXPECT_EQ(fetch<uint8_t>(out[2], sb), std::vector<uint8_t>(2, 1));
  EXPECT_EQ(fetch<uint16_t>(out[3], sh), std::vector<uint16_t>(3, 0x3FC0));
  EXPECT_EQ(fetch<int64_t>(out[4], i1), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(fetch<float>(out[5], i0), (std::vector<float>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(fetch<uint8_t>(out[6], iu), (std::vector<uint8_t>{0, 1, 2, 3}));
}

TEST(HloRun, BinaryFloat) {
  const std::vector<float> xs = {1.5f, -2.0f, 3.0f, 0.25f}, ys = {0.5f, 4.0f, -3.0f, 2.0f};
  const std::vector<std::pair<const char*, std::function<float(float, float)>>> ops = {
      {"add", [](float a, float c) { return a + c; }},
      {"subtract", [](float a, float c) { return a - c; }},
      {"multiply", [](float a, float c) { return a * c; }},
      {"divide", [](float a, float c) { return a / c; }},
      {"maximum", [](float a, float c) { return std::max(a, c); }},
      {"minimum", [](float a, float c) { return std::min(a, c); }},
      {"power", [](float a, float c) { return std::pow(a, c); }},
      {"remainder", [](float a, float c) { return std::fmod(a, c); }},
      {"atan2", [](float a, float c) { return std::atan2(a, c); }}};
  Builder b;
  Value x = b.parameter({kF32, {4}});
  Value y = b.parameter({kF32, {4}});
  std::vector<Value> results;
  for (const auto& op : ops) results.push_back(b.binary(op.first, x, y));
  auto out = run(b, results, {upload(xs, kF32, {4}), upload(ys, kF32, {4})});
  for (size_t k = 0; k < ops.size(); ++k) {
    std::vector<float> want;
    for (size_t i = 0; i < xs.size(); ++i) want.push_back(ops[k].second(xs[i], ys[i]));
    expect_close(fetch<float>(out[k], results[k]), want, ops[k].first);
  }
}

TEST(HloRun, BinaryIntegerAndBool) {
  // Shifts and power take their right operand from `amounts`, the other ops from `ys`.
  const std::vector<int32_t> xs = {7, -7, 12, 5}, ys = {2, 2, -5, 3}, amounts = {1, 2, 3, 0};
  struct IntOp {
    const char* name;
    std::function<int32_t(int32_t, int32_t)> fn;
    bool by_amount = false;
  };
  const std::vector<IntOp> ops = {
      {"add", [](int32_t a, int32_t c) { return a + c; }},
      {"subtract", [](int32_t a, int32_t c) { return a - c; }},
      {"multiply", [](int32_t a, int32_t c) { return a * c; }},
      {"divide", [](int32_t a, int32_t c) { return a / c; }},
      {"remainder", [](int32_t a, int32_t c) { return a % c; }},
      {"maximum", [](int32_t a, int32_t c) { return std::max(a, c); }},
      {"minimum", [](int32_t a, int32_t c) { return std::min(a, c); }},
      {"and", [](int32_t a, int32_t c) { return a & c; }},
      {"or", [](int32_t a, int32_t c) { return a | c; }},
      {"xor", [](int32_t a, int32_t c) { return a ^ c; }},
      {"shift_left", [](int32_t a, int32_t n) { return int32_t(uint32_t(a) << n); }, true},
      {"shift_right_arithmetic", [](int32_t a, int32_t n) { return a >> n; }, true},
      {"shift_right_logical", [](int32_t a, int32_t n) { return int32_t(uint32_t(a) >> n); }, true},
      {"power", [](int32_t a, int32_t n) { return int32_t(std::lround(std::pow(a, n))); }, true}};
  const char* bool_ops[] = {"and", "or", "xor", "maximum"};
  const std::vector<uint8_t> bool_want[] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}, {0, 1, 1, 1}};
  Builder b;
  Value x = b.parameter({kI32, {4}});
  Value y = b.parameter({kI32, {4}});
  Value n = b.parameter({kI32, {4}});
  Value p = b.parameter({kBool, {4}});
  Value q = b.parameter({kBool, {4}});
  std::vector<Value> results;
  for (const IntOp& op : ops) results.push_back(b.binary(op.name, x, op.by_amount ? n : y));
  for (const char* op : bool_ops) results.push_back(b.binary(op, p, q));
  auto out =
      run(b, results,
          {upload(xs, kI32, {4}), upload(ys, kI32, {4}), upload(amounts, kI32, {4}),
           upload<uint8_t>({0, 0, 1, 1}, kBool, {4}), upload<uint8_t>({0, 1, 0, 1}, kBool, {4})});
  for (size_t k = 0; k < ops.size(); ++k) {
    std::vector<int32_t> want;
    for (size_t i = 0; i < xs.size(); ++i) {
      want.push_back(ops[k].fn(xs[i], ops[k].by_amount ? amounts[i] : ys[i]));
    }
    EXPECT_EQ(fetch<int32_t>(out[k], results[k]), want) << ops[k].name;
  }
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(fetch<uint8_t>(out[ops.size() + k], results[ops.size() + k]), bool_want[k])
        << bool_ops[k];
  }
}

TEST(HloRun, UnaryFloat) {
  const std::vector<float> xs = {0.5f, -1.25f, 2.5f, -3.7f}, ps = {0.5f, 1.25f, 2.0f, 3.7f};
  using F = std::function<float(float)>;
  const std::vector<std::pair<const char*, F>> on_x = {
      {"negate", [](float a) { return -a; }},
      {"abs", [](float a) { return std::fabs(a); }},
      {"sign", [](float a) { return float((a > 0) - (a < 0)); }},
      {"exponential", [](float a) { return std::exp(a); }},
      {"exponential_minus_one", [](float a) { return std::expm1(a); }},
      {"tanh", [](float a) { return std::tanh(a); }},
      {"logistic", [](float a) { return 1 / (1 + std::exp(-a)); }},
      {"floor", [](float a) { return std::floor(a); }},
      {"ceil", [](float a) { return std::ceil(a); }},
      {"round_nearest_even", [](float a) { return std::nearbyint(a); }},
      {"round_nearest_afz", [](float a) { return std::round(a); }},
      {"sine", [](float a) { return std::sin(a); }},
      {"cosine", [](float a) { return std::cos(a); }},
      {"tan", [](float a) { return std::tan(a); }},
      {"cbrt", [](float a) { return std::cbrt(a); }}};
  const std::vector<std::pair<const char*, F>> on_p = {
      {"log", [](float a) { return std::log(a); }},
      {"log_plus_one", [](float a) { return std::log1p(a); }},
      {"sqrt", [](float a) { return std::sqrt(a); }},
      {"rsqrt", [](float a) { return 1 / std::sqrt(a); }}};
  Builder b;
  Value x = b.parameter({kF32, {4}});
  Value p = b.parameter({kF32, {4}});
  std::vector<Value> results;
  for (const auto& op : on_x) results.push_back(b.unary(op.first, x));
  for (const auto& op : on_p) results.push_back(b.unary(op.first, p));
  Value special = b.parameter({kF32, {4}});
  Value finite = b.unary("is_finite", special);
  results.push_back(finite);
  auto out = run(b, results,
                 {upload(xs, kF32, {4}), upload(ps, kF32, {4}),
                  upload<float>({1.0f, INFINITY, NAN, -INFINITY}, kF32, {4})});
  size_t k = 0;
  for (const auto& list : {&on_x, &on_p}) {
    const std::vector<float>& in = list == &on_x ? xs : ps;
    for (const auto& op : *list) {
      std::vector<float> want;
      for (float v : in) want.push_back(op.second(v));
      expect_close(fetch<float>(out[k], results[k]), want, op.first);
      ++k;
    }
  }
  EXPECT_EQ(fetch<uint8_t>(out[k], finite), (std::vector<uint8_t>{1, 0, 0, 0}));
}

TEST(HloRun, UnaryIntegerAndBool) {
  Builder b;
  Value x = b.parameter({kI32, {4}});
  Value p = b.parameter({kBool, {2}});
  const char* ops[] = {"negate", "abs", "sign", "not", "popcnt", "count_leading_zeros"};
  std::vector<Value> results;
  for (const char* op : ops) results.push_back(b.unary(op, x));
  results.push_back(b.unary("not", p));
  auto out =
      run(b, results,
          {upload<int32_t>({5, -3, 0, 100}, kI32, {4}), upload<uint8_t>({0, 1}, kBool, {2})});
  const std::vector<int32_t> want[] = {{-5, 3, 0, -100},    {5, 3, 0, 100}, {1, -1, 0, 1},
                                       {~5, ~-3, ~0, ~100}, {2, 31, 0, 3},  {29, 0, 32, 25}};
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(fetch<int32_t>(out[k], results[k]), want[k]) << ops[k];
  EXPECT_EQ(fetch<uint8_t>(out[6], results[6]), (std::vector<uint8_t>{1, 0}));
}

TEST(HloRun, CompareAllDirectionsAndTypes) {
  const Cmp dirs[] = {Cmp::EQ, Cmp::NE, Cmp::LT, Cmp::LE, Cmp::GT, Cmp::GE};
  const auto apply = [](Cmp c, auto a, auto d) -> uint8_t {
    switch (c) {
      case Cmp::EQ:
        return a == d;
      case Cmp::NE:
        return a != d;
      case Cmp::LT:
        return a < d;
      case Cmp::LE:
        return a <= d;
      case Cmp::GT:
        return a > d;
      case Cmp::GE:
        return a >= d;
    }
    return 0;
  };
  const std::vector<float> fx = {1, 2, 3, NAN}, fy = {2, 2, 2, 2};
  const std::vector<int32_t> ix = {-1, 2, 3}, iy = {2, 2, 2};
  const std::vector<uint8_t> ux = {200, 2, 3}, uy = {100, 2, 5};  // 200 < 100 only if signed
  const std::vector<uint8_t> bx = {0, 1, 1, 0}, by = {1, 1, 0, 0};
  Builder b;
  Value vf[] = {b.parameter({kF32, {4}}), b.parameter({kF32, {4}})};
  Value vi[] = {b.parameter({kI32, {3}}), b.parameter({kI32, {3}})};
  Value vu[] = {b.parameter({kU8, {3}}), b.parameter({kU8, {3}})};
  Value vb[] = {b.parameter({kBool, {4}}), b.parameter({kBool, {4}})};
  std::vector<Value> results;
  for (Cmp c : dirs) {
    for (const Value* v : {vf, vi, vu, vb}) results.push_back(b.compare(c, v[0], v[1]));
  }
  auto out = run(
      b, results,
      {upload(fx, kF32, {4}), upload(fy, kF32, {4}), upload(ix, kI32, {3}), upload(iy, kI32, {3}),
       upload(ux, kU8, {3}), upload(uy, kU8, {3}), upload(bx, kBool, {4}), upload(by, kBool, {4})});
  size_t k = 0;
  for (Cmp c : dirs) {
    std::vector<uint8_t> want[4];
    for (size_t i = 0; i < 4; ++i) want[0].push_back(apply(c, fx[i], fy[i]));
    for (size_t i = 0; i < 3; ++i) want[1].push_back(apply(c, ix[i], iy[i]));
    for (size_t i = 0; i < 3; ++i) want[2].push_back(apply(c, ux[i], uy[i]));
    for (size_t i = 0; i < 4; ++i) want[3].push_back(apply(c, bx[i], by[i]));
    for (const auto& w : want) {
      EXPECT_EQ(fetch<uint8_t>(out[k], results[k]), w) << "direction " << int(c) << " output " << k;
      ++k;
    }
  }
}

TEST(HloRun, SelectConvertBitcast) {
  Builder b;
  Value pred = b.parameter({kBool, {3}});
  Value x = b.parameter({kF32, {3}});
  Value y = b.parameter({kF32, {3}});
  Value sel = b.select(pred, x, y);
  Value sel0 = b.select(b.constant_int(0, kBool), x, y);
  Value to_i32 = b.convert(x, kI32);
  Value to_bool = b.convert(x, kBool);
  Value to_f16 = b.convert(x, ElementType::F16);
  Value from_bool = b.convert(pred, ElementType::F64);
  Value bits = b.bitcast_convert(x, kI32);
  Value back = b.bitcast_convert(bits, kF32);
  Value u8 = b.bitcast_convert(b.convert(b.splat(200, {kI32, {1}}), kU8), ElementType::I8);
  const std::vector<float> xs = {-2.75f, 1.0f, 0.0f}, ys = {10, 20, 30};
  auto out =
      run(b, {sel, sel0, to_i32, to_bool, to_f16, from_bool, bits, back, u8},
          {upload<uint8_t>({1, 0, 1}, kBool, {3}), upload(xs, kF32, {3}), upload(ys, kF32, {3})});
  EXPECT_EQ(fetch<float>(out[0], sel), (std::vector<float>{-2.75f, 20, 0}));
  EXPECT_EQ(fetch<float>(out[1], sel0), ys);
  EXPECT_EQ(fetch<int32_t>(out[2], to_i32), (std::vector<int32_t>{-2, 1, 0}));
  EXPECT_EQ(fetch<uint8_t>(out[3], to_bool), (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(fetch<uint16_t>(out[4], to_f16), (std::vector<uint16_t>{0xC180, 0x3C00, 0x0000}));
  EXPECT_EQ(fetch<double>(out[5], from_bool), (std::vector<double>{1, 0, 1}));
  std::vector<int32_t> want_bits;
  for (float v : xs) want_bits.push_back(static_cast<int32_t>(bits_of(v)));
  EXPECT_EQ(fetch<int32_t>(out[6], bits), want_bits);
  EXPECT_EQ(fetch<float>(out[7], back), xs);
  EXPECT_EQ(fetch<int8_t>(out[8], u8), (std::vector<int8_t>{-56}));
}

// Width-changing bitcasts split and join elements little-endian (the byte order of every PJRT
// target and of PyTorch's CPU tensors): 1.0f is the bytes 00 00 80 3F.
TEST(HloRun, BitcastChangingWidth) {
  Builder b;
  Value x = b.parameter({kF32, {2}});
  Value bytes = b.bitcast_convert(x, kU8);
  Value joined = b.bitcast_convert(b.reshape(bytes, {1, 2, 4}), kF32);
  Value i64 = b.bitcast_convert(b.reshape(b.bitcast_convert(x, kI32), {1, 2}), ElementType::I64);
  auto out = run(b, {bytes, joined, i64}, {upload(std::vector<float>{1.0f, -0.0f}, kF32, {2})});
  EXPECT_EQ(fetch<uint8_t>(out[0], bytes), (std::vector<uint8_t>{0, 0, 0x80, 0x3F, 0, 0, 0, 0x80}));
  EXPECT_EQ(fetch<float>(out[1], joined), (std::vector<float>{1.0f, -0.0f}));
  EXPECT_EQ(fetch<int64_t>(out[2], i64), (std::vector<int64_t>{int64_t{-0x7FFFFFFFC0800000}}));
}

// Complex values: built from parts and taken apart, arithmetic, |z|, complex splats, conversions
// to real types (the real part) and to bool (either part nonzero), and the fft op.
TEST(HloRun, ComplexOps) {
  using C = std::complex<float>;
  constexpr ElementType kC64 = ElementType::C64;
  Builder b;
  Value re = b.parameter({kF32, {2}});
  Value im = b.parameter({kF32, {2}});
  Value z = b.complex(re, im);
  Value prod = b.binary("multiply", z, b.splat(2, {kC64, {2}}));
  Value abs = b.unary("abs", z);
  Value real = b.convert(z, kF32);
  Value nonzero = b.convert(b.complex(b.splat(0, {kF32, {2}}), im), kBool);
  Value spectrum = b.op("fft", {z}, {z.type},
                        "fft_type = #stablehlo<fft_type FFT>, fft_length = array<i64: 2>")[0];
  auto out = run(
      b, {prod, abs, real, nonzero, spectrum},
      {upload(std::vector<float>{3, -1}, kF32, {2}), upload(std::vector<float>{4, 0}, kF32, {2})});
  EXPECT_EQ(fetch<C>(out[0], prod), (std::vector<C>{{6, 8}, {-2, 0}}));
  EXPECT_EQ(fetch<float>(out[1], abs), (std::vector<float>{5, 1}));
  EXPECT_EQ(fetch<float>(out[2], real), (std::vector<float>{3, -1}));
  EXPECT_EQ(fetch<uint8_t>(out[3], nonzero), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(fetch<C>(out[4], spectrum), (std::vector<C>{{2, 4}, {4, 4}}));
  EXPECT_THROW(b.bitcast_convert(z, ElementType::I64), std::invalid_argument);
  EXPECT_THROW(b.compare(Cmp::LT, z, z), std::invalid_argument);
}

TEST(HloRun, ReshapeBroadcastTranspose) {
  Builder b;
  Value x = b.parameter({kF32, {2, 3, 4}});
  Value col = b.parameter({kF32, {3, 1}});
  Value r = b.reshape(x, {6, 4});
  Value scalar = b.reshape(b.slice(r, {0, 1}, {1, 2}, {1, 1}), {});
  Value bc = b.broadcast_in_dim(col, {2, 3, 4}, {1, 2});
  Value bs = b.broadcast_in_dim(scalar, {2, 2}, {});
  Value t = b.transpose(x, {2, 0, 1});
  const std::vector<float> xs = iota_values<float>(24);
  auto out = run(b, {r, scalar, bc, bs, t},
                 {upload(xs, kF32, {2, 3, 4}), upload<float>({5, 6, 7}, kF32, {3, 1})});
  EXPECT_EQ(fetch<float>(out[0], r), xs);
  EXPECT_EQ(fetch<float>(out[1], scalar), (std::vector<float>{1}));
  std::vector<float> want_bc, want_t;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want_bc.push_back(5.0f + j);
  for (int a = 0; a < 4; ++a)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want_t.push_back(xs[(i * 3 + j) * 4 + a]);
  EXPECT_EQ(fetch<float>(out[2], bc), want_bc);
  EXPECT_EQ(fetch<float>(out[3], bs), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(fetch<float>(out[4], t), want_t);
}

TEST(HloRun, SliceConcatenate) {
  Builder b;
  Value x = b.parameter({kI32, {4, 5}});
  Value s = b.slice(x, {1, 0}, {4, 5}, {2, 2});
  Value a = b.slice(x, {0, 0}, {2, 1}, {1, 1});
  Value c = b.slice(x, {2, 1}, {4, 3}, {1, 1});
  Value d = b.slice(x, {0, 2}, {2, 5}, {1, 1});
  Value cat = b.concatenate({a, c, d}, 1);
  const std::vector<int32_t> xs = iota_values<int32_t>(20);
  auto out = run(b, {s, cat}, {upload(xs, kI32, {4, 5})});
  EXPECT_EQ(fetch<int32_t>(out[0], s), (std::vector<int32_t>{5, 7, 9, 15, 17, 19}));
  EXPECT_EQ(fetch<int32_t>(out[1], cat),
            (std::vector<int32_t>{0, 11, 12, 2, 3, 4, 5, 16, 17, 7, 8, 9}));
}

TEST(HloRun, DynamicSliceAndUpdateClampStarts) {
  Builder b;
  Value x = b.parameter({kI32, {4, 5}});
  Value i = b.parameter({kI64, {}});
  Value j = b.parameter({kI64, {}});
  Value upd = b.parameter({kI32, {2, 2}});
  Value ds = b.dynamic_slice(x, {i, j}, {2, 3});
  Value dus = b.dynamic_update_slice(x, upd, {i, j});
  auto exe = compile(b, {ds, dus});
  const std::vector<int32_t> xs = iota_values<int32_t>(20);
  const auto args = [&](int64_t si, int64_t sj) {
    return std::vector<BufferPtr>{upload(xs, kI32, {4, 5}), upload<int64_t>({si}, kI64, {}),
                                  upload<int64_t>({sj}, kI64, {}),
                                  upload<int32_t>({-1, -2, -3, -4}, kI32, {2, 2})};
  };
  const auto want = [&](int64_t si, int64_t sj) {
    std::vector<int32_t> slice;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 3; ++c) slice.push_back(xs[(si + r) * 5 + sj + c]);
    return slice;
  };
  auto out = execute(*exe, args(1, 1));
  EXPECT_EQ(fetch<int32_t>(out[0], ds), want(1, 1));
  std::vector<int32_t> updated = xs;
  updated[1 * 5 + 1] = -1, updated[1 * 5 + 2] = -2, updated[2 * 5 + 1] = -3,
                  updated[2 * 5 + 2] = -4;
  EXPECT_EQ(fetch<int32_t>(out[1], dus), updated);
  // Starts are clamped so the window stays inside the operand: (3, 4) -> (2, 2) and (2, 3).
  out = execute(*exe, args(3, 4));
  EXPECT_EQ(fetch<int32_t>(out[0], ds), want(2, 2));
  updated = xs;
  updated[2 * 5 + 3] = -1, updated[2 * 5 + 4] = -2, updated[3 * 5 + 3] = -3,
                  updated[3 * 5 + 4] = -4;
  EXPECT_EQ(fetch<int32_t>(out[1], dus), updated);
}

TEST(HloRun, DotGeneral) {
  Builder b;
  Value l = b.parameter({kF32, {2, 3}});
  Value r = b.parameter({kF32, {3, 4}});
  Value mm = b.dot_general(l, r, {}, {}, {1}, {0});
  // lhs [k=3][b=2][i=4], rhs [j=5][b=2][k=3] -> result [b][i][j].
  Value bl = b.parameter({kF32, {3, 2, 4}});
  Value br = b.parameter({kF32, {5, 2, 3}});
  Value bmm = b.dot_general(bl, br, {1}, {1}, {0}, {2});
  Value il = b.parameter({kI32, {2}});
  Value inner = b.dot_general(il, il, {}, {}, {0}, {0});
  Value outer = b.dot_general(il, il, {}, {}, {}, {});
  const auto ls = iota_values<float>(6), rs = iota_values<float>(12);
  const auto bls = iota_values<float>(24), brs = iota_values<float>(30);
  auto out = run(b, {mm, bmm, inner, outer},
                 {upload(ls, kF32, {2, 3}), upload(rs, kF32, {3, 4}), upload(bls, kF32, {3, 2, 4}),
                  upload(brs, kF32, {5, 2, 3}), upload<int32_t>({3, -4}, kI32, {2})});
  std::vector<float> want_mm, want_bmm;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      float s = 0;
      for (int k = 0; k < 3; ++k) s += ls[i * 3 + k] * rs[k * 4 + j];
      want_mm.push_back(s);
    }
  for (int bb = 0; bb < 2; ++bb)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 5; ++j) {
        float s = 0;
        for (int k = 0; k < 3; ++k) s += bls[(k * 2 + bb) * 4 + i] * brs[(j * 2 + bb) * 3 + k];
        want_bmm.push_back(s);
      }
  EXPECT_EQ(fetch<float>(out[0], mm), want_mm);
  EXPECT_EQ(fetch<float>(out[1], bmm), want_bmm);
  EXPECT_EQ(fetch1<int32_t>(out[2], inner), 25);
  EXPECT_EQ(fetch<int32_t>(out[3], outer), (std::vector<int32_t>{9, -12, -12, 16}));
}

TEST(HloRun, ReduceEveryKind) {
  Builder b;
  Value x = b.parameter({kF32, {2, 3, 4}});
  Value p = b.parameter({kBool, {2, 3}});
  Value xi = b.parameter({kI32, {2, 3}});
  Value sum = b.reduce(x, b.constant_float(0, kF32), {0, 2}, ReduceKind::Sum);
  Value prod = b.reduce(x, b.constant_float(1, kF32), {2}, ReduceKind::Prod);
  Value max = b.reduce(x, b.constant_float(-INFINITY, kF32), {1}, ReduceKind::Max);
  Value min = b.reduce(x, b.constant_float(INFINITY, kF32), {0, 1, 2}, ReduceKind::Min);
  Value all = b.reduce(p, b.constant_int(1, kBool), {1}, ReduceKind::And);
  Value any = b.reduce(p, b.constant_int(0, kBool), {1}, ReduceKind::Or);
  Value isum = b.reduce(xi, b.constant_int(0, kI32), {0}, ReduceKind::Sum);
  Value imax =
      b.reduce(xi, b.constant_int(std::numeric_limits<int32_t>::min(), kI32), {1}, ReduceKind::Max);
  Value ixor = b.reduce(xi, b.constant_int(0, kI32), {1}, ReduceKind::Xor);
  std::vector<float> xs(24);
  for (int i = 0; i < 24; ++i) xs[i] = static_cast<float>((i * 7) % 11) - 3;
  const std::vector<int32_t> is = {4, -9, 2, 7, 1, -3};
  auto out = run(b, {sum, prod, max, min, all, any, isum, imax, ixor},
                 {upload(xs, kF32, {2, 3, 4}), upload<uint8_t>({1, 1, 1, 0, 1, 0}, kBool, {2, 3}),
                  upload(is, kI32, {2, 3})});
  const auto at = [&](int i, int j, int k) { return xs[(i * 3 + j) * 4 + k]; };
  std::vector<float> want_sum(3, 0), want_prod, want_max;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) want_sum[j] += at(i, j, k);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      want_prod.push_back(at(i, j, 0) * at(i, j, 1) * at(i, j, 2) * at(i, j, 3));
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      want_max.push_back(std::max({at(i, 0, k), at(i, 1, k), at(i, 2, k)}));
  EXPECT_EQ(fetch<float>(out[0], sum), want_sum);
  EXPECT_EQ(fetch<float>(out[1], prod), want_prod);
  EXPECT_EQ(fetch<float>(out[2], max), want_max);
  EXPECT_EQ(fetch1<float>(out[3], min), *std::min_element(xs.begin(), xs.end()));
  EXPECT_EQ(fetch<uint8_t>(out[4], all), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(fetch<uint8_t>(out[5], any), (std::vector<uint8_t>{1, 1}));
  EXPECT_EQ(fetch<int32_t>(out[6], isum), (std::vector<int32_t>{11, -8, -1}));
  EXPECT_EQ(fetch<int32_t>(out[7], imax), (std::vector<int32_t>{4, 7}));
  EXPECT_EQ(fetch<int32_t>(out[8], ixor), (std::vector<int32_t>{4 ^ -9 ^ 2, 7 ^ 1 ^ -3}));
}

TEST(HloRun, GatherAndScatter1d) {
  Builder b;
  Value table = b.parameter({kF32, {5}});
  Value idx2 = b.parameter({kI64, {2, 2}});
  Value idx0 = b.parameter({kI32, {}});
  Value g2 = b.gather_1d(table, idx2);
  Value g0 = b.gather_1d(table, idx0);
  Value base = b.splat(0, {kF32, {6}});
  Value sidx = b.parameter({kI32, {2, 2}});
  Value upd = b.parameter({kF32, {2, 2}});
  Value sc = b.scatter_1d(base, sidx, upd);
  Value ubase = b.parameter({kU8, {3}});
  Value sc1 = b.scatter_1d(ubase, b.constant_int(1, kI32), b.constant_int(9, kU8));
  auto out = run(
      b, {g2, g0, sc, sc1},
      {upload<float>({10, 20, 30, 40, 50}, kF32, {5}), upload<int64_t>({4, 0, 2, 2}, kI64, {2, 2}),
       upload<int32_t>({3}, kI32, {}), upload<int32_t>({5, 0, 3, 1}, kI32, {2, 2}),
       upload<float>({1, 2, 3, 4}, kF32, {2, 2}), upload<uint8_t>({7, 7, 7}, kU8, {3})});
  EXPECT_EQ(fetch<float>(out[0], g2), (std::vector<float>{50, 10, 30, 30}));
  EXPECT_EQ(fetch1<float>(out[1], g0), 40);
  EXPECT_EQ(fetch<float>(out[2], sc), (std::vector<float>{2, 4, 0, 3, 0, 1}));
  EXPECT_EQ(fetch<uint8_t>(out[3], sc1), (std::vector<uint8_t>{7, 9, 7}));
}

// The generic op() with a multi-result op and a region(): a stable sort of keys carrying values.
TEST(HloRun, GenericMultiResultOpWithRegion) {
  Builder b;
  Value keys = b.parameter({kF32, {5}});
  Value vals = b.parameter({kI32, {5}});
  const TensorType f{kF32, {}}, i{kI32, {}};
  std::string comparator =
      b.region({f, f, i, i}, [&](const std::vector<std::string>& a, const std::string& prefix) {
        Builder::RegionBody body;
        body.lines = "      " + prefix + "lt = \"stablehlo.compare\"(" + a[0] + ", " + a[1] +
                     ") {comparison_direction = #stablehlo<comparison_direction LT>} : "
                     "(tensor<f32>, tensor<f32>) -> tensor<i1>\n";
        body.returned = {prefix + "lt"};
        body.returned_types = {TensorType{kBool, {}}};
        return body;
      });
  auto sorted = b.op("sort", {keys, vals}, {keys.type, vals.type},
                     "dimension = 0 : i64, is_stable = true", comparator);
  ASSERT_EQ(sorted.size(), 2u);
  auto out =
      run(b, {sorted[0], sorted[1]},
          {upload<float>({3, 1, 2, 1, 0}, kF32, {5}), upload<int32_t>({0, 1, 2, 3, 4}, kI32, {5})});
  EXPECT_EQ(fetch<float>(out[0], sorted[0]), (std::vector<float>{0, 1, 1, 2, 3}));
  EXPECT_EQ(fetch<int32_t>(out[1], sorted[1]), (std::vector<int32_t>{4, 1, 3, 2, 0}));
  EXPECT_THROW(b.op("sort", {Value{99, keys.type}}, {keys.type}), std::invalid_argument);
}

// while_loop: sum of 0..9 into a vector carried next to the counter; nested loops work, outer
// values may be used inside, and region values do not leak out.
TEST(HloRun, WhileLoop) {
  Builder b;
  Value acc = b.parameter({kF32, {2}});
  Value zero = b.constant_int(0, kI32);
  auto loop = b.while_loop(
      {zero, acc},
      [](Builder& r, const std::vector<Value>& a) {
        return std::vector<Value>{r.compare(Cmp::LT, a[0], r.constant_int(10, kI32))};
      },
      [](Builder& r, const std::vector<Value>& a) {
        Value step = r.broadcast_in_dim(r.convert(a[0], kF32), {2}, {});
        return std::vector<Value>{r.binary("add", a[0], r.constant_int(1, kI32)),
                                  r.binary("add", a[1], step)};
      });
  ASSERT_EQ(loop.size(), 2u);
  auto out = run(b, {loop[0], loop[1]}, {upload<float>({1, 2}, kF32, {2})});
  EXPECT_EQ(fetch1<int32_t>(out[0], loop[0]), 10);
  EXPECT_EQ(fetch<float>(out[1], loop[1]), (std::vector<float>{46, 47}));
  auto cond = [](Builder& r, const std::vector<Value>& a) {
    return std::vector<Value>{r.compare(Cmp::LT, a[0], r.constant_int(3, kI32))};
  };
  // An outer value used inside runs; a region value used outside and a body of the wrong type
  // throw.
  Value one = b.constant_int(1, kI32);
  auto captured = b.while_loop({zero}, cond, [&](Builder& r, const std::vector<Value>& a) {
    return std::vector<Value>{r.binary("add", a[0], one)};
  });
  EXPECT_EQ(
      fetch1<int32_t>(run(b, {captured[0]}, {upload<float>({1, 2}, kF32, {2})})[0], captured[0]),
      3);
  Value leaked;
  b.while_loop({zero}, cond, [&](Builder& r, const std::vector<Value>& a) {
    leaked = r.binary("add", a[0], r.constant_int(1, kI32));
    return std::vector<Value>{leaked};
  });
  EXPECT_THROW(b.binary("add", leaked, zero), std::invalid_argument);
  EXPECT_THROW(b.while_loop({zero}, cond,
                            [](Builder& r, const std::vector<Value>& a) {
                              return std::vector<Value>{r.convert(a[0], kF32)};
                            }),
               std::invalid_argument);
  // The builder is still usable after the failures.
  auto again = run(b, {b.binary("add", acc, acc)}, {upload<float>({1, 2}, kF32, {2})});
  EXPECT_EQ(again.size(), 1u);
}

}  // namespace
}  // namespace torch_pjrt::hlo

namespace torch_pjrt::hlo {
namespace {

TEST(HloRun, DonatedParameterIsConsumed) {
  Builder b;
  Value x = b.parameter({kF32, {4}});
  Value y = b.parameter({kF32, {4}});
  Value sum = b.binary("add", x, y);
  b.alias(0, 0);
  EXPECT_NE(b.emit({sum}).find("%arg0: tensor<4xf32> {tf.aliasing_output = 0 : i32}"),
            std::string::npos);
  BufferPtr a = upload(std::vector<float>{1, 2, 3, 4}, kF32, {4});
  BufferPtr c = upload(std::vector<float>{10, 20, 30, 40}, kF32, {4});
  auto out = run(b, {sum}, {a, c});
  EXPECT_EQ(fetch<float>(out[0], sum), (std::vector<float>{11, 22, 33, 44}));
  // The donated argument is gone; reading it is an error, not a crash.
  std::vector<float> host(4);
  EXPECT_THROW(a->to_host(host.data(), sizeof(float) * 4), std::exception);
  c->to_host(host.data(), sizeof(float) * 4);
  EXPECT_EQ(host, (std::vector<float>{10, 20, 30, 40}));
}

TEST(HloRun, DonationMustMatchTheResultType) {
  Builder b;
  Value x = b.parameter({kF32, {4}});
  Value s = b.reduce(x, b.constant_float(0, kF32), {0}, ReduceKind::Sum);
  b.alias(0, 0);
  EXPECT_THROW(b.emit({s}), std::invalid_argument);
  EXPECT_THROW(b.alias(1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace torch_pjrt::hlo
