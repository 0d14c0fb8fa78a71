// A compiled graph's input signature as one bytes object (plus the non-tensor inputs, when there
// are any): a replay computes it on every call, so it is built without a Python call per tensor
// attribute.
#include "python/graph_signature.h"

#include <torch/csrc/autograd/python_variable.h>

#include <unordered_map>
#include <vector>

namespace torch_pjrt::python {
namespace py = pybind11;
namespace {

// Tags that keep the encodings of different kinds of input apart.
enum Tag : int64_t { kTpuTensor = -1, kOtherTensor = -2, kObject = -3 };

void append_layout(std::vector<int64_t>& words, const at::Tensor& t) {
  words.push_back(static_cast<int64_t>(t.scalar_type()));
  words.push_back(t.dim());
  for (int64_t s : t.sizes()) words.push_back(s);
  for (int64_t s : t.strides()) words.push_back(s);
}

// (type, value) for None and Python scalars and strings, (type, id) for any other object.
py::object object_key(const py::handle& a) {
  const py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(a.ptr()));
  if (a.is_none() || PyBool_Check(a.ptr()) || PyLong_Check(a.ptr()) || PyFloat_Check(a.ptr()) ||
      PyUnicode_Check(a.ptr())) {
    return py::make_tuple(type, a);
  }
  return py::make_tuple(type, reinterpret_cast<intptr_t>(a.ptr()));
}

py::object graph_signature(const py::sequence& args) {
  std::vector<int64_t> words;
  words.reserve(py::len(args) * 12);
  std::unordered_map<const void*, int64_t> storages;  // data pointer -> first-seen index
  py::list others;
  for (const py::handle& a : args) {
    if (!THPVariable_Check(a.ptr())) {
      words.push_back(kObject);
      others.append(object_key(a));
      continue;
    }
    const at::Tensor& t = THPVariable_Unpack(a.ptr());
    if (!t.is_privateuseone()) {
      words.push_back(kOtherTensor);
      words.push_back(static_cast<int64_t>(t.device().type()));
      append_layout(words, t);
      continue;
    }
    words.push_back(kTpuTensor);
    words.push_back(t.device().index());
    append_layout(words, t);
    words.push_back(t.storage_offset());
    words.push_back(static_cast<int64_t>(t.storage().nbytes()));
    const auto id = static_cast<int64_t>(storages.size());
    words.push_back(storages.emplace(t.storage().data_ptr().get(), id).first->second);
  }
  py::bytes key(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int64_t));
  if (others.empty()) return std::move(key);
  return py::make_tuple(key, py::tuple(others));
}

}  // namespace

void register_graph_signature(py::module_& m) {
  m.def("_graph_signature", &graph_signature, py::arg("args"));
}

}  // namespace torch_pjrt::python
