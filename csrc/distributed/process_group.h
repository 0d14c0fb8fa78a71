// ProcessGroupTpu: the c10d Backend registered as "tpu_dist" and "tpu" for device "tpu". It
// checks each operation's tensors (raising at once, naming the operation, on what one process can
// see is wrong), flattens and concatenates them, runs the matching primitive of its Transport and
// writes the results into the output tensors.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

#include "distributed/transport.h"

namespace torch_pjrt::distributed {

class ProcessGroupTpu : public c10d::Backend {
 public:
  ProcessGroupTpu(int rank, int size, std::chrono::milliseconds timeout,
                  std::unique_ptr<Transport> transport);

  // The global device id of every rank's device, exchanged through `store` (device transport).
  static std::vector<int64_t> exchange_device_ids(c10d::Store& store, int rank, int size,
                                                  int64_t own_id);

  const std::string getBackendName() const override { return "tpu_dist"; }
  const Transport& transport() const { return *transport_; }
  void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  // Operations issued in this group: what TORCH_DISTRIBUTED_DEBUG=DETAIL's wrapper compares across
  // ranks (with the shapes) to report mismatched collectives.
  void setSequenceNumberForGroup() override { sequence_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return sequence_; }
  c10::intrusive_ptr<Options> getBackendOptions() override;
  bool supportsCoalescing() const override { return transport_->batches_p2p(); }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  // A Work of `op` over `outputs`, waiting for `result`'s pending part.
  c10::intrusive_ptr<c10d::Work> work(c10d::OpType type, const char* op,
                                      std::vector<at::Tensor> outputs, PendingPtr pending,
                                      bool future_at_issue = true);
  // Gathers the chunk layout all_gather produces ([rank][input]) into per-input outputs.
  void scatter_gathered(const at::Tensor& gathered, std::vector<at::Tensor>& outputs,
                        const std::vector<at::Tensor>& inputs);

  std::chrono::milliseconds timeout_;
  std::unique_ptr<Transport> transport_;
  bool coalescing_ = false;
  uint64_t sequence_ = 0;
};

}  // namespace torch_pjrt::distributed
