// FFT lowering: the transformed dims are moved innermost, transformed by stablehlo.fft in groups
// of at most three (transforms over separate dims compose), scaled and moved back.
#include "lowering/fft.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Value;

const char* fft_type_name(FftKind kind) {
  switch (kind) {
    case FftKind::C2CForward:
      return "FFT";
    case FftKind::C2CInverse:
      return "IFFT";
    case FftKind::R2C:
      return "RFFT";
    case FftKind::C2R:
      return "IRFFT";
  }
  return "";
}

// One stablehlo.fft over the innermost `lengths.size()` dims (1 to 3) of `x`, giving `result`.
Value fft_op(hlo::Builder& b, Value x, FftKind kind, const std::vector<int64_t>& lengths,
             const hlo::TensorType& result) {
  return b.op("fft", {x}, {result},
              std::string("fft_type = #stablehlo<fft_type ") + fft_type_name(kind) +
                  ">, fft_length = " + hlo::i64_array(lengths))[0];
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

bool identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

Value permute(hlo::Builder& b, Value x, const std::vector<int64_t>& perm) {
  return identity(perm) ? x : b.transpose(x, perm);
}

// A complex-to-complex transform of the dims [first, last) of complex `x`, three at a time.
Value c2c(hlo::Builder& b, Value x, int64_t first, int64_t last, bool forward) {
  const int64_t rank = x.type.rank();
  for (int64_t end = last; end > first; end -= 3) {
    const int64_t begin = std::max(first, end - 3);
    // Move dims [begin, end) innermost, keeping the others' order.
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d)
      if (d < begin || d >= end) perm.push_back(d);
    for (int64_t d = begin; d < end; ++d) perm.push_back(d);
    Value moved = permute(b, x, perm);
    const std::vector<int64_t> lengths(moved.type.dims.end() - (end - begin),
                                       moved.type.dims.end());
    moved =
        fft_op(b, moved, forward ? FftKind::C2CForward : FftKind::C2CInverse, lengths, moved.type);
    x = permute(b, moved, inverse(perm));
  }
  return x;
}

// `x`'s last dim cut or zero-padded to `n` entries.
Value fit_last(hlo::Builder& b, Value x, int64_t n) {
  const int64_t rank = x.type.rank(), have = x.type.dims.back();
  if (have == n) return x;
  if (have > n) {
    std::vector<int64_t> limit = x.type.dims;
    limit.back() = n;
    return b.slice(x, std::vector<int64_t>(rank, 0), limit, std::vector<int64_t>(rank, 1));
  }
  std::vector<int64_t> pad = x.type.dims;
  pad.back() = n - have;
  return b.concatenate({x, full(b, 0, x.type.dtype, pad)}, rank - 1);
}

std::vector<Value> emit_fft(hlo::Builder& b, const std::vector<Value>& in,
                            const graph::Attrs& attrs, const std::vector<hlo::TensorType>& outs) {
  const auto kind = static_cast<FftKind>(attrs.ints.at(0));
  const int64_t normalization = attrs.ints.at(1);
  const std::vector<int64_t> dims(attrs.ints.begin() + 2, attrs.ints.end());
  const hlo::TensorType& out = outs[0];
  Value x = in[0];
  const int64_t rank = x.type.rank(), k = static_cast<int64_t>(dims.size());
  // Transformed dims innermost, in the order given; the others keep theirs.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) perm.push_back(d);
  perm.insert(perm.end(), dims.begin(), dims.end());
  x = permute(b, x, perm);
  std::vector<int64_t> out_dims;  // the output's dims in the permuted order
  for (int64_t d : perm) out_dims.push_back(out.dims[d]);
  double signal = 1;  // elements of the real-space signal
  for (int64_t i = rank - k; i < rank; ++i)
    signal *= static_cast<double>((kind == FftKind::C2R ? out_dims : x.type.dims)[i]);
  const int64_t inner = std::min<int64_t>(k, 3);
  bool inverse_transform = kind == FftKind::C2CInverse || kind == FftKind::C2R;
  const hlo::ElementType complex_type = kind == FftKind::C2R ? x.type.dtype : out.dtype;
  const hlo::ElementType real_type = runtime::real_part_type(complex_type);
  const int64_t n_last = out_dims.empty() ? 1 : out_dims.back();
  if (kind == FftKind::C2CForward || kind == FftKind::C2CInverse ||
      (kind == FftKind::R2C && n_last == x.type.dims.back() && n_last > 2)) {
    x = c2c(b, to_type(b, x, complex_type), rank - k, rank, kind != FftKind::C2CInverse);
  } else if (kind == FftKind::R2C) {
    x = to_type(b, x, real_type);
    const std::vector<int64_t> lengths(x.type.dims.end() - inner, x.type.dims.end());
    std::vector<int64_t> half = x.type.dims;
    half.back() = n_last;
    x = fft_op(b, x, FftKind::R2C, lengths, hlo::TensorType{complex_type, half});
    x = c2c(b, x, rank - k, rank - inner, true);
  } else {  // C2R
    x = c2c(b, x, rank - k, rank - inner, false);
    x = fit_last(b, x, n_last / 2 + 1);
    std::vector<int64_t> lengths(out_dims.end() - inner, out_dims.end());
    std::vector<int64_t> real_dims = x.type.dims;
    real_dims.back() = n_last;
    x = fft_op(b, x, FftKind::C2R, lengths, hlo::TensorType{real_type, real_dims});
  }
  // stablehlo's inverse transforms divide by the signal size; PyTorch's normalization replaces it.
  const double wanted = normalization == 0   ? 1.0
                        : normalization == 1 ? 1.0 / std::sqrt(signal)
                                             : 1.0 / signal;
  const double factor = wanted * (inverse_transform ? signal : 1.0);
  if (factor != 1.0) x = b.binary("multiply", x, full(b, factor, x.type.dtype, x.type.dims));
  return {to_type(b, permute(b, x, inverse(perm)), out.dtype)};
}

}  // namespace

const graph::OpDef kFft{"fft", emit_fft};

}  // namespace torch_pjrt::lowering
