// The host transport: device -> host -> Gloo -> result on the host, for plugins without
// cross-process collectives (the XLA CPU plugins). Each primitive makes one device-to-host copy
// of its (already concatenated) input; data moves through Gloo as bytes, so every dtype is
// carried bit-exactly, and reductions run in a type Gloo reduces (bool as uint8, int16 as int32).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "distributed/transport.h"

namespace torch_pjrt::distributed {

class HostTransport : public Transport {
 public:
  // `gloo`: a ProcessGroupGloo of the same group (made by the Python factory from the group's
  // store); its timeout bounds every transfer.
  HostTransport(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size);

  std::string name() const override { return "host"; }
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

 private:
  // Runs `reduce_on_host` (a Gloo reduction of the prepared host tensor with the op it is given)
  // between the preparation and the finishing of reduction `r` of x.
  at::Tensor reduced(const at::Tensor& x, const Reduction& r,
                     const std::function<at::Tensor(at::Tensor, c10d::ReduceOp)>& reduce_on_host);

  c10::intrusive_ptr<c10d::Backend> gloo_;
  int rank_;
  int size_;
};

}  // namespace torch_pjrt::distributed
