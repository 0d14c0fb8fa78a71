// The device transport: each primitive runs a collective program (collectives/programs.h)
// compiled with the group's device assignment, as one replica on this process's device; its
// results are device tensors, ready when the program finished on every rank. For plugins with
// cross-process collectives (CUDA through NCCL, libtpu over ICI).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "distributed/transport.h"
#include "runtime/executable.h"

namespace torch_pjrt::distributed {

class DeviceTransport : public Transport {
 public:
  // `device`: this process's device (client index); `group_devices`: the global device id of
  // every group rank, in rank order.
  DeviceTransport(int rank, int device, std::vector<int64_t> group_devices);

  std::string name() const override { return "device"; }
  Result all_reduce(const at::Tensor& x, const Reduction& r) override;
  Result reduce(const at::Tensor& x, const Reduction& r, int root) override;
  Result reduce_scatter(const at::Tensor& x, const Reduction& r) override;
  Result broadcast(const at::Tensor& x, int root) override;
  Result all_gather(const at::Tensor& x) override;
  Result gather(const at::Tensor& x, int root) override;
  Result scatter(const at::Tensor& x, int64_t n, at::ScalarType dtype, int root) override;
  Result all_to_all(const at::Tensor& x, const std::vector<int64_t>& in_splits,
                    const std::vector<int64_t>& out_splits) override;
  PendingPtr send(const at::Tensor& x, int peer, int tag) override;
  PendingPtr recv(int64_t n, at::ScalarType dtype, int peer, int tag,
                  std::function<void(const at::Tensor&)> deliver) override;
  PendingPtr barrier() override;

  // Sends and receives between start_batch and end_batch run at end_batch as one program per
  // pair of ranks, pairs in ascending order: every rank launches them in the same order, so
  // crossing transfers (a ring exchange) cannot deadlock on the device.
  bool batches_p2p() const override { return true; }
  void start_batch() override;
  PendingPtr end_batch() override;

 private:
  struct Outputs {
    std::vector<at::Tensor> values;
    PendingPtr pending;
  };
  // Runs `spec` on `inputs` (device tensors, in the program's argument order) as replica
  // `replica` of the ranks `ranks` (all of the group unless given).
  Outputs run(const collectives::Spec& spec, const std::vector<at::Tensor>& inputs,
              const std::vector<int>& ranks = {});
  Result run1(const collectives::Spec& spec, const std::vector<at::Tensor>& inputs);
  std::vector<at::Tensor> reduction_inputs(const at::Tensor& x, const Reduction& r);
  collectives::Spec spec(collectives::Kind kind, const at::Tensor& x, int64_t count) const;

  struct Transfer {
    bool send;
    at::Tensor data;  // send: the data; recv: a placeholder of the right size and dtype
    int peer;
    std::function<void(const at::Tensor&)> deliver;
    std::shared_ptr<PendingPtr> slot;  // filled by end_batch
  };
  PendingPtr run_transfers(std::vector<Transfer> transfers);

  int rank_;
  int device_;
  std::vector<int64_t> group_devices_;
  at::Tensor rank_tensor_;  // this rank, an int32 scalar on the device (an operand of programs)
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<runtime::Executable>> programs_;
  bool batching_ = false;
  std::vector<Transfer> batch_;
};

}  // namespace torch_pjrt::distributed
