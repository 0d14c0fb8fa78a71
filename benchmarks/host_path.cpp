// Host-path driver for benchmarks/host_path.py: a cached 16x16 float32 add, recorded and run
// through the graph library the way csrc/aten does it (read each operand's slot, record1, bind the
// result to a new tensor's slot, end the op), so callgrind can count instructions per op.
//   host_path_bench strict N  -- z = x + y, N times, each op materialized (Strict eager)
//   host_path_bench fused N   -- z = z + y, N times, each op ending at op_boundary (Fused eager)
//   host_path_bench record N  -- as fused, but only recording: the chain is dropped unlaunched
// Warm-up work (compiles, the fusion policy's learning) is the same for every N, so the difference
// between two runs is N ops of steady state. Prints the steady state's wall time per op.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "graph/graph.h"
#include "lowering/elementwise.h"
#include "runtime/client.h"
#include "runtime/plugin.h"
#include "test_plugin.h"

namespace tp = torch_pjrt;
using tp::graph::DataPtr;
using tp::graph::SlotPtr;

namespace {

const tp::hlo::TensorType kType{tp::hlo::ElementType::F32, {16, 16}};
constexpr int64_t kBytes = 16 * 16 * 4;

// A tensor: the slot its storage's allocation creates, holding `value`.
SlotPtr new_tensor(DataPtr value) {
  auto slot = std::make_shared<tp::graph::Slot>();
  slot->device = 0;
  slot->nbytes = kBytes;
  tp::graph::bind_slot(slot, std::move(value));
  return slot;
}

// One add kernel up to its op end: operands read from their slots, the result bound to a new one.
SlotPtr record_add(const SlotPtr& a, const SlotPtr& b) {
  return new_tensor(tp::graph::record1(tp::lowering::kAdd, {a->data, b->data}, {}, kType, 0));
}

SlotPtr upload(float value) {
  std::vector<float> host(16 * 16, value);
  return new_tensor(tp::graph::from_buffer(
      tp::graph::client().buffer_from_host(host.data(), kType.dtype, kType.dims, 0)));
}

// Ops in the fused warm-up: the policy finds the period at 256 ops and cuts there, then every 64.
constexpr long kFusedWarmup = 256 + 64;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s strict|fused|record N\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  const long n = std::atol(argv[2]);
  tp::graph::set_client(tp::runtime::Client::create(
      tp::runtime::Plugin::load(tp::test_plugin_path()), {{"cpu_device_count", int64_t{1}}}));
  const SlotPtr x = upload(1.0f), y = upload(2.0f);
  using Clock = std::chrono::steady_clock;
  Clock::time_point start;
  if (std::strcmp(mode, "strict") == 0) {
    for (int i = 0; i < 3; ++i) {
      record_add(x, y);
      tp::graph::materialize();
    }
    tp::graph::synchronize();
    start = Clock::now();
    for (long i = 0; i < n; ++i) {
      SlotPtr z = record_add(x, y);
      tp::graph::materialize();
    }
  } else if (std::strcmp(mode, "fused") == 0) {
    if (n % 64 != 0) {
      std::fprintf(stderr, "fused: N must be a multiple of 64 (one program per 64 ops)\n");
      return 2;
    }
    SlotPtr z = x;
    for (long i = 0; i < kFusedWarmup; ++i) {
      z = record_add(z, y);
      tp::graph::op_boundary();
    }
    tp::graph::synchronize();
    start = Clock::now();
    for (long i = 0; i < n; ++i) {
      z = record_add(z, y);
      tp::graph::op_boundary();
    }
  } else if (std::strcmp(mode, "record") == 0) {
    start = Clock::now();
    SlotPtr z = x;
    for (long i = 0; i < n; ++i) z = record_add(z, y);
    z.reset();  // nothing live is pending: the materialization below launches nothing
    tp::graph::materialize();
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  tp::graph::synchronize();
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  std::printf("%s %ld ops: %.1f ns/op\n", mode, n, n > 0 ? ns / n : 0.0);
  return 0;
}
