// The c10d Work of a tpu_dist operation: its outputs, what is still in flight (device programs,
// Gloo receives) and a Future holding the outputs once they are valid.
#pragma once

#include <ATen/core/ivalue.h>

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "distributed/transport.h"

namespace torch_pjrt::distributed {

class TpuWork : public c10d::Work {
 public:
  // `op` names the operation in errors; `timeout` bounds wait() when it is given none. With
  // nothing pending the work is complete at once. Device results are usable before they finish
  // (the device orders later work after them), so `future_at_issue` completes the Future now.
  TpuWork(int rank, c10d::OpType type, std::string op, std::vector<at::Tensor> outputs,
          std::vector<PendingPtr> pending, std::chrono::milliseconds timeout, bool future_at_issue);

  bool isCompleted() override;
  bool isSuccess() const override;
  // Waits for everything in flight; raises c10::DistBackendError (a timeout names the operation).
  bool wait(std::chrono::milliseconds timeout = ::kNoTimeout) override;
  void synchronize() override {}
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  void complete(std::exception_ptr error);

  std::string op_;
  std::vector<at::Tensor> outputs_;
  std::vector<PendingPtr> pending_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace torch_pjrt::distributed
