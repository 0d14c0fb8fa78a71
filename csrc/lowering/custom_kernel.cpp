// The custom-kernel registry and the lowering of kernel calls.
#include "lowering/custom_kernel.h"

#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

namespace torch_pjrt::lowering {
namespace {

struct Entry {
  CustomKernel kernel;
  graph::OpDef op;
};

struct Registry {
  std::mutex mutex;
  std::deque<Entry> entries;  // a deque: OpDef addresses stay valid as kernels are added
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> ids;  // dedup
  std::map<std::string, int64_t> by_entry;  // entry names are unique among kernels
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: nodes may outlive static destructors
  return *r;
}

std::string signature(const CustomKernel& k) {
  std::string s;
  for (const auto& t : k.inputs) s += t.str() + ",";
  s += "->";
  for (const auto& t : k.outputs) s += t.str() + ",";
  return s;
}

const Entry& entry(int64_t id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (id < 0 || id >= static_cast<int64_t>(r.entries.size())) {
    throw std::out_of_range("custom kernel " + std::to_string(id) + " is not registered");
  }
  return r.entries[id];
}

std::vector<hlo::Value> emit_kernel(hlo::Builder& b, const std::vector<hlo::Value>& inputs,
                                    const graph::Attrs& attrs,
                                    const std::vector<hlo::TensorType>& out_types) {
  const CustomKernel& k = kernel(attrs.ints.at(0));
  bool match = inputs.size() == k.inputs.size() && out_types == k.outputs;
  for (size_t i = 0; match && i < inputs.size(); ++i) match = inputs[i].type == k.inputs[i];
  if (!match)
    throw std::invalid_argument(k.name + ": operand or result types differ from the kernel's");
  b.add_functions(k.entry, k.functions);
  return b.call(k.entry, inputs, out_types);
}

}  // namespace

int64_t register_kernel(CustomKernel kernel) {
  if (kernel.name.empty()) throw std::invalid_argument("register_kernel: empty kernel name");
  if (kernel.outputs.empty()) {
    throw std::invalid_argument("register_kernel: " + kernel.name + " has no outputs");
  }
  // The entry is defined as `@entry` (pretty syntax) or `sym_name = "entry"` (generic syntax).
  const bool defined = kernel.functions.find("@" + kernel.entry) != std::string::npos ||
                       kernel.functions.find("\"" + kernel.entry + "\"") != std::string::npos;
  if (kernel.entry.empty() || kernel.entry == "main" || !defined) {
    throw std::invalid_argument("register_kernel: " + kernel.name + ": entry function @" +
                                kernel.entry + " is not defined by its functions");
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto key = std::make_tuple(kernel.functions, kernel.entry, signature(kernel));
  auto it = r.ids.find(key);
  if (it != r.ids.end()) return it->second;
  if (r.by_entry.count(kernel.entry)) {
    throw std::invalid_argument("register_kernel: " + kernel.name + ": entry function @" +
                                kernel.entry + " is already defined by another kernel");
  }
  const int64_t id = static_cast<int64_t>(r.entries.size());
  r.entries.push_back(Entry{std::move(kernel), {}});
  Entry& e = r.entries.back();
  e.op = graph::OpDef{e.kernel.name.c_str(), emit_kernel};
  r.ids.emplace(std::move(key), id);
  r.by_entry.emplace(e.kernel.entry, id);
  return id;
}

const CustomKernel& kernel(int64_t id) { return entry(id).kernel; }

const graph::OpDef& kernel_op(int64_t id) { return entry(id).op; }

size_t registered_kernels() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.entries.size();
}

}  // namespace torch_pjrt::lowering
