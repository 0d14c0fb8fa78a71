// TpuWork: completion, waits with a deadline, and the Future of a tpu_dist operation.
#include "distributed/work.h"

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

namespace torch_pjrt::distributed {

TpuWork::TpuWork(int rank, c10d::OpType type, std::string op, std::vector<at::Tensor> outputs,
                 std::vector<PendingPtr> pending, std::chrono::milliseconds timeout,
                 bool future_at_issue)
    : c10d::Work(rank, type),
      op_(std::move(op)),
      outputs_(std::move(outputs)),
      pending_(std::move(pending)),
      timeout_(timeout),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
  if (pending_.empty()) {
    complete(nullptr);
  } else if (future_at_issue) {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

void TpuWork::complete(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_) return;
  }
  finish(error);
  if (future_->completed()) return;
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

bool TpuWork::isCompleted() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_) return true;
  }
  for (const PendingPtr& p : pending_) {
    if (!p->done()) return false;
  }
  // Finished: wait() only collects errors (and hands received data over) now.
  try {
    wait();
  } catch (const std::exception&) {
  }
  return true;
}

bool TpuWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && !exception_;
}

bool TpuWork::wait(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_) {
      if (exception_) std::rethrow_exception(exception_);
      return true;
    }
  }
  const auto limit = timeout == ::kNoTimeout ? timeout_ : timeout;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  try {
    for (const PendingPtr& p : pending_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      p->wait(std::max(left, std::chrono::milliseconds(0)), op_);
    }
  } catch (...) {
    complete(std::current_exception());
    throw;
  }
  complete(nullptr);
  return true;
}

}  // namespace torch_pjrt::distributed
