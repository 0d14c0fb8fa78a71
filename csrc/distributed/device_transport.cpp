// DeviceTransport: c10d primitives as collective programs on the device.
#include "distributed/device_transport.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <map>
#include <thread>

#include "aten/tensor_bridge.h"
#include "device/runtime_state.h"
#include "graph/graph.h"

namespace torch_pjrt::distributed {
namespace {

using collectives::Kind;
using collectives::Reduce;
using collectives::Spec;

// Device programs in flight; waiting polls their completions until a deadline, so a rank that
// exited or issued another collective makes the others raise instead of hanging.
class DevicePending : public Pending {
 public:
  explicit DevicePending(std::vector<runtime::CompletionPtr> completions)
      : completions_(std::move(completions)) {}

  bool done() override {
    return std::all_of(completions_.begin(), completions_.end(),
                       [](const runtime::CompletionPtr& c) { return c->done(); });
  }

  void wait(std::chrono::milliseconds timeout, const std::string& op) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(50);
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        C10_THROW_ERROR(DistBackendError,
                        "tpu_dist " + op + " (device transport) did not complete within " +
                            std::to_string(timeout.count()) +
                            " ms: a rank may have exited or issued a different collective");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
    for (const runtime::CompletionPtr& c : completions_) {
      c->wait();
      if (!c->error().empty()) {
        C10_THROW_ERROR(DistBackendError, "tpu_dist " + op + " (device transport): " + c->error());
      }
    }
  }

 private:
  std::vector<runtime::CompletionPtr> completions_;
};

// Several pendings as one.
class AllPending : public Pending {
 public:
  explicit AllPending(std::vector<PendingPtr> parts) : parts_(std::move(parts)) {}
  bool done() override {
    return std::all_of(parts_.begin(), parts_.end(), [](const PendingPtr& p) { return p->done(); });
  }
  void wait(std::chrono::milliseconds timeout, const std::string& op) override {
    for (const PendingPtr& p : parts_) p->wait(timeout, op);
  }

 private:
  std::vector<PendingPtr> parts_;
};

// A send or receive of a batch, known once the batch ran.
class BatchedPending : public Pending {
 public:
  explicit BatchedPending(std::shared_ptr<PendingPtr> slot) : slot_(std::move(slot)) {}
  bool done() override { return *slot_ && (*slot_)->done(); }
  void wait(std::chrono::milliseconds timeout, const std::string& op) override {
    TORCH_CHECK(*slot_, "tpu_dist ", op, ": waited for before its batch_isend_irecv batch ended");
    (*slot_)->wait(timeout, op);
  }

 private:
  std::shared_ptr<PendingPtr> slot_;
};

at::TensorOptions on(int device, at::ScalarType dtype) {
  return at::TensorOptions()
      .device(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)))
      .dtype(dtype);
}

}  // namespace

DeviceTransport::DeviceTransport(int rank, int device, std::vector<int64_t> group_devices)
    : rank_(rank),
      device_(device),
      group_devices_(std::move(group_devices)),
      rank_tensor_(at::scalar_tensor(rank, at::kInt).to(on(device, at::kInt))) {}

Spec DeviceTransport::spec(Kind kind, const at::Tensor& x, int64_t count) const {
  Spec s;
  s.kind = kind;
  s.type = aten::element_type(x.scalar_type());
  s.count = count;
  s.group_size = static_cast<int>(group_devices_.size());
  return s;
}

DeviceTransport::Outputs DeviceTransport::run(const Spec& spec,
                                              const std::vector<at::Tensor>& inputs,
                                              const std::vector<int>& ranks) {
  std::vector<int64_t> devices = group_devices_;
  if (!ranks.empty()) {
    devices.clear();
    for (int r : ranks) devices.push_back(group_devices_[r]);
  }
  std::shared_ptr<runtime::Executable> exe;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string key = collectives::key(spec) + "@";
    for (int64_t d : devices) key += std::to_string(d) + ",";
    auto it = programs_.find(key);
    if (it == programs_.end()) {
      runtime::CompileOptions options = graph::compile_options();
      options.replica_devices = devices;
      exe = device::client().compile(collectives::program(spec), options);
      exe->set_name(std::string("collective ") + collectives::kind_name(spec.kind));
      programs_.emplace(key, exe);
    } else {
      exe = it->second;
    }
  }
  std::vector<std::shared_ptr<runtime::Buffer>> buffers;
  std::vector<const runtime::Buffer*> args;
  for (const at::Tensor& t : inputs) {
    buffers.push_back(graph::buffer_of(aten::read(t)));
    args.push_back(buffers.back().get());
  }
  std::vector<runtime::CompletionPtr> completions;
  auto results = exe->execute_replicated({args}, &completions);
  Outputs out;
  for (auto& buffer : results.at(0)) {
    const at::ScalarType dtype = aten::scalar_type(buffer->element_type());
    out.values.push_back(aten::make_tensor(graph::from_buffer(std::move(buffer)), dtype, device_));
  }
  out.pending = std::make_shared<DevicePending>(std::move(completions));
  return out;
}

Result DeviceTransport::run1(const Spec& spec, const std::vector<at::Tensor>& inputs) {
  Outputs out = run(spec, inputs);
  return {out.values.at(0), out.pending};
}

std::vector<at::Tensor> DeviceTransport::reduction_inputs(const at::Tensor& x, const Reduction& r) {
  std::vector<at::Tensor> inputs{x};
  if (r.op == Reduce::kPremulSum) {
    at::Tensor factor = r.factor_tensor.defined() ? r.factor_tensor.reshape({})
                                                  : at::scalar_tensor(r.factor, at::kDouble);
    inputs.push_back(factor.to(on(device_, x.scalar_type())));
  }
  return inputs;
}

Result DeviceTransport::all_reduce(const at::Tensor& x, const Reduction& r) {
  Spec s = spec(Kind::kAllReduce, x, x.numel());
  s.reduce = r.op;
  return run1(s, reduction_inputs(x, r));
}

Result DeviceTransport::reduce(const at::Tensor& x, const Reduction& r, int root) {
  Spec s = spec(Kind::kReduce, x, x.numel());
  s.reduce = r.op;
  s.root = root;
  std::vector<at::Tensor> inputs = reduction_inputs(x, r);
  inputs.insert(inputs.begin() + 1, rank_tensor_);
  return run1(s, inputs);
}

Result DeviceTransport::reduce_scatter(const at::Tensor& x, const Reduction& r) {
  Spec s = spec(Kind::kReduceScatter, x, x.numel() / static_cast<int64_t>(group_devices_.size()));
  s.reduce = r.op;
  return run1(s, reduction_inputs(x, r));
}

Result DeviceTransport::broadcast(const at::Tensor& x, int root) {
  Spec s = spec(Kind::kBroadcast, x, x.numel());
  s.root = root;
  return run1(s, {x, rank_tensor_});
}

Result DeviceTransport::all_gather(const at::Tensor& x) {
  return run1(spec(Kind::kAllGather, x, x.numel()), {x});
}

Result DeviceTransport::gather(const at::Tensor& x, int root) {
  Result all = all_gather(x);
  if (rank_ != root) all.value = at::Tensor();
  return all;
}

Result DeviceTransport::scatter(const at::Tensor& x, int64_t n, at::ScalarType dtype, int root) {
  const int64_t size = static_cast<int64_t>(group_devices_.size());
  at::Tensor input = rank_ == root ? x : at::zeros({n * size}, on(device_, dtype));
  Spec s = spec(Kind::kScatter, input, n);
  s.root = root;
  return run1(s, {input, rank_tensor_});
}

Result DeviceTransport::all_to_all(const at::Tensor& x, const std::vector<int64_t>& in_splits,
                                   const std::vector<int64_t>& out_splits) {
  const int64_t size = static_cast<int64_t>(group_devices_.size());
  const int64_t local = in_splits.empty() ? 0 : in_splits[0];
  const bool even =
      std::all_of(in_splits.begin(), in_splits.end(), [&](int64_t s) { return s == local; }) &&
      std::all_of(out_splits.begin(), out_splits.end(), [&](int64_t s) { return s == local; });
  if (even) return run1(spec(Kind::kAllToAll, x, local), {x});
  // Uneven: every chunk padded to the largest one of any rank (agreed by a MAX all_reduce read
  // back to the host), exchanged evenly, and cut back to the received sizes.
  const int64_t local_max = *std::max_element(in_splits.begin(), in_splits.end());
  Reduction max;
  max.op = Reduce::kMax;
  const int64_t m =
      all_reduce(at::scalar_tensor(local_max, at::kLong).reshape({1}).to(on(device_, at::kLong)),
                 max)
          .value.item<int64_t>();
  at::Tensor padded;
  {
    aten::OneOp one;
    std::vector<at::Tensor> chunks;
    int64_t offset = 0;
    for (int64_t j = 0; j < size; ++j) {
      chunks.push_back(
          at::constant_pad_nd(x.narrow(0, offset, in_splits[j]), {0, m - in_splits[j]}));
      offset += in_splits[j];
    }
    padded = at::cat(chunks);
    one.finish();
  }
  Result exchanged = run1(spec(Kind::kAllToAll, padded, m), {padded});
  aten::OneOp one;
  std::vector<at::Tensor> pieces;
  for (int64_t j = 0; j < size; ++j)
    pieces.push_back(exchanged.value.narrow(0, j * m, out_splits[j]));
  exchanged.value = at::cat(pieces);
  one.finish();
  return exchanged;
}

PendingPtr DeviceTransport::send(const at::Tensor& x, int peer, int tag) {
  Transfer t{true, x, peer, nullptr, std::make_shared<PendingPtr>()};
  if (batching_) {
    batch_.push_back(t);
    return std::make_shared<BatchedPending>(t.slot);
  }
  return run_transfers({t});
}

PendingPtr DeviceTransport::recv(int64_t n, at::ScalarType dtype, int peer, int tag,
                                 std::function<void(const at::Tensor&)> deliver) {
  Transfer t{false, at::zeros({n}, on(device_, dtype)), peer, std::move(deliver),
             std::make_shared<PendingPtr>()};
  if (batching_) {
    batch_.push_back(t);
    return std::make_shared<BatchedPending>(t.slot);
  }
  return run_transfers({t});
}

PendingPtr DeviceTransport::run_transfers(std::vector<Transfer> transfers) {
  // By peer (pairs (min, max) in ascending order are the same order on every rank); within a
  // pair, lower -> higher rank first, each direction in issue order (how sends match receives).
  std::map<int, std::vector<const Transfer*>> by_peer;
  for (const Transfer& t : transfers) by_peer[t.peer].push_back(&t);
  std::vector<PendingPtr> all;
  for (auto& [peer, list] : by_peer) {
    const int lo = std::min(rank_, peer);
    std::stable_sort(list.begin(), list.end(), [&](const Transfer* a, const Transfer* b) {
      const bool a_up = (a->send ? rank_ : peer) == lo;
      const bool b_up = (b->send ? rank_ : peer) == lo;
      return a_up && !b_up;
    });
    Spec s;
    s.kind = Kind::kPermute;
    s.group_size = 2;
    std::vector<at::Tensor> inputs;
    for (const Transfer* t : list) {
      const int src = (t->send ? rank_ : peer) == lo ? 0 : 1;
      s.transfers.push_back(
          {aten::element_type(t->data.scalar_type()), t->data.numel(), src, 1 - src});
      inputs.push_back(t->data);
    }
    Outputs out = run(s, inputs, {lo, std::max(rank_, peer)});
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i]->deliver) list[i]->deliver(out.values[i]);
      *list[i]->slot = out.pending;
    }
    all.push_back(out.pending);
  }
  return std::make_shared<AllPending>(std::move(all));
}

PendingPtr DeviceTransport::barrier() {
  Reduction sum;
  return all_reduce(at::zeros({1}, on(device_, at::kInt)), sum).pending;
}

void DeviceTransport::start_batch() {
  TORCH_CHECK(!batching_, "tpu_dist: a batch of point-to-point operations is already open");
  batching_ = true;
}

PendingPtr DeviceTransport::end_batch() {
  TORCH_CHECK(batching_, "tpu_dist: no batch of point-to-point operations is open");
  batching_ = false;
  std::vector<Transfer> batch = std::move(batch_);
  batch_.clear();
  if (batch.empty()) return nullptr;
  return run_transfers(std::move(batch));
}

}  // namespace torch_pjrt::distributed
