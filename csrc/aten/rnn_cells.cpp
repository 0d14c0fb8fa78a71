// The fused LSTM and GRU cells (_thnn_fused_lstm_cell, _thnn_fused_gru_cell) and their backwards.
// PyTorch's RNN composites (lstm, gru, lstm_cell, gru_cell and their packed forms) call these for
// CUDA, XPU and PrivateUse1 inputs; only CUDA has kernels, so "tpu" composes them here from
// elementwise ops (one program per call): the CUDA kernels' formulas and saved workspaces.
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>
#include <torch/library.h>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// The CUDA kernels' shape checks of a cell's gates, biases and previous hidden (or cell) state.
void check_cell_sizes(const char* op, const Tensor& input_gates, const Tensor& hidden_gates,
                      const Tensor& input_bias, const Tensor& hidden_bias, int64_t factor,
                      const Tensor& prev) {
  const at::TensorArg ig{input_gates, "input_gates", 1}, hg{hidden_gates, "hidden_gates", 2},
      ib{input_bias, "input_bias", 3}, hb{hidden_bias, "hidden_bias", 4},
      ph{prev, "prev_hidden", 5};
  at::checkDim(op, ig, 2);
  at::checkSameSize(op, ig, hg);
  const int64_t gates_size = input_gates.size(1);
  if (input_bias.defined()) {
    at::checkDim(op, ib, 1);
    at::checkNumel(op, ib, gates_size);
    at::checkSameSize(op, ib, hb);
  }
  at::checkDim(op, ph, 2);
  at::checkNumel(op, ph, input_gates.size(0) * gates_size / factor);
  std::vector<const Tensor*> all{&input_gates, &hidden_gates, &prev};
  if (input_bias.defined()) all.push_back(&input_bias);
  if (hidden_bias.defined()) all.push_back(&hidden_bias);
  common_device(op, all);
}

Tensor value_or_empty(const std::optional<Tensor>& t) { return t.has_value() ? *t : Tensor(); }

// gates = igates + hgates (+ biases); the activated gates i, f, g, o are the workspace.
std::tuple<Tensor, Tensor, Tensor> lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                             const Tensor& cx,
                                             const std::optional<Tensor>& input_bias_opt,
                                             const std::optional<Tensor>& hidden_bias_opt) {
  const Tensor input_bias = value_or_empty(input_bias_opt);
  const Tensor hidden_bias = value_or_empty(hidden_bias_opt);
  check_cell_sizes("_thnn_fused_lstm_cell", input_gates, hidden_gates, input_bias, hidden_bias, 4,
                   cx);
  OneOp op;
  Tensor gates = input_gates + hidden_gates;
  if (input_bias.defined()) gates = gates + input_bias + hidden_bias;
  const auto chunks = gates.chunk(4, 1);
  const Tensor i = chunks[0].sigmoid(), f = chunks[1].sigmoid(), g = chunks[2].tanh(),
               o = chunks[3].sigmoid();
  const Tensor cy = f * cx + i * g;
  const Tensor hy = o * cy.tanh();
  const Tensor workspace = at::cat({i, f, g, o}, 1);
  op.finish();
  return {hy, cy, workspace};
}

std::tuple<Tensor, Tensor, Tensor> lstm_cell_backward(const std::optional<Tensor>& grad_hy_opt,
                                                      const std::optional<Tensor>& grad_cy_opt,
                                                      const Tensor& cx, const Tensor& cy,
                                                      const Tensor& workspace, bool has_bias) {
  const Tensor grad_hy = value_or_empty(grad_hy_opt), grad_cy = value_or_empty(grad_cy_opt);
  if (!grad_hy.defined() && !grad_cy.defined()) return {};
  const Tensor& some_grad = grad_hy.defined() ? grad_hy : grad_cy;
  at::checkSameSize("_thnn_fused_lstm_cell_backward", {some_grad, "grad", 1}, {cx, "cx", 3});
  at::checkSameSize("_thnn_fused_lstm_cell_backward", {cx, "cx", 3}, {cy, "cy", 4});
  at::checkNumel("_thnn_fused_lstm_cell_backward", at::TensorArg{workspace, "workspace", 5},
                 cx.numel() * 4);
  OneOp op;
  const auto w = workspace.chunk(4, 1);
  const Tensor &i = w[0], &f = w[1], &g = w[2], &o = w[3];
  const Tensor tanh_cy = cy.tanh();
  Tensor gcx = grad_hy.defined() ? grad_hy * o * (1 - tanh_cy * tanh_cy) : at::zeros_like(cx);
  if (grad_cy.defined()) gcx = gcx + grad_cy;
  const Tensor go = grad_hy.defined() ? grad_hy * tanh_cy * o * (1 - o) : at::zeros_like(cx);
  const Tensor gi = gcx * g * i * (1 - i);
  const Tensor gf = gcx * cx * f * (1 - f);
  const Tensor gg = gcx * i * (1 - g * g);
  const Tensor grad_gates = at::cat({gi, gf, gg, go}, 1);
  const Tensor grad_cx = gcx * f;
  const Tensor grad_bias = has_bias ? grad_gates.sum(0) : Tensor();
  op.finish();
  return {grad_gates, grad_cx, grad_bias};
}

// r = sigmoid(ir + hr), z = sigmoid(iz + hz), n = tanh(in + r * hn), hy = n + z (hx - n);
// the workspace holds r, z, n, hx and hn (its bias added).
std::tuple<Tensor, Tensor> gru_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                    const Tensor& hx, const std::optional<Tensor>& input_bias_opt,
                                    const std::optional<Tensor>& hidden_bias_opt) {
  const Tensor input_bias = value_or_empty(input_bias_opt);
  const Tensor hidden_bias = value_or_empty(hidden_bias_opt);
  check_cell_sizes("_thnn_fused_gru_cell", input_gates, hidden_gates, input_bias, hidden_bias, 3,
                   hx);
  OneOp op;
  Tensor ig = input_gates, hg = hidden_gates;
  if (input_bias.defined()) {
    ig = ig + input_bias;
    hg = hg + hidden_bias;
  }
  const auto in = ig.chunk(3, 1), hn = hg.chunk(3, 1);
  const Tensor r = (in[0] + hn[0]).sigmoid(), z = (in[1] + hn[1]).sigmoid();
  const Tensor n = (in[2] + r * hn[2]).tanh();
  const Tensor hy = n + z * (hx - n);
  const Tensor workspace = at::cat({r, z, n, hx, hn[2]}, 1);
  op.finish();
  return {hy, workspace};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> gru_cell_backward(const Tensor& grad_hy,
                                                                     const Tensor& workspace,
                                                                     bool has_bias) {
  at::checkNumel("_thnn_fused_gru_cell_backward", at::TensorArg{workspace, "workspace", 2},
                 grad_hy.numel() * 5);
  common_device("_thnn_fused_gru_cell_backward", {&grad_hy, &workspace});
  OneOp op;
  const auto w = workspace.chunk(5, 1);
  const Tensor &r = w[0], &z = w[1], &n = w[2], &hx = w[3], &hn = w[4];
  const Tensor gz = grad_hy * (hx - n) * (1 - z) * z;
  const Tensor ghx = grad_hy * z;
  const Tensor gn = grad_hy * (1 - z) * (1 - n * n);
  const Tensor ghn = gn * r;
  const Tensor gr = gn * hn * (1 - r) * r;
  const Tensor grad_input_gates = at::cat({gr, gz, gn}, 1);
  const Tensor grad_hidden_gates = at::cat({gr, gz, ghn}, 1);
  const Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : Tensor();
  const Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : Tensor();
  op.finish();
  return {grad_input_gates, grad_hidden_gates, ghx, grad_input_bias, grad_hidden_bias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", lstm_cell_backward);
  m.impl("_thnn_fused_gru_cell", gru_cell);
  m.impl("_thnn_fused_gru_cell_backward", gru_cell_backward);
}

}  // namespace torch_pjrt::aten
