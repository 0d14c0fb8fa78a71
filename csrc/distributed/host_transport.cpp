// HostTransport: c10d primitives staged through host memory and Gloo.
#include "distributed/host_transport.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "aten/tensor_bridge.h"
#include "device/runtime_state.h"

namespace torch_pjrt::distributed {
namespace {

using collectives::Reduce;

// One device-to-host copy of a flat tensor (a sync point, like every copy to the host).
at::Tensor to_host(const at::Tensor& x) { return x.cpu().contiguous(); }

at::Tensor as_bytes(const at::Tensor& host) { return host.view(at::kByte); }

// Waits for a Gloo work, reporting failures as DistBackendError naming `op`.
void finish(const c10::intrusive_ptr<c10d::Work>& work, const std::string& op,
            std::chrono::milliseconds timeout = ::kNoTimeout) {
  try {
    work->wait(timeout);
  } catch (const std::exception& e) {
    C10_THROW_ERROR(DistBackendError, "tpu_dist " + op + " (host transport): " + e.what());
  }
}

// A Gloo send or receive in flight; a receive hands its data over once (on the host).
class GlooPending : public Pending {
 public:
  GlooPending(c10::intrusive_ptr<c10d::Work> work, at::Tensor buffer, at::ScalarType dtype,
              std::function<void(const at::Tensor&)> deliver)
      : work_(std::move(work)),
        buffer_(std::move(buffer)),
        dtype_(dtype),
        deliver_(std::move(deliver)) {}

  bool done() override {
    if (!work_->isCompleted()) return false;
    hand_over();
    return true;
  }
  void wait(std::chrono::milliseconds timeout, const std::string& op) override {
    finish(work_, op, timeout.count() > 0 ? timeout : std::chrono::milliseconds(1));
    hand_over();
  }

 private:
  void hand_over() {
    if (!deliver_) return;
    auto deliver = std::move(deliver_);
    deliver_ = nullptr;
    deliver(buffer_.view(dtype_));
  }

  c10::intrusive_ptr<c10d::Work> work_;
  at::Tensor buffer_;  // kept alive while Gloo reads or writes it
  at::ScalarType dtype_;
  std::function<void(const at::Tensor&)> deliver_;
};

}  // namespace

HostTransport::HostTransport(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size)
    : gloo_(std::move(gloo)), rank_(rank), size_(size) {}

HostTransport::~HostTransport() {
  // Pieces still lent to live buffers outlive the transport: the plugin reads them until its
  // callback, which needs their leases alive: those pieces and leases are left allocated.
  for (Piece& piece : pieces_) {
    if (piece.lease && !piece.lease->released()) {
      new Piece(std::move(piece));
    }
  }
}

at::Tensor HostTransport::staged(const at::Tensor& x) {
  const int64_t nbytes = x.numel() * static_cast<int64_t>(x.element_size());
  Piece* best = nullptr;
  int free_pieces = 0;
  for (Piece& piece : pieces_) {
    if (piece.lease && !piece.lease->released()) continue;
    ++free_pieces;
    if (piece.bytes.numel() >= nbytes && (!best || piece.bytes.numel() < best->bytes.numel())) {
      best = &piece;
    }
  }
  if (best == nullptr) {
    if (free_pieces >= kMaxFreePieces) {  // the smallest free ones go first
      auto smallest = pieces_.end();
      for (auto it = pieces_.begin(); it != pieces_.end(); ++it) {
        if (it->lease && !it->lease->released()) continue;
        if (smallest == pieces_.end() || it->bytes.numel() < smallest->bytes.numel()) smallest = it;
      }
      pieces_.erase(smallest);
    }
    pieces_.push_back({at::empty({nbytes}, at::TensorOptions(at::kByte)), nullptr});
    best = &pieces_.back();
  }
  best->lease.reset();
  at::Tensor host = best->bytes.narrow(0, 0, nbytes).view(x.scalar_type());
  host.copy_(x);
  return host;
}

at::Tensor HostTransport::on_device(const at::Tensor& host, const at::Tensor& like) {
  for (Piece& piece : pieces_) {
    if (piece.lease || !host.is_alias_of(piece.bytes) || !host.is_contiguous() ||
        host.scalar_type() != like.scalar_type()) {
      continue;
    }
    const int device = aten::device_index(like);
    piece.lease = std::make_unique<runtime::HostLease>(device::client().api());
    auto buffer =
        device::client().buffer_sharing_host(host.data_ptr(), aten::stored_type(host.scalar_type()),
                                             host.sizes().vec(), device, *piece.lease);
    return aten::make_tensor(graph::from_buffer(std::move(buffer)), host.scalar_type(), device);
  }
  return host;  // not on a piece (converted on the host): copied to the device by the caller
}

at::Tensor HostTransport::reduced(
    const at::Tensor& x, const Reduction& r,
    const std::function<at::Tensor(at::Tensor, c10d::ReduceOp)>& reduce_on_host) {
  const at::ScalarType dtype = x.scalar_type();
  at::Tensor host = staged(x);
  if (r.op == Reduce::kPremulSum) {
    host = r.factor_tensor.defined() ? host * r.factor_tensor.cpu() : host * r.factor;
  }
  c10d::ReduceOp op;
  switch (r.op) {
    case Reduce::kSum:
    case Reduce::kAvg:
    case Reduce::kPremulSum:
      op = c10d::ReduceOp::SUM;
      break;
    case Reduce::kProduct:
      op = c10d::ReduceOp::PRODUCT;
      break;
    case Reduce::kMin:
      op = c10d::ReduceOp::MIN;
      break;
    case Reduce::kMax:
      op = c10d::ReduceOp::MAX;
      break;
    case Reduce::kBand:
      op = c10d::ReduceOp::BAND;
      break;
    case Reduce::kBor:
      op = c10d::ReduceOp::BOR;
      break;
    case Reduce::kBxor:
      op = c10d::ReduceOp::BXOR;
      break;
  }
  if (dtype == at::kBool) {
    // NCCL's bool semantics: SUM and MAX are OR, PRODUCT and MIN are AND (on 0/1 bytes).
    host = host.to(at::kByte);
    if (op == c10d::ReduceOp::SUM) op = c10d::ReduceOp::MAX;
    if (op == c10d::ReduceOp::PRODUCT) op = c10d::ReduceOp::MIN;
  } else if (dtype == at::kShort) {
    host = host.to(at::kInt);  // Gloo has no int16; wrapping back to int16 gives int16 arithmetic
  }
  at::Tensor out = reduce_on_host(host, op);
  if (r.op == Reduce::kAvg) {
    out = at::isFloatingType(out.scalar_type()) ? out.div_(size_) : out.div_(size_, "trunc");
  }
  return out.to(dtype);
}

Result HostTransport::all_reduce(const at::Tensor& x, const Reduction& r) {
  return {on_device(reduced(x, r,
                            [&](at::Tensor host, c10d::ReduceOp op) {
                              std::vector<at::Tensor> tensors{host};
                              c10d::AllreduceOptions options;
                              options.reduceOp = op;
                              finish(gloo_->allreduce(tensors, options), "all_reduce");
                              return host;
                            }),
                    x),
          nullptr};
}

Result HostTransport::reduce(const at::Tensor& x, const Reduction& r, int root) {
  return {reduced(x, r,
                  [&](at::Tensor host, c10d::ReduceOp op) {
                    std::vector<at::Tensor> tensors{host};
                    c10d::ReduceOptions options;
                    options.reduceOp = op;
                    options.rootRank = root;
                    finish(gloo_->reduce(tensors, options), "reduce");
                    return host;
                  }),
          nullptr};
}

Result HostTransport::reduce_scatter(const at::Tensor& x, const Reduction& r) {
  return {reduced(x, r,
                  [&](at::Tensor host, c10d::ReduceOp op) {
                    at::Tensor out = at::empty({host.numel() / size_}, host.options());
                    c10d::ReduceScatterOptions options;
                    options.reduceOp = op;
                    finish(gloo_->_reduce_scatter_base(out, host, options), "reduce_scatter");
                    return out;
                  }),
          nullptr};
}

Result HostTransport::broadcast(const at::Tensor& x, int root) {
  at::Tensor host = staged(x);
  std::vector<at::Tensor> tensors{as_bytes(host)};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  finish(gloo_->broadcast(tensors, options), "broadcast");
  return {on_device(host, x), nullptr};
}

Result HostTransport::all_gather(const at::Tensor& x) {
  at::Tensor host = to_host(x);
  at::Tensor out = at::empty({host.numel() * size_}, host.options());
  at::Tensor out_bytes = as_bytes(out);
  at::Tensor in_bytes = as_bytes(host);
  finish(gloo_->_allgather_base(out_bytes, in_bytes), "all_gather");
  return {out, nullptr};
}

Result HostTransport::gather(const at::Tensor& x, int root) {
  at::Tensor host = to_host(x);
  std::vector<at::Tensor> inputs{as_bytes(host)};
  std::vector<std::vector<at::Tensor>> outputs;
  at::Tensor out;
  if (rank_ == root) {
    out = at::empty({host.numel() * size_}, host.options());
    outputs.emplace_back(as_bytes(out).chunk(size_));
  }
  c10d::GatherOptions options;
  options.rootRank = root;
  finish(gloo_->gather(outputs, inputs, options), "gather");
  return {out, nullptr};
}

Result HostTransport::scatter(const at::Tensor& x, int64_t n, at::ScalarType dtype, int root) {
  at::Tensor out = at::empty({n}, at::TensorOptions().dtype(dtype));
  std::vector<at::Tensor> outputs{as_bytes(out)};
  std::vector<std::vector<at::Tensor>> inputs;
  if (rank_ == root) inputs.emplace_back(as_bytes(to_host(x)).chunk(size_));
  c10d::ScatterOptions options;
  options.rootRank = root;
  finish(gloo_->scatter(outputs, inputs, options), "scatter");
  return {out, nullptr};
}

Result HostTransport::all_to_all(const at::Tensor& x, const std::vector<int64_t>& in_splits,
                                 const std::vector<int64_t>& out_splits) {
  at::Tensor host = to_host(x);
  const int64_t width = static_cast<int64_t>(host.element_size());
  int64_t total = 0;
  std::vector<int64_t> in_bytes, out_bytes;
  for (int64_t s : in_splits) in_bytes.push_back(s * width);
  for (int64_t s : out_splits) {
    out_bytes.push_back(s * width);
    total += s;
  }
  at::Tensor out = at::empty({total}, host.options());
  at::Tensor out_view = as_bytes(out);
  at::Tensor in_view = as_bytes(host);
  c10d::AllToAllOptions options;
  finish(gloo_->alltoall_base(out_view, in_view, out_bytes, in_bytes, options), "all_to_all");
  return {out, nullptr};
}

PendingPtr HostTransport::send(const at::Tensor& x, int peer, int tag) {
  at::Tensor bytes = as_bytes(to_host(x));
  std::vector<at::Tensor> tensors{bytes};
  return std::make_shared<GlooPending>(gloo_->send(tensors, peer, tag), bytes, at::kByte, nullptr);
}

PendingPtr HostTransport::recv(int64_t n, at::ScalarType dtype, int peer, int tag,
                               std::function<void(const at::Tensor&)> deliver) {
  at::Tensor bytes =
      at::empty({n * static_cast<int64_t>(c10::elementSize(dtype))}, at::TensorOptions(at::kByte));
  std::vector<at::Tensor> tensors{bytes};
  return std::make_shared<GlooPending>(gloo_->recv(tensors, peer, tag), bytes, dtype,
                                       std::move(deliver));
}

PendingPtr HostTransport::barrier() {
  c10d::BarrierOptions options;
  return std::make_shared<GlooPending>(gloo_->barrier(options), at::Tensor(), at::kByte, nullptr);
}

}  // namespace torch_pjrt::distributed
