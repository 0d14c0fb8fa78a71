// Recording operations into the deferred graph and materializing pending values: cut the pending
// subgraph, look its program up by structural key, compile on a miss, execute, bind the buffers.
#pragma once

#include <memory>
#include <vector>

#include "graph/node.h"
#include "runtime/client.h"

namespace torch_pjrt::graph {

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

// Binds `data` as the new contents of `slot`; a pending value makes the slot wait for the next
// materialization.
void bind_slot(const SlotPtr& slot, DataPtr data);

// Materializes `values` and the pending contents of every live slot, as one program per device.
void materialize(const std::vector<DataPtr>& values = {});

// Materializes everything pending and blocks until every program launched so far has finished;
// an error of an earlier asynchronous execution surfaces here.
void synchronize();

// Number of cached programs (for tests and metrics).
size_t cached_programs();

}  // namespace torch_pjrt::graph
