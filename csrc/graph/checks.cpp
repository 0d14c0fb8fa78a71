// Device-side checks: the registry of unread checks, reading them at check points, and the
// dependence of values on them.
#include "graph/checks.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "graph/graph.h"
#include "runtime/metrics.h"

namespace torch_pjrt::graph {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<CheckPtr> unread;  // registration order
  uint64_t next_sequence = 0;
  // Failures read but not raised yet (read outside a check point, or after the first failure of
  // one): the next check point raises the first.
  std::vector<CheckPtr> unraised;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: tensors may outlive static destruction
  return *r;
}

// The check vectors of one program joined into one (all i64 vectors). Defined here, not taken from
// the lowering layer, which sits above the graph.
std::vector<hlo::Value> emit_join(hlo::Builder& b, const std::vector<hlo::Value>& in, const Attrs&,
                                  const std::vector<hlo::TensorType>&) {
  return {b.concatenate(in, 0)};
}
const OpDef kJoinChecks{"join_checks", emit_join};

void default_raiser(CheckKind, const std::string& message) { throw std::runtime_error(message); }

std::atomic<CheckRaiser> raiser{&default_raiser};

[[noreturn]] void raise(const Check& c) {
  raiser.load()(c.kind, c.error);
  throw std::runtime_error(c.error);  // a raiser must throw; this keeps [[noreturn]] true
}

// Reads the computed checks among `checks` (one transfer per distinct vector) and records their
// states; returns those that failed, in order. Checks whose program failed count as passed: their
// values are failed values, which raise on their own.
std::vector<CheckPtr> read(const std::vector<CheckPtr>& checks) {
  std::unordered_map<const Data*, std::vector<int64_t>> contents;
  std::vector<CheckPtr> failed;
  for (const CheckPtr& c : checks) {
    if (c->state.load() != Check::kUnread || c->value->pending()) continue;
    if (c->value->error) {
      c->state.store(Check::kPassed);
      continue;
    }
    auto it = contents.find(c->value.get());
    if (it == contents.end()) {
      std::vector<int64_t> host(c->value->buffer->num_elements());
      c->value->buffer->to_host(host.data(), host.size() * sizeof(int64_t));
      runtime::counters().check_reads++;
      runtime::counters().check_read_bytes += static_cast<int64_t>(host.size() * sizeof(int64_t));
      it = contents.emplace(c->value.get(), std::move(host)).first;
    }
    const int64_t position = it->second[c->offset];
    if (position < 0) {
      c->state.store(Check::kPassed);
      continue;
    }
    c->error =
        c->before + (c->show_value ? std::to_string(it->second[c->offset + 1]) : "") + c->after;
    c->state.store(Check::kFailed, std::memory_order_release);
    failed.push_back(c);
  }
  return failed;
}

// More unread checks than this make materialize() read the computed ones (read_if_many).
constexpr size_t kManyUnread = 32;

// Drops read checks from the registry, with their values (values that depend on a check keep it,
// not its buffer); keeps failures to raise later.
void forget_read(Registry& r, const std::vector<CheckPtr>& failed) {
  auto read_now = [](const CheckPtr& c) {
    if (c->state.load() == Check::kUnread) return false;
    c->value.reset();
    return true;
  };
  r.unread.erase(std::remove_if(r.unread.begin(), r.unread.end(), read_now), r.unread.end());
  r.unraised.insert(r.unraised.end(), failed.begin(), failed.end());
}

}  // namespace

CheckPtr add_check(DataPtr value, CheckKind kind, std::string before, std::string after,
                   bool show_value) {
  auto c = std::make_shared<Check>();
  value->checks.reset();  // the check's own value carries no dependence (it is never "used")
  c->value = std::move(value);
  c->kind = kind;
  c->before = std::move(before);
  c->after = std::move(after);
  c->show_value = show_value;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  c->sequence = r.next_sequence++;
  r.unread.push_back(c);
  return c;
}

void depends_on(const DataPtr& value, const CheckPtr& check) {
  const std::vector<CheckPtr>& now = checks_of(*value);
  if (!check || std::find(now.begin(), now.end(), check) != now.end()) return;
  auto grown = std::make_shared<std::vector<CheckPtr>>(now);  // other values may share `now`
  grown->push_back(check);
  value->checks = std::move(grown);
}

const std::vector<CheckPtr>& checks_of(const Data& value) {
  static const std::vector<CheckPtr> none;
  return value.checks ? *value.checks : none;
}

CheckList inherited_checks(const std::vector<DataPtr>& inputs) {
  // The list to share: the first holding unread checks, when every check in it is unread and
  // every other input's unread checks are in it (after a read, lists keep their read checks).
  const CheckList* shared = nullptr;
  bool merge = false;
  for (const DataPtr& in : inputs) {
    if (!in->checks) continue;
    bool any_unread = false, all_unread = true;
    for (const CheckPtr& c : *in->checks) {
      const int state = c->state.load(std::memory_order_acquire);
      if (state == Check::kFailed) raise(*c);
      if (state == Check::kUnread) {
        any_unread = true;
      } else {
        all_unread = false;
      }
    }
    if (!any_unread || merge || (shared && in->checks == *shared)) continue;
    if (!shared) {
      shared = &in->checks;
      merge = !all_unread;
      continue;
    }
    for (const CheckPtr& c : *in->checks) {
      if (c->state.load(std::memory_order_acquire) == Check::kUnread &&
          std::find((*shared)->begin(), (*shared)->end(), c) == (*shared)->end()) {
        merge = true;
      }
    }
  }
  if (!merge) return shared ? *shared : nullptr;
  auto out = std::make_shared<std::vector<CheckPtr>>();
  for (const DataPtr& in : inputs) {
    for (const CheckPtr& c : checks_of(*in)) {
      if (c->state.load(std::memory_order_acquire) == Check::kUnread &&
          std::find(out->begin(), out->end(), c) == out->end())
        out->push_back(c);
    }
  }
  return out;
}

void raise_if_failed(const Data& value) {
  for (const CheckPtr& c : checks_of(value))
    if (c->state.load(std::memory_order_acquire) == Check::kFailed) raise(*c);
}

void add_check_targets(std::vector<DataPtr>& targets) {
  Registry& r = registry();
  std::map<int, std::vector<CheckPtr>> by_device;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const CheckPtr& c : r.unread)
      if (c->value->pending()) by_device[c->value->device].push_back(c);
  }
  for (auto& [device, checks] : by_device) targets.push_back(combine_checks(checks));
}

DataPtr combine_checks(const std::vector<CheckPtr>& checks) {
  if (checks.size() == 1) return checks[0]->value;
  std::vector<DataPtr> parts;
  int64_t length = 0;
  for (const CheckPtr& c : checks) {
    if (std::find(parts.begin(), parts.end(), c->value) != parts.end()) continue;
    parts.push_back(c->value);
    length += c->value->type.num_elements();
  }
  const int device = parts[0]->device;
  DataPtr all = record1(kJoinChecks, parts, Attrs{},
                        hlo::TensorType{hlo::ElementType::I64, {length}}, device);
  std::unordered_map<const Data*, int64_t> start;
  int64_t offset = 0;
  for (const DataPtr& p : parts) {
    start[p.get()] = offset;
    offset += p->type.num_elements();
  }
  for (const CheckPtr& c : checks) {
    c->offset += start[c->value.get()];
    c->value = all;
  }
  return all;
}

void register_checks(const std::vector<CheckPtr>& checks) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  for (const CheckPtr& c : checks)
    if (c->state.load() == Check::kUnread) registry().unread.push_back(c);
}

CheckPtr add_check_like(const Check& like, DataPtr value) {
  CheckPtr c = add_check(std::move(value), like.kind, like.before, like.after, like.show_value);
  c->offset = like.offset;
  return c;
}

void check_point() {
  Registry& r = registry();
  std::vector<CheckPtr> checks;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    checks = r.unread;
  }
  const std::vector<CheckPtr> failed = read(checks);
  CheckPtr first;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    forget_read(r, failed);
    if (r.unraised.empty()) return;
    first = r.unraised.front();
    r.unraised.clear();  // each failure is raised once here; dependent values raise on use
  }
  raise(*first);
}

void read_if_many() {
  Registry& r = registry();
  std::vector<CheckPtr> checks;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.unread.size() <= kManyUnread) return;
    checks = r.unread;
  }
  const std::vector<CheckPtr> failed = read(checks);
  std::lock_guard<std::mutex> lock(r.mutex);
  forget_read(r, failed);
}

void resolve(const std::vector<CheckPtr>& checks) {
  read(checks);
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    forget_read(registry(), {});  // a failure read here is raised here, not at a check point
  }
  for (const CheckPtr& c : checks)
    if (c->state.load() == Check::kFailed) raise(*c);
}

uint64_t check_marker() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return registry().next_sequence;
}

std::vector<CheckPtr> take_checks_since(uint64_t marker) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<CheckPtr> taken;
  for (const CheckPtr& c : r.unread)
    if (c->sequence >= marker) taken.push_back(c);
  r.unread.erase(std::remove_if(r.unread.begin(), r.unread.end(),
                                [&](const CheckPtr& c) { return c->sequence >= marker; }),
                 r.unread.end());
  return taken;
}

void set_check_raiser(CheckRaiser r) { raiser.store(r); }

}  // namespace torch_pjrt::graph
