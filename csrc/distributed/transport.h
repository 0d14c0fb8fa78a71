// How the tpu_dist backend moves data: a Transport runs each collective primitive on a flat
// (1-D) "tpu" tensor of the group. Two exist: DeviceTransport (collective programs on the device,
// for plugins with cross-process collectives) and HostTransport (device -> host -> Gloo ->
// device, for the XLA CPU plugins). ProcessGroupTpu maps every c10d operation onto these.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/programs.h"

namespace torch_pjrt::distributed {

// Work still in flight (a device program, a Gloo receive): what a Work waits for.
class Pending {
 public:
  virtual ~Pending() = default;
  virtual bool done() = 0;
  // Blocks until done; throws c10::DistBackendError naming `op` when it failed or did not finish
  // within `timeout`.
  virtual void wait(std::chrono::milliseconds timeout, const std::string& op) = 0;
};
using PendingPtr = std::shared_ptr<Pending>;

// A c10d reduction: the operation and, for PREMUL_SUM, the factor (a scalar, or a one-element
// tensor when defined).
struct Reduction {
  collectives::Reduce op = collectives::Reduce::kSum;
  double factor = 1.0;
  at::Tensor factor_tensor;
};

// A primitive's flat result, on the host (HostTransport) or the device (DeviceTransport), and
// what is still running to produce it.
struct Result {
  at::Tensor value;
  PendingPtr pending;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // "device" or "host", for torch_pjrt.info and messages.
  virtual std::string name() const = 0;

  // Reductions of x[n] over the group. reduce's value is defined on `root` only.
  virtual Result all_reduce(const at::Tensor& x, const Reduction& r) = 0;
  virtual Result reduce(const at::Tensor& x, const Reduction& r, int root) = 0;
  // x[size * n] -> chunk `rank` of the reduction [n].
  virtual Result reduce_scatter(const at::Tensor& x, const Reduction& r) = 0;
  // Data movement, bit-exact. broadcast: root's x[n]. all_gather / gather: every rank's x[n] in
  // rank order [size * n] (gather: on root only). scatter: chunk `rank` of root's x[size * n]
  // (undefined x elsewhere), [n] of `dtype`. all_to_all: x holds in_splits[j] elements for rank
  // j; the result holds out_splits[j] elements from rank j.
  virtual Result broadcast(const at::Tensor& x, int root) = 0;
  virtual Result all_gather(const at::Tensor& x) = 0;
  virtual Result gather(const at::Tensor& x, int root) = 0;
  virtual Result scatter(const at::Tensor& x, int64_t n, at::ScalarType dtype, int root) = 0;
  virtual Result all_to_all(const at::Tensor& x, const std::vector<int64_t>& in_splits,
                            const std::vector<int64_t>& out_splits) = 0;
  // Point to point; `deliver` receives the flat value (on the host or the device) once it arrived,
  // at the latest when the returned Pending is waited for.
  virtual PendingPtr send(const at::Tensor& x, int peer, int tag) = 0;
  virtual PendingPtr recv(int64_t n, at::ScalarType dtype, int peer, int tag,
                          std::function<void(const at::Tensor&)> deliver) = 0;
  virtual PendingPtr barrier() = 0;

  // Batching point-to-point operations between start_batch and end_batch (batch_isend_irecv);
  // transports that need no batching (Gloo orders transfers itself) say false.
  virtual bool batches_p2p() const { return false; }
  virtual void start_batch() {}
  virtual PendingPtr end_batch() { return nullptr; }
};

}  // namespace torch_pjrt::distributed
