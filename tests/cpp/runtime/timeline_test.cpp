// Tests of the Timeline on the XLA CPU plugin: every launch gets a completion that finishes after
// it was launched, running() lists only unfinished work, recordings keep launches in order with
// their names and tags.
#include "runtime/timeline.h"

#include <gtest/gtest.h>

#include "test_support.h"

namespace torch_pjrt::runtime {
namespace {

using testing::add_program;
using testing::cpu_client;
using testing::upload;

TEST(Timeline, LaunchesFinishAfterTheyStart) {
  auto client = cpu_client();
  auto exe = client->compile(add_program(1 << 16, false));
  auto a = upload(*client, 1 << 16, 1);
  const int64_t before = now_ns();
  client->timeline().start_recording();
  auto out = exe->execute({a.get(), a.get()}, 1);
  std::vector<CompletionPtr> launched = client->timeline().stop_recording();
  ASSERT_EQ(launched.size(), 1u);
  const CompletionPtr& c = launched[0];
  c->wait();
  EXPECT_TRUE(c->done());
  EXPECT_EQ(c->device(), 1);
  EXPECT_GE(c->launch_ns(), before);
  EXPECT_GE(c->finish_ns(), c->launch_ns());
  EXPECT_EQ(c->error(), "");
  EXPECT_EQ(c->name(), "program");
  EXPECT_TRUE(client->timeline().running(1).empty());  // finished work is not running
  EXPECT_TRUE(client->timeline().running(0).empty());
  EXPECT_THROW(client->timeline().running(2), std::out_of_range);
}

TEST(Timeline, RecordingKeepsLaunchesInOrderWithNamesAndTags) {
  auto client = cpu_client();
  auto exe = client->compile(add_program(8, false));
  exe->set_name("add8");
  auto a = upload(*client, 8);
  exe->execute({a.get(), a.get()}, 0);  // before the recording: not in it
  client->timeline().start_recording();
  for (uint64_t tag = 1; tag <= 3; ++tag) {
    set_launch_tag(tag);
    exe->execute({a.get(), a.get()}, 0);
  }
  set_launch_tag(0);
  std::vector<CompletionPtr> recorded = client->timeline().stop_recording();
  exe->execute({a.get(), a.get()}, 0);  // after it: not in it either
  ASSERT_EQ(recorded.size(), 3u);
  for (size_t i = 0; i < recorded.size(); ++i) {
    recorded[i]->wait();
    EXPECT_EQ(recorded[i]->name(), "add8");
    EXPECT_EQ(recorded[i]->tag(), i + 1);
    if (i > 0) {
      EXPECT_GE(recorded[i]->launch_ns(), recorded[i - 1]->launch_ns());
    }
  }
}

TEST(Timeline, CompletionWithoutEventIsFinishedAtOnce) {
  auto name = std::make_shared<const std::string>("none");
  auto c = std::make_shared<Completion>(nullptr, nullptr, 0, name, 0, now_ns());
  c->watch();
  EXPECT_TRUE(c->done());
  EXPECT_GE(c->finish_ns(), c->launch_ns());
}

}  // namespace
}  // namespace torch_pjrt::runtime
