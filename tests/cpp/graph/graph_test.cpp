// Tests of the deferred graph: recording, the structural program cache, slots, errors, synchronize.
#include "graph/graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graph/node.h"
#include "hlo/builder.h"
#include "lowering/creation.h"
#include "lowering/elementwise.h"
#include "runtime/buffer.h"
#include "runtime/client.h"
#include "runtime/metrics.h"
#include "runtime/plugin.h"
#include "test_support.h"

namespace torch_pjrt::graph {
namespace {

// Counter deltas since construction.
struct Delta {
  int64_t compiles = runtime::counters().compiles;
  int64_t hits = runtime::counters().cache_hits;
  int64_t executions = runtime::counters().executions;
  size_t programs = cached_programs();
  int64_t compiled() const { return runtime::counters().compiles - compiles; }
  int64_t hit() const { return runtime::counters().cache_hits - hits; }
  int64_t executed() const { return runtime::counters().executions - executions; }
  size_t new_programs() const { return cached_programs() - programs; }
};

class Graph : public ::testing::Test {
 protected:
  void SetUp() override {
    test_client();
    // Nothing left pending by an earlier test may run inside this one's counters.
    synchronize();
  }
};

// a + alpha * b on fresh [rows, cols] uploads; returns the result and the expected values.
std::pair<DataPtr, std::vector<float>> add_program(int64_t rows, int64_t cols, double alpha,
                                                   float base = 1) {
  std::vector<float> a, b, expected;
  for (int64_t i = 0; i < rows * cols; ++i) {
    a.push_back(base + i);
    b.push_back(0.5f * i);
    expected.push_back(a.back() + static_cast<float>(alpha) * b.back());
  }
  DataPtr r = record1(
      lo::kAdd,
      {upload(a, kF32, {rows, cols}), upload(b, kF32, {rows, cols}), host_scalar(alpha, kF32, 0)},
      {}, {kF32, {rows, cols}}, 0);
  return {r, expected};
}

// --- recording -----------------------------------------------------------------------------------

TEST_F(Graph, RecordMakesPendingOutputsOfOneNode) {
  DataPtr x = upload(std::vector<float>{1, 2}, kF32, {2});
  EXPECT_FALSE(x->pending());
  EXPECT_EQ(x->type, (TensorType{kF32, {2}}));
  EXPECT_EQ(x->device, 0);
  Delta d;
  auto outs = record(lo::kAdd, {x, x}, {}, {{kF32, {2}}}, 0);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(outs[0]->pending());
  EXPECT_EQ(outs[0]->type, (TensorType{kF32, {2}}));
  EXPECT_EQ(outs[0]->producer->op, &lo::kAdd);
  EXPECT_EQ(outs[0]->producer->inputs.size(), 2u);
  EXPECT_EQ(d.compiled(), 0);  // recording compiles and runs nothing
  EXPECT_EQ(d.executed(), 0);
  EXPECT_EQ(fetch<float>(outs[0]), (std::vector<float>{2, 4}));
  EXPECT_EQ(outs[0]->producer, nullptr);
  EXPECT_EQ(outs[0]->buffer->dims(), (std::vector<int64_t>{2}));
}

TEST_F(Graph, MaterializingAMaterializedValueDoesNothing) {
  DataPtr x = upload(std::vector<float>{1, 2}, kF32, {2});
  Delta d;
  materialize({x, nullptr});
  materialize({});
  EXPECT_EQ(d.executed(), 0);
  EXPECT_EQ(d.compiled(), 0);
}

TEST_F(Graph, MaterializedResultsFeedLaterPrograms) {
  DataPtr x = upload(std::vector<float>{1, 2, 3}, kF32, {3});
  DataPtr y = record1(lo::kMul, {x, x}, {}, {kF32, {3}}, 0);
  EXPECT_EQ(fetch<float>(y), (std::vector<float>{1, 4, 9}));
  DataPtr z = record1(lo::kAdd, {y, x}, {}, {kF32, {3}}, 0);  // y is now a leaf
  EXPECT_EQ(fetch<float>(z), (std::vector<float>{2, 6, 12}));
}

// --- structural cache ----------------------------------------------------------------------------

TEST_F(Graph, SameStructureCompilesOnce) {
  // Shapes used by no other test, so the first run is a miss.
  auto [r1, e1] = add_program(7, 13, 1.5);
  Delta first;
  EXPECT_EQ(fetch<float>(r1), e1);
  EXPECT_EQ(first.compiled(), 1);
  EXPECT_EQ(first.hit(), 0);
  EXPECT_EQ(first.executed(), 1);
  EXPECT_EQ(first.new_programs(), 1u);

  // New buffers with new contents, same structure: a cache hit.
  auto [r2, e2] = add_program(7, 13, 1.5, -40);
  Delta second;
  EXPECT_EQ(fetch<float>(r2), e2);
  EXPECT_EQ(second.compiled(), 0);
  EXPECT_EQ(second.hit(), 1);
  EXPECT_EQ(second.executed(), 1);
  EXPECT_EQ(second.new_programs(), 0u);
}

TEST_F(Graph, ProgramCacheEvictsTheLeastRecentlyUsed) {
  const size_t capacity = program_cache_capacity();
  // Three shapes used by no other test; the cache keeps two (earlier tests' programs, when the
  // whole binary runs in one process, are evicted first by the smaller capacity).
  set_program_cache_capacity(2);
  EXPECT_EQ(fetch<float>(add_program(3, 31, 1.0).first), add_program(3, 31, 1.0).second);
  EXPECT_EQ(fetch<float>(add_program(3, 32, 1.0).first), add_program(3, 32, 1.0).second);
  EXPECT_EQ(fetch<float>(add_program(3, 31, 1.0).first), add_program(3, 31, 1.0).second);
  {
    Delta third;  // 3x33 evicts 3x32, the least recently used
    const int64_t evictions = runtime::counters().program_evictions;
    auto [r, e] = add_program(3, 33, 1.0);
    EXPECT_EQ(fetch<float>(r), e);
    EXPECT_EQ(third.compiled(), 1);
    EXPECT_EQ(third.new_programs(), 0u);
    EXPECT_EQ(runtime::counters().program_evictions - evictions, 1);
  }
  {
    Delta again;  // 3x31 was used after 3x32, so it stayed
    auto [r, e] = add_program(3, 31, 1.0);
    EXPECT_EQ(fetch<float>(r), e);
    EXPECT_EQ(again.compiled(), 0);
    EXPECT_EQ(again.hit(), 1);
  }
  {
    Delta evicted;  // 3x32 compiles again, and still computes the right values
    auto [r, e] = add_program(3, 32, 1.0);
    EXPECT_EQ(fetch<float>(r), e);
    EXPECT_EQ(evicted.compiled(), 1);
  }
  set_program_cache_capacity(capacity);
}

TEST_F(Graph, HostScalarValuesShareOneProgram) {
  auto [base, e0] = add_program(5, 11, 2.0);
  EXPECT_EQ(fetch<float>(base), e0);

  Delta d;
  auto [other_alpha, e1] = add_program(5, 11, 3.0);
  EXPECT_EQ(fetch<float>(other_alpha), e1);
  auto [third_alpha, e2] = add_program(5, 11, -0.25);
  EXPECT_EQ(fetch<float>(third_alpha), e2);
  EXPECT_EQ(d.compiled(), 0);
  EXPECT_EQ(d.hit(), 2);
  // Integer scalars travel in their own pack, converted to the node's type (truncating i64).
  DataPtr x = upload(std::vector<int32_t>{1, 2, 3}, kI32, {3});
  DataPtr big = host_scalar(int64_t{(1LL << 40) + 7}, kI32, 0);
  EXPECT_EQ(fetch<int32_t>(record1(lo::kAdd, {x, big}, {}, {kI32, {3}}, 0)),
            (std::vector<int32_t>{8, 9, 10}));
}

TEST_F(Graph, DifferentAttrsOrShapesCompileAgain) {
  // Shapes used by no other test (HostScalarValuesShareOneProgram compiles [5, 11] additions).
  auto fill = [](double v, std::vector<int64_t> dims) {
    return record1(lo::kFill, {}, Attrs{{}, {v}}, {kF32, std::move(dims)}, 0);
  };
  EXPECT_EQ(fetch<float>(fill(2.0, {5, 12})), std::vector<float>(60, 2));
  Delta d;
  EXPECT_EQ(fetch<float>(fill(3.0, {5, 12})), std::vector<float>(60, 3));
  EXPECT_EQ(d.compiled(), 1);
  EXPECT_EQ(fetch<float>(fill(2.0, {12, 5})), std::vector<float>(60, 2));
  EXPECT_EQ(d.compiled(), 2);
  // A shape seen before with another host-scalar operand count is another structure.
  auto [with_alpha, e] = add_program(5, 12, 2.0);
  EXPECT_EQ(fetch<float>(with_alpha), e);
  DataPtr x = upload(std::vector<float>(60, 1), kF32, {5, 12});
  DataPtr none = record1(lo::kAdd, {x, x}, {}, {kF32, {5, 12}}, 0);
  EXPECT_EQ(fetch<float>(none), std::vector<float>(60, 2));
  EXPECT_EQ(d.compiled(), 4);
  EXPECT_EQ(d.hit(), 0);
}

TEST_F(Graph, FloatAttrKeyIsTheBitPattern) {
  auto fill = [](double v) { return record1(lo::kFill, {}, Attrs{{}, {v}}, {kF32, {3, 17}}, 0); };
  EXPECT_EQ(fetch<float>(fill(0.0)), std::vector<float>(51, 0.0f));
  Delta d;
  std::vector<float> neg = fetch<float>(fill(-0.0));
  EXPECT_TRUE(std::signbit(neg[0]));
  EXPECT_EQ(d.compiled(), 1);  // 0.0 == -0.0 numerically, but they are different programs
  EXPECT_EQ(d.new_programs(), 1u);
  EXPECT_TRUE(std::signbit(fetch<float>(fill(-0.0))[5]));
  EXPECT_EQ(d.compiled(), 1);
  EXPECT_EQ(d.hit(), 1);
}

TEST_F(Graph, SharedLeafAndDistinctLeavesAreDifferentPrograms) {
  // add(x, x) has one parameter, add(x, y) two: same op, attrs and types, different structure.
  DataPtr x = upload(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, kF32, {9});
  DataPtr y = upload(std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1}, kF32, {9});
  Delta d;
  EXPECT_EQ(fetch<float>(record1(lo::kSub, {x, x}, {}, {kF32, {9}}, 0)), std::vector<float>(9, 0));
  EXPECT_EQ(fetch<float>(record1(lo::kSub, {x, y}, {}, {kF32, {9}}, 0)),
            (std::vector<float>{-8, -6, -4, -2, 0, 2, 4, 6, 8}));
  EXPECT_EQ(fetch<float>(record1(lo::kSub, {y, x}, {}, {kF32, {9}}, 0)),
            (std::vector<float>{8, 6, 4, 2, 0, -2, -4, -6, -8}));
  EXPECT_EQ(d.compiled(), 2);  // (y, x) has the structure of (x, y)
  EXPECT_EQ(d.hit(), 1);
}

TEST_F(Graph, DifferentOpsSameShapeAreDifferentPrograms) {
  DataPtr x = upload(std::vector<float>{6, 8}, kF32, {1, 2});
  DataPtr y = upload(std::vector<float>{2, 4}, kF32, {1, 2});
  Delta d;
  EXPECT_EQ(fetch<float>(record1(lo::kMaximum, {x, y}, {}, {kF32, {1, 2}}, 0)),
            (std::vector<float>{6, 8}));
  EXPECT_EQ(fetch<float>(record1(lo::kMinimum, {x, y}, {}, {kF32, {1, 2}}, 0)),
            (std::vector<float>{2, 4}));
  EXPECT_EQ(d.compiled(), 2);
}

// --- slots ---------------------------------------------------------------------------------------

TEST_F(Graph, LiveSlotIsMaterializedWithoutArguments) {
  auto slot = std::make_shared<Slot>();
  slot->nbytes = 3 * sizeof(float);
  DataPtr x = upload(std::vector<float>{1, 2, 3}, kF32, {3});
  DataPtr pending = record1(lo::kMul, {x, x}, {}, {kF32, {3}}, 0);
  graph::bind_slot(slot, pending);
  EXPECT_TRUE(slot->data->pending());
  Delta d;
  materialize();
  EXPECT_EQ(d.executed(), 1);
  ASSERT_FALSE(slot->data->pending());
  EXPECT_EQ(slot->data, pending);
  EXPECT_EQ(read<float>(slot->data), (std::vector<float>{1, 4, 9}));
  // Nothing is left dirty.
  Delta again;
  materialize();
  EXPECT_EQ(again.executed(), 0);
}

TEST_F(Graph, DeadOldValuesAreDonatedAndLiveOnesAreNot) {
  // slot = slot * 2, in place: nothing else holds the old value, so it is donated to the new
  // one; the same update while a copy of the old value is held must leave that copy intact.
  // The two are different programs (donation is part of the key).
  auto update = [](const SlotPtr& slot) {
    graph::bind_slot(slot, record1(lo::kAdd, {slot->data, slot->data}, {}, {kF32, {5}}, 0));
  };
  auto slot = std::make_shared<Slot>();
  slot->nbytes = 5 * sizeof(float);
  graph::bind_slot(slot, upload(std::vector<float>{1, 2, 3, 4, 5}, kF32, {5}));
  Delta d;
  update(slot);
  materialize();
  EXPECT_EQ(read<float>(slot->data), (std::vector<float>{2, 4, 6, 8, 10}));
  DataPtr kept = slot->data;
  update(slot);
  materialize();
  EXPECT_EQ(read<float>(slot->data), (std::vector<float>{4, 8, 12, 16, 20}));
  EXPECT_EQ(read<float>(kept), (std::vector<float>{2, 4, 6, 8, 10}));
  EXPECT_EQ(d.compiled(), 2);
  kept.reset();
  update(slot);
  materialize();  // donating again: the first program, from the cache
  EXPECT_EQ(read<float>(slot->data), (std::vector<float>{8, 16, 24, 32, 40}));
  EXPECT_EQ(d.compiled(), 2);
  EXPECT_EQ(d.hit(), 1);
}

TEST_F(Graph, BindingAMaterializedValueRunsNothing) {
  auto slot = std::make_shared<Slot>();
  graph::bind_slot(slot, upload(std::vector<float>{1}, kF32, {}));
  graph::bind_slot(slot, nullptr);
  Delta d;
  materialize();
  EXPECT_EQ(d.executed(), 0);
  EXPECT_EQ(slot->data, nullptr);
}

TEST_F(Graph, RebindingASlotComputesOnlyItsLatestValue) {
  auto slot = std::make_shared<Slot>();
  DataPtr x = upload(std::vector<float>{2, 3}, kF32, {2});
  DataPtr first = record1(lo::kAdd, {x, x}, {}, {kF32, {2}}, 0);
  DataPtr second = record1(lo::kMul, {first, x}, {}, {kF32, {2}}, 0);
  graph::bind_slot(slot, first);
  graph::bind_slot(slot, second);
  Delta d;
  materialize();
  EXPECT_EQ(d.executed(), 1);
  EXPECT_EQ(read<float>(second), (std::vector<float>{8, 18}));
  EXPECT_TRUE(first->pending());  // an intermediate of `second`, not a target itself
}

TEST_F(Graph, DestroyedSlotIsNotComputed) {
  DataPtr x = upload(std::vector<float>{1, 2}, kF32, {2});
  DataPtr orphan = record1(lo::kNeg, {x}, {}, {kF32, {2}}, 0);
  DataPtr kept = record1(lo::kAbs, {x}, {}, {kF32, {2}}, 0);
  auto dead = std::make_shared<Slot>();
  auto live = std::make_shared<Slot>();
  graph::bind_slot(dead, orphan);
  graph::bind_slot(live, kept);
  dead.reset();
  Delta d;
  materialize();
  EXPECT_EQ(d.executed(), 1);
  EXPECT_TRUE(orphan->pending());
  EXPECT_FALSE(kept->pending());
  // The one program computed only `kept`: its structure has one target. The same graph with only
  // the live slot is a cache hit, while asking for both values is a different program.
  EXPECT_EQ(read<float>(kept), (std::vector<float>{1, 2}));
  DataPtr kept2 = record1(lo::kAbs, {x}, {}, {kF32, {2}}, 0);
  Delta d2;
  materialize({kept2});
  EXPECT_EQ(d2.compiled(), 0);
  EXPECT_EQ(d2.hit(), 1);
  // The orphan is still computable on request.
  EXPECT_EQ(fetch<float>(orphan), (std::vector<float>{-1, -2}));
}

// --- several targets, shared subexpressions, multiple outputs ------------------------------------

TEST_F(Graph, SharedSubexpressionTwoTargetsOneExecution) {
  DataPtr a = upload(std::vector<float>{1, 2, 3}, kF32, {3});
  DataPtr b = upload(std::vector<float>{4, 5, 6}, kF32, {3});
  DataPtr t = record1(lo::kMul, {a, b}, {}, {kF32, {3}}, 0);  // shared
  DataPtr u = record1(lo::kAdd, {t, a}, {}, {kF32, {3}}, 0);
  DataPtr v = record1(lo::kSub, {t, b}, {}, {kF32, {3}}, 0);
  Delta d;
  materialize({u, v, u});
  EXPECT_EQ(d.executed(), 1);
  EXPECT_LE(d.compiled(), 1);
  EXPECT_EQ(read<float>(u), (std::vector<float>{5, 12, 21}));
  EXPECT_EQ(read<float>(v), (std::vector<float>{0, 5, 12}));
  EXPECT_TRUE(t->pending());
}

TEST_F(Graph, TargetThatIsAlsoAnInputOfAnotherTarget) {
  DataPtr a = upload(std::vector<float>{1, -2}, kF32, {2});
  DataPtr t = record1(lo::kAdd, {a, a}, {}, {kF32, {2}}, 0);
  DataPtr u = record1(lo::kMul, {t, t}, {}, {kF32, {2}}, 0);
  auto slot = std::make_shared<Slot>();
  graph::bind_slot(slot, t);  // also reached through a slot
  Delta d;
  materialize({u, t});
  EXPECT_EQ(d.executed(), 1);
  EXPECT_EQ(read<float>(t), (std::vector<float>{2, -4}));
  EXPECT_EQ(read<float>(u), (std::vector<float>{4, 16}));
}

// A test-only op with two outputs: lhs + rhs and lhs * rhs.
std::vector<hlo::Value> emit_sum_and_product(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                             const Attrs&, const std::vector<TensorType>&) {
  return {b.binary("add", in[0], in[1]), b.binary("multiply", in[0], in[1])};
}
const OpDef kSumAndProduct{"test_sum_and_product", emit_sum_and_product};

TEST_F(Graph, MultiOutputNode) {
  DataPtr a = upload(std::vector<int32_t>{2, 3}, kI32, {2});
  DataPtr b = upload(std::vector<int32_t>{5, -1}, kI32, {2});
  auto outs = record(kSumAndProduct, {a, b}, {}, {{kI32, {2}}, {kI32, {2}}}, 0);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0]->producer, outs[1]->producer);
  EXPECT_EQ(outs[1]->output_index, 1);
  // Only the second output first; the first stays pending.
  EXPECT_EQ(fetch<int32_t>(outs[1]), (std::vector<int32_t>{10, -3}));
  EXPECT_TRUE(outs[0]->pending());
  EXPECT_EQ(fetch<int32_t>(outs[0]), (std::vector<int32_t>{7, 2}));

  auto both = record(kSumAndProduct, {a, b}, {}, {{kI32, {2}}, {kI32, {2}}}, 0);
  DataPtr combined = record1(lo::kSub, {both[0], both[1]}, {}, {kI32, {2}}, 0);
  Delta d;
  materialize({both[0], both[1], combined});
  EXPECT_EQ(d.executed(), 1);
  EXPECT_EQ(read<int32_t>(both[0]), (std::vector<int32_t>{7, 2}));
  EXPECT_EQ(read<int32_t>(both[1]), (std::vector<int32_t>{10, -3}));
  EXPECT_EQ(read<int32_t>(combined), (std::vector<int32_t>{-3, 5}));
}

TEST_F(Graph, LongChainIsOneProgram) {
  DataPtr x = upload(std::vector<float>{0}, kF32, {});
  DataPtr one = upload(std::vector<float>{1}, kF32, {});
  for (int i = 0; i < 300; ++i) x = record1(lo::kAdd, {x, one}, {}, {kF32, {}}, 0);
  Delta d;
  EXPECT_EQ(fetch<float>(x), std::vector<float>{300});
  EXPECT_EQ(d.executed(), 1);
}

TEST_F(Graph, OneProgramPerDeviceSharedThroughTheCache) {
  ASSERT_GE(test_client().device_count(), 2);
  DataPtr x0 = upload(std::vector<float>{1, 2, 3}, kF32, {3}, 0);
  DataPtr x1 = upload(std::vector<float>{4, 5, 6}, kF32, {3}, 1);
  EXPECT_EQ(x1->device, 1);
  DataPtr y0 = record1(lo::kMul, {x0, x0}, {}, {kF32, {3}}, 0);
  DataPtr y1 = record1(lo::kMul, {x1, x1}, {}, {kF32, {3}}, 1);
  auto slot1 = std::make_shared<Slot>();
  slot1->device = 1;
  DataPtr z1 = record1(lo::kAdd, {x1, x1}, {}, {kF32, {3}}, 1);
  graph::bind_slot(slot1, z1);
  Delta d;
  materialize({y0, y1});
  EXPECT_EQ(d.executed(), 2);  // device 0, then device 1 (y1 and the slot's z1 together)
  EXPECT_EQ(y0->buffer->device(), 0);
  EXPECT_EQ(y1->buffer->device(), 1);
  EXPECT_EQ(z1->buffer->device(), 1);
  EXPECT_EQ(read<float>(y0), (std::vector<float>{1, 4, 9}));
  EXPECT_EQ(read<float>(y1), (std::vector<float>{16, 25, 36}));
  EXPECT_EQ(read<float>(z1), (std::vector<float>{8, 10, 12}));
  // The same structure on the other device reuses the program compiled for the first.
  DataPtr w0 = record1(lo::kMul, {x0, x0}, {}, {kF32, {3}}, 0);
  DataPtr w1 = record1(lo::kMul, {x1, x1}, {}, {kF32, {3}}, 1);
  materialize({w1});
  Delta d2;
  materialize({w0});
  EXPECT_EQ(d2.compiled(), 0);
  EXPECT_EQ(d2.hit(), 1);
  EXPECT_EQ(w0->buffer->device(), 0);
  EXPECT_EQ(read<float>(w0), (std::vector<float>{1, 4, 9}));
}

// --- errors --------------------------------------------------------------------------------------

// Test-only ops whose lowering breaks the OpDef contract.
std::vector<hlo::Value> emit_wrong_type(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                        const Attrs&, const std::vector<TensorType>&) {
  return {b.convert(in[0], ElementType::I32)};  // the caller asked for f32
}
std::vector<hlo::Value> emit_wrong_count(hlo::Builder&, const std::vector<hlo::Value>& in,
                                         const Attrs&, const std::vector<TensorType>&) {
  return {in[0], in[0]};
}
std::vector<hlo::Value> emit_invalid(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                     const Attrs&, const std::vector<TensorType>&) {
  return {b.reshape(in[0], {7})};  // the builder rejects this element count
}
const OpDef kWrongType{"test_wrong_type", emit_wrong_type};
const OpDef kWrongCount{"test_wrong_count", emit_wrong_count};
const OpDef kInvalid{"test_invalid_reshape", emit_invalid};

// Materializes `v` expecting an error whose message contains every string in `parts`.
void expect_materialize_error(const DataPtr& v, const std::vector<std::string>& parts) {
  try {
    buffer_of(v);
    ADD_FAILURE() << "materializing did not throw";
  } catch (const std::exception& e) {
    EXPECT_TRUE(dynamic_cast<const std::runtime_error*>(&e) != nullptr ||
                dynamic_cast<const std::logic_error*>(&e) != nullptr)
        << e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

TEST_F(Graph, LoweringContractViolationsNameTheOp) {
  DataPtr x = upload(std::vector<float>{1.5f, 2.5f}, kF32, {2});
  Delta d;
  DataPtr wrong_type = record1(kWrongType, {x}, {}, {kF32, {2}}, 0);
  expect_materialize_error(wrong_type, {"test_wrong_type", "tensor<2xi32>", "tensor<2xf32>"});
  EXPECT_FALSE(wrong_type->pending());
  EXPECT_TRUE(wrong_type->error);
  DataPtr wrong_count = record1(kWrongCount, {x}, {}, {kF32, {2}}, 0);
  expect_materialize_error(wrong_count, {"test_wrong_count", "2 values", "expected 1"});
  // An op downstream of a fine one: the message lists the ops of the program.
  DataPtr fine = record1(lo::kNeg, {x}, {}, {kF32, {2}}, 0);
  DataPtr invalid = record1(kInvalid, {fine}, {}, {kF32, {7}}, 0);
  expect_materialize_error(invalid, {"test_invalid_reshape", "neg"});
  EXPECT_EQ(d.compiled(), 0);
  EXPECT_EQ(d.executed(), 0);
  EXPECT_EQ(d.new_programs(), 0u);

  // The graph keeps working; a failed value raises its error again, also as an operand.
  EXPECT_EQ(fetch<float>(fine), (std::vector<float>{-1.5f, -2.5f}));
  expect_materialize_error(wrong_type, {"test_wrong_type"});
  EXPECT_THROW(record1(lo::kNeg, {wrong_type}, {}, {kF32, {2}}, 0), std::runtime_error);
  EXPECT_EQ(fetch<float>(record1(lo::kAdd, {x, x}, {}, {kF32, {2}}, 0)),
            (std::vector<float>{3, 5}));
}

TEST_F(Graph, RecordRejectsOperandOnAnotherDevice) {
  DataPtr x = upload(std::vector<float>{1, 2}, kF32, {2});
  try {
    record1(lo::kAdd, {x, x}, {}, {kF32, {2}}, 1);
    ADD_FAILURE() << "record did not throw";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("add"), std::string::npos) << what;
    EXPECT_NE(what.find("device 0"), std::string::npos) << what;
  }
  // Operands on device 0 recorded for device 0 are fine, and the graph still works.
  EXPECT_EQ(fetch<float>(record1(lo::kAdd, {x, x}, {}, {kF32, {2}}, 0)),
            (std::vector<float>{2, 4}));
}

// A program the device has no memory for: OutOfMemory (the default raiser's type), also when its
// failed value is used again; a value of the same batch that fits is salvaged.
TEST_F(Graph, OutOfMemoryIsItsOwnErrorAndTheRestIsSalvaged) {
  DataPtr huge = record1(lo::kFill, {}, Attrs{{}, {1.0}}, {kF32, {int64_t{1} << 40}}, 0);  // 4 TiB
  DataPtr x = upload(std::vector<float>{1, 2}, kF32, {2});
  DataPtr fits = record1(lo::kNeg, {x}, {}, {kF32, {2}}, 0);
  try {
    materialize({huge, fits});
    ADD_FAILURE() << "a 4 TiB program ran";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("running the program for [fill"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read<float>(fits), (std::vector<float>{-1, -2}));
  EXPECT_TRUE(huge->out_of_memory);
  EXPECT_THROW(record1(lo::kNeg, {huge}, {}, {kF32, {int64_t{1} << 40}}, 0), OutOfMemory);
  EXPECT_THROW(buffer_of(huge), OutOfMemory);
}

// A failing program must not make later materializations forget live slots waiting on other
// devices' programs.
TEST_F(Graph, LiveSlotStillMaterializedAfterAFailedMaterialize) {
  DataPtr x0 = upload(std::vector<float>{1, 2}, kF32, {2}, 0);
  DataPtr x1 = upload(std::vector<float>{3, 4}, kF32, {2}, 1);
  auto slot = std::make_shared<Slot>();
  slot->device = 1;
  graph::bind_slot(slot, record1(lo::kNeg, {x1}, {}, {kF32, {2}}, 1));
  DataPtr bad = record1(kWrongType, {x0}, {}, {kF32, {2}}, 0);
  EXPECT_THROW(materialize({bad}), std::runtime_error);
  materialize();
  synchronize();
  EXPECT_FALSE(slot->data->pending()) << "the live slot's pending value was dropped";
}

// --- synchronize ---------------------------------------------------------------------------------

TEST_F(Graph, SynchronizeWaitsAndMaterializesLiveSlots) {
  EXPECT_NO_THROW(synchronize());
  DataPtr x = upload(std::vector<float>{3, 4}, kF32, {2});
  DataPtr y = record1(lo::kMul, {x, x}, {}, {kF32, {2}}, 0);
  materialize({y});
  auto slot = std::make_shared<Slot>();
  graph::bind_slot(slot, record1(lo::kAdd, {y, x}, {}, {kF32, {2}}, 0));
  EXPECT_NO_THROW(synchronize());
  ASSERT_FALSE(slot->data->pending());
  EXPECT_EQ(read<float>(slot->data), (std::vector<float>{12, 20}));
  Delta d;
  EXPECT_NO_THROW(synchronize());  // nothing left: a no-op
  EXPECT_EQ(d.executed(), 0);
}

}  // namespace
}  // namespace torch_pjrt::graph
