// Tests of kViewRead/kViewWrite over a flat storage against index arithmetic done on the host, and
// of kBitcast against the host's bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/node.h"
#include "hlo/builder.h"
#include "lowering/creation.h"
#include "lowering/elementwise.h"
#include "lowering/views.h"
#include "runtime/buffer.h"
#include "runtime/client.h"
#include "runtime/plugin.h"
#include "test_support.h"

namespace torch_pjrt::graph {
namespace {

struct ViewCase {
  std::string name;
  std::vector<int64_t> sizes, strides;
  int64_t offset;
};

std::ostream& operator<<(std::ostream& os, const ViewCase& c) {
  os << c.name << " sizes [";
  for (int64_t s : c.sizes) os << s << ",";
  os << "] strides [";
  for (int64_t s : c.strides) os << s << ",";
  return os << "] offset " << c.offset;
}

// Storage element index of every element of the view, in row-major order of the view.
std::vector<int64_t> view_positions(const ViewCase& v) {
  const int64_t n =
      std::accumulate(v.sizes.begin(), v.sizes.end(), int64_t{1}, std::multiplies<int64_t>());
  std::vector<int64_t> out;
  std::vector<int64_t> index(v.sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t pos = v.offset;
    for (size_t d = 0; d < index.size(); ++d) pos += index[d] * v.strides[d];
    out.push_back(pos);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < v.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

template <class T>
std::vector<T> ref_read(const std::vector<T>& storage, const ViewCase& v) {
  std::vector<T> out;
  for (int64_t p : view_positions(v)) out.push_back(storage.at(p));
  return out;
}

template <class T>
std::vector<T> ref_write(std::vector<T> storage, const ViewCase& v, const std::vector<T>& update) {
  const auto positions = view_positions(v);
  for (size_t i = 0; i < positions.size(); ++i) storage.at(positions[i]) = update.at(i);
  return storage;
}

std::vector<float> storage24() {
  std::vector<float> s;
  for (int i = 0; i < 24; ++i) s.push_back(0.5f + i);
  return s;
}

// The StableHLO ops one lowering emits for a storage of `storage_dims` (to check which path it
// took).
// `runtime_offset`: the offset is an operand (an i64 scalar) instead of an attribute.
std::string lowered_text(const OpDef& op, const ViewCase& v,
                         const std::vector<int64_t>& storage_dims, bool write,
                         bool runtime_offset = false) {
  hlo::Builder b;
  std::vector<hlo::Value> in{b.parameter({kF32, storage_dims})};
  if (write) in.push_back(b.parameter({kF32, v.sizes}));
  if (runtime_offset) in.push_back(b.parameter({hlo::ElementType::I64, {}}));
  const TensorType out{kF32, write ? storage_dims : v.sizes};
  return b.emit(op.emit(b, in, lo::view_attrs(v.sizes, v.strides, v.offset), {out}));
}

bool has_op(const std::string& text, const std::string& op) {
  return text.find("\"stablehlo." + op + "\"") != std::string::npos;
}

// The view's offset as a runtime operand (an i64 scalar on the device), as eager programs take it.
DataPtr offset_operand(const ViewCase& v) {
  return upload(std::vector<int64_t>{v.offset}, hlo::ElementType::I64, {});
}

// Reads every view of `cases` from one storage of dims `shape` (any shape of 24 elements) in one
// program, and compares each with the host reference. `runtime_offset`: offsets are operands.
void check_reads(const std::vector<ViewCase>& cases, const std::vector<int64_t>& shape,
                 bool runtime_offset = false) {
  test_client();
  const auto storage = storage24();
  {
    DataPtr s = upload(storage, kF32, shape);
    std::vector<DataPtr> views;
    for (const ViewCase& v : cases) {
      std::vector<DataPtr> in{s};
      if (runtime_offset) in.push_back(offset_operand(v));
      views.push_back(record1(lo::kViewRead, in, lo::view_attrs(v.sizes, v.strides, v.offset),
                              {kF32, v.sizes}, 0));
    }
    materialize(views);
    for (size_t i = 0; i < cases.size(); ++i) {
      EXPECT_EQ(fetch<float>(views[i]), ref_read(storage, cases[i])) << cases[i];
    }
  }
}

// Writes distinct values into every view of `cases` (each into its own copy of a storage of dims
// `shape`) in one program; each result keeps the storage's shape.
void check_writes(const std::vector<ViewCase>& cases, const std::vector<int64_t>& shape,
                  bool runtime_offset = false) {
  test_client();
  const auto storage = storage24();
  {
    DataPtr s = upload(storage, kF32, shape);
    std::vector<DataPtr> written;
    std::vector<std::vector<float>> expected;
    for (const ViewCase& v : cases) {
      const int64_t n =
          std::accumulate(v.sizes.begin(), v.sizes.end(), int64_t{1}, std::multiplies<int64_t>());
      std::vector<float> update;
      for (int64_t i = 0; i < n; ++i) update.push_back(-1000.0f - static_cast<float>(i));
      std::vector<DataPtr> in{s, upload(update, kF32, v.sizes)};
      if (runtime_offset) in.push_back(offset_operand(v));
      written.push_back(record1(lo::kViewWrite, in, lo::view_attrs(v.sizes, v.strides, v.offset),
                                {kF32, shape}, 0));
      expected.push_back(ref_write(storage, v, update));
    }
    materialize(written);
    for (size_t i = 0; i < cases.size(); ++i) {
      EXPECT_EQ(written[i]->buffer->dims(), shape);
      EXPECT_EQ(fetch<float>(written[i]), expected[i]) << cases[i];
    }
  }
}

// --- kViewRead -----------------------------------------------------------------------------------

TEST(ViewRead, ContiguousWithOffsetIsASlice) {
  const std::vector<ViewCase> cases{{"whole", {24}, {1}, 0},
                                    {"whole_3d", {2, 3, 4}, {12, 4, 1}, 0},
                                    {"offset", {2, 3}, {3, 1}, 5},
                                    {"tail", {3, 4}, {4, 1}, 12},
                                    {"empty", {0, 3}, {3, 1}, 4}};
  check_reads(cases, {2, 3, 4});
  const std::string text = lowered_text(lo::kViewRead, cases[2], {24}, false);
  EXPECT_TRUE(has_op(text, "slice")) << text;
  EXPECT_FALSE(has_op(text, "gather")) << text;
}

TEST(ViewRead, PermutedDenseIsATranspose) {
  const std::vector<ViewCase> cases{{"transpose", {6, 4}, {1, 6}, 0},
                                    {"transpose_offset", {3, 2}, {1, 3}, 2},
                                    {"permute_3d", {3, 4, 2}, {4, 1, 12}, 0},
                                    {"permute_3d_other", {4, 2, 3}, {1, 12, 4}, 0},
                                    {"permute_3d_reversed", {4, 3, 2}, {1, 4, 12}, 0}};
  check_reads(cases, {24});
  for (const ViewCase& v : cases) {
    const std::string text = lowered_text(lo::kViewRead, v, {24}, false);
    EXPECT_TRUE(has_op(text, "transpose")) << v << "\n" << text;
    EXPECT_FALSE(has_op(text, "gather")) << v << "\n" << text;
  }
}

TEST(ViewRead, StrideZeroIsABroadcast) {
  const std::vector<ViewCase> cases{{"rows", {3, 4}, {0, 1}, 4},
                                    {"cols", {2, 3}, {1, 0}, 1},
                                    {"all", {2, 2}, {0, 0}, 7},
                                    {"transposed", {3, 2, 2}, {1, 0, 3}, 0}};
  check_reads(cases, {2, 3, 4});
  for (const ViewCase& v : cases) {
    const std::string text = lowered_text(lo::kViewRead, v, {24}, false);
    EXPECT_TRUE(has_op(text, "broadcast_in_dim")) << v << "\n" << text;
    EXPECT_FALSE(has_op(text, "gather")) << v << "\n" << text;
  }
}

TEST(ViewRead, SizeOneDimsCarryNoLayout) {
  check_reads({{"size1_dims", {1, 4, 1}, {24, 1, 1}, 3},
               {"odd_strides", {1, 3, 1}, {7, 1, 100}, 5},
               {"single_element", {1}, {1}, 23},
               {"single_element_2d", {1, 1}, {0, 5}, 11},
               {"rank0", {}, {}, 9}},
              {24});
  const std::string text =
      lowered_text(lo::kViewRead, {"odd", {1, 3, 1}, {7, 1, 100}, 5}, {24}, false);
  EXPECT_FALSE(has_op(text, "gather")) << text;
}

TEST(ViewRead, StepSlicesAndNarrowedRowsAreSlicesOfABlock) {
  const std::vector<ViewCase> cases{{"step_slice", {2, 3}, {12, 2}, 1},
                                    {"step_1d", {4}, {5}, 2},
                                    {"step_past_end", {4}, {5}, 8},  // the block runs past the end
                                    {"step_transposed", {3, 2}, {2, 8}, 3},
                                    {"step_size1", {1, 3, 1}, {7, 2, 100}, 5},
                                    {"step_and_broadcast", {2, 3, 2}, {0, 4, 2}, 1},
                                    {"narrowed_rows", {4, 4}, {6, 1}, 2},
                                    // k of a [2, 2, 6] q/k/v projection split, viewed as 2 heads
                                    // of 1 and transposed: [2, 2, 2, 1] strides (12, 1, 6, 1)
                                    {"split_heads", {2, 2, 2, 1}, {12, 1, 6, 1}, 2}};
  check_reads(cases, {2, 3, 4});
  for (const ViewCase& v : cases) {
    const std::string text = lowered_text(lo::kViewRead, v, {24}, false);
    EXPECT_TRUE(has_op(text, "slice")) << v << "\n" << text;
    EXPECT_FALSE(has_op(text, "gather")) << v << "\n" << text;
  }
}

TEST(ViewRead, ViewsEndingInsideTheLastRowNeedNoPadding) {
  // The block from such a view's offset runs past the storage's end; the block from the offset
  // rounded down to the largest stride does not, and the view is a slice of it.
  const std::vector<ViewCase> cases{{"second_half_rows", {2, 3, 2}, {12, 4, 1}, 2},
                                    {"last_column", {6}, {4}, 3},
                                    {"inner_corner", {2, 2, 2}, {12, 4, 1}, 6},
                                    {"second_half_step", {2, 2}, {12, 2}, 9}};
  check_reads(cases, {2, 3, 4});
  for (const ViewCase& v : cases) {
    const std::string text = lowered_text(lo::kViewRead, v, {24}, false);
    EXPECT_FALSE(has_op(text, "pad")) << v << "\n" << text;
    EXPECT_FALSE(has_op(text, "gather")) << v << "\n" << text;
  }
}

TEST(ViewRead, OverlappingViewsGather) {
  const std::vector<ViewCase> cases{{"overlap_3x3", {3, 3}, {1, 1}, 0},
                                    {"window", {4, 3}, {2, 1}, 3},
                                    {"same_stride_3d", {2, 2, 2}, {2, 1, 1}, 10}};
  check_reads(cases, {24});
  for (const ViewCase& v : cases) {
    EXPECT_TRUE(has_op(lowered_text(lo::kViewRead, v, {24}, false), "gather")) << v;
  }
}

TEST(ViewRead, ExactI64Values) {
  test_client();
  std::vector<int64_t> storage;
  for (int i = 0; i < 12; ++i) storage.push_back((int64_t{1} << 60) + i);
  const ViewCase v{"step", {2, 2}, {1, 5}, 1};
  DataPtr view = record1(lo::kViewRead, {upload(storage, kI64, {12})},
                         lo::view_attrs(v.sizes, v.strides, v.offset), {kI64, {2, 2}}, 0);
  EXPECT_EQ(fetch<int64_t>(view), ref_read(storage, v));
}

// --- kViewWrite ----------------------------------------------------------------------------------

TEST(ViewWrite, ContiguousRangeIsADynamicUpdateSlice) {
  const std::vector<ViewCase> cases{{"whole", {4, 6}, {6, 1}, 0},
                                    {"offset", {2, 3}, {3, 1}, 5},
                                    {"end", {4}, {1}, 20},
                                    {"size1_dims", {1, 3, 1}, {7, 1, 9}, 10},
                                    {"single_element", {}, {}, 13}};
  check_writes(cases, {24});
  const std::string text = lowered_text(lo::kViewWrite, cases[1], {4, 6}, true);
  EXPECT_TRUE(has_op(text, "dynamic_update_slice")) << text;
  EXPECT_FALSE(has_op(text, "scatter")) << text;
}

TEST(ViewWrite, TransposedAndStepSlicedUpdateABlock) {
  const std::vector<ViewCase> cases{{"transpose", {6, 4}, {1, 6}, 0},
                                    {"transpose_offset", {3, 2}, {1, 6}, 7},
                                    {"step_slice", {2, 3}, {12, 2}, 1},
                                    {"step_1d", {4}, {5}, 3},
                                    {"step_past_end", {4}, {5}, 8},
                                    {"column", {4}, {6}, 2},
                                    {"narrowed_rows_size1", {3, 1, 2}, {6, 9, 1}, 3}};
  check_writes(cases, {4, 6});
  for (const ViewCase& v : cases) {
    const std::string text = lowered_text(lo::kViewWrite, v, {24}, true);
    EXPECT_TRUE(has_op(text, "dynamic_update_slice")) << v << "\n" << text;
    EXPECT_FALSE(has_op(text, "scatter")) << v << "\n" << text;
  }
}

// Eager programs take a view's offset as an operand, so one program serves every offset.
const std::vector<ViewCase> kRuntimeOffsetCases{{"step_slice", {2, 3}, {12, 2}, 1},
                                                {"step_1d_past_end", {4}, {5}, 8},
                                                {"narrowed_rows", {4, 4}, {6, 1}, 2},
                                                {"narrowed_transposed", {4, 3}, {1, 6}, 8},
                                                {"split_heads", {2, 2, 2, 1}, {12, 1, 6, 1}, 2},
                                                {"contiguous", {2, 3}, {3, 1}, 17}};

TEST(ViewRead, RuntimeOffsetStridedViewsAreDynamicSlices) {
  check_reads(kRuntimeOffsetCases, {24}, true);
  for (const ViewCase& v : kRuntimeOffsetCases) {
    const std::string text = lowered_text(lo::kViewRead, v, {24}, false, true);
    EXPECT_TRUE(has_op(text, "dynamic_slice")) << v << "\n" << text;
    EXPECT_FALSE(has_op(text, "gather")) << v << "\n" << text;
  }
}

TEST(ViewWrite, RuntimeOffsetStridedViewsAreDynamicUpdates) {
  check_writes(kRuntimeOffsetCases, {24}, true);
  for (const ViewCase& v : kRuntimeOffsetCases) {
    const std::string text = lowered_text(lo::kViewWrite, v, {24}, true, true);
    EXPECT_TRUE(has_op(text, "dynamic_update_slice")) << v << "\n" << text;
    EXPECT_FALSE(has_op(text, "scatter")) << v << "\n" << text;
  }
}

TEST(ViewWrite, OverlappingWindowScatters) {
  const std::string text = lowered_text(lo::kViewWrite, {"window", {4, 3}, {2, 1}, 3}, {24}, true);
  EXPECT_TRUE(has_op(text, "scatter")) << text;
}

TEST(ViewReadModifyWrite, InPlaceAddOnTransposedViewInOneProgram) {
  // storage[view] += 1 for a transposed step view, as the aten layer records an in-place op.
  test_client();
  const auto storage = storage24();
  const ViewCase v{"t", {3, 2}, {2, 12}, 1};
  DataPtr s = upload(storage, kF32, {24});
  const Attrs attrs = lo::view_attrs(v.sizes, v.strides, v.offset);
  DataPtr read = record1(lo::kViewRead, {s}, attrs, {kF32, v.sizes}, 0);
  DataPtr one = record1(lo::kFill, {}, Attrs{{}, {1.0}}, {kF32, {}}, 0);
  DataPtr plus = record1(lo::kAdd, {read, one}, {}, {kF32, v.sizes}, 0);
  DataPtr written = record1(lo::kViewWrite, {s, plus}, attrs, {kF32, {24}}, 0);
  auto update = ref_read(storage, v);
  for (float& x : update) x += 1;
  EXPECT_EQ(fetch<float>(written), ref_write(storage, v, update));
}

// --- kBitcast ------------------------------------------------------------------------------------

// The host's bytes of `values` (x86-64 and every PJRT target are little-endian).
template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TEST(Bitcast, SameWidthKeepsEveryBit) {
  test_client();
  // -0.0, a NaN with payload and sign, the smallest subnormal, inf: bit patterns survive.
  const std::vector<int32_t> bits{int32_t(0x80000000), int32_t(0xFFC00123), 1, 0x7F800000};
  DataPtr as_f32 = record1(lo::kBitcast, {upload(bits, kI32, {2, 2})}, {}, {kF32, {4}}, 0);
  DataPtr back = record1(lo::kBitcast, {as_f32}, {}, {kI32, {2, 2}}, 0);
  materialize({as_f32, back});
  EXPECT_EQ(bytes_of(read<float>(as_f32)), bytes_of(bits));
  EXPECT_EQ(read<int32_t>(back), bits);
}

TEST(Bitcast, WideningAndNarrowingFollowTheBytes) {
  test_client();
  const std::vector<double> values{1.5, -0.0, 1e300};
  const auto bytes = bytes_of(values);
  DataPtr d = upload(values, ElementType::F64, {3});
  DataPtr u8 = record1(lo::kBitcast, {d}, {}, {ElementType::U8, {3, 2, 4}}, 0);
  DataPtr i16 = record1(lo::kBitcast, {u8}, {}, {ElementType::I16, {12}}, 0);
  DataPtr f32 = record1(lo::kBitcast, {i16}, {}, {kF32, {2, 3}}, 0);
  DataPtr f64 = record1(lo::kBitcast, {f32}, {}, {ElementType::F64, {3}}, 0);
  materialize({u8, i16, f32, f64});
  EXPECT_EQ(read<uint8_t>(u8), bytes);
  EXPECT_EQ(bytes_of(read<int16_t>(i16)), bytes);
  EXPECT_EQ(bytes_of(read<float>(f32)), bytes);
  EXPECT_EQ(bytes_of(read<double>(f64)), bytes);
}

TEST(Bitcast, BoolIsAByteZeroOrOne) {
  test_client();
  // bool -> bytes 0/1; bytes -> bool true when nonzero; 2 bytes per i16.
  DataPtr b = upload(std::vector<uint8_t>{1, 0, 1, 1}, kBool, {4});
  DataPtr as_i16 = record1(lo::kBitcast, {b}, {}, {ElementType::I16, {2}}, 0);
  DataPtr u8 = upload(std::vector<uint8_t>{0, 7, 255, 1}, ElementType::U8, {2, 2});
  DataPtr as_bool = record1(lo::kBitcast, {u8}, {}, {kBool, {4}}, 0);
  DataPtr i32_as_bool =
      record1(lo::kBitcast, {upload(std::vector<int32_t>{0x100}, kI32, {1})}, {}, {kBool, {4}}, 0);
  materialize({as_i16, as_bool, i32_as_bool});
  EXPECT_EQ(read<int16_t>(as_i16), (std::vector<int16_t>{0x0001, 0x0101}));
  EXPECT_EQ(read<uint8_t>(as_bool), (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(read<uint8_t>(i32_as_bool), (std::vector<uint8_t>{0, 1, 0, 0}));
}

TEST(Bitcast, ByteSizeMismatchThrows) {
  hlo::Builder b;
  hlo::Value x = b.parameter({kF32, {3}});
  EXPECT_THROW(lo::kBitcast.emit(b, {x}, {}, {{kI64, {2}}}), std::invalid_argument);
}

}  // namespace
}  // namespace torch_pjrt::graph
