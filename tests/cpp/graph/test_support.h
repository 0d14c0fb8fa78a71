// Shared helpers of the graph/ and lowering/ tests: names, the client, uploads and host copies of
// values.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "graph/graph.h"
#include "runtime/buffer.h"
#include "runtime/client.h"
#include "runtime/plugin.h"
#include "test_plugin.h"

namespace torch_pjrt::lowering {}

namespace torch_pjrt::graph {

namespace lo = torch_pjrt::lowering;
using hlo::TensorType;
using runtime::ElementType;

constexpr ElementType kF32 = ElementType::F32;
constexpr ElementType kI32 = ElementType::I32;
constexpr ElementType kI64 = ElementType::I64;
constexpr ElementType kBool = ElementType::Bool;

// The graph's client (two CPU devices), created and installed with set_client on first use.
inline runtime::Client& test_client() {
  static runtime::Client* c = [] {
    try {
      return &graph::client();
    } catch (const std::runtime_error&) {
    }
    auto client = runtime::Client::create(runtime::Plugin::load(test_plugin_path()),
                                          {{"cpu_device_count", int64_t{2}}});
    graph::set_client(client);
    return client.get();
  }();
  return *c;
}

template <class T>
DataPtr upload(const std::vector<T>& values, runtime::ElementType type,
               const std::vector<int64_t>& dims, int device = 0) {
  EXPECT_EQ(sizeof(T), runtime::element_size(type));
  return from_buffer(test_client().buffer_from_host(values.data(), type, dims, device));
}

// Host copy of a materialized value, after checking its buffer's type.
template <class T>
std::vector<T> read(const DataPtr& d) {
  EXPECT_FALSE(d->pending());
  EXPECT_EQ(d->buffer->element_type(), d->type.dtype);
  EXPECT_EQ(d->buffer->dims(), d->type.dims);
  EXPECT_EQ(sizeof(T), runtime::element_size(d->type.dtype));
  std::vector<T> out(d->type.num_elements());
  d->buffer->to_host(out.data(), out.size() * sizeof(T));
  return out;
}

// Materializes `d`, then copies it to the host.
template <class T>
std::vector<T> fetch(const DataPtr& d) {
  materialize({d});
  return read<T>(d);
}

}  // namespace torch_pjrt::graph
