// ktune._torch_ext: the PyTorch fast path of ktune.gemm and the row ops, in C++.
//
// A call from Python on a problem seen before costs what PyTorch's own op costs only when the
// result is allocated in C++ (torch.empty_like from Python alone costs more than a whole
// torch.softmax call's host work: bench/rows_call_overhead.py). This module does the fast path of
// python/ktune/_rows.py and _gemm.py with the tensors themselves: the problem's key from the
// tensor's dtype, sizes, strides and device, its prepared handle (ktune._ktune.RowsCall /
// GemmCall, registered by the Python path once it has checked and prepared the problem), the
// result allocated by PyTorch's caching allocator, and the launch on the current stream.
//
// Anything it does not find or cannot take returns None, and the Python path runs as without
// this module: it checks, raises the errors, prepares and registers. It is optional: built only
// against the PyTorch it will run with (python/CMakeLists.txt), loaded only where that PyTorch is
// the one imported (python/ktune/_runtime.py). It links none of ktune: the runtime is reached
// through the function table of python/call_api.h.
#include <torch/extension.h>

#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/python_variable.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "call_api.h"

namespace py = pybind11;

namespace {

const KtuneCallApi* api = nullptr;

// Every value that fixes a problem for its handle, in one flat array: an op code, dtypes,
// devices, ranks, sizes, strides and the scalar's bits. Up to kMaxRank dimensions a tensor; a
// tensor of more rank is left to the Python path.
constexpr int kMaxRank = 8;
constexpr int kMaxWords = 4 + 2 * 2 * (kMaxRank + 1);

struct Key {
  std::array<int64_t, kMaxWords> w{};
  int n = 0;
  bool push(int64_t v) {
    if (n == kMaxWords) return false;
    w[n++] = v;
    return true;
  }
  bool push(const at::Tensor& t) {
    if (t.layout() != c10::kStrided) return false; // sparse and other layouts have no strides
    const int64_t rank = t.dim();
    if (rank > kMaxRank || !push(static_cast<int64_t>(t.scalar_type())) || !push(t.get_device()) || !push(rank))
      return false;
    for (int64_t i = 0; i < rank; ++i)
      if (!push(t.sizes()[i]) || !push(t.strides()[i])) return false;
    return true;
  }
  bool operator==(const Key& o) const { return n == o.n && std::memcmp(w.data(), o.w.data(), n * sizeof(int64_t)) == 0; }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    for (int i = 0; i < k.n; ++i) h = (h ^ static_cast<uint64_t>(k.w[i])) * 1099511628211ull;
    return h;
  }
};

struct Entry {
  py::object call;       // the ktune._ktune call object: keeps the handle and its runtime alive
  const void* handle;    // the RowsCall / GemmCall inside it
  int64_t cols;          // row ops: the weight and bias length; gemm: C's columns
  int64_t rows;          // gemm: C's rows
  int device;
};

// Entries live until ktune's runtimes are replaced (configure, reload: python/ktune/_runtime.py
// calls clear()), and are capped as the Python path's table is. All access holds the GIL.
constexpr size_t kMaxEntries = 4096;
std::unordered_map<Key, Entry, KeyHash>* table = nullptr;
uint64_t hits = 0, misses = 0;

enum Op : int64_t { kSoftmax = 1, kLayerNorm = 2, kRmsNorm = 3, kGemm = 4 };

int64_t op_code(const std::string& op) {
  if (op == "softmax") return kSoftmax;
  if (op == "layernorm") return kLayerNorm;
  if (op == "rmsnorm") return kRmsNorm;
  throw py::value_error("ktune._torch_ext: unknown row op '" + op + "'");
}

// A real number given as a Python float or int, exactly these types (a bool, complex or numpy
// scalar goes the Python path's way).
std::optional<double> real_of(PyObject* v) {
  if (PyFloat_CheckExact(v)) return PyFloat_AS_DOUBLE(v);
  if (PyLong_CheckExact(v)) {
    const double d = PyLong_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return std::nullopt;
    }
    return d;
  }
  return std::nullopt;
}

int64_t bits_of(double d) {
  if (d == 0.0) d = 0.0;  // -0.0 and 0.0 are one scalar, as they are one dict key in Python
  int64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// The key of a row-op call: op, scalar, which of weight and bias are given, and x.
bool rows_key(Key& k, int64_t op, const at::Tensor& x, double scalar, bool has_weight, bool has_bias) {
  return k.push(op) && k.push(bits_of(scalar)) && k.push((has_weight ? 1 : 0) | (has_bias ? 2 : 0)) && k.push(x);
}

bool gemm_key(Key& k, const at::Tensor& a, const at::Tensor& b) { return k.push(kGemm) && k.push(a) && k.push(b); }

// x as a plain torch.Tensor (not a subclass, which may override what a call does), or null.
const at::Tensor* exact_tensor(PyObject* obj) {
  return THPVariable_CheckExact(obj) ? &THPVariable_Unpack(obj) : nullptr;
}

// A weight or bias vector the prepared call can read as it is: a plain torch.Tensor (a subclass,
// such as a distributed parameter, goes the Python path's way) of cols elements, unit stride, x's
// dtype and device.
bool vector_fits(PyObject* v, int64_t cols, const at::Tensor& x) {
  if (!THPVariable_CheckExact(v)) return false;
  const at::Tensor& t = THPVariable_Unpack(v);
  return t.layout() == c10::kStrided && t.dim() == 1 && t.sizes()[0] == cols && t.strides()[0] == 1 && t.scalar_type() == x.scalar_type() &&
         t.get_device() == x.get_device();
}

const Entry* find(const Key& k, int device) {
  const auto it = table->find(k);
  if (it == table->end() || it->second.device != device || c10::cuda::current_device() != device) {
    ++misses;
    return nullptr;
  }
  return &it->second;
}

void* current_stream(int device) { return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream(); }

// The row op on x through its prepared handle, or None (the Python path then runs).
py::object rows(int64_t op, py::handle xo, py::handle wo, py::handle bo, py::handle scalar_o) {
  const at::Tensor* x = exact_tensor(xo.ptr());
  const auto scalar = real_of(scalar_o.ptr());
  if (!x || !scalar || !x->is_cuda()) return py::none();
  Key k;
  if (!rows_key(k, op, *x, *scalar, !wo.is_none(), !bo.is_none())) return py::none();
  const Entry* e = find(k, x->get_device());
  if (!e || (!wo.is_none() && !vector_fits(wo.ptr(), e->cols, *x)) || (!bo.is_none() && !vector_fits(bo.ptr(), e->cols, *x)))
    return py::none();
  at::Tensor y;
  try {
    y = at::detail::empty_cuda(x->sizes(), x->scalar_type(), x->device(), std::nullopt);
  } catch (const c10::Error&) {
    return py::none();  // out of memory, say: the Python path's allocation raises PyTorch's error
  }
  const void* w = wo.is_none() ? nullptr : THPVariable_Unpack(wo.ptr()).const_data_ptr();
  const void* b = bo.is_none() ? nullptr : THPVariable_Unpack(bo.ptr()).const_data_ptr();
  if (!api->rows_run_ready(e->handle, x->const_data_ptr(), y.data_ptr(), w, b, current_stream(e->device)))
    return py::none();
  ++hits;
  return py::cast(std::move(y));
}

// a @ b (alpha times it) through its prepared handle, or None.
py::object gemm(py::handle ao, py::handle bo, py::handle alpha_o) {
  const at::Tensor* a = exact_tensor(ao.ptr());
  const at::Tensor* b = exact_tensor(bo.ptr());
  const auto alpha = real_of(alpha_o.ptr());
  if (!a || !b || !alpha || !a->is_cuda()) return py::none();
  Key k;
  if (!gemm_key(k, *a, *b)) return py::none();
  const Entry* e = find(k, a->get_device());
  if (!e) return py::none();
  at::Tensor c;
  try {
    c = at::detail::empty_cuda({e->rows, e->cols}, a->scalar_type(), a->device(), std::nullopt);
  } catch (const c10::Error&) {
    return py::none();
  }
  if (!api->gemm_run_ready(e->handle, a->const_data_ptr(), b->const_data_ptr(), c.data_ptr(), static_cast<float>(*alpha),
                           current_stream(e->device)))
    return py::none();
  ++hits;
  return py::cast(std::move(c));
}

void remember(Key&& k, py::handle call, const void* handle, int64_t rows, int64_t cols, int device) {
  if (!handle) throw py::type_error("ktune._torch_ext: not a ktune call object");
  if (table->size() >= kMaxEntries) table->clear();
  (*table)[std::move(k)] = Entry{py::reinterpret_borrow<py::object>(call), handle, cols, rows, device};
}

}  // namespace

PYBIND11_MODULE(_torch_ext, m) {
  m.doc() = "The PyTorch fast path of ktune.gemm and the row ops (python/torch_ext.cpp); used by python/ktune.";
  api = static_cast<const KtuneCallApi*>(PyCapsule_Import(KTUNE_CALL_API_CAPSULE, 0));
  if (!api) throw py::error_already_set();
  if (api->version != KTUNE_CALL_API_VERSION)
    throw py::import_error("ktune._torch_ext was built for call API " + std::to_string(KTUNE_CALL_API_VERSION) +
                           " and ktune._ktune offers " + std::to_string(api->version) + ": rebuild both together");
  table = new std::unordered_map<Key, Entry, KeyHash>();  // never freed: entries hold Python objects
  m.attr("TORCH_VERSION") = KTUNE_TORCH_VERSION;

  m.def("softmax", [](py::handle x, py::handle scale) { return rows(kSoftmax, x, py::none(), py::none(), scale); });
  m.def("layer_norm", [](py::handle x, py::handle w, py::handle b, py::handle eps) { return rows(kLayerNorm, x, w, b, eps); });
  m.def("rms_norm", [](py::handle x, py::handle w, py::handle eps) { return rows(kRmsNorm, x, w, py::none(), eps); });
  m.def("gemm", &gemm, "a @ b times alpha (float or int) into a new tensor, or None when not prepared.");

  m.def(
      "remember_rows",
      [](const std::string& op, py::handle xo, py::handle scalar_o, bool has_weight, bool has_bias, py::handle call, int device) {
        const at::Tensor* x = exact_tensor(xo.ptr());
        const auto scalar = real_of(scalar_o.ptr());
        Key k;
        if (!x || !scalar || !rows_key(k, op_code(op), *x, *scalar, has_weight, has_bias)) return false;
        remember(std::move(k), call, api->rows_handle(call.ptr()), 0, x->dim() ? x->sizes().back() : 1, device);
        return true;
      },
      "Serve this row-op call from now on (the Python path checked and prepared it); False where it cannot be keyed.");
  m.def(
      "remember_gemm",
      [](py::handle ao, py::handle bo, py::handle call, int64_t rows, int64_t cols, int device) {
        const at::Tensor* a = exact_tensor(ao.ptr());
        const at::Tensor* b = exact_tensor(bo.ptr());
        Key k;
        if (!a || !b || !gemm_key(k, *a, *b)) return false;
        remember(std::move(k), call, api->gemm_handle(call.ptr()), rows, cols, device);
        return true;
      },
      "Serve this GEMM (a new C of rows x cols, beta 0) from now on; False where it cannot be keyed.");
  m.def("clear", [] { table->clear(); }, "Forget every call (the runtimes they belong to are being replaced).");
  m.def("stats", [] { return py::make_tuple(table->size(), hits, misses); }, "(entries, calls served, lookups missed).");
}
