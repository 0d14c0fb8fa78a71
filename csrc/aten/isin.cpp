// aten::isin on the device (Hugging Face generate's stopping criteria call it every step): each
// element compared with every test element and reduced with any(), recorded as one program. XLA
// fuses the comparison into the reduction, so the elements x test_elements grid is not stored.
#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// PyTorch's check (check_for_unsupported_isin_dtype).
void check_dtype(at::ScalarType t) {
  TORCH_CHECK(t != at::kBool && t != at::kComplexFloat && t != at::kComplexDouble,
              "Unsupported input type encountered for isin(): ", t);
}

Tensor isin_tensor(const Tensor& elements, const Tensor& test_elements, bool invert) {
  check_dtype(elements.scalar_type());
  check_dtype(test_elements.scalar_type());
  if (elements.is_privateuseone() && test_elements.is_privateuseone()) {
    common_device("isin", {&elements, &test_elements});
  }
  if (elements.numel() == 0)
    return at::empty(elements.sizes(), elements.options().dtype(at::kBool));
  OneOp op;
  // eq promotes the two dtypes as PyTorch's isin does.
  Tensor found = at::eq(elements.reshape({-1, 1}), test_elements.reshape({1, -1}))
                     .any(1)
                     .reshape(elements.sizes());
  if (invert) found = at::logical_not(found);
  op.finish();
  return found;
}

Tensor isin_scalar(const Tensor& elements, const at::Scalar& test_element, bool invert) {
  check_dtype(elements.scalar_type());
  return invert ? at::ne(elements, test_element) : at::eq(elements, test_element);
}

Tensor& into(Tensor& out, const Tensor& result) {
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("isin.Tensor_Tensor",
         [](const Tensor& elements, const Tensor& test, bool /*assume_unique*/, bool invert) {
           return isin_tensor(elements, test, invert);
         });
  m.impl("isin.Tensor_Tensor_out",
         [](const Tensor& elements, const Tensor& test, bool /*assume_unique*/, bool invert,
            Tensor& out) -> Tensor& { return into(out, isin_tensor(elements, test, invert)); });
  m.impl("isin.Tensor_Scalar",
         [](const Tensor& elements, const at::Scalar& test, bool /*assume_unique*/, bool invert) {
           return isin_scalar(elements, test, invert);
         });
  m.impl("isin.Tensor_Scalar_out",
         [](const Tensor& elements, const at::Scalar& test, bool /*assume_unique*/, bool invert,
            Tensor& out) -> Tensor& { return into(out, isin_scalar(elements, test, invert)); });
  m.impl("isin.Scalar_Tensor",
         [](const at::Scalar& element, const Tensor& test, bool /*assume_unique*/, bool invert) {
           return isin_tensor(at::scalar_to_tensor(element, test.device()), test, invert);
         });
  m.impl("isin.Scalar_Tensor_out",
         [](const at::Scalar& element, const Tensor& test, bool /*assume_unique*/, bool invert,
            Tensor& out) -> Tensor& {
           return into(out,
                       isin_tensor(at::scalar_to_tensor(element, test.device()), test, invert));
         });
}

}  // namespace torch_pjrt::aten
