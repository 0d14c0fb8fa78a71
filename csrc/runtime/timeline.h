// When launched device work finished. Every execution's device-complete PJRT event becomes a
// Completion; a watched one (PJRT_Event_OnReady) is stamped with the time its callback ran. A
// client's Timeline keeps the executions still running on each device (what an event recorded now
// must wait for) and, while a profile records, every launch with its name. Watching costs a
// callback per launch, so a launch is watched only when a profile records or once something asks
// for the running work: work that finished before anyone asked cannot matter to a later event.
#pragma once

#include <pjrt_c_api.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace torch_pjrt::runtime {

// Nanoseconds of std::chrono::steady_clock; every timestamp here uses it.
int64_t now_ns();

// A tag the calling thread attaches to the work it launches (the profiler's correlation id of the
// operator being run); 0 when none.
void set_launch_tag(uint64_t tag);
uint64_t launch_tag();

class Completion {
 public:
  // Takes ownership of `event` (null: the work is known to be finished).
  Completion(const PJRT_Api* api, PJRT_Event* event, int device,
             std::shared_ptr<const std::string> name, uint64_t tag, int64_t launch_ns);
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  ~Completion();

  // Registers, once, the callback that stamps the finish time and the error (it may run before
  // this returns). Until it ran, the completion must stay alive (the Timeline keeps it).
  void watch();

  int device() const { return device_; }
  const std::string& name() const { return *name_; }
  uint64_t tag() const { return tag_; }
  int64_t launch_ns() const { return launch_ns_; }

  // Whether the work finished (for a watched completion: whether its callback ran).
  bool done() const;
  // Watches, then blocks until the callback ran.
  void wait();
  // When the callback saw the work finished; valid after wait().
  int64_t finish_ns() const;
  // The error the work finished with, empty when it succeeded; valid after wait().
  std::string error() const;

 private:
  static void on_ready(PJRT_Error* error, void* self);
  void finish(std::string error);

  const PJRT_Api* api_;
  PJRT_Event* event_;
  int device_;
  std::shared_ptr<const std::string> name_;
  uint64_t tag_;
  int64_t launch_ns_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool watched_ = false;
  bool done_ = false;
  int64_t finish_ns_ = 0;
  std::string error_;
};
using CompletionPtr = std::shared_ptr<Completion>;

class Timeline {
 public:
  explicit Timeline(int devices) : devices_(devices) {}
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  // Waits for the running launches: watched completions must outlive their callbacks.
  ~Timeline();

  // Records a launch on `device`, made at `launch_ns` (taken before the plugin's execute call,
  // which may run small programs before it returns), whose device-complete event is `event`
  // (owned from now on).
  CompletionPtr launched(const PJRT_Api* api, PJRT_Event* event, int device,
                         std::shared_ptr<const std::string> name, int64_t launch_ns);
  // The launches on `device` that have not finished yet, watched from now on. Throws
  // std::out_of_range on a bad index.
  std::vector<CompletionPtr> running(int device);

  // While recording, every launch is watched and kept. stop_recording() returns the launches
  // since start_recording(), in launch order. One recording at a time: starting again restarts it.
  void start_recording();
  std::vector<CompletionPtr> stop_recording();

 private:
  struct Device {
    std::vector<CompletionPtr> running;
    size_t live = 0;  // entries left after the last pruning
  };
  Device& at(int device);

  std::mutex mutex_;
  std::vector<Device> devices_;
  bool recording_ = false;
  std::vector<CompletionPtr> recorded_;
};

}  // namespace torch_pjrt::runtime
