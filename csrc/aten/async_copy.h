// non_blocking copies between pinned host memory and "tpu", which return before the data moved:
// the transfer joins the device's queue of work (runtime::Timeline), so events, stream and device
// synchronization wait for it, and the pinned block is kept until it completed.
#pragma once

#include <ATen/core/Tensor.h>

#include "graph/graph.h"

namespace torch_pjrt::aten {

// Starts copying `self` ("tpu", broadcast to dst's shape) into `dst`, a contiguous tensor in
// pinned memory. False when dst's dtype is stored apart from its compute type (float8, complex32,
// float4) or a compiled graph is tracing: the caller copies synchronously then.
bool copy_to_pinned(const at::Tensor& self, const at::Tensor& dst);
// A "tpu" value of `src` (contiguous, in pinned memory, its stored element type) on `device`,
// whose transfer is still under way.
graph::DataPtr upload_pinned(const at::Tensor& src, int device);

}  // namespace torch_pjrt::aten
