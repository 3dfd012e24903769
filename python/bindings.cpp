// ktune._ktune: the Python binding of ktune::Runtime (pybind11). Thin on purpose: pointers,
// sizes, leading dimensions and streams come in as integers; python/ktune/ maps tensors to them.
// UsageError becomes ktune.UsageError (a ValueError), any other ktune::Error ktune.KtuneError (a
// RuntimeError). gemm releases the GIL while the runtime works (it may compile or measure on
// first use of a problem); the Runtime is thread-safe (include/ktune/runtime.h).
#include <array>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/store.h"
#include "ktune/config.h"
#include "ktune/device.h"
#include "core/kernel_spec.h"
#include "ktune/error.h"
#include "ktune/kernel_spec.h"
#include "ktune/gemm_problem.h"
#include "ktune/runtime.h"
#include "tuner/json_io.h"
#include "call_api.h"

namespace py = pybind11;

namespace {

// A problem as c_api.cpp builds one from BLAS arguments: layouts, leading dimensions (0: the
// minimum), and the alignment class from the leading dimensions and the element size (the
// runtime narrows it further by the pointers).
ktune::GemmProblem make_problem(int64_t m, int64_t n, int64_t k, const std::string& dtype, const std::string& layout,
                                int64_t lda, int64_t ldb, int64_t ldc) {
  const ktune::DType d = ktune::parse_dtype(dtype);
  if (d != ktune::DType::f32 && d != ktune::DType::bf16 && d != ktune::DType::f16)
    throw ktune::UsageError("dtype '" + dtype + "' is not a storage type ktune serves (f32, bf16, f16)");
  if (m < 0 || n < 0 || k < 0)
    throw ktune::UsageError("negative size (m = " + std::to_string(m) + ", n = " + std::to_string(n) + ", k = " + std::to_string(k) + ")");
  ktune::GemmProblem p = ktune::GemmProblem::make(m, n, k, layout, d);
  if (lda) p.lda = lda;
  if (ldb) p.ldb = ldb;
  if (ldc) p.ldc = ldc;
  p.align = ktune::GemmProblem::alignment_of(p.lda, p.ldb, p.ldc, ktune::element_bytes(d));
  return p;
}

// The fields of `ktune query --json` (one serialization, tuner/json_io.h), as Python objects.
py::dict selection_dict(const ktune::Problem& p, const std::string& arch, const ktune::Selection& s) {
  return py::module_::import("json").attr("loads")(ktune::selection_to_json(p, arch, s).dump());
}

// rt's answer for p (GemmProblem or Problem) as selection_dict gives it; the lookup, which may
// wait on first use's measuring in another thread, runs without the GIL.
template <class P>
py::dict best_config_dict(const ktune::Runtime& rt, const P& p) {
  ktune::Selection s;
  {
    py::gil_scoped_release nogil;
    s = rt.best_config(p);
  }
  return selection_dict(p, rt.arch(), s);
}

} // namespace

// A problem fixed once and called many times (ktune::GemmCall / RowsCall): the Python fast paths
// (ktune.gemm and the row ops) keep one per shape, dtype, strides and scalar, so that a call
// passes pointers and a stream only: no strings to convert, no Problem to build, validate and
// look up again. The runtime it was made by is kept alive with it.
struct PyGemmCall {
  py::object owner;
  std::unique_ptr<ktune::GemmCall> call;
};
struct PyRowsCall {
  py::object owner;
  std::unique_ptr<ktune::RowsCall> call;
};
struct PyBuffersCall {
  py::object owner;
  std::unique_ptr<ktune::BuffersCall> call;
};

ktune::Problem make_rows_problem(const std::string& op, const std::string& dtype, int64_t rows, int64_t cols, int64_t ldx,
                                 int64_t ldy, double scalar) {
  ktune::Problem p = ktune::Problem::make(op, {rows, cols}, "", ktune::parse_dtype(dtype));
  p.ld = {ldx ? ldx : cols, ldy ? ldy : cols};
  for (const auto& [name, dflt] : ktune::op_info(op).scalars) p.scalars[name] = scalar;
  ktune::validate(p);
  return p;
}

// Any op's problem as run() and buffers_call() take it: its scalars by name, its strides in ops()'
// order (empty: packed), its layout ("": the op's first).
ktune::Problem make_buffers_problem(const std::string& op, const std::string& dtype, const std::vector<int64_t>& dims,
                                    const std::map<std::string, double>& scalars, const std::vector<int64_t>& strides,
                                    const std::string& layout) {
  ktune::Problem p = ktune::Problem::make(op, dims, layout, ktune::parse_dtype(dtype));
  p.scalars = scalars;
  if (!strides.empty()) {
    if (strides.size() != p.ld.size())
      throw ktune::UsageError(std::to_string(strides.size()) + " strides given, op " + op + " has " +
                              std::to_string(p.ld.size()));
    p.ld = strides;
  }
  return p;
}

PYBIND11_MODULE(_ktune, m) {
  m.doc() = "ktune's C++ runtime (include/ktune/runtime.h); use the ktune package, not this module";
  m.attr("__version__") = KTUNE_VERSION;
  m.attr("build_cli") = KTUNE_BUILD_CLI;
  // RuntimeOptions::cubin_cache's "the per-user default" (ktune.configure(cubin_cache=...)).
  m.attr("DEFAULT_CUBIN_CACHE") = ktune::kDefaultCubinCache;

  // Owned by the module (and leaked here on purpose: nothing to release after the interpreter ends).
  static PyObject* const ktune_error = py::exception<ktune::Error>(m, "KtuneError", PyExc_RuntimeError).release().ptr();
  static PyObject* const usage_error = py::exception<ktune::UsageError>(m, "UsageError", PyExc_ValueError).release().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ktune::UsageError& e) {
      PyErr_SetString(usage_error, e.what());
    } catch (const ktune::Error& e) {
      PyErr_SetString(ktune_error, e.what());
    }
  });

  m.def("default_db_path", &ktune::default_db_path,
        "$KTUNE_DB, else $XDG_CACHE_HOME/ktune/ktune.db, else ~/.cache/ktune/ktune.db");
  m.def("load_kernel_spec", &ktune::load_kernel_spec, py::arg("path"),
        "Registers the user kernel of a spec file (docs/KERNEL_SPEC.md); returns its op, name@version.");
  m.def(
      "kernel_problem_args",
      [](const std::string& op, const std::vector<int64_t>& dims, const std::string& dtype) {
        const ktune::KernelSpec& s = ktune::spec_of(op);
        const ktune::Problem p = ktune::Problem::parse(op, [&] {
          std::string shape;
          for (int64_t d : dims) shape += (shape.empty() ? "" : "x") + std::to_string(d);
          return shape;
        }(), "", ktune::parse_dtype(dtype));
        py::list out;
        for (size_t i = 0; i < s.args.size(); ++i) {
          const ktune::SpecArg& a = s.args[i];
          py::dict x;
          x["name"] = a.name, x["kind"] = a.kind_name();
          x["dtype"] = a.is_struct() ? a.kind_name() : ktune::to_string(a.buffer ? a.elem(p) : a.scalar_elem(p));
          if (a.is_struct()) { // ktune builds it (a texture and an address table too); a reference gets None
            x["value"] = py::none();
          } else if (a.buffer) {
            static const char* kIntents[] = {"in", "out", "inout", "temp"};
            x["intent"] = kIntents[a.intent]; // a temporary sized by the config has no count here
            x["count"] = a.follows_config ? py::object(py::none()) : py::object(py::int_(s.count_of(i, p)));
            static const char* kFills[] = {"random", "zeros", "ones", "ramp", "constant", "file", "permutation"};
            // The problem's range, value and permutation range (a per-problem file is not read here).
            const bool at = !a.fill.lo_at.empty() || !a.fill.perm_at.empty() || !a.fill.value_at.empty() ||
                            !a.fill.start_at.empty() || !a.fill.step_at.empty();
            const ktune::SpecFill range = at ? ktune::fill_at(s, a.fill, p) : a.fill;
            x["fill"] = kFills[a.fill.kind], x["lo"] = range.lo, x["hi"] = range.hi, x["value"] = range.value;
            x["integers"] = a.fill.integers, x["start"] = range.start, x["step"] = range.step, x["mod"] = a.fill.mod;
            x["range"] = range.perm_n; // a permutation's: 0 for the buffer's count
            if (a.fill.kind == ktune::SpecFill::from_file) {
              x["file"] = a.fill.pattern.empty() ? a.fill.file : a.fill.pattern;
              if (a.fill.raw) x["raw_dtype"] = ktune::to_string(a.fill.file_type);
            }
          } else {
            // One that follows the config, or a loop's counter, has no value here: a reference
            // computes from the problem.
            x["value"] = a.follows_config || a.set_at_launch() ? py::object(py::none()) : py::object(py::float_(s.scalar_value(i, p)));
          }
          out.append(x);
        }
        return out;
      },
      py::arg("op"), py::arg("dims"), py::arg("dtype"),
      "A user kernel's arguments at one problem: buffers with their element count, intent and fill (a file fill's "
      "name, with its {dim} placeholders as written), scalars with the value the tuner passes (None where it "
      "follows the config, as a temporary's count may, or a loop's counter).");
  m.def(
      "ops",
      [] {
        py::list out;
        for (const ktune::OpInfo& o : ktune::ops()) {
          py::dict d;
          d["name"] = o.name, d["about"] = o.about, d["dims"] = o.dims, d["layouts"] = o.layouts, d["runner"] = o.runner;
          py::list scalars, operands;
          py::dict shapes;
          for (const auto& [n, v] : o.scalars) scalars.append(py::make_tuple(n, v));
          for (const auto& x : o.operands) {
            operands.append(py::make_tuple(x.name, x.output));
            if (!x.shape.empty()) shapes[py::str(x.name)] = x.shape;
          }
          d["scalars"] = scalars, d["operands"] = operands, d["shapes"] = shapes, d["strides"] = o.ld_names;
          if (o.spec) { // a user's kernel: its arguments as the caller passes them, and its dtypes
            py::list args, dtypes;
            for (const ktune::SpecArg& a : o.spec->args) {
              if (!a.caller_passes()) continue;
              py::dict x;
              x["name"] = a.name, x["kind"] = a.buffer ? "buffer" : "scalar";
              x["dtype"] = a.problem_dtype ? "dtype" : ktune::to_string(a.buffer ? a.type : a.scalar_type);
              if (a.buffer) x["output"] = a.intent != ktune::SpecArg::in;
              args.append(x);
            }
            for (ktune::DType t : o.spec->dtypes) dtypes.append(ktune::to_string(t));
            d["args"] = args, d["dtypes"] = dtypes, d["spec"] = o.spec->file;
          }
          out.append(d);
        }
        return out;
      },
      "The registered ops: name, about, dims, layouts, runner, scalars (name, default), operands (name, is output), "
      "shapes (an N-dimensional operand's dimension names, outermost first) and strides (the names of Problem::ld).");
  // The table python/torch_ext.cpp calls through (python/call_api.h): handles out of the call
  // objects, and prepared calls run without an exception crossing into the other module.
  static const KtuneCallApi call_api = {
      KTUNE_CALL_API_VERSION,
      [](PyObject* obj) -> const void* {
        try {
          const py::handle h(obj);
          return py::isinstance<PyRowsCall>(h) ? h.cast<const PyRowsCall&>().call.get() : nullptr;
        } catch (...) {
          return nullptr;
        }
      },
      [](PyObject* obj) -> const void* {
        try {
          const py::handle h(obj);
          return py::isinstance<PyGemmCall>(h) ? h.cast<const PyGemmCall&>().call.get() : nullptr;
        } catch (...) {
          return nullptr;
        }
      },
      [](const void* handle, const void* x, void* y, const void* weight, const void* bias, void* stream) -> int {
        const auto& call = *static_cast<const ktune::RowsCall*>(handle);
        try {
          if (!call.ready(x, y, weight, bias)) return 0;
          call(x, y, weight, bias, static_cast<CUstream>(stream));
          return 1;
        } catch (...) {
          return 0;
        }
      },
      [](const void* handle, const void* a, const void* b, void* c, float alpha, void* stream) -> int {
        const auto& call = *static_cast<const ktune::GemmCall*>(handle);
        try {
          if (!c || !a || !b || !call.ready(a, b, c, alpha)) return 0;
          call(a, b, c, alpha, 0.0f, static_cast<CUstream>(stream));
          return 1;
        } catch (...) {
          return 0;
        }
      },
  };
  m.add_object("_call_api", py::capsule(&call_api, KTUNE_CALL_API_CAPSULE));

  py::class_<PyBuffersCall>(m, "BuffersCall")
      .def("__call__",
           [](const PyBuffersCall& c, const std::vector<uintptr_t>& buffers, uintptr_t stream) {
             std::array<const void*, 16> ptrs{};
             if (buffers.size() > ptrs.size()) throw ktune::UsageError(std::to_string(buffers.size()) + " buffers given");
             for (size_t i = 0; i < buffers.size(); ++i) ptrs[i] = reinterpret_cast<const void*>(buffers[i]);
             if (c.call->ready(ptrs.data(), buffers.size()))
               return (*c.call)(ptrs.data(), buffers.size(), reinterpret_cast<CUstream>(stream));
             py::gil_scoped_release nogil;
             (*c.call)(ptrs.data(), buffers.size(), reinterpret_cast<CUstream>(stream));
           })
      .def_property_readonly("key", [](const PyBuffersCall& c) { return c.call->problem().key(); })
      // What the call runs, as best_config answers (after its first call: what first use measured,
      // every candidate's time included), for benches that report which config served a row.
      .def_property_readonly("selection", [](const PyBuffersCall& c) {
        return best_config_dict(*c.owner.cast<ktune::Runtime*>(), c.call->problem());
      });

  m.def(
      "problem_key",
      [](int64_t mm, int64_t n, int64_t k, const std::string& dtype, const std::string& layout) {
        return make_problem(mm, n, k, dtype, layout, 0, 0, 0).key();
      },
      py::arg("m"), py::arg("n"), py::arg("k"), py::arg("dtype") = "f32", py::arg("layout") = "NN");
  m.def(
      "devices",
      [] {
        std::string why;
        py::list out;
        for (const auto& d : ktune::list_devices(&why)) {
          py::dict dd;
          dd["ordinal"] = d.ordinal;
          dd["name"] = d.name;
          dd["arch"] = d.arch;
          dd["sm_count"] = d.sm_count;
          dd["total_memory"] = d.total_memory;
          out.append(dd);
        }
        return py::make_tuple(out, why);
      },
      "(list of GPUs as dicts, why there are none)");

  py::class_<ktune::Runtime>(m, "Runtime")
      .def(py::init([](const std::string& db_path, const std::vector<std::string>& tables, const std::string& arch,
                       int device, bool tf32x3, bool shipped_tables, bool measure_untuned, const std::string& cubin_cache,
                       int64_t cubin_cache_max_mb, bool time_neighbours) {
             ktune::RuntimeOptions o;
             o.db_path = db_path;
             o.tables = tables;
             o.arch = arch;
             o.device = device;
             o.tf32x3 = tf32x3;
             o.shipped_tables = shipped_tables;
             o.measure_untuned = measure_untuned;
             o.cubin_cache = cubin_cache;
             o.cubin_cache_max_mb = cubin_cache_max_mb;
             o.time_neighbours = time_neighbours;
             py::gil_scoped_release nogil;
             return std::make_unique<ktune::Runtime>(o);
           }),
           py::arg("db_path") = "", py::arg("tables") = std::vector<std::string>{}, py::arg("arch") = "",
           py::arg("device") = 0, py::arg("tf32x3") = false, py::arg("shipped_tables") = true,
           py::arg("measure_untuned") = true, py::arg("cubin_cache") = std::string(ktune::kDefaultCubinCache),
           py::arg("cubin_cache_max_mb") = ktune::kDefaultCubinCacheLimit, py::arg("time_neighbours") = true)
      .def_property_readonly("arch", &ktune::Runtime::arch)
      .def_property_readonly("entries", &ktune::Runtime::entries)
      .def(
          "best_config",
          [](const ktune::Runtime& rt, int64_t mm, int64_t n, int64_t k, const std::string& dtype, const std::string& layout,
             int64_t lda, int64_t ldb, int64_t ldc) {
            return best_config_dict(rt, make_problem(mm, n, k, dtype, layout, lda, ldb, ldc));
          },
          py::arg("m"), py::arg("n"), py::arg("k"), py::arg("dtype") = "f32", py::arg("layout") = "NN",
          py::arg("lda") = 0, py::arg("ldb") = 0, py::arg("ldc") = 0)
      .def(
          "best_config_op",
          [](const ktune::Runtime& rt, const std::string& op, const std::vector<int64_t>& dims, const std::string& dtype) {
            const ktune::OpInfo& info = ktune::op_info(op);
            return best_config_dict(rt, ktune::Problem::make(op, dims, info.default_layout(), ktune::parse_dtype(dtype)));
          },
          py::arg("op"), py::arg("dims"), py::arg("dtype") = "f32",
          "What runs for any op's problem (dimensions in the op's order; GEMM at layout NN).")
      .def(
          "run",
          [](ktune::Runtime& rt, const std::string& op, const std::string& dtype, const std::vector<int64_t>& dims,
             const std::vector<uintptr_t>& buffers, const std::map<std::string, double>& scalars, uintptr_t stream,
             const std::vector<int64_t>& strides, const std::string& layout) {
            const ktune::Problem p = make_buffers_problem(op, dtype, dims, scalars, strides, layout);
            std::vector<void*> ptrs;
            for (uintptr_t b : buffers) ptrs.push_back(reinterpret_cast<void*>(b));
            py::gil_scoped_release nogil;
            rt.run(p, ptrs, reinterpret_cast<CUstream>(stream));
          },
          py::arg("op"), py::arg("dtype"), py::arg("dims"), py::arg("buffers"), py::arg("scalars"), py::arg("stream") = 0,
          py::arg("strides") = std::vector<int64_t>{}, py::arg("layout") = std::string(),
          "Any op (Runtime::run): device pointers in the op's order, its scalars by name, its strides in "
          "ops()' order (empty: packed), its layout (empty: the op's first).")
      .def(
          "gemm",
          [](ktune::Runtime& rt, int64_t mm, int64_t n, int64_t k, const std::string& dtype, const std::string& layout,
             uintptr_t a, int64_t lda, uintptr_t b, int64_t ldb, uintptr_t c, int64_t ldc, float alpha, float beta,
             uintptr_t stream) {
            if (mm == 0 || n == 0) return; // nothing to compute, as in BLAS
            const ktune::GemmProblem p = make_problem(mm, n, k, dtype, layout, lda, ldb, ldc);
            if (!c) throw ktune::UsageError("C is a null pointer");
            if (k > 0 && alpha != 0.0f && (!a || !b)) throw ktune::UsageError("A or B is a null pointer");
            py::gil_scoped_release nogil;
            rt.gemm_ex(p, reinterpret_cast<const void*>(a), reinterpret_cast<const void*>(b), reinterpret_cast<void*>(c),
                       alpha, beta, reinterpret_cast<CUstream>(stream));
          },
          py::arg("m"), py::arg("n"), py::arg("k"), py::arg("dtype"), py::arg("layout"), py::arg("a"), py::arg("lda"),
          py::arg("b"), py::arg("ldb"), py::arg("c"), py::arg("ldc"), py::arg("alpha") = 1.0f, py::arg("beta") = 0.0f,
          py::arg("stream") = 0,
          "C (m x n, row-major, ldc) = alpha * op(A) op(B) + beta * C on stream (a CUstream as an integer); "
          "layout 'NN'/'NT'/'TN'/'TT' says whether A (m x k) and B (k x n) are row-major (N) or column-major (T).")
      .def(
          "rows",
          [](ktune::Runtime& rt, const std::string& op, const std::string& dtype, int64_t rows, int64_t cols, uintptr_t x,
             int64_t ldx, uintptr_t y, int64_t ldy, uintptr_t weight, uintptr_t bias, double scalar, uintptr_t stream) {
            if (rows == 0 || cols == 0) return;
            const ktune::Problem p = make_rows_problem(op, dtype, rows, cols, ldx, ldy, scalar);
            py::gil_scoped_release nogil;
            rt.rows(p, reinterpret_cast<const void*>(x), reinterpret_cast<void*>(y), reinterpret_cast<const void*>(weight),
                    reinterpret_cast<const void*>(bias), reinterpret_cast<CUstream>(stream));
          },
          py::arg("op"), py::arg("dtype"), py::arg("rows"), py::arg("cols"), py::arg("x"), py::arg("ldx"), py::arg("y"),
          py::arg("ldy"), py::arg("weight") = 0, py::arg("bias") = 0, py::arg("scalar") = 1.0, py::arg("stream") = 0,
          "A row op (softmax, layernorm, rmsnorm) on rows x cols, row strides ldx / ldy in elements; scalar is softmax's "
          "scale or the norms' eps; weight / bias device pointers or 0.")
      .def(
          "gemm_call",
          [](py::object self, int64_t mm, int64_t n, int64_t k, const std::string& dtype, const std::string& layout,
             int64_t lda, int64_t ldb, int64_t ldc) {
            if (mm <= 0 || n <= 0) throw ktune::UsageError("gemm_call needs m, n > 0");
            return PyGemmCall{self, self.cast<ktune::Runtime*>()->gemm_call(make_problem(mm, n, k, dtype, layout, lda, ldb, ldc))};
          },
          py::arg("m"), py::arg("n"), py::arg("k"), py::arg("dtype"), py::arg("layout"), py::arg("lda"), py::arg("ldb"),
          py::arg("ldc"), "gemm() with the problem fixed: call it with (a, b, c, alpha, beta, stream).")
      .def(
          "rows_call",
          [](py::object self, const std::string& op, const std::string& dtype, int64_t rows, int64_t cols, int64_t ldx,
             int64_t ldy, double scalar) {
            if (rows <= 0 || cols <= 0) throw ktune::UsageError("rows_call needs rows, cols > 0");
            return PyRowsCall{self, self.cast<ktune::Runtime*>()->rows_call(make_rows_problem(op, dtype, rows, cols, ldx, ldy, scalar))};
          },
          py::arg("op"), py::arg("dtype"), py::arg("rows"), py::arg("cols"), py::arg("ldx"), py::arg("ldy"),
          py::arg("scalar"), "rows() with the problem fixed: call it with (x, y, weight, bias, stream).")
      .def(
          "buffers_call",
          [](py::object self, const std::string& op, const std::string& dtype, const std::vector<int64_t>& dims,
             const std::map<std::string, double>& scalars, const std::vector<int64_t>& strides, const std::string& layout) {
            return PyBuffersCall{self, self.cast<ktune::Runtime*>()->buffers_call(
                                           make_buffers_problem(op, dtype, dims, scalars, strides, layout))};
          },
          py::arg("op"), py::arg("dtype"), py::arg("dims"), py::arg("scalars"), py::arg("strides") = std::vector<int64_t>{},
          py::arg("layout") = std::string(),
          "run() with the problem fixed: call it with (buffers, stream), one device pointer per operand.");

  py::class_<PyGemmCall>(m, "GemmCall")
      .def("__call__",
           [](const PyGemmCall& g, uintptr_t a, uintptr_t b, uintptr_t c, float alpha, float beta, uintptr_t stream) {
             if (!c) throw ktune::UsageError("C is a null pointer");
             if (g.call->problem().k > 0 && alpha != 0.0f && (!a || !b)) throw ktune::UsageError("A or B is a null pointer");
             const auto A = reinterpret_cast<const void*>(a), B = reinterpret_cast<const void*>(b);
             const auto C = reinterpret_cast<void*>(c);
             // Prepared: a launch, run with the GIL held as PyTorch's own ops are (releasing and
             // taking it back is a measurable share of a small call). Otherwise the call may compile
             // or measure for a while: other Python threads go on meanwhile.
             if (g.call->ready(A, B, C, alpha)) return (*g.call)(A, B, C, alpha, beta, reinterpret_cast<CUstream>(stream));
             py::gil_scoped_release nogil;
             (*g.call)(A, B, C, alpha, beta, reinterpret_cast<CUstream>(stream));
           })
      .def_property_readonly("key", [](const PyGemmCall& g) { return g.call->problem().key(); });
  py::class_<PyRowsCall>(m, "RowsCall")
      .def("__call__",
           [](const PyRowsCall& r, uintptr_t x, uintptr_t y, uintptr_t weight, uintptr_t bias, uintptr_t stream) {
             const auto X = reinterpret_cast<const void*>(x), W = reinterpret_cast<const void*>(weight),
                        Bi = reinterpret_cast<const void*>(bias);
             const auto Y = reinterpret_cast<void*>(y);
             if (r.call->ready(X, Y, W, Bi)) return (*r.call)(X, Y, W, Bi, reinterpret_cast<CUstream>(stream));
             py::gil_scoped_release nogil;
             (*r.call)(X, Y, W, Bi, reinterpret_cast<CUstream>(stream));
           })
      .def_property_readonly("key", [](const PyRowsCall& r) { return r.call->problem().key(); });

  m.def(
      "problem_key",
      [](const std::string& op, int64_t rows, int64_t cols, const std::string& dtype) {
        return ktune::Problem::parse(op, std::to_string(rows) + "x" + std::to_string(cols), "", ktune::parse_dtype(dtype)).key();
      },
      py::arg("op"), py::arg("rows"), py::arg("cols"), py::arg("dtype"), "The key of a row-op problem (validates it).");
}
