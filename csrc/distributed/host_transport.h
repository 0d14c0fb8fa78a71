// The host transport: device -> host -> Gloo -> result on the host, for plugins without
// cross-process collectives (the XLA CPU plugins). Each primitive makes one device-to-host copy
// of its (already concatenated) input; data moves through Gloo as bytes, so every dtype is
// carried bit-exactly, and reductions run in a type Gloo reduces (bool as uint8, int16 as int32).
// all_reduce, reduce, reduce_scatter and broadcast stage through host pieces reused across calls
// (no allocation or page faults per call); all_reduce's and broadcast's result goes back to the
// device on its piece, which the CPU plugins alias instead of copying (the piece is reused once
// the plugin releases it, when that buffer is freed).
#pragma once

#include <memory>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <vector>

#include "distributed/transport.h"
#include "runtime/host_lease.h"

namespace torch_pjrt::distributed {

class HostTransport : public Transport {
 public:
  // `gloo`: a ProcessGroupGloo of the same group (made by the Python factory from the group's
  // store); its timeout bounds every transfer.
  HostTransport(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size);
  ~HostTransport() override;

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

  // A host piece not lent to any buffer, kept with its lease while it is.
  struct Piece {
    at::Tensor bytes;
    std::unique_ptr<runtime::HostLease> lease;  // null or released: free
  };
  static constexpr int kMaxFreePieces = 2;

  // x copied into a free piece (the smallest that fits, else a new one), as a host tensor of its
  // dtype; valid until the next call unless on_device lends it.
  at::Tensor staged(const at::Tensor& x);
  // A "tpu" tensor (on x's device) of a result still on its piece, sharing it; else `host`.
  at::Tensor on_device(const at::Tensor& host, const at::Tensor& like);

  c10::intrusive_ptr<c10d::Backend> gloo_;
  int rank_;
  int size_;
  std::vector<Piece> pieces_;
};

}  // namespace torch_pjrt::distributed
