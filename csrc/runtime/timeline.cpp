// Completion: finish times of launched work from PJRT_Event_OnReady; Timeline: running and
// recorded launches per device.
#include "timeline.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "error.h"
#include "event.h"

namespace torch_pjrt::runtime {

namespace {
thread_local uint64_t current_tag = 0;
}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void set_launch_tag(uint64_t tag) { current_tag = tag; }
uint64_t launch_tag() { return current_tag; }

Completion::Completion(const PJRT_Api* api, PJRT_Event* event, int device,
                       std::shared_ptr<const std::string> name, uint64_t tag, int64_t launch_ns)
    : api_(api),
      event_(event),
      device_(device),
      name_(std::move(name)),
      tag_(tag),
      launch_ns_(launch_ns) {}

Completion::~Completion() {
  // A watched completion is destroyed only after its callback ran: the Timeline keeps it until
  // done(), which for a watched completion means exactly that.
  destroy_event(api_, event_);
}

void Completion::watch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (watched_) return;
    watched_ = true;
  }
  if (event_ == nullptr) return finish("");
  // Without a callback from the plugin, when_ready waits here: done() still means finished.
  when_ready(api_, event_, &Completion::on_ready, this);
}

void Completion::on_ready(PJRT_Error* error, void* self) {
  auto* completion = static_cast<Completion*>(self);
  std::string message;
  if (error != nullptr) {
    try {
      check(completion->api_, error, "device execution");
    } catch (const PjrtError& e) {
      message = e.what();
    }
  }
  completion->finish(std::move(message));
}

void Completion::finish(std::string error) {
  const int64_t t = now_ns();
  // Notify under the lock: once done_ is visible the object may be destroyed by another thread.
  std::lock_guard<std::mutex> lock(mutex_);
  finish_ns_ = t;
  error_ = std::move(error);
  done_ = true;
  cv_.notify_all();
}

bool Completion::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (event_ == nullptr) return true;
  if (watched_) return done_;
  PJRT_Event_IsReady_Args args{};
  args.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE;
  args.event = event_;
  PJRT_Error* error = api_->PJRT_Event_IsReady(&args);
  if (error == nullptr) return args.is_ready;
  try {
    check(api_, error, "PJRT_Event_IsReady");
  } catch (const PjrtError&) {
  }
  return false;  // watching will tell
}

void Completion::wait() {
  watch();
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return done_; });
}

int64_t Completion::finish_ns() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finish_ns_;
}

std::string Completion::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

Timeline::Device& Timeline::at(int device) {
  if (device < 0 || device >= static_cast<int>(devices_.size())) {
    throw std::out_of_range("timeline: device index " + std::to_string(device) +
                            " out of range: the client has " + std::to_string(devices_.size()) +
                            " devices");
  }
  return devices_[device];
}

Timeline::~Timeline() {
  for (const Device& d : devices_) {
    for (const CompletionPtr& c : d.running) c->wait();
  }
}

CompletionPtr Timeline::launched(const PJRT_Api* api, PJRT_Event* event, int device,
                                 std::shared_ptr<const std::string> name, int64_t launch_ns) {
  auto completion =
      std::make_shared<Completion>(api, event, device, std::move(name), launch_tag(), launch_ns);
  bool recording = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    recording = recording_;
    Device& d = at(device);
    // Forget finished launches, amortized, so the list stays as long as the work in flight.
    if (d.running.size() >= 2 * d.live + 64) {
      d.running.erase(std::remove_if(d.running.begin(), d.running.end(),
                                     [](const CompletionPtr& c) { return c->done(); }),
                      d.running.end());
      d.live = d.running.size();
    }
    d.running.push_back(completion);
    if (recording) recorded_.push_back(completion);
  }
  if (recording) completion->watch();
  return completion;
}

std::vector<CompletionPtr> Timeline::running(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CompletionPtr> out;
  for (const CompletionPtr& c : at(device).running) {
    if (!c->done()) {
      c->watch();
      out.push_back(c);
    }
  }
  return out;
}

void Timeline::start_recording() {
  std::lock_guard<std::mutex> lock(mutex_);
  recorded_.clear();
  recording_ = true;
}

std::vector<CompletionPtr> Timeline::stop_recording() {
  std::lock_guard<std::mutex> lock(mutex_);
  recording_ = false;
  return std::move(recorded_);
}

}  // namespace torch_pjrt::runtime
