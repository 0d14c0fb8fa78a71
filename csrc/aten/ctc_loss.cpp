// CTC loss on "tpu" (torch._ctc_loss and its backward, behind nn.CTCLoss and F.ctc_loss), on the
// device: the forward (alpha) and backward (beta) recursions are loops over time in one program
// each (lowering/ctc.h), vectorized over the batch and the extended target (blanks between labels),
// in log space; the rest is written with device ops. The gradient is PyTorch's: with respect to
// log_probs taken as log_softmax outputs, exp(lp) - exp(log(sum of alpha * beta over the positions
// of each label) + nll - lp), zero past each input's length; for an infinite loss (no alignment),
// zero under zero_infinity, else NaN.
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>
#include <torch/library.h>

#include <limits>
#include <tuple>
#include <vector>

#include "aten/tensor_bridge.h"
#include "graph/graph.h"
#include "lowering/ctc.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The extended targets of each batch entry, [B, 2 * S + 1]: blank, label 1, blank, label 2, ...,
// blank (blank past the entry's labels), with S the longest target.
struct Extended {
  Tensor labels;   // int64 [B, S']
  Tensor skip;     // bool [B, S']: position s may be reached from s - 2 (a label unlike s - 2's)
  Tensor last;     // int64 [B]: the entry's last position, 2 * target_length
  Tensor lengths;  // int64 [B]: input lengths on the device
};

// PyTorch's argument checks (ctc_loss_allocate_outputs' messages), before any device work.
void check(const Tensor& log_probs, const Tensor& targets, at::IntArrayRef input_lengths,
           at::IntArrayRef target_lengths, int64_t blank) {
  const at::CheckedFrom c = "ctc_loss_allocate_outputs";
  const at::TensorArg lp{log_probs, "log_probs", 1}, tg{targets, "targets", 2};
  at::checkScalarTypes(c, tg, {at::kInt, at::kLong});
  at::checkDim(c, lp, 3);
  const int64_t batch = log_probs.size(1), steps = log_probs.size(0);
  TORCH_CHECK(blank >= 0 && blank < log_probs.size(2), "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == batch,
              "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == batch,
              "target_lengths must be of size batch_size");
  int64_t total = 0, longest = 0;
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(target_lengths[b] >= 0, "Expected target_lengths to have value at least 0, but ",
                "got value ", target_lengths[b], " (while checking arguments for ", c, ")");
    TORCH_CHECK(input_lengths[b] >= 0, "Expected input_lengths to have value at least 0, but got ",
                "value ", input_lengths[b], " (while checking arguments for ", c, ")");
    TORCH_CHECK(input_lengths[b] <= steps, "Expected input_lengths to have value at most ", steps,
                ", but got value ", input_lengths[b], " (while checking arguments for ", c, ")");
    total += target_lengths[b];
    longest = std::max(longest, target_lengths[b]);
  }
  if (targets.dim() == 1) {
    at::checkSize(c, tg, 0, total);
  } else {
    at::checkSize(c, tg, 0, batch);
    TORCH_CHECK(targets.size(1) >= longest, "Expected tensor to have size at least ", longest,
                " at dimension 1, but got size ", targets.size(1), " for argument #2 'targets' ",
                "(while checking arguments for ", c, ")");
  }
}

Extended extend(const Tensor& targets, at::IntArrayRef input_lengths,
                at::IntArrayRef target_lengths, int64_t blank, const at::Device& device) {
  const auto batch = static_cast<int64_t>(target_lengths.size());
  int64_t longest = 0;
  for (int64_t l : target_lengths) longest = std::max(longest, l);
  // Where each entry's labels lie in `targets` (flattened), and which padded slots are real.
  std::vector<int64_t> where(static_cast<size_t>(batch * longest), 0);
  std::vector<uint8_t> real(static_cast<size_t>(batch * longest), 0);
  int64_t offset = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = targets.dim() == 1 ? offset : b * targets.size(1);
    for (int64_t i = 0; i < target_lengths[b]; ++i) {
      where[static_cast<size_t>(b * longest + i)] = start + i;
      real[static_cast<size_t>(b * longest + i)] = 1;
    }
    offset += target_lengths[b];
  }
  const auto on = [&](const Tensor& t) { return t.to(device); };
  const Tensor index = on(at::tensor(where, at::kLong)).view({batch, longest});
  const Tensor is_real = on(at::from_blob(real.data(), {batch, longest}, at::kBool));
  Tensor labels = targets.reshape({-1}).to(at::kLong).index_select(0, index.reshape({-1}));
  labels = labels.view({batch, longest}).masked_fill(is_real.logical_not(), blank);
  // Interleave with blanks: [B, S, 2] (blank, label) then a final blank.
  Tensor extended = at::stack({at::full_like(labels, blank), labels}, 2).view({batch, 2 * longest});
  extended = at::cat({extended, at::full({batch, 1}, blank, labels.options())}, 1);
  const Tensor previous = at::cat(
      {at::full({batch, 2}, blank, labels.options()), extended.narrow(1, 0, 2 * longest - 1)}, 1);
  const Tensor skip = extended.ne(blank).logical_and(extended.ne(previous));
  std::vector<int64_t> last(target_lengths.begin(), target_lengths.end());
  for (int64_t& l : last) l *= 2;
  return {
      extended, skip, on(at::tensor(last, at::kLong)),
      on(at::tensor(std::vector<int64_t>(input_lengths.begin(), input_lengths.end()), at::kLong))};
}

// log_probs at each extended position, [T, B, S'].
Tensor extended_log_probs(const Tensor& log_probs, const Extended& e) {
  return log_probs.gather(
      2, e.labels.unsqueeze(0).expand({log_probs.size(0), e.labels.size(0), e.labels.size(1)}));
}

// One of the recursions (lowering/ctc.h), [T, B, S'].
Tensor recursion(const graph::OpDef& op, const Tensor& lp, std::vector<graph::DataPtr> operands) {
  const int device = common_device("ctc_loss", {&lp});
  Tensor out = make_tensor(graph::record1(op, std::move(operands), {},
                                          tensor_type(lp.scalar_type(), lp.sizes()), device),
                           lp.scalar_type(), device);
  finish_op();
  return out;
}

Tensor positions(const Extended& e) {
  return at::arange(e.labels.size(1), e.labels.options()).unsqueeze(0);
}

// (log_alpha [T, B, S'], nll [B]).
std::tuple<Tensor, Tensor> forward(const Tensor& lp, const Extended& e) {
  const Tensor s = positions(e), last = e.last.unsqueeze(1);
  // At the first step, the first blank and the first label.
  const Tensor start = s.le(1).logical_and(s.le(last));
  const Tensor log_alpha =
      recursion(lowering::kCtcAlpha, lp, {read(lp), read(e.skip), read(start)});
  // The loss: -log(alpha at the last blank + at the last label), at each entry's last step.
  const Tensor final_step = e.lengths.sub(1).clamp_min(0).view({1, -1, 1});
  const Tensor at_end =
      log_alpha.gather(0, final_step.expand({1, log_alpha.size(1), log_alpha.size(2)})).squeeze(0);
  Tensor nll =
      at::logsumexp(
          at::cat({at_end.gather(1, last),
                   at_end.gather(1, last.sub(1).clamp_min(0)).masked_fill(last.eq(0), kNegInf)},
                  1),
          1)
          .neg();
  // An empty input has no alignment unless the target is empty too.
  nll = nll.masked_fill(e.lengths.eq(0), std::numeric_limits<double>::infinity())
            .masked_fill(e.lengths.eq(0).logical_and(e.last.eq(0)), 0);
  return {log_alpha, nll};
}

// log_beta [T, B, S'], each entry's recursion starting at its last step.
Tensor backward_recursion(const Tensor& lp, const Extended& e) {
  const Tensor s = positions(e), last = e.last.unsqueeze(1);
  const Tensor start = s.ge(last.sub(1)).logical_and(s.le(last));
  const int64_t n = e.skip.size(1);
  const Tensor skip_ahead =
      n > 2 ? at::cat(
                  {e.skip.narrow(1, 2, n - 2), at::zeros({e.skip.size(0), 2}, e.skip.options())}, 1)
            : at::zeros_like(e.skip);
  return recursion(lowering::kCtcBeta, lp,
                   {read(lp), read(skip_ahead), read(start), read(e.lengths)});
}

std::tuple<Tensor, Tensor> ctc_loss(const Tensor& log_probs, const Tensor& targets,
                                    at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                                    int64_t blank, bool /*zero_infinity: ctc_loss applies it*/) {
  check(log_probs, targets, input_lengths, target_lengths, blank);
  const Extended e = extend(targets, input_lengths, target_lengths, blank, log_probs.device());
  if (log_probs.size(0) == 0 || log_probs.size(1) == 0) {
    const Tensor nll =
        at::full({log_probs.size(1)}, std::numeric_limits<double>::infinity(), log_probs.options())
            .masked_fill(e.last.eq(0), 0);
    return {nll, at::full({log_probs.size(1), log_probs.size(0), e.labels.size(1)}, kNegInf,
                          log_probs.options())};
  }
  auto [log_alpha, nll] = forward(extended_log_probs(log_probs, e), e);
  return {nll, log_alpha.permute({1, 0, 2}).contiguous()};
}

Tensor ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                         at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                         const Tensor& nll, const Tensor& log_alpha, int64_t blank,
                         bool zero_infinity) {
  check(log_probs, targets, input_lengths, target_lengths, blank);
  if (log_probs.numel() == 0) return at::zeros_like(log_probs);
  const Extended e = extend(targets, input_lengths, target_lengths, blank, log_probs.device());
  const Tensor lp = extended_log_probs(log_probs, e);
  // [T, B, S'], -inf past each entry's input length and extended target: the CPU's forward leaves
  // those unwritten, and its backward never reads them.
  const Tensor steps = at::arange(log_probs.size(0), e.lengths.options()).view({-1, 1, 1});
  const Tensor outside = steps.ge(e.lengths.view({1, -1, 1}))
                             .logical_or(positions(e).unsqueeze(0).gt(e.last.view({1, -1, 1})));
  const Tensor alpha = log_alpha.permute({1, 0, 2}).masked_fill(outside, kNegInf);
  const Tensor log_beta = backward_recursion(lp, e);
  // exp(alpha + beta + nll - lp) summed into each label's column.
  const Tensor terms = alpha.add(log_beta).add(nll.view({1, -1, 1})).sub(lp).exp();
  const Tensor columns = e.labels.unsqueeze(0).expand_as(terms);
  const Tensor spread = at::zeros_like(log_probs).scatter_add(2, columns, terms);
  Tensor result = log_probs.exp().sub(spread).mul(grad.view({1, -1, 1}));
  // An impossible alignment (an infinite loss): zeros under zero_infinity, else NaN as on the CPU.
  const Tensor impossible = nll.isinf().view({1, -1, 1});
  result = zero_infinity ? result.masked_fill(impossible, 0)
                         : result.masked_fill(impossible, std::numeric_limits<double>::quiet_NaN());
  return result.masked_fill(steps.ge(e.lengths.view({1, -1, 1})), 0);
}

std::vector<int64_t> host_lengths(const Tensor& lengths, const char* name) {
  TORCH_CHECK(at::isIntegralType(lengths.scalar_type(), false), "ctc_loss: ", name,
              " must be integral");
  const Tensor host = lengths.to(at::kCPU, at::kLong).contiguous();
  return {host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel()};
}

std::tuple<Tensor, Tensor> ctc_loss_tensor(const Tensor& log_probs, const Tensor& targets,
                                           const Tensor& input_lengths,
                                           const Tensor& target_lengths, int64_t blank,
                                           bool zero_infinity) {
  return ctc_loss(log_probs, targets, host_lengths(input_lengths, "input_lengths"),
                  host_lengths(target_lengths, "target_lengths"), blank, zero_infinity);
}

Tensor ctc_loss_backward_tensor(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                                const Tensor& input_lengths, const Tensor& target_lengths,
                                const Tensor& nll, const Tensor& log_alpha, int64_t blank,
                                bool zero_infinity) {
  return ctc_loss_backward(grad, log_probs, targets, host_lengths(input_lengths, "input_lengths"),
                           host_lengths(target_lengths, "target_lengths"), nll, log_alpha, blank,
                           zero_infinity);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_ctc_loss", ctc_loss);
  m.impl("_ctc_loss.Tensor", ctc_loss_tensor);
  m.impl("_ctc_loss_backward", ctc_loss_backward);
  m.impl("_ctc_loss_backward.Tensor", ctc_loss_backward_tensor);
}

}  // namespace torch_pjrt::aten
