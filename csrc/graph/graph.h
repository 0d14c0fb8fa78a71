// Recording operations into the deferred graph and materializing pending values: cut the pending
// subgraph, look its program up by structural key, compile on a miss, execute, bind the buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graph/node.h"
#include "runtime/client.h"
#include "runtime/executable.h"

namespace torch_pjrt::graph {

// A program that could not run for lack of device memory (the plugin's RESOURCE_EXHAUSTED).
class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// How such a failure leaves this library: set by the layer that knows the framework's exception
// types (a raiser must throw); the default throws OutOfMemory.
using OutOfMemoryRaiser = void (*)(const std::string& message);
void set_out_of_memory_raiser(OutOfMemoryRaiser raiser);

// The client every program is compiled and run on; set once by the device layer.
void set_client(std::shared_ptr<runtime::Client> client);
runtime::Client& client();

// A materialized value wrapping an existing buffer.
DataPtr from_buffer(std::shared_ptr<runtime::Buffer> buffer);

// Adds a node computing `op` on `inputs` (all on `device`) and returns its pending outputs.
std::vector<DataPtr> record(const OpDef& op, std::vector<DataPtr> inputs, Attrs attrs,
                            std::vector<hlo::TensorType> out_types, int device);
DataPtr record1(const OpDef& op, std::vector<DataPtr> inputs, Attrs attrs, hlo::TensorType out_type,
                int device);

// A rank-0 value of `type` known on the host. Programs receive it as a runtime argument, so
// values that change from call to call (learning rates, step sizes) reuse one compiled program.
DataPtr host_scalar(double value, hlo::ElementType type, int device);
DataPtr host_scalar(int64_t value, hlo::ElementType type, int device);

// Binds `data` as the new contents of `slot`; a pending value makes the slot wait for the next
// materialization.
void bind_slot(const SlotPtr& slot, DataPtr data);

// A compiled program computing `targets` (pending values on `device`) and the buffers to call it
// with, in order: `leaves` (the subgraph's materialized inputs) then the packed host scalars.
struct Program {
  std::shared_ptr<runtime::Executable> executable;
  std::vector<DataPtr> leaves;
  std::vector<std::shared_ptr<runtime::Buffer>> arguments;
  std::string ops;  // names of the operations, for error messages
};
// Looks the program up by structural key, compiling it on a miss (counted in runtime::counters).
// With `donate`, leaves whose old values are dead are donated to outputs (see subgraph.h); the
// caller must then run the program and drop the leaves.
Program prepare(const std::vector<DataPtr>& targets, int device, bool donate = false);

// Materializes `values` and the pending contents of every live slot, as one program per device.
// A program that fails to compile or launch leaves its values failed: using them raises the error
// again, while everything else stays usable.
void materialize(const std::vector<DataPtr>& values = {});

// Materializes just the pending ones of `values`, leaving other pending work (and the fused program
// being accumulated) alone: for reads an op needs, such as indices it validates.
void compute(const std::vector<DataPtr>& values);

// The buffer of `value`, computing it first when pending; raises the error of a failed value (or
// of a failed device check it depends on).
std::shared_ptr<runtime::Buffer> buffer_of(const DataPtr& value);
// The buffer of `value` for a copy to the host: computes it together with the device checks it
// depends on, and raises the first of those that failed (graph/checks.h).
std::shared_ptr<runtime::Buffer> host_buffer(const DataPtr& value);

// The options programs compiled from now on get (XLA overrides, effort levels); they are part of
// the program cache key. Callers materialize first when pending work must keep the old options.
void set_compile_options(runtime::CompileOptions options);
runtime::CompileOptions compile_options();

// Fused eager: the end of one eager op. Materializes when the fusion policy (graph/fusion.h) cuts
// here; otherwise the op's nodes stay pending for a later, larger program.
void op_boundary();
// The fusion policy's size cap in ops, and its learned ops per program (0 while it has none).
void set_fusion_max_ops(size_t max_ops);
size_t fusion_max_ops();
size_t fusion_segment_ops();

// Materializes everything pending and blocks until every program launched so far has finished;
// an error of an earlier asynchronous execution, or a failed device check, surfaces here.
void synchronize();

// The StableHLO of the program that would compute the pending ones of `values` now (without
// donation), for inspection and tests; nothing runs.
std::string program_text(const std::vector<DataPtr>& values);

// The StableHLO and op names of the last eager program launched (cached or compiled); empty
// strings before the first.
std::pair<std::string, std::string> last_program();
// Programs not found in the eager program cache since the process started (each was lowered,
// then compiled or loaded from the disk cache).
int64_t program_cache_misses();
// Where each eager program compiled from now on has its StableHLO written ("": nowhere; the
// default is TORCH_PJRT_DUMP_DIR). The directory must exist.
void set_dump_dir(const std::string& dir);
std::string dump_dir();
// Forgets every cached eager program (they compile again when next needed).
void clear_program_cache();

// Drops the device buffers the graph keeps only as caches (uploaded host-scalar packs).
void release_caches();

// Number of cached programs (for tests and metrics).
size_t cached_programs();
// The most programs the eager cache keeps (least recently used evicted; default 4096).
void set_program_cache_capacity(size_t capacity);
size_t program_cache_capacity();

}  // namespace torch_pjrt::graph
