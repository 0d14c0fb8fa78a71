// The inference fast paths of nn.MultiheadAttention, nn.TransformerEncoderLayer and
// nn.TransformerEncoder on "tpu": torch._native_multi_head_attention and
// torch._transformer_encoder_layer_fwd (dense, and over the nested tensors the encoder makes from a
// key padding mask), written with device ops, and the nested-tensor ops that path takes
// (_nested_tensor_from_mask, _nested_tensor_from_mask_left_aligned, to_padded_tensor; and
// _nested_tensor_size, to inspect one). PyTorch registers them for the CPU and CUDA only, so
// without these the modules ran through the CPU fallback, and the encoder with a padding mask
// raised. Other ops on nested tensors are not supported on "tpu".
//
// Semantics are those of PyTorch's fused CPU kernels: a float mask counts as a boolean one (any
// nonzero masks the position out), a row whose keys are all masked is NaN, and a nested result's
// padding positions are dropped (to_padded_tensor fills them).
#include <ATen/ATen.h>
#include <ATen/NestedTensorImpl.h>
#include <ATen/native/nested/NestedTensorUtils.h>
#include <ATen/ops/_nested_tensor_size_native.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// Attention probabilities of `scores` [B, H, L, L] with `masked` (true: not attended) broadcast to
// them; a row with every key masked is NaN, as PyTorch's _masked_softmax gives.
Tensor masked_softmax(const Tensor& scores, const Tensor& masked) {
  return at::softmax(scores.masked_fill(masked, -std::numeric_limits<double>::infinity()), -1);
}

// A fast path's `mask` as a boolean mask broadcastable to the [B, H, L, L] attention scores.
Tensor attention_mask(const Tensor& mask, std::optional<int64_t> mask_type, int64_t batch,
                      int64_t length, const char* op) {
  const Tensor masked = mask.scalar_type() == at::kBool ? mask : mask.ne(0);
  TORCH_CHECK(mask_type.has_value() || masked.dim() == 4, op, ": Mask Type should be defined");
  switch (mask_type.value_or(2)) {
    case 0:  // an attention mask [L, L]
      return masked.view({1, 1, length, length});
    case 1:  // a key padding mask [B, L]
      return masked.view({batch, 1, 1, length});
    case 2:  // merged [B, H, L, L] (or broadcastable to it)
      return masked;
    default:
      TORCH_CHECK(false, op, ": unknown mask_type ", *mask_type);
  }
}

struct Attention {
  Tensor out;    // [B, L, E]
  Tensor probs;  // [B, H, L, L]
};

// Multi-head attention of query, key and value [B, L, E] through the packed input projection
// (query, key, value rows of qkv_weight), queries scaled before their product with the keys.
Attention multi_head_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                               int64_t embed_dim, int64_t heads, const Tensor& qkv_weight,
                               const Tensor& qkv_bias, const Tensor& proj_weight,
                               const Tensor& proj_bias, const std::optional<Tensor>& masked) {
  const int64_t batch = query.size(0), length = query.size(1), head_dim = embed_dim / heads;
  const auto project = [&](const Tensor& x, int64_t part) {
    return at::linear(x, qkv_weight.narrow(0, part * embed_dim, embed_dim),
                      qkv_bias.narrow(0, part * embed_dim, embed_dim))
        .view({batch, length, heads, head_dim})
        .transpose(1, 2);
  };
  const Tensor q = project(query, 0).div(std::sqrt(static_cast<double>(head_dim)));
  const Tensor scores = at::matmul(q, project(key, 1).transpose(-2, -1));
  Tensor probs = masked ? masked_softmax(scores, *masked) : at::softmax(scores, -1);
  const Tensor heads_out =
      at::matmul(probs, project(value, 2)).transpose(1, 2).reshape({batch, length, embed_dim});
  return {at::linear(heads_out, proj_weight, proj_bias), std::move(probs)};
}

struct LayerWeights {
  int64_t embed_dim, num_heads;
  const Tensor &qkv_weight, &qkv_bias, &proj_weight, &proj_bias;
  bool use_gelu, norm_first;
  double eps;
  const Tensor &norm_weight_1, &norm_bias_1, &norm_weight_2, &norm_bias_2;
  const Tensor &ffn_weight_1, &ffn_bias_1, &ffn_weight_2, &ffn_bias_2;
};

void check_heads(int64_t embed_dim, int64_t heads, const char* op) {
  TORCH_CHECK(embed_dim % heads == 0, op, ": `embed_dim` must divide evenly by `num_heads`");
}

Tensor self_attention(const Tensor& x, const LayerWeights& w, const std::optional<Tensor>& masked) {
  check_heads(w.embed_dim, w.num_heads, "_transformer_encoder_layer_fwd");
  return multi_head_attention(x, x, x, w.embed_dim, w.num_heads, w.qkv_weight, w.qkv_bias,
                              w.proj_weight, w.proj_bias, masked)
      .out;
}

Tensor norm(const Tensor& x, const LayerWeights& w, const Tensor& weight, const Tensor& bias) {
  return at::layer_norm(x, {w.embed_dim}, weight, bias, w.eps);
}

// One encoder layer over a dense [B, L, E] input.
Tensor encoder_layer(const Tensor& src, const LayerWeights& w,
                     const std::optional<Tensor>& masked) {
  Tensor x = src;
  if (w.norm_first) x = norm(x, w, w.norm_weight_1, w.norm_bias_1);
  x = self_attention(x, w, masked).add(src);
  if (!w.norm_first) x = norm(x, w, w.norm_weight_1, w.norm_bias_1);
  const Tensor residual = x;
  Tensor h = w.norm_first ? norm(x, w, w.norm_weight_2, w.norm_bias_2) : x;
  h = at::linear(h, w.ffn_weight_1, w.ffn_bias_1);
  h = w.use_gelu ? at::gelu(h) : at::relu(h);
  x = at::linear(h, w.ffn_weight_2, w.ffn_bias_2).add(residual);
  if (!w.norm_first) x = norm(x, w, w.norm_weight_2, w.norm_bias_2);
  return x;
}

// Where a nested tensor of [L_i, E] components lies in its padded [B, L, E] form: the row of each
// component element in the padded tensor's [B * L, E] view, and the padding positions.
struct PaddedLayout {
  Tensor rows;    // int64 [sum L_i] on the device
  Tensor padded;  // bool [B, L] on the device, true at padding
  int64_t batch, length, width;
};

PaddedLayout padded_layout(const Tensor& nested, int64_t length, const char* op) {
  const at::native::NestedTensorImpl* impl = at::native::get_nested_tensor_impl(nested);
  const Tensor sizes = impl->get_nested_sizes();
  TORCH_CHECK_NOT_IMPLEMENTED(sizes.dim() == 2 && sizes.size(1) == 2, op,
                              ": on tpu, nested tensors of [length, width] components only");
  const int64_t batch = sizes.size(0);
  const auto s = sizes.accessor<int64_t, 2>();
  const int64_t width = batch == 0 ? 0 : s[0][1];
  int64_t longest = 0;
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK_NOT_IMPLEMENTED(s[b][1] == width, op,
                                ": on tpu, nested tensors whose components share their width only");
    longest = std::max(longest, s[b][0]);
  }
  length = std::max(length, longest);
  std::vector<int64_t> rows;
  std::vector<uint8_t> padded(static_cast<size_t>(batch * length), 1);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < s[b][0]; ++j) {
      rows.push_back(b * length + j);
      padded[static_cast<size_t>(b * length + j)] = 0;
    }
  }
  const at::Device device = nested.device();
  return {at::tensor(rows, at::kLong).to(device),
          at::from_blob(padded.data(), {batch, length}, at::kBool).to(device), batch, length,
          width};
}

Tensor padded_of(const Tensor& nested, const PaddedLayout& p, double padding) {
  const Tensor values = at::native::get_buffer(nested).view({-1, p.width});
  return at::full({p.batch * p.length, p.width}, padding, values.options())
      .index_copy(0, p.rows, values)
      .view({p.batch, p.length, p.width});
}

Tensor nested_of(const Tensor& padded, const PaddedLayout& p, const Tensor& like) {
  const Tensor rows = padded.reshape({-1, p.width}).index_select(0, p.rows);
  return at::native::wrap_buffer(
      rows.reshape({-1}), at::native::get_nested_tensor_impl(like)->get_nested_sizes().clone());
}

Tensor transformer_encoder_layer(const Tensor& src, int64_t embed_dim, int64_t num_heads,
                                 const Tensor& qkv_weight, const Tensor& qkv_bias,
                                 const Tensor& proj_weight, const Tensor& proj_bias, bool use_gelu,
                                 bool norm_first, double eps, const Tensor& norm_weight_1,
                                 const Tensor& norm_bias_1, const Tensor& norm_weight_2,
                                 const Tensor& norm_bias_2, const Tensor& ffn_weight_1,
                                 const Tensor& ffn_bias_1, const Tensor& ffn_weight_2,
                                 const Tensor& ffn_bias_2, const std::optional<Tensor>& mask,
                                 std::optional<int64_t> mask_type) {
  const LayerWeights w{embed_dim,    num_heads,     qkv_weight,  qkv_bias,     proj_weight,
                       proj_bias,    use_gelu,      norm_first,  eps,          norm_weight_1,
                       norm_bias_1,  norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
                       ffn_weight_2, ffn_bias_2};
  if (src.is_nested()) {
    TORCH_CHECK_NOT_IMPLEMENTED(!mask.has_value(),
                                "_transformer_encoder_layer_fwd: on tpu, a "
                                "nested input takes no mask (its padding is its mask)");
    const PaddedLayout p = padded_layout(src, 0, "_transformer_encoder_layer_fwd");
    if (p.rows.numel() == 0)
      return nested_of(at::native::get_buffer(src).view({0, p.width}), p, src);
    const Tensor out = encoder_layer(padded_of(src, p, 0), w, p.padded.view({p.batch, 1, 1, -1}));
    return nested_of(out, p, src);
  }
  TORCH_CHECK(src.dim() == 3, "_transformer_encoder_layer_fwd: expected a [batch, length, ",
              "embed_dim] input, got ", src.dim(), " dimensions");
  if (src.numel() == 0) return src.clone();
  std::optional<Tensor> masked;
  if (mask.has_value() && mask->defined()) {
    masked = attention_mask(*mask, mask_type, src.size(0), src.size(1),
                            "_transformer_encoder_layer_fwd");
  }
  return encoder_layer(src, w, masked);
}

// nn.MultiheadAttention's fast path (batch-first inputs of one shape, packed projections). The
// weights are returned only when asked for: averaged over the heads, or per head.
std::tuple<Tensor, Tensor> native_multi_head_attention(
    const Tensor& query, const Tensor& key, const Tensor& value, int64_t embed_dim,
    int64_t num_head, const Tensor& qkv_weight, const Tensor& qkv_bias, const Tensor& proj_weight,
    const Tensor& proj_bias, const std::optional<Tensor>& mask, bool need_weights,
    bool average_attn_weights, std::optional<int64_t> mask_type) {
  constexpr const char* op = "_native_multi_head_attention";
  TORCH_CHECK_NOT_IMPLEMENTED(!query.is_nested() && !key.is_nested() && !value.is_nested(), op,
                              ": nested inputs are not supported on tpu");
  TORCH_CHECK(query.dim() == 3, op, ": expected `query` to be 3-D, got ", query.dim(), "-D");
  TORCH_CHECK(query.sizes() == key.sizes() && key.sizes() == value.sizes(), op,
              ": expected `query`/`key`/`value` shapes to match");
  TORCH_CHECK(query.size(2) == embed_dim, op, ": passed-in embed_dim ", embed_dim,
              " didn't match last dim of query ", query.size(2));
  check_heads(embed_dim, num_head, op);
  std::optional<Tensor> masked;
  if (mask.has_value() && mask->defined()) {
    masked = attention_mask(*mask, mask_type, query.size(0), query.size(1), op);
  }
  Attention a = multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
                                     proj_weight, proj_bias, masked);
  if (!need_weights) return {std::move(a.out), Tensor()};
  if (average_attn_weights) a.probs = a.probs.sum(1).div(num_head);
  return {std::move(a.out), std::move(a.probs)};
}

// The host copy of a [B, L] padding mask (true: a token) after PyTorch's checks of both inputs.
Tensor host_mask(const Tensor& t, const Tensor& mask, const char* op) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, op, ": expected mask to be of type Bool, but got ",
              mask.scalar_type(), " instead");
  TORCH_CHECK(mask.dim() == 2, op, ": padding mask should be 2D");
  TORCH_CHECK(t.dim() == 3, op, ": input should be a 3D tensor, N * L * D");
  TORCH_CHECK(t.size(0) == mask.size(0) && t.size(1) == mask.size(1), op,
              ": mask size should match input size");
  return mask.cpu();
}

// Whether every row of the host mask is its tokens followed by its padding.
bool left_aligned(const Tensor& mask) {
  return mask.numel() == 0 || !mask.narrow(1, 1, mask.size(1) - 1)
                                   .logical_and(mask.narrow(1, 0, mask.size(1) - 1).logical_not())
                                   .any()
                                   .item<bool>();
}

bool nested_from_mask_left_aligned(const Tensor& t, const Tensor& mask) {
  return left_aligned(host_mask(t, mask, "_nested_tensor_from_mask_left_aligned"));
}

Tensor nested_from_mask(const Tensor& t, const Tensor& mask, bool mask_check) {
  const Tensor tokens = host_mask(t, mask, "_nested_tensor_from_mask");
  if (mask_check) {
    TORCH_CHECK(left_aligned(tokens),
                "_nested_tensor_from_mask: mask of tensor was not left-aligned, so it cannot be ",
                "converted to a nested tensor");
  }
  const Tensor lengths = tokens.sum(1);
  const Tensor sizes = at::stack({lengths, at::full_like(lengths, t.size(2))}, 1);
  const Tensor rows = tokens.reshape({-1}).nonzero().view({-1}).to(t.device());
  return at::native::wrap_buffer(t.reshape({-1, t.size(2)}).index_select(0, rows).reshape({-1}),
                                 sizes);
}

Tensor to_padded_tensor(const Tensor& self, double padding,
                        at::OptionalSymIntArrayRef output_size) {
  std::vector<int64_t> size;
  if (output_size.has_value()) {
    for (const c10::SymInt& d : *output_size) size.push_back(d.guard_int(__FILE__, __LINE__));
    TORCH_CHECK(size.size() == 3, "to_padded_tensor: output_size ", size,
                " does not match the nested tensor's 3 dimensions");
  }
  const PaddedLayout p = padded_layout(self, size.empty() ? 0 : size[1], "to_padded_tensor");
  TORCH_CHECK(size.empty() || (size[0] == p.batch && size[1] >= p.length && size[2] == p.width),
              "to_padded_tensor: output_size ", size,
              " is smaller than the nested tensor's padded size");
  return padded_of(self, p, padding);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_transformer_encoder_layer_fwd", transformer_encoder_layer);
  m.impl("_native_multi_head_attention", native_multi_head_attention);
  m.impl("_nested_tensor_from_mask", nested_from_mask);
  m.impl("_nested_tensor_from_mask_left_aligned", nested_from_mask_left_aligned);
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("_transformer_encoder_layer_fwd", transformer_encoder_layer);
  m.impl("to_padded_tensor", to_padded_tensor);
  m.impl("_nested_tensor_size", TORCH_FN(at::native::_nested_tensor_size));  // host metadata
}

}  // namespace torch_pjrt::aten
