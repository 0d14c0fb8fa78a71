// Device activity for torch.profiler: a Kineto child profiler (libkineto::IActivityProfiler,
// registered with libkineto::api().registerProfilerFactory, the hook PyTorch's own
// PrivateUse1ProfilerRegistry forwards to). While a trace that asks for
// ProfilerActivity.PrivateUse1 records, every program launched on "tpu" (one per op in Strict and
// Debug eager, one per fused program, one per torch.compile graph call) becomes a kernel event on
// its device's row. Its end is when the device finished it (PJRT completion event, see
// runtime/timeline.h); its start is when it was launched or, if the device was still busy then,
// when the previous program on that device finished. Each event links to the CPU operator that
// launched it, so key_averages() reports device time per operator.
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>
#include <time_since_epoch.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "device/runtime_state.h"

namespace torch_pjrt::device {
namespace {

using libkineto::ActivityType;

// Correlation ids of the operators running on this thread, innermost last.
thread_local std::vector<uint64_t> correlation_stack;

void set_tag_from_stack() {
  runtime::set_launch_tag(correlation_stack.empty() ? 0 : correlation_stack.back());
}

// Offset from runtime::now_ns() (steady clock) to Unix time in ns, the clock of Kineto's events.
int64_t unix_offset_ns() {
  const int64_t unix_ns = libkineto::timeSinceEpoch(std::chrono::system_clock::now());
  return unix_ns - runtime::now_ns();
}

class Session final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    runtime::Timeline& timeline = client().timeline();
    for (int d = 0; d < client().device_count(); ++d) busy_before_[d] = timeline.running(d);
    timeline.start_recording();
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    launches_ = client().timeline().stop_recording();
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, nullptr, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked,
                    int64_t, int64_t) override {
    const int64_t offset = unix_offset_ns();
    // When each device is free: the work running as the trace started bounds the first start.
    std::map<int, int64_t> free_at;
    for (const auto& [device, work] : busy_before_) {
      int64_t t = 0;
      for (const auto& c : work) {
        c->wait();
        t = std::max(t, c->finish_ns());
      }
      free_at[device] = t;
    }
    for (const runtime::CompletionPtr& c : launches_) {
      c->wait();
      int64_t& free = free_at[c->device()];
      const int64_t start = std::max(c->launch_ns(), free);
      free = std::max(free, c->finish_ns());
      devices_.insert(c->device());

      buffer_->emplace_activity(buffer_->span, ActivityType::CONCURRENT_KERNEL, c->name());
      libkineto::GenericTraceActivity& a = *buffer_->activities.back();
      a.startTime = start + offset;
      a.endTime = std::max(start, c->finish_ns()) + offset;
      a.device = c->device();
      a.resource = 0;  // the device's one queue
      a.id = static_cast<int32_t>(c->tag());
      // The launching operator ("External id" in the trace; device time per op in PyTorch's
      // tables). No flow arrow: PyTorch's CPU events carry no flow start to pair it with.
      if (linked && c->tag() != 0) a.linked = linked(static_cast<int32_t>(c->tag()));
      // Quoted values only: Kineto's numeric addMetadata needs fmt symbols libtorch does not
      // export.
      a.addMetadataQuoted("device", "tpu:" + std::to_string(c->device()));
      a.addMetadataQuoted("queued", std::to_string((start - c->launch_ns()) / 1000) + " us");
      if (!c->error().empty()) a.addMetadataQuoted("error", "the program failed");
      logger.handleActivity(a);
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    const int device = devices_.empty() ? 0 : *devices_.begin();
    return std::make_unique<libkineto::DeviceInfo>(
        libkineto::DeviceInfo{device, kSortIndex + device, "tpu", "tpu:" + std::to_string(device)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> infos;
    for (int d : devices_) infos.push_back({0, 0, d, "tpu:" + std::to_string(d) + " queue"});
    return infos;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    return std::move(buffer_);
  }

  void pushCorrelationId(uint64_t id) override {
    correlation_stack.push_back(id);
    set_tag_from_stack();
  }
  void popCorrelationId() override {
    if (!correlation_stack.empty()) correlation_stack.pop_back();
    set_tag_from_stack();
  }

 private:
  // Device rows after the CPU rows in trace viewers.
  static constexpr int64_t kSortIndex = 1 << 24;

  std::map<int, std::vector<runtime::CompletionPtr>> busy_before_;
  std::vector<runtime::CompletionPtr> launches_;
  std::set<int> devices_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_ =
      std::make_unique<libkineto::CpuTraceBuffer>();
};

class Profiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& activity_types, const libkineto::Config&) override {
    // Only traces that ask for device kernels (ProfilerActivity.PrivateUse1), on a working runtime.
    if (!activity_types.count(ActivityType::CONCURRENT_KERNEL) || device_count() == 0) {
      return nullptr;
    }
    return std::make_unique<Session>();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t, int64_t, const std::set<ActivityType>& activity_types,
      const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_ = "torch_pjrt";
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL};
};

const bool registered = [] {
  libkineto::api().registerProfilerFactory([] { return std::make_unique<Profiler>(); });
  return true;
}();

}  // namespace
}  // namespace torch_pjrt::device
