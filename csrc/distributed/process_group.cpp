// ProcessGroupTpu: c10d operations on "tpu" tensors over a Transport.
#include "distributed/process_group.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "aten/tensor_bridge.h"
#include "distributed/work.h"

namespace torch_pjrt::distributed {
namespace {

using collectives::Kind;
using collectives::Reduce;

void check_tensor(const char* op, const at::Tensor& t) {
  TORCH_CHECK_VALUE(t.defined(), op, ": got an undefined tensor");
  TORCH_CHECK_VALUE(t.is_privateuseone(), op,
                    ": tensors must be on a tpu device for backend tpu_dist, got one on ",
                    t.device());
  TORCH_CHECK_VALUE(t.layout() == at::kStrided, op, ": tensors must be dense");
  switch (t.scalar_type()) {
    case at::kBool:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kByte:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
    case at::kDouble:
      return;
    default:
      TORCH_CHECK_TYPE(false, op, ": dtype ", t.scalar_type(),
                       " is not supported on the tpu device");
  }
}

void check_like(const char* op, const at::Tensor& t, const at::Tensor& like) {
  check_tensor(op, t);
  TORCH_CHECK_TYPE(t.scalar_type() == like.scalar_type(), op, ": tensors must have one dtype, got ",
                   t.scalar_type(), " and ", like.scalar_type());
  TORCH_CHECK_VALUE(t.device() == like.device(), op, ": tensors must be on one device, got ",
                    t.device(), " and ", like.device());
}

void check_numel(const char* op, const at::Tensor& t, int64_t numel, const char* what) {
  TORCH_CHECK_VALUE(t.numel() == numel, op, ": ", what, " has ", t.numel(), " elements, expected ",
                    numel);
}

const at::Tensor& one(const char* op, const std::vector<at::Tensor>& tensors) {
  TORCH_CHECK_VALUE(tensors.size() == 1, op, ": expects one tensor per process, got ",
                    tensors.size());
  check_tensor(op, tensors[0]);
  return tensors[0];
}

at::Tensor flat(const at::Tensor& t) { return t.reshape({-1}); }

// The tensors flattened and concatenated, as one program.
at::Tensor concat(const std::vector<at::Tensor>& tensors) {
  if (tensors.size() == 1) return flat(tensors[0]);
  aten::OneOp one;
  std::vector<at::Tensor> flats;
  for (const at::Tensor& t : tensors) flats.push_back(flat(t));
  at::Tensor out = at::cat(flats);
  one.finish();
  return out;
}

// Writes a flat piece (on the host or the device) into `out`.
void write(const at::Tensor& out, const at::Tensor& piece) {
  if (out.numel() == 0) return;
  out.copy_(piece.reshape(out.sizes()));
}

Reduction reduction(const char* op, const c10d::ReduceOp& reduce_op, const at::Tensor& t, Kind kind,
                    int size) {
  Reduction r;
  switch (reduce_op.op_) {
    case c10d::ReduceOp::SUM:
      r.op = Reduce::kSum;
      break;
    case c10d::ReduceOp::AVG:
      r.op = Reduce::kAvg;
      break;
    case c10d::ReduceOp::PRODUCT:
      r.op = Reduce::kProduct;
      break;
    case c10d::ReduceOp::MIN:
      r.op = Reduce::kMin;
      break;
    case c10d::ReduceOp::MAX:
      r.op = Reduce::kMax;
      break;
    case c10d::ReduceOp::BAND:
      r.op = Reduce::kBand;
      break;
    case c10d::ReduceOp::BOR:
      r.op = Reduce::kBor;
      break;
    case c10d::ReduceOp::BXOR:
      r.op = Reduce::kBxor;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      r.op = Reduce::kPremulSum;
      // The factor's type is NCCLPreMulSumSupplement in torch 2.11-2.12; 2.13 renames it
      // PreMulSumSupplement and keeps the old name as an alias, so the old name builds on all.
      auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(reduce_op.supplement_.get());
      TORCH_CHECK_VALUE(supplement != nullptr, op, ": PREMUL_SUM without a factor");
      r.factor = supplement->double_factor;
      r.factor_tensor = supplement->tensor_factor;
      break;
    }
    default:
      TORCH_CHECK_VALUE(false, op, ": unsupported reduction");
  }
  collectives::Spec spec;
  spec.kind = kind;
  spec.type = aten::element_type(t.scalar_type());
  spec.group_size = size;
  spec.reduce = r.op;
  try {
    collectives::validate(spec);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, op, ": ", e.what());
  }
  return r;
}

int64_t total_numel(const std::vector<at::Tensor>& tensors) {
  int64_t n = 0;
  for (const at::Tensor& t : tensors) n += t.numel();
  return n;
}

}  // namespace

ProcessGroupTpu::ProcessGroupTpu(int rank, int size, std::chrono::milliseconds timeout,
                                 std::unique_ptr<Transport> transport)
    : c10d::Backend(rank, size), timeout_(timeout), transport_(std::move(transport)) {}

std::vector<int64_t> ProcessGroupTpu::exchange_device_ids(c10d::Store& store, int rank, int size,
                                                          int64_t own_id) {
  const std::string prefix = "torch_pjrt/device_id/";
  const std::string value = std::to_string(own_id);
  store.set(prefix + std::to_string(rank), std::vector<uint8_t>(value.begin(), value.end()));
  std::vector<int64_t> ids;
  for (int r = 0; r < size; ++r) {
    const std::vector<uint8_t> v = store.get(prefix + std::to_string(r));
    ids.push_back(std::stoll(std::string(v.begin(), v.end())));
  }
  return ids;
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupTpu::getBackendOptions() {
  return c10::make_intrusive<Options>("tpu_dist", timeout_);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::work(c10d::OpType type, const char* op,
                                                     std::vector<at::Tensor> outputs,
                                                     PendingPtr pending, bool future_at_issue) {
  ++sequence_;
  std::vector<PendingPtr> list;
  if (pending) list.push_back(std::move(pending));
  return c10::make_intrusive<TpuWork>(getRank(), type, op, std::move(outputs), std::move(list),
                                      timeout_, future_at_issue);
}

void ProcessGroupTpu::startCoalescing() {
  TORCH_CHECK(transport_->batches_p2p(), "tpu_dist: the ", transport_->name(),
              " transport does not coalesce operations");
  transport_->start_batch();
  coalescing_ = true;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::endCoalescing() {
  TORCH_CHECK(coalescing_, "tpu_dist: endCoalescing without startCoalescing");
  coalescing_ = false;
  return work(c10d::OpType::COALESCED, "coalesced operations", {}, transport_->end_batch());
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::broadcast(std::vector<at::Tensor>& tensors,
                                                          const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = one("broadcast", tensors);
  TORCH_CHECK_VALUE(opts.rootRank >= 0 && opts.rootRank < getSize(), "broadcast: root ",
                    opts.rootRank, " is outside the group of ", getSize());
  Result r = transport_->broadcast(flat(t), static_cast<int>(opts.rootRank));
  if (getRank() != opts.rootRank) write(t, r.value);
  return work(c10d::OpType::BROADCAST, "broadcast", tensors, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allreduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::AllreduceOptions& opts) {
  const at::Tensor& t = one("all_reduce", tensors);
  Result r = transport_->all_reduce(
      flat(t), reduction("all_reduce", opts.reduceOp, t, Kind::kAllReduce, getSize()));
  write(t, r.value);
  return work(c10d::OpType::ALLREDUCE, "all_reduce", tensors, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const char* op = "all_reduce_coalesced";
  TORCH_CHECK_VALUE(!tensors.empty(), op, ": no tensors");
  for (const at::Tensor& t : tensors) check_like(op, t, tensors[0]);
  Result r = transport_->all_reduce(
      concat(tensors), reduction(op, opts.reduceOp, tensors[0], Kind::kAllReduce, getSize()));
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    write(t, r.value.narrow(0, offset, t.numel()));
    offset += t.numel();
  }
  return work(c10d::OpType::ALLREDUCE_COALESCED, op, tensors, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::reduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::ReduceOptions& opts) {
  const at::Tensor& t = one("reduce", tensors);
  TORCH_CHECK_VALUE(opts.rootRank >= 0 && opts.rootRank < getSize(), "reduce: root ", opts.rootRank,
                    " is outside the group of ", getSize());
  Result r =
      transport_->reduce(flat(t), reduction("reduce", opts.reduceOp, t, Kind::kReduce, getSize()),
                         static_cast<int>(opts.rootRank));
  if (getRank() == opts.rootRank) write(t, r.value);
  return work(c10d::OpType::REDUCE, "reduce", tensors, r.pending);
}

void ProcessGroupTpu::scatter_gathered(const at::Tensor& gathered, std::vector<at::Tensor>& outputs,
                                       const std::vector<at::Tensor>& inputs) {
  // gathered = [rank 0: inputs..., rank 1: inputs..., ...]; outputs[k] = input k of every rank.
  const int64_t total = total_numel(inputs);
  int64_t offset = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int64_t n = inputs[k].numel();
    std::vector<at::Tensor> pieces;
    for (int rank = 0; rank < getSize(); ++rank) {
      pieces.push_back(gathered.narrow(0, rank * total + offset, n));
    }
    write(outputs[k], pieces.size() == 1 ? pieces[0] : at::cat(pieces));
    offset += n;
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const char* op = "all_gather";
  const at::Tensor& in = one(op, inputs);
  TORCH_CHECK_VALUE(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(), op,
                    ": expects a list of ", getSize(), " output tensors");
  for (const at::Tensor& o : outputs[0]) {
    check_like(op, o, in);
    check_numel(op, o, in.numel(), "an output tensor");
  }
  Result r = transport_->all_gather(flat(in));
  for (int rank = 0; rank < getSize(); ++rank) {
    write(outputs[0][rank], r.value.narrow(0, rank * in.numel(), in.numel()));
  }
  return work(c10d::OpType::ALLGATHER, op, outputs[0], r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  const char* op = "all_gather_into_tensor";
  check_tensor(op, input);
  check_like(op, output, input);
  check_numel(op, output, input.numel() * getSize(), "the output tensor");
  Result r = transport_->all_gather(flat(input));
  write(output, r.value);
  return work(c10d::OpType::_ALLGATHER_BASE, op, {output}, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const char* op = "all_gather_coalesced";
  TORCH_CHECK_VALUE(!inputs.empty(), op, ": no tensors");
  for (const at::Tensor& t : inputs) check_like(op, t, inputs[0]);
  TORCH_CHECK_VALUE(static_cast<int>(outputs.size()) == getSize(), op, ": expects ", getSize(),
                    " output lists (one per rank)");
  std::vector<at::Tensor> all;
  for (const auto& list : outputs) {
    TORCH_CHECK_VALUE(list.size() == inputs.size(), op,
                      ": each output list must have one tensor per input");
    for (size_t k = 0; k < list.size(); ++k) {
      check_like(op, list[k], inputs[0]);
      check_numel(op, list[k], inputs[k].numel(), "an output tensor");
      all.push_back(list[k]);
    }
  }
  Result r = transport_->all_gather(concat(inputs));
  const int64_t total = total_numel(inputs);
  for (int rank = 0; rank < getSize(); ++rank) {
    int64_t offset = rank * total;
    for (at::Tensor& o : outputs[rank]) {
      write(o, r.value.narrow(0, offset, o.numel()));
      offset += o.numel();
    }
  }
  return work(c10d::OpType::ALLGATHER_COALESCED, op, all, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const char* op = "all_gather_into_tensor_coalesced";
  TORCH_CHECK_VALUE(!inputs.empty() && outputs.size() == inputs.size(), op,
                    ": expects one output tensor per input tensor");
  for (size_t k = 0; k < inputs.size(); ++k) {
    check_like(op, inputs[k], inputs[0]);
    check_like(op, outputs[k], inputs[0]);
    check_numel(op, outputs[k], inputs[k].numel() * getSize(), "an output tensor");
  }
  Result r = transport_->all_gather(concat(inputs));
  scatter_gathered(r.value, outputs, inputs);
  return work(c10d::OpType::COALESCED, op, outputs, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const char* op = "gather";
  const at::Tensor& in = one(op, inputs);
  TORCH_CHECK_VALUE(opts.rootRank >= 0 && opts.rootRank < getSize(), op, ": root ", opts.rootRank,
                    " is outside the group of ", getSize());
  const bool root = getRank() == opts.rootRank;
  if (root) {
    TORCH_CHECK_VALUE(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(), op,
                      ": the root expects a list of ", getSize(), " output tensors");
    for (const at::Tensor& o : outputs[0]) {
      check_like(op, o, in);
      check_numel(op, o, in.numel(), "an output tensor");
    }
  } else {
    TORCH_CHECK_VALUE(outputs.empty() || outputs[0].empty(), op,
                      ": only the root takes output tensors");
  }
  Result r = transport_->gather(flat(in), static_cast<int>(opts.rootRank));
  std::vector<at::Tensor> written;
  if (root) {
    for (int rank = 0; rank < getSize(); ++rank) {
      write(outputs[0][rank], r.value.narrow(0, rank * in.numel(), in.numel()));
    }
    written = outputs[0];
  }
  return work(c10d::OpType::GATHER, op, written, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const char* op = "scatter";
  const at::Tensor& out = one(op, outputs);
  TORCH_CHECK_VALUE(opts.rootRank >= 0 && opts.rootRank < getSize(), op, ": root ", opts.rootRank,
                    " is outside the group of ", getSize());
  at::Tensor x;
  if (getRank() == opts.rootRank) {
    TORCH_CHECK_VALUE(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(), op,
                      ": the root expects a list of ", getSize(), " input tensors");
    for (const at::Tensor& t : inputs[0]) {
      check_like(op, t, out);
      check_numel(op, t, out.numel(), "an input tensor");
    }
    x = concat(inputs[0]);
  } else {
    TORCH_CHECK_VALUE(inputs.empty() || inputs[0].empty(), op,
                      ": only the root takes input tensors");
  }
  Result r =
      transport_->scatter(x, out.numel(), out.scalar_type(), static_cast<int>(opts.rootRank));
  write(out, r.value);
  return work(c10d::OpType::SCATTER, op, outputs, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter";
  const at::Tensor& out = one(op, outputs);
  TORCH_CHECK_VALUE(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(), op,
                    ": expects a list of ", getSize(), " input tensors");
  for (const at::Tensor& t : inputs[0]) {
    check_like(op, t, out);
    check_numel(op, t, out.numel(), "an input tensor");
  }
  Result r = transport_->reduce_scatter(
      concat(inputs[0]), reduction(op, opts.reduceOp, out, Kind::kReduceScatter, getSize()));
  write(out, r.value);
  return work(c10d::OpType::REDUCE_SCATTER, op, outputs, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter_tensor";
  check_tensor(op, output);
  check_like(op, input, output);
  check_numel(op, input, output.numel() * getSize(), "the input tensor");
  Result r = transport_->reduce_scatter(
      flat(input), reduction(op, opts.reduceOp, output, Kind::kReduceScatter, getSize()));
  write(output, r.value);
  return work(c10d::OpType::_REDUCE_SCATTER_BASE, op, {output}, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter_tensor_coalesced";
  TORCH_CHECK_VALUE(!outputs.empty() && outputs.size() == inputs.size(), op,
                    ": expects one output tensor per input tensor");
  for (size_t k = 0; k < inputs.size(); ++k) {
    check_like(op, outputs[k], outputs[0]);
    check_like(op, inputs[k], outputs[0]);
    check_numel(op, inputs[k], outputs[k].numel() * getSize(), "an input tensor");
  }
  // Rank r's chunk of the reduction is [chunk r of every input]: reorder, then scatter once.
  at::Tensor x;
  {
    aten::OneOp one;
    std::vector<at::Tensor> pieces;
    for (int rank = 0; rank < getSize(); ++rank) {
      for (size_t k = 0; k < inputs.size(); ++k) {
        const int64_t n = outputs[k].numel();
        pieces.push_back(flat(inputs[k]).narrow(0, rank * n, n));
      }
    }
    x = at::cat(pieces);
    one.finish();
  }
  Result r = transport_->reduce_scatter(
      x, reduction(op, opts.reduceOp, outputs[0], Kind::kReduceScatter, getSize()));
  int64_t offset = 0;
  for (at::Tensor& o : outputs) {
    write(o, r.value.narrow(0, offset, o.numel()));
    offset += o.numel();
  }
  return work(c10d::OpType::COALESCED, op, outputs, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& opts) {
  const char* op = "all_to_all_single";
  check_tensor(op, input);
  check_like(op, output, input);
  const int size = getSize();
  // Split sizes count rows of dimension 0; the primitive takes element counts.
  auto elements = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* what) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const int64_t row = rows == 0 ? 0 : t.numel() / rows;
    std::vector<int64_t> out;
    if (splits.empty()) {
      TORCH_CHECK_VALUE(rows % size == 0, op, ": the ", what, "'s first dimension (", rows,
                        ") is not divisible by the group size ", size);
      out.assign(size, rows / size * row);
      return out;
    }
    TORCH_CHECK_VALUE(static_cast<int>(splits.size()) == size, op, ": ", what, " split sizes has ",
                      splits.size(), " entries for a group of ", size);
    int64_t sum = 0;
    for (int64_t s : splits) {
      TORCH_CHECK_VALUE(s >= 0, op, ": negative split size");
      sum += s;
      out.push_back(s * row);
    }
    TORCH_CHECK_VALUE(sum == rows, op, ": ", what, " split sizes sum to ", sum, ", but its first ",
                      "dimension is ", rows);
    return out;
  };
  std::vector<int64_t> in_splits = elements(input, input_split_sizes, "input");
  std::vector<int64_t> out_splits = elements(output, output_split_sizes, "output");
  Result r = transport_->all_to_all(flat(input), in_splits, out_splits);
  write(output, r.value);
  return work(c10d::OpType::ALLTOALL_BASE, op, {output}, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::alltoall(std::vector<at::Tensor>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::AllToAllOptions& opts) {
  const char* op = "all_to_all";
  TORCH_CHECK_VALUE(
      static_cast<int>(inputs.size()) == getSize() && static_cast<int>(outputs.size()) == getSize(),
      op, ": expects ", getSize(), " input and output tensors");
  std::vector<int64_t> in_splits, out_splits;
  for (int j = 0; j < getSize(); ++j) {
    check_like(op, inputs[j], inputs[0]);
    check_like(op, outputs[j], inputs[0]);
    in_splits.push_back(inputs[j].numel());
    out_splits.push_back(outputs[j].numel());
  }
  Result r = transport_->all_to_all(concat(inputs), in_splits, out_splits);
  int64_t offset = 0;
  for (at::Tensor& o : outputs) {
    write(o, r.value.narrow(0, offset, o.numel()));
    offset += o.numel();
  }
  return work(c10d::OpType::ALLTOALL, op, outputs, r.pending);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::send(std::vector<at::Tensor>& tensors, int dst_rank,
                                                     int tag) {
  const at::Tensor& t = one("send", tensors);
  TORCH_CHECK_VALUE(dst_rank >= 0 && dst_rank < getSize() && dst_rank != getRank(),
                    "send: invalid destination rank ", dst_rank);
  return work(c10d::OpType::SEND, "send", tensors, transport_->send(flat(t), dst_rank, tag));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::recv(std::vector<at::Tensor>& tensors, int src_rank,
                                                     int tag) {
  const at::Tensor t = one("recv", tensors);
  TORCH_CHECK_VALUE(src_rank >= 0 && src_rank < getSize() && src_rank != getRank(),
                    "recv: invalid source rank ", src_rank);
  PendingPtr pending = transport_->recv(t.numel(), t.scalar_type(), src_rank, tag,
                                        [t](const at::Tensor& value) { write(t, value); });
  // The received data is written when it arrived: the Future completes in wait().
  return work(c10d::OpType::RECV, "recv", tensors, pending, transport_->name() == "device");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::recvAnysource(std::vector<at::Tensor>& tensors,
                                                              int tag) {
  TORCH_CHECK(false,
              "recv: receiving from any source is not supported by tpu_dist; name the "
              "source rank");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::barrier(const c10d::BarrierOptions& opts) {
  return work(c10d::OpType::BARRIER, "barrier", {}, transport_->barrier(), false);
}

}  // namespace torch_pjrt::distributed
