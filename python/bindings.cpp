// ktune._ktune: the Python binding of ktune::Runtime (pybind11). Thin on purpose: pointers,
// sizes, leading dimensions and streams come in as integers; python/ktune/ maps tensors to them.
// UsageError becomes ktune.UsageError (a ValueError), any other ktune::Error ktune.KtuneError (a
// RuntimeError). gemm releases the GIL while the runtime works (it may compile or measure on
// first use of a problem); the Runtime is thread-safe (include/ktune/runtime.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/store.h"
#include "ktune/config.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "ktune/problem.h"
#include "ktune/runtime.h"

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

py::object opt(const std::optional<double>& v) { return v ? py::object(py::float_(*v)) : py::object(py::none()); }

py::dict config_dict(const ktune::Config& c) {
  py::dict d;
  for (const auto& [name, value] : c.items()) d[py::str(name)] = value;
  return d;
}

// The fields of `ktune query --json`, plus the rest of Selection.
py::dict selection_dict(const ktune::GemmProblem& p, const std::string& arch, const ktune::Selection& s) {
  py::dict d;
  d["problem"] = p.key();
  d["arch"] = arch;
  d["provenance"] = ktune::to_string(s.provenance);
  d["family"] = s.family;
  d["config"] = config_dict(s.config);
  d["source"] = s.source;
  d["tuned_problem"] = s.tuned ? py::object(py::str(*s.tuned)) : py::object(py::none());
  d["distance"] = s.distance;
  d["generalized"] = s.generalized;
  d["time_ms"] = opt(s.time_ms);
  d["cublas_ms"] = opt(s.cublas_ms);
  d["measure_pending"] = s.measure_pending;
  d["measured"] = s.measured;
  d["measured_cublas_ms"] = opt(s.measured_cublas_ms);
  d["why"] = s.why;
  py::list cands;
  for (const auto& c : s.candidates) {
    py::dict cd;
    cd["family"] = c.family;
    cd["config"] = config_dict(c.config);
    cd["source"] = c.source;
    cd["tuned_problem"] = c.tuned;
    cd["distance"] = c.distance;
    cd["home_ratio"] = c.home_ratio;
    cd["predicted_ratio"] = c.score;
    cd["generalized"] = c.generalized;
    cd["time_ms"] = opt(c.time_ms);
    cd["cublas_ms"] = opt(c.cublas_ms);
    cd["measured_ms"] = opt(c.measured_ms);
    cands.append(cd);
  }
  d["candidates"] = cands;
  return d;
}

} // namespace

PYBIND11_MODULE(_ktune, m) {
  m.doc() = "ktune's C++ runtime (include/ktune/runtime.h); use the ktune package, not this module";
  m.attr("__version__") = KTUNE_VERSION;
  m.attr("build_cli") = KTUNE_BUILD_CLI;

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
                       int device, bool tf32x3, bool shipped_tables, bool measure_untuned) {
             ktune::RuntimeOptions o;
             o.db_path = db_path;
             o.tables = tables;
             o.arch = arch;
             o.device = device;
             o.tf32x3 = tf32x3;
             o.shipped_tables = shipped_tables;
             o.measure_untuned = measure_untuned;
             py::gil_scoped_release nogil;
             return std::make_unique<ktune::Runtime>(o);
           }),
           py::arg("db_path") = "", py::arg("tables") = std::vector<std::string>{}, py::arg("arch") = "",
           py::arg("device") = 0, py::arg("tf32x3") = false, py::arg("shipped_tables") = true,
           py::arg("measure_untuned") = true)
      .def_property_readonly("arch", &ktune::Runtime::arch)
      .def_property_readonly("entries", &ktune::Runtime::entries)
      .def(
          "best_config",
          [](const ktune::Runtime& rt, int64_t mm, int64_t n, int64_t k, const std::string& dtype, const std::string& layout,
             int64_t lda, int64_t ldb, int64_t ldc) {
            const ktune::GemmProblem p = make_problem(mm, n, k, dtype, layout, lda, ldb, ldc);
            ktune::Selection s;
            {
              py::gil_scoped_release nogil;
              s = rt.best_config(p);
            }
            return selection_dict(p, rt.arch(), s);
          },
          py::arg("m"), py::arg("n"), py::arg("k"), py::arg("dtype") = "f32", py::arg("layout") = "NN",
          py::arg("lda") = 0, py::arg("ldb") = 0, py::arg("ldc") = 0)
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
          "layout 'NN'/'NT'/'TN'/'TT' says whether A (m x k) and B (k x n) are row-major (N) or column-major (T).");
}
