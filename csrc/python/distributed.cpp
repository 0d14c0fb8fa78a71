// torch_pjrt._C bindings of the tpu_dist c10d backend: creating its process groups (the Python
// factory registered with torch.distributed calls this), the PJRT key-value store on a c10d
// store, and a probe that calls the key-value callbacks exactly as a plugin would (for tests).
#include "python/distributed.h"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "device/runtime_state.h"
#include "distributed/device_transport.h"
#include "distributed/host_transport.h"
#include "distributed/process_group.h"
#include "distributed/store_kv.h"
#include "runtime/kv_store.h"

namespace py = pybind11;

namespace torch_pjrt::python {
namespace {

using distributed::ProcessGroupTpu;

c10::intrusive_ptr<ProcessGroupTpu> create_process_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout, const std::optional<c10::intrusive_ptr<c10d::Backend>>& gloo,
    const std::string& transport) {
  std::unique_ptr<distributed::Transport> t;
  if (transport == "host") {
    TORCH_CHECK(gloo.has_value() && *gloo, "tpu_dist: the host transport needs a Gloo backend");
    t = std::make_unique<distributed::HostTransport>(*gloo, rank, size);
  } else {
    TORCH_CHECK(transport == "device", "tpu_dist: unknown transport \"", transport,
                "\" (expected host or device)");
    const int device = device::current_device();
    const int64_t id = device::client().device_id(device);
    std::vector<int64_t> ids;
    {
      py::gil_scoped_release no_gil;
      ids = ProcessGroupTpu::exchange_device_ids(*store, rank, size, id);
    }
    t = std::make_unique<distributed::DeviceTransport>(rank, device, std::move(ids));
  }
  return c10::make_intrusive<ProcessGroupTpu>(rank, size, timeout, std::move(t));
}

// The three key-value callbacks of a PJRT_Client_Create_Args, called as a plugin calls them.
class KeyValueProbe {
 public:
  KeyValueProbe(const c10::intrusive_ptr<c10d::Store>& store, const std::string& prefix)
      : store_(std::make_shared<distributed::StoreKeyValue>(store, prefix)) {
    args_.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
    runtime::install_kv_callbacks(args_, store_.get());
  }

  void put(const std::string& key, const py::bytes& value) {
    const std::string v = value;
    PJRT_KeyValuePutCallback_Args a{};
    a.struct_size = PJRT_KeyValuePutCallback_Args_STRUCT_SIZE;
    a.key = key.data();
    a.key_size = key.size();
    a.value = v.data();
    a.value_size = v.size();
    a.callback_error = &kError;
    a.user_arg = args_.kv_put_user_arg;
    check(args_.kv_put_callback(&a));
  }

  py::bytes get(const std::string& key, int timeout_ms) {
    PJRT_KeyValueGetCallback_Args a{};
    a.struct_size = PJRT_KeyValueGetCallback_Args_STRUCT_SIZE;
    a.key = key.data();
    a.key_size = key.size();
    a.timeout_in_ms = timeout_ms;
    a.callback_error = &kError;
    a.user_arg = args_.kv_get_user_arg;
    PJRT_Error* error = nullptr;
    {
      py::gil_scoped_release no_gil;
      error = args_.kv_get_callback(&a);
    }
    check(error);
    return take(a.value, a.value_size, a.value_deleter_callback);
  }

  std::optional<py::bytes> try_get(const std::string& key) {
    PJRT_KeyValueTryGetCallback_Args a{};
    a.struct_size = PJRT_KeyValueTryGetCallback_Args_STRUCT_SIZE;
    a.key = key.data();
    a.key_size = key.size();
    a.callback_error = &kError;
    a.user_arg = args_.kv_try_get_user_arg;
    PJRT_Error* error = args_.kv_try_get_callback(&a);
    if (error != nullptr && last_code == PJRT_Error_Code_NOT_FOUND) return std::nullopt;
    check(error);
    return take(a.value, a.value_size, a.value_deleter_callback);
  }

 private:
  // Stands in for the plugin's PJRT_CallbackError: remembers the code and message.
  static PJRT_Error* record(PJRT_Error_Code code, const char* message, size_t size) {
    last_code = code;
    last_message.assign(message, size);
    return reinterpret_cast<PJRT_Error*>(&last_code);
  }
  static void check(PJRT_Error* error) {
    if (error == nullptr) return;
    const char* name = last_code == PJRT_Error_Code_DEADLINE_EXCEEDED ? "DEADLINE_EXCEEDED"
                       : last_code == PJRT_Error_Code_NOT_FOUND       ? "NOT_FOUND"
                                                                      : "INTERNAL";
    throw std::runtime_error(std::string(name) + ": " + last_message);
  }
  template <typename Deleter>
  static py::bytes take(char* value, size_t size, Deleter deleter) {
    py::bytes out(value, size);
    deleter(value);
    return out;
  }

  static inline PJRT_Error_Code last_code = PJRT_Error_Code_OK;
  static inline std::string last_message;
  static inline PJRT_CallbackError kError = record;
  std::shared_ptr<distributed::StoreKeyValue> store_;
  PJRT_Client_Create_Args args_{};
};

}  // namespace

void register_distributed(py::module_& m) {
  // The process group class derives from torch's c10d Backend binding, which exists once
  // torch.distributed is imported: torch_pjrt.distributed calls this then.
  m.def("_init_distributed", [](py::module_ target) {
    if (py::hasattr(target, "ProcessGroupTpu")) return;
    py::class_<ProcessGroupTpu, c10d::Backend, c10::intrusive_ptr<ProcessGroupTpu>>(
        target, "ProcessGroupTpu")
        .def_property_readonly("transport",
                               [](const ProcessGroupTpu& pg) { return pg.transport().name(); });
    target.def("_create_process_group", create_process_group, py::arg("store"), py::arg("rank"),
               py::arg("size"), py::arg("timeout"), py::arg("gloo"), py::arg("transport"));
    py::class_<KeyValueProbe>(target, "_KeyValueProbe")
        .def(py::init<const c10::intrusive_ptr<c10d::Store>&, const std::string&>())
        .def("put", &KeyValueProbe::put)
        .def("get", &KeyValueProbe::get)
        .def("try_get", &KeyValueProbe::try_get);
  });
  m.def(
      "_set_kv_store",
      [](const std::string& host, int port, const std::string& prefix, int timeout_ms) {
        device::set_kv_store(std::make_shared<distributed::StoreKeyValue>(
            host, port, prefix, std::chrono::milliseconds(timeout_ms)));
      },
      py::arg("host"), py::arg("port"), py::arg("prefix"), py::arg("timeout_ms"));
  m.def("_in_bad_fork", [] { return device::in_bad_fork(); });
}

}  // namespace torch_pjrt::python
