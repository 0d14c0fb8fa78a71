// StoreKeyValue: PJRT key-value calls on a c10d Store.
#include "distributed/store_kv.h"

#include <c10/util/Exception.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace torch_pjrt::distributed {
namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

}  // namespace

StoreKeyValue::StoreKeyValue(c10::intrusive_ptr<c10d::Store> store, std::string prefix)
    : store_(std::move(store)), prefix_(std::move(prefix)) {}

StoreKeyValue::StoreKeyValue(std::string host, int port, std::string prefix,
                             std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout), prefix_(std::move(prefix)) {}

c10::intrusive_ptr<c10d::Store> StoreKeyValue::store() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!store_) {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(port_);
    options.isServer = false;
    options.waitWorkers = false;
    options.timeout = timeout_;
    store_ = c10::make_intrusive<c10d::TCPStore>(host_, options);
  }
  return store_;
}

void StoreKeyValue::put(const std::string& key, const std::string& value) {
  store()->set(prefix_ + key, bytes(value));
}

std::string StoreKeyValue::get(const std::string& key, std::chrono::milliseconds timeout) {
  c10::intrusive_ptr<c10d::Store> waiting = store()->clone();
  try {
    waiting->wait({prefix_ + key}, timeout);
  } catch (const c10::DistStoreError& e) {
    throw runtime::KeyValueTimeout("no value for key " + key + " within " +
                                   std::to_string(timeout.count()) + " ms: " + e.what());
  }
  return text(waiting->get(prefix_ + key));
}

std::optional<std::string> StoreKeyValue::try_get(const std::string& key) {
  c10::intrusive_ptr<c10d::Store> s = store();
  if (!s->check({prefix_ + key})) return std::nullopt;
  return text(s->get(prefix_ + key));
}

}  // namespace torch_pjrt::distributed
