// Device-side checks, like CUDA's device-side asserts. An op whose validity depends on data (an
// index in range, a nonzero integer divisor) records a check: a small value its program computes
// next to the op's result (lowering::kCheck), instead of the op reading its operands on the host.
// Checks are read when values reach the host anyway: at synchronize() and at copies to the host
// (check_point), and before any value that depends on one is read (host_buffer in graph.h). A
// failure raises there, naming the op. Values that depend on a failed check raise its error again
// when used or read, so a result computed from invalid data never passes for a valid one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/node.h"

namespace torch_pjrt::graph {

// What a failure raises: the exception type PyTorch raises for the op's error on the CPU.
enum class CheckKind { Index, Runtime };

struct Check {
  // An i64 vector holding, at `offset`, the first invalid element's position (-1 when all are
  // valid) and its value. Checks computed by one program share one vector (add_check_targets).
  // Released once the check is read.
  DataPtr value;
  int64_t offset = 0;
  CheckKind kind = CheckKind::Runtime;
  // The error: before + the invalid value + after, or before + after without show_value.
  std::string before, after;
  bool show_value = true;
  uint64_t sequence = 0;  // registration order
  enum State : int { kUnread, kPassed, kFailed };
  std::atomic<int> state{kUnread};  // record() reads it without the checks' lock
  std::string error;                // the message, once failed
};
using CheckPtr = std::shared_ptr<Check>;

// Registers the check computed by `value` (a pending kCheck output, or a computed buffer of a
// compiled graph's output); it is read at the first check point after it is computed.
CheckPtr add_check(DataPtr value, CheckKind kind, std::string before, std::string after,
                   bool show_value = true);
// Makes `value` depend on `check`.
void depends_on(const DataPtr& value, const CheckPtr& check);
// The checks `value` depends on (empty when none).
const std::vector<CheckPtr>& checks_of(const Data& value);

// For record(): the unread checks of `inputs`, which a value computed from them depends on; one
// input's list itself when it holds them all. Raises the error of a failed one: such a value must
// not be used.
CheckList inherited_checks(const std::vector<DataPtr>& inputs);
// Raises the error of a failed check `value` depends on, if any.
void raise_if_failed(const Data& value);

// For materialize(): appends the pending values of registered checks to `targets`, combined into
// one vector per device (one extra output per program).
void add_check_targets(std::vector<DataPtr>& targets);

// Reads every registered check whose value is computed (waiting for its program) and raises the
// first failure not raised yet. The sync points call it after materializing.
void check_point();
// For materialize(), before launching: when many checks are unread (a loop that does not
// synchronize), reads the computed ones without raising (their failures wait for the next check
// point), so that the checks values carry, and the buffers they hold, stay few.
void read_if_many();
// Reads `checks` whose values are computed (the caller computes them first), raising the first
// failure among them.
void resolve(const std::vector<CheckPtr>& checks);

// For compiled graphs: a mark in the registration order, and the unread checks registered since
// that mark, removed from the registry (the graph's program computes them as an output, and each
// call registers new checks on its own output buffer).
uint64_t check_marker();
std::vector<CheckPtr> take_checks_since(uint64_t marker);
// One value holding all of `checks` (pending values of one device), each check now pointing into
// it at its offset.
DataPtr combine_checks(const std::vector<CheckPtr>& checks);
// Registers `checks` (taken earlier) again.
void register_checks(const std::vector<CheckPtr>& checks);
// A new registered check with `like`'s error, read from `value` at `like`'s offset.
CheckPtr add_check_like(const Check& like, DataPtr value);

// How a failure is raised: set by the layer that knows the framework's exception types; the
// default throws std::runtime_error.
using CheckRaiser = void (*)(CheckKind kind, const std::string& message);
void set_check_raiser(CheckRaiser raiser);

}  // namespace torch_pjrt::graph
