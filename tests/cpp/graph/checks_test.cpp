// Tests of device-side checks: lowering::kCheck's (position, value), one combined output per
// program, reading at check points, and values that depend on a check.
#include "graph/checks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "lowering/checks.h"
#include "lowering/elementwise.h"
#include "runtime/metrics.h"
#include "test_support.h"

namespace torch_pjrt::graph {
namespace {

class Checks : public ::testing::Test {
 protected:
  void SetUp() override {
    test_client();
    synchronize();  // nothing an earlier test left unread
  }
};

DataPtr check_value(const DataPtr& x, std::vector<int64_t> ints) {
  Attrs attrs;
  attrs.ints = std::move(ints);
  return record1(lo::kCheck, {x}, attrs, {kI64, {2}}, 0);
}

TEST_F(Checks, FirstInvalidPositionAndValue) {
  const DataPtr x = upload(std::vector<int64_t>{3, 0, 7, -1, 9}, kI64, {5});
  EXPECT_EQ(fetch<int64_t>(check_value(x, {lo::kOutOfRange, 0, 5})), (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(fetch<int64_t>(check_value(x, {lo::kOutOfRange, -1, 10})),
            (std::vector<int64_t>{-1, 0}));
  // Allowed values (an ignore_index) are valid wherever they lie.
  EXPECT_EQ(fetch<int64_t>(check_value(x, {lo::kOutOfRange, 0, 8, -1})),
            (std::vector<int64_t>{4, 9}));
  EXPECT_EQ(fetch<int64_t>(check_value(x, {lo::kZero})), (std::vector<int64_t>{1, 0}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const DataPtr p = upload(std::vector<float>{0, 1, 0.5f, nan}, kF32, {2, 2});
  EXPECT_EQ(fetch<int64_t>(check_value(p, {lo::kOutsideUnit}))[0], 3);  // NaN is invalid
  const DataPtr i32 = upload(std::vector<int32_t>{1, 2, 3}, kI32, {3});
  EXPECT_EQ(fetch<int64_t>(check_value(i32, {lo::kOutOfRange, 0, 3})),
            (std::vector<int64_t>{2, 3}));
}

// Values inherit their inputs' unread checks by sharing one list where one input's list holds
// them all, and get a new list only where inputs bring different checks or read ones.
TEST_F(Checks, InheritedListsAreSharedUntilInputsDiffer) {
  const DataPtr index = upload(std::vector<int64_t>{1, 2}, kI64, {2});
  CheckPtr first = add_check(check_value(index, {lo::kOutOfRange, 0, 6}), CheckKind::Index, "", "");
  CheckPtr second =
      add_check(check_value(index, {lo::kOutOfRange, 0, 7}), CheckKind::Index, "", "");
  const DataPtr a = upload(std::vector<float>{1, 2}, kF32, {2});
  DataPtr y = record1(lo::kNeg, {a}, {}, {kF32, {2}}, 0);
  EXPECT_EQ(y->checks, nullptr);  // no checks: no list
  depends_on(y, first);
  const std::vector<DataPtr> outs = record(lo::kNeg, {y}, {}, {{kF32, {2}}, {kF32, {2}}}, 0);
  EXPECT_EQ(outs[0]->checks, y->checks);  // shared, not copied
  EXPECT_EQ(outs[1]->checks, y->checks);
  EXPECT_EQ(record1(lo::kAdd, {outs[0], a}, {}, {kF32, {2}}, 0)->checks, y->checks);
  DataPtr w = record1(lo::kNeg, {a}, {}, {kF32, {2}}, 0);
  depends_on(w, second);
  DataPtr both = record1(lo::kAdd, {y, w}, {}, {kF32, {2}}, 0);  // different checks: merged
  EXPECT_EQ(checks_of(*both), (std::vector<CheckPtr>{first, second}));
  depends_on(outs[0], second);  // a value's own list grows; the shared one stays as it was
  EXPECT_EQ(checks_of(*outs[0]).size(), 2u);
  EXPECT_EQ(checks_of(*y), std::vector<CheckPtr>{first});
  synchronize();  // both pass, and are read
  EXPECT_EQ(first->state.load(), Check::kPassed);
  EXPECT_EQ(record1(lo::kNeg, {both}, {}, {kF32, {2}}, 0)->checks, nullptr);  // read: not inherited
}

TEST_F(Checks, CheckPointRaisesOnceAndDependentValuesRaiseAgain) {
  const DataPtr index = upload(std::vector<int64_t>{1, 6}, kI64, {2});
  CheckPtr bad = add_check(check_value(index, {lo::kOutOfRange, 0, 6}), CheckKind::Index, "index ",
                           " is out of bounds");
  CheckPtr good = add_check(check_value(index, {lo::kOutOfRange, 0, 7}), CheckKind::Index, "", "");
  const DataPtr a = upload(std::vector<float>{1, 2}, kF32, {2});
  DataPtr y = record1(lo::kNeg, {a}, {}, {kF32, {2}}, 0);
  depends_on(y, bad);
  depends_on(y, good);
  DataPtr z = record1(lo::kNeg, {y}, {}, {kF32, {2}}, 0);
  ASSERT_EQ(checks_of(*z).size(), 2u);  // inherited
  const int64_t reads = runtime::counters().check_reads;
  materialize();
  EXPECT_EQ(runtime::counters().check_reads, reads);  // not read before a check point
  try {
    check_point();
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "index 6 is out of bounds");
  }
  EXPECT_EQ(runtime::counters().check_reads, reads + 1);  // one combined vector
  EXPECT_EQ(good->state.load(), Check::kPassed);
  check_point();  // raised once
  EXPECT_THROW(record1(lo::kNeg, {z}, {}, {kF32, {2}}, 0), std::runtime_error);
  EXPECT_THROW(host_buffer(z), std::runtime_error);
  EXPECT_THROW(buffer_of(y), std::runtime_error);
  // Other values are unaffected.
  EXPECT_EQ(fetch<float>(record1(lo::kNeg, {a}, {}, {kF32, {2}}, 0)), (std::vector<float>{-1, -2}));
}

TEST_F(Checks, HostReadsResolveTheChecksOfWhatTheyRead) {
  const DataPtr index = upload(std::vector<int64_t>{0, -3}, kI64, {2});
  CheckPtr c =
      add_check(check_value(index, {lo::kOutOfRange, 0, 2}), CheckKind::Runtime, "bad ", "", true);
  const DataPtr a = upload(std::vector<float>{1, 2}, kF32, {2});
  DataPtr y = record1(lo::kNeg, {a}, {}, {kF32, {2}}, 0);
  depends_on(y, c);
  try {
    host_buffer(y);  // computes y and its check together, reads the check first
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad -3");
  }
  check_point();  // raised by the read already
}

TEST_F(Checks, ComputedChecksCanBeTakenAndRegisteredAgain) {
  const uint64_t mark = check_marker();
  const DataPtr index = upload(std::vector<int64_t>{5}, kI64, {1});
  add_check(check_value(index, {lo::kOutOfRange, 0, 5}), CheckKind::Index, "first ", "");
  add_check(check_value(index, {lo::kOutOfRange, 0, 6}), CheckKind::Index, "second ", "");
  std::vector<CheckPtr> taken = take_checks_since(mark);
  ASSERT_EQ(taken.size(), 2u);
  DataPtr all = combine_checks(taken);
  EXPECT_EQ(all->type.dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(taken[1]->offset, 2);
  check_point();  // taken: not read
  EXPECT_EQ(fetch<int64_t>(all), (std::vector<int64_t>{0, 5, -1, 0}));
  // A new check like the first, on the computed vector (what a compiled graph's call does).
  CheckPtr again = add_check_like(*taken[0], all);
  EXPECT_EQ(again->offset, 0);
  EXPECT_THROW(check_point(), std::runtime_error);
  register_checks(taken);
  EXPECT_THROW(check_point(), std::runtime_error);
}

}  // namespace
}  // namespace torch_pjrt::graph
