// Tests of the lowering table run through the graph: elementwise, matmul, reductions, fill,
// convert, take.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "graph/graph.h"
#include "graph/node.h"
#include "lowering/creation.h"
#include "lowering/elementwise.h"
#include "lowering/indexing.h"
#include "lowering/matmul.h"
#include "lowering/reductions.h"
#include "runtime/buffer.h"
#include "runtime/client.h"
#include "runtime/metrics.h"
#include "runtime/plugin.h"
#include "test_support.h"

namespace torch_pjrt::graph {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

class LoweringOps : public ::testing::Test {
 protected:
  void SetUp() override { test_client(); }
};

void expect_floats(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "at " << i << ": " << actual[i];
    } else if (actual[i] != expected[i]) {
      // Reductions may associate differently from the host loops: allow a few ulps of the value.
      EXPECT_NEAR(actual[i], expected[i], 1e-6 * std::max(1.0f, std::fabs(expected[i])))
          << "at " << i;
    }
  }
}

// A test's values and their expected contents: materialized together as one program (one compile
// instead of one per value), then checked one by one.
class Batch {
 public:
  template <class T>
  void expect(int line, DataPtr value, const std::vector<T>& expected) {
    values_.push_back(value);
    checks_.push_back([line, value, expected] {
      SCOPED_TRACE("value checked at line " + std::to_string(line));
      if constexpr (std::is_same_v<T, float>) {
        expect_floats(fetch<float>(value), expected);
      } else {
        EXPECT_EQ(fetch<T>(value), expected);
      }
    });
  }
  void run() {
    materialize(values_);
    for (auto& check : checks_) check();
  }

 private:
  std::vector<DataPtr> values_;
  std::vector<std::function<void()>> checks_;
};
#define CHECK_VALUE(batch, T, ...) (batch).expect<T>(__LINE__, __VA_ARGS__)

Attrs floats(std::vector<double> f) { return Attrs{{}, std::move(f)}; }
Attrs ints(std::vector<int64_t> i) { return Attrs{std::move(i), {}}; }

// --- elementwise -------------------------------------------------------------------------------

TEST_F(LoweringOps, AddWithAndWithoutAlpha) {
  Batch batch;
  std::vector<float> a{1, 2, 3, 4, 5, 6}, b{0.5f, -1, 2, 8, 0, -3};
  DataPtr x = upload(a, kF32, {2, 3}), y = upload(b, kF32, {2, 3});
  DataPtr plain = record1(lo::kAdd, {x, y}, {}, {kF32, {2, 3}}, 0);
  DataPtr scaled = record1(lo::kAdd, {x, y, host_scalar(2.5, kF32, 0)}, {}, {kF32, {2, 3}}, 0);
  DataPtr sub = record1(lo::kSub, {x, y, host_scalar(-2.0, kF32, 0)}, {}, {kF32, {2, 3}}, 0);
  std::vector<float> e_plain, e_scaled, e_sub;
  for (size_t i = 0; i < a.size(); ++i) {
    e_plain.push_back(a[i] + b[i]);
    e_scaled.push_back(a[i] + 2.5f * b[i]);
    e_sub.push_back(a[i] - (-2.0f * b[i]));
  }
  CHECK_VALUE(batch, float, plain, e_plain);
  CHECK_VALUE(batch, float, scaled, e_scaled);
  CHECK_VALUE(batch, float, sub, e_sub);
  batch.run();
}

TEST_F(LoweringOps, MulBroadcastsTrailingOperand) {
  Batch batch;
  std::vector<float> a{1, 2, 3, 4, 5, 6}, row{10, -1, 0.5f};
  DataPtr x = upload(a, kF32, {2, 3}), r = upload(row, kF32, {3});
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) expected.push_back(a[i * 3 + j] * row[j]);
  CHECK_VALUE(batch, float, record1(lo::kMul, {x, r}, {}, {kF32, {2, 3}}, 0), expected);
  // Operand order does not matter for broadcasting, nor does a rank-0 operand.
  CHECK_VALUE(batch, float, record1(lo::kMul, {r, x}, {}, {kF32, {2, 3}}, 0), expected);
  DataPtr s = upload(std::vector<float>{-2}, kF32, {});
  std::vector<float> doubled;
  for (float v : a) doubled.push_back(-2 * v);
  CHECK_VALUE(batch, float, record1(lo::kMul, {s, x}, {}, {kF32, {2, 3}}, 0), doubled);
  batch.run();
}

TEST_F(LoweringOps, DivOfIntsInFloatOutput) {
  Batch batch;
  std::vector<int32_t> a{7, -7, 1, 0}, b{2, 2, 3, -4};
  DataPtr q = record1(lo::kDiv, {upload(a, kI32, {4}), upload(b, kI32, {4})}, {}, {kF32, {4}}, 0);
  std::vector<float> expected;
  for (size_t i = 0; i < a.size(); ++i)
    expected.push_back(static_cast<float>(a[i]) / static_cast<float>(b[i]));
  CHECK_VALUE(batch, float, q, expected);
  batch.run();
}

TEST_F(LoweringOps, MaximumMinimumOnInts) {
  Batch batch;
  std::vector<int64_t> a{INT64_MIN, 5, -3, INT64_MAX}, b{0, 7, -4, 1};
  DataPtr x = upload(a, kI64, {4}), y = upload(b, kI64, {4});
  CHECK_VALUE(batch, int64_t, record1(lo::kMaximum, {x, y}, {}, {kI64, {4}}, 0),
              (std::vector<int64_t>{0, 7, -3, INT64_MAX}));
  CHECK_VALUE(batch, int64_t, record1(lo::kMinimum, {x, y}, {}, {kI64, {4}}, 0),
              (std::vector<int64_t>{INT64_MIN, 5, -4, 1}));
  batch.run();
}

TEST_F(LoweringOps, ComparisonsInComputeTypeGiveBool) {
  Batch batch;
  // An i32 and an f32 operand compared in f32: 2 < 2.5 holds there, but not in i32 (see below).
  std::vector<int32_t> a{1, 2, 3, -1};
  std::vector<float> b{1, 2.5f, 2.5f, -1.5f};
  DataPtr x = upload(a, kI32, {4}), y = upload(b, kF32, {4});
  const auto f32 = static_cast<int64_t>(kF32);
  std::vector<uint8_t> lt, le, eq, ne, gt, ge;
  for (size_t i = 0; i < a.size(); ++i) {
    const float l = static_cast<float>(a[i]), r = b[i];
    lt.push_back(l < r);
    le.push_back(l <= r);
    eq.push_back(l == r);
    ne.push_back(l != r);
    gt.push_back(l > r);
    ge.push_back(l >= r);
  }
  const TensorType out{kBool, {4}};
  CHECK_VALUE(batch, uint8_t, record1(lo::kLt, {x, y}, ints({f32}), out, 0), lt);
  CHECK_VALUE(batch, uint8_t, record1(lo::kLe, {x, y}, ints({f32}), out, 0), le);
  CHECK_VALUE(batch, uint8_t, record1(lo::kEq, {x, y}, ints({f32}), out, 0), eq);
  CHECK_VALUE(batch, uint8_t, record1(lo::kNe, {x, y}, ints({f32}), out, 0), ne);
  CHECK_VALUE(batch, uint8_t, record1(lo::kGt, {x, y}, ints({f32}), out, 0), gt);
  CHECK_VALUE(batch, uint8_t, record1(lo::kGe, {x, y}, ints({f32}), out, 0), ge);
  // Compared in i32 instead, 2.5 truncates to 2: 2 < 2 is false.
  CHECK_VALUE(batch, uint8_t, record1(lo::kLt, {x, y}, ints({static_cast<int64_t>(kI32)}), out, 0),
              (std::vector<uint8_t>{0, 0, 0, 0}));
  // i64 extremes compare exactly (a float compute type would round them together).
  DataPtr big = upload(std::vector<int64_t>{INT64_MAX - 1, INT64_MIN}, kI64, {2});
  DataPtr big2 = upload(std::vector<int64_t>{INT64_MAX, INT64_MIN + 1}, kI64, {2});
  CHECK_VALUE(batch, uint8_t,
              record1(lo::kLt, {big, big2}, ints({static_cast<int64_t>(kI64)}), {kBool, {2}}, 0),
              (std::vector<uint8_t>{1, 1}));
  batch.run();
}

TEST_F(LoweringOps, WhereBroadcastsAndConverts) {
  Batch batch;
  std::vector<uint8_t> cond{1, 0, 1, 0, 0, 1};
  std::vector<float> a{1, 2, 3};
  std::vector<int32_t> b{-7};
  DataPtr c = upload(cond, kBool, {2, 3});
  DataPtr w =
      record1(lo::kWhere, {c, upload(a, kF32, {3}), upload(b, kI32, {})}, {}, {kF32, {2, 3}}, 0);
  std::vector<float> expected;
  for (int i = 0; i < 6; ++i) expected.push_back(cond[i] ? a[i % 3] : -7.0f);
  CHECK_VALUE(batch, float, w, expected);
  // A rank-0 condition broadcast to everything.
  DataPtr no = upload(std::vector<uint8_t>{0}, kBool, {});
  CHECK_VALUE(
      batch, float,
      record1(lo::kWhere, {no, upload(a, kF32, {3}), upload(b, kI32, {})}, {}, {kF32, {2, 3}}, 0),
      std::vector<float>(6, -7.0f));
  batch.run();
}

TEST_F(LoweringOps, ReluKeepsNaNAndThresholdBackward) {
  Batch batch;
  std::vector<float> a{-1, 0, 2, kNaN, -0.5f, 3};
  DataPtr x = upload(a, kF32, {6});
  CHECK_VALUE(batch, float, record1(lo::kRelu, {x}, {}, {kF32, {6}}, 0), {0, 0, 2, kNaN, 0, 3});
  std::vector<float> g{10, 20, 30, 40, 50, 60};
  DataPtr tb =
      record1(lo::kThresholdBackward, {upload(g, kF32, {6}), x}, floats({0.0}), {kF32, {6}}, 0);
  // PyTorch computes self <= threshold ? 0 : grad, so a NaN self lets the gradient through.
  CHECK_VALUE(batch, float, tb, {0, 0, 30, 40, 0, 60});
  batch.run();
}

// --- matmul --------------------------------------------------------------------------------------

std::vector<float> ref_matmul(const std::vector<float>& a, const std::vector<float>& b, int batch,
                              int m, int k, int n) {
  std::vector<float> out(batch * m * n, 0);
  for (int z = 0; z < batch; ++z)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        float acc = 0;
        for (int p = 0; p < k; ++p) acc += a[(z * m + i) * k + p] * b[(z * k + p) * n + j];
        out[(z * m + i) * n + j] = acc;
      }
  return out;
}

std::vector<float> iota_floats(int n, float start, float step) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(start + step * i);
  return v;
}

TEST_F(LoweringOps, Matmul2D) {
  Batch batch;
  auto a = iota_floats(6, -2, 0.5f), b = iota_floats(12, 1, -0.25f);
  DataPtr p = record1(lo::kMatmul, {upload(a, kF32, {2, 3}), upload(b, kF32, {3, 4})}, {},
                      {kF32, {2, 4}}, 0);
  CHECK_VALUE(batch, float, p, ref_matmul(a, b, 1, 2, 3, 4));
  batch.run();
}

TEST_F(LoweringOps, MatmulBatchedAndConverted) {
  Batch batch;
  auto a = iota_floats(12, 0, 1), b = iota_floats(12, 3, -0.5f);
  DataPtr p = record1(lo::kMatmul, {upload(a, kF32, {2, 2, 3}), upload(b, kF32, {2, 3, 2})}, {},
                      {kF32, {2, 2, 2}}, 0);
  CHECK_VALUE(batch, float, p, ref_matmul(a, b, 2, 2, 3, 2));
  // Integer operands are converted to the output type.
  std::vector<int32_t> ia{1, 2, 3, 4}, ib{5, 6, 7, 8};
  DataPtr q = record1(lo::kMatmul, {upload(ia, kI32, {2, 2}), upload(ib, kI32, {2, 2})}, {},
                      {kF32, {2, 2}}, 0);
  CHECK_VALUE(batch, float, q, {19, 22, 43, 50});
  batch.run();
}

TEST_F(LoweringOps, AddmmBetaZeroIgnoresNaNSelf) {
  Batch batch;
  auto m1 = iota_floats(6, 1, 1), m2 = iota_floats(6, -1, 0.5f);
  std::vector<float> self{kNaN, 1, std::numeric_limits<float>::infinity(), kNaN};
  DataPtr r = record1(
      lo::kAddmm, {upload(self, kF32, {2, 2}), upload(m1, kF32, {2, 3}), upload(m2, kF32, {3, 2})},
      floats({0.0, 1.0}), {kF32, {2, 2}}, 0);
  CHECK_VALUE(batch, float, r, ref_matmul(m1, m2, 1, 2, 3, 2));
  // beta 0 with alpha != 1 still scales the product.
  DataPtr r2 = record1(
      lo::kAddmm, {upload(self, kF32, {2, 2}), upload(m1, kF32, {2, 3}), upload(m2, kF32, {3, 2})},
      floats({0.0, -3.0}), {kF32, {2, 2}}, 0);
  auto expected = ref_matmul(m1, m2, 1, 2, 3, 2);
  for (float& v : expected) v *= -3;
  CHECK_VALUE(batch, float, r2, expected);
  batch.run();
}

TEST_F(LoweringOps, AddmmBetaAlphaAndBroadcastSelf) {
  Batch batch;
  auto m1 = iota_floats(6, 0.5f, 1), m2 = iota_floats(12, 2, -0.5f);
  std::vector<float> bias{1, -2, 3, 0.25f};
  DataPtr r = record1(lo::kAddmm,
                      {upload(bias, kF32, {4}), upload(m1, kF32, {2, 3}), upload(m2, kF32, {3, 4})},
                      floats({0.5, 2.0}), {kF32, {2, 4}}, 0);
  auto expected = ref_matmul(m1, m2, 1, 2, 3, 4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) expected[i * 4 + j] = 0.5f * bias[j] + 2.0f * expected[i * 4 + j];
  CHECK_VALUE(batch, float, r, expected);
  // beta 1 and alpha 1: a plain self + m1 @ m2.
  DataPtr r1 = record1(
      lo::kAddmm, {upload(bias, kF32, {4}), upload(m1, kF32, {2, 3}), upload(m2, kF32, {3, 4})},
      floats({1.0, 1.0}), {kF32, {2, 4}}, 0);
  auto expected1 = ref_matmul(m1, m2, 1, 2, 3, 4);
  for (int i = 0; i < 8; ++i) expected1[i] += bias[i % 4];
  CHECK_VALUE(batch, float, r1, expected1);
  batch.run();
}

// --- reductions ----------------------------------------------------------------------------------

TEST_F(LoweringOps, SumOverDimsKeepdimOrNot) {
  Batch batch;
  auto a = iota_floats(24, 1, 1);  // [2,3,4]
  DataPtr x = upload(a, kF32, {2, 3, 4});
  std::vector<float> keep(8, 0), over02(3, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        keep[i * 4 + k] += a[(i * 3 + j) * 4 + k];
        over02[j] += a[(i * 3 + j) * 4 + k];
      }
  CHECK_VALUE(batch, float, record1(lo::kSum, {x}, ints({1}), {kF32, {2, 1, 4}}, 0), keep);
  CHECK_VALUE(batch, float, record1(lo::kSum, {x}, ints({0, 2}), {kF32, {3}}, 0), over02);
  CHECK_VALUE(batch, float, record1(lo::kSum, {x}, ints({0, 2}), {kF32, {1, 3, 1}}, 0), over02);
  // All dims to a rank-0 value; ints summed in i64.
  CHECK_VALUE(batch, float, record1(lo::kSum, {x}, ints({0, 1, 2}), {kF32, {}}, 0), {300});
  std::vector<int32_t> ia{INT32_MAX, INT32_MAX, 2};
  CHECK_VALUE(batch, int64_t, record1(lo::kSum, {upload(ia, kI32, {3})}, ints({0}), {kI64, {}}, 0),
              (std::vector<int64_t>{2 * int64_t{INT32_MAX} + 2}));
  batch.run();
}

TEST_F(LoweringOps, MeanOverDims) {
  Batch batch;
  auto a = iota_floats(24, -5, 0.75f);
  DataPtr x = upload(a, kF32, {2, 3, 4});
  std::vector<float> m1(8, 0), m12(2, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        m1[i * 4 + k] += a[(i * 3 + j) * 4 + k] / 3;
        m12[i] += a[(i * 3 + j) * 4 + k] / 12;
      }
  CHECK_VALUE(batch, float, record1(lo::kMean, {x}, ints({1}), {kF32, {2, 4}}, 0), m1);
  CHECK_VALUE(batch, float, record1(lo::kMean, {x}, ints({1, 2}), {kF32, {2, 1, 1}}, 0), m12);
  // Integer input, float output: the mean is not truncated.
  std::vector<int32_t> ia{1, 2, 4, 4};
  CHECK_VALUE(batch, float,
              record1(lo::kMean, {upload(ia, kI32, {2, 2})}, ints({0, 1}), {kF32, {}}, 0), {2.75f});
  batch.run();
}

TEST_F(LoweringOps, AmaxAminPropagateNaN) {
  Batch batch;
  std::vector<float> a{1, kNaN, 3, -4, 5, -6, kNaN, kNaN, kNaN};
  DataPtr x = upload(a, kF32, {3, 3});
  CHECK_VALUE(batch, float, record1(lo::kAmax, {x}, ints({1}), {kF32, {3}}, 0), {kNaN, 5, kNaN});
  CHECK_VALUE(batch, float, record1(lo::kAmin, {x}, ints({1}), {kF32, {3, 1}}, 0),
              {kNaN, -6, kNaN});
  CHECK_VALUE(batch, float, record1(lo::kAmax, {x}, ints({0}), {kF32, {1, 3}}, 0),
              {kNaN, kNaN, kNaN});
  std::vector<float> finite{1, -std::numeric_limits<float>::infinity(), 3, -4};
  DataPtr y = upload(finite, kF32, {2, 2});
  CHECK_VALUE(batch, float, record1(lo::kAmax, {y}, ints({0}), {kF32, {2}}, 0), {3, -4});
  CHECK_VALUE(batch, float, record1(lo::kAmin, {y}, ints({0, 1}), {kF32, {}}, 0),
              {-std::numeric_limits<float>::infinity()});
  batch.run();
}

TEST_F(LoweringOps, AmaxAminOnInt64Extremes) {
  Batch batch;
  std::vector<int64_t> a{INT64_MIN, INT64_MIN, INT64_MAX, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1};
  DataPtr x = upload(a, kI64, {3, 2});
  CHECK_VALUE(batch, int64_t, record1(lo::kAmax, {x}, ints({1}), {kI64, {3}}, 0),
              (std::vector<int64_t>{INT64_MIN, INT64_MAX, INT64_MAX - 1}));
  CHECK_VALUE(batch, int64_t, record1(lo::kAmin, {x}, ints({1}), {kI64, {3, 1}}, 0),
              (std::vector<int64_t>{INT64_MIN, INT64_MAX, INT64_MIN + 1}));
  CHECK_VALUE(batch, int64_t, record1(lo::kAmax, {x}, ints({0, 1}), {kI64, {}}, 0),
              (std::vector<int64_t>{INT64_MAX}));
  CHECK_VALUE(batch, int64_t, record1(lo::kAmin, {x}, ints({0}), {kI64, {2}}, 0),
              (std::vector<int64_t>{INT64_MIN, INT64_MIN}));
  // Values next to the identity are not mistaken for it.
  std::vector<int64_t> near{INT64_MAX - 1, INT64_MAX - 2};
  CHECK_VALUE(batch, int64_t,
              record1(lo::kAmin, {upload(near, kI64, {2})}, ints({0}), {kI64, {}}, 0),
              (std::vector<int64_t>{INT64_MAX - 2}));
  batch.run();
}

// --- creation, conversion, take ------------------------------------------------------------------

TEST_F(LoweringOps, FillWithFloatsAndExactInts) {
  Batch batch;
  CHECK_VALUE(batch, float, record1(lo::kFill, {}, floats({-1.25}), {kF32, {2, 3}}, 0),
              std::vector<float>(6, -1.25f));
  CHECK_VALUE(batch, float, record1(lo::kFill, {}, floats({0.5}), {kF32, {}}, 0), {0.5f});
  const int64_t big = (int64_t{1} << 60) + 1;  // not representable as a double
  CHECK_VALUE(batch, int64_t, record1(lo::kFill, {}, ints({big}), {kI64, {3}}, 0),
              std::vector<int64_t>(3, big));
  CHECK_VALUE(batch, int64_t, record1(lo::kFill, {}, ints({INT64_MIN}), {kI64, {}}, 0),
              std::vector<int64_t>{INT64_MIN});
  CHECK_VALUE(batch, int32_t, record1(lo::kFill, {}, ints({-7}), {kI32, {2, 2}}, 0),
              std::vector<int32_t>(4, -7));
  CHECK_VALUE(batch, uint8_t, record1(lo::kFill, {}, ints({1}), {kBool, {2}}, 0),
              (std::vector<uint8_t>{1, 1}));
  // Float fill of an integer type with an integral value.
  CHECK_VALUE(batch, int32_t, record1(lo::kFill, {}, floats({3.0}), {kI32, {2}}, 0),
              (std::vector<int32_t>{3, 3}));
  batch.run();
}

TEST_F(LoweringOps, ConvertTruncatesAndBroadcasts) {
  Batch batch;
  std::vector<float> a{2.7f, -2.7f, 0.5f, -0.5f, 100.99f, 3};
  CHECK_VALUE(batch, int32_t, record1(lo::kConvert, {upload(a, kF32, {6})}, {}, {kI32, {6}}, 0),
              (std::vector<int32_t>{2, -2, 0, 0, 100, 3}));
  DataPtr s = upload(std::vector<int64_t>{-9}, kI64, {});
  CHECK_VALUE(batch, float, record1(lo::kConvert, {s}, {}, {kF32, {2, 2}}, 0),
              std::vector<float>(4, -9.0f));
  // Same type, broadcast only: [3] -> [2,3].
  std::vector<float> row{1, 2, 3};
  CHECK_VALUE(batch, float, record1(lo::kConvert, {upload(row, kF32, {3})}, {}, {kF32, {2, 3}}, 0),
              {1, 2, 3, 1, 2, 3});
  // To bool: nonzero is true.
  CHECK_VALUE(batch, uint8_t, record1(lo::kConvert, {upload(a, kF32, {6})}, {}, {kBool, {6}}, 0),
              std::vector<uint8_t>(6, 1));
  batch.run();
}

TEST_F(LoweringOps, ConvertToFloat8RoundsAsTheCpuDoes) {
  Batch batch;
  const float inf = std::numeric_limits<float>::infinity();
  DataPtr x = upload(std::vector<float>{kNaN, -kNaN, inf, -inf, 1000, 0.3f, -1e-3f}, kF32, {7});
  // e4m3fn saturates at +-448 (0x7E), infinities included.
  CHECK_VALUE(batch, uint8_t, record1(lo::kConvert, {x}, {}, {ElementType::F8E4M3FN, {7}}, 0),
              (std::vector<uint8_t>{0x7F, 0xFF, 0x7E, 0xFE, 0x7E, 42, 129}));
  // e5m2 overflows to inf; a NaN is 0x7F with its sign (XLA's own payload differs).
  CHECK_VALUE(batch, uint8_t, record1(lo::kConvert, {x}, {}, {ElementType::F8E5M2, {7}}, 0),
              (std::vector<uint8_t>{0x7F, 0xFF, 0x7C, 0xFC, 100, 53, 148}));
  batch.run();
}

TEST_F(LoweringOps, ConvertFromFloat8KeepsTheSignOfNaN) {
  DataPtr bytes = upload(std::vector<uint8_t>{0xFF, 0x7D, 0x3C}, ElementType::F8E5M2, {3});
  const std::vector<float> out = fetch<float>(record1(lo::kConvert, {bytes}, {}, {kF32, {3}}, 0));
  EXPECT_TRUE(std::isnan(out[0]) && std::signbit(out[0]));
  EXPECT_TRUE(std::isnan(out[1]) && !std::signbit(out[1]));
  EXPECT_EQ(out[2], 1.0f);
}

TEST_F(LoweringOps, TakeGathersRowMajor) {
  Batch batch;
  auto a = iota_floats(6, 10, 1);  // [[10,11,12],[13,14,15]]
  std::vector<int64_t> idx{5, 0, 3, 3};
  DataPtr t = record1(lo::kTake, {upload(a, kF32, {2, 3}), upload(idx, kI64, {2, 2})}, {},
                      {kF32, {2, 2}}, 0);
  CHECK_VALUE(batch, float, t, {15, 10, 13, 13});
  DataPtr t1 = record1(lo::kTake, {upload(a, kF32, {6}), upload(std::vector<int64_t>{4}, kI64, {})},
                       {}, {kF32, {}}, 0);
  CHECK_VALUE(batch, float, t1, {14});
  batch.run();
}

TEST_F(LoweringOps, ChainOfOpsFusesIntoOneExecution) {
  Batch batch;
  // (a + b) * a, summed over dim 0, compared with 0: four nodes, one program.
  std::vector<float> a{1, -2, 3, -4}, b{1, 1, -5, 2};
  DataPtr x = upload(a, kF32, {2, 2}), y = upload(b, kF32, {2, 2});
  DataPtr s = record1(lo::kAdd, {x, y}, {}, {kF32, {2, 2}}, 0);
  DataPtr p = record1(lo::kMul, {s, x}, {}, {kF32, {2, 2}}, 0);
  DataPtr r = record1(lo::kSum, {p}, ints({0}), {kF32, {2}}, 0);
  DataPtr zero = record1(lo::kFill, {}, floats({0}), {kF32, {}}, 0);
  DataPtr c = record1(lo::kGt, {r, zero}, ints({static_cast<int64_t>(kF32)}), {kBool, {2}}, 0);
  const int64_t before = runtime::counters().executions;
  // (1+1)*1 + (3-5)*3 = -4; (-2+1)*-2 + (-4+2)*-4 = 10
  CHECK_VALUE(batch, uint8_t, c, (std::vector<uint8_t>{0, 1}));
  batch.run();
  EXPECT_EQ(runtime::counters().executions - before, 1);
  EXPECT_TRUE(r->pending());  // intermediates are not materialized
}

}  // namespace
}  // namespace torch_pjrt::graph
