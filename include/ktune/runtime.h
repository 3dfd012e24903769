// What applications link against: the best config for a problem, and a GEMM that launches it.
//
//   ktune::Runtime rt;                                   // user's store + shipped tables
//   auto sel = rt.best_config(ktune::GemmProblem::parse("4096x4096x4096"));
//   rt.gemm(problem, dA, dB, dC, 1.0f, 0.0f, stream);    // tuned kernel, or cuBLAS if it won
//
// Thread-safe: one Runtime may serve many threads. Lookups read an index built at construction;
// compiled modules and selections are cached behind mutexes (the process-wide state ktune keeps).
#pragma once
#include <cuda.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/config.h"
#include "ktune/problem.h"

namespace ktune {

enum class Provenance {
  exact,          // tuned for exactly this problem
  nearest,        // tuned for the nearest problem of the same op, dtype, layout, arch, alignment
  default_config, // nothing tuned nearby: the family's default
  cublas,         // the recorded cuBLAS time beat the tuned kernel: gemm() calls cuBLAS
};
const char* to_string(Provenance p);

struct Selection {
  Provenance provenance = Provenance::default_config;
  std::string family; // the kernel family (also set for cublas: what was tuned)
  Config config;
  std::string source;                // "store PATH", "table PATH", "shipped table sm_90", "default"
  std::optional<std::string> tuned;  // key of the tuned problem the config came from
  double distance = 0;               // nearest: sqrt of the summed squared log ratios of M, N, K
  bool generalized = false;          // the tuned config was specialised to its shape (e.g. EVEN);
                                     // config is a general form of it (Family::generalized)
  std::optional<double> time_ms, cublas_ms; // recorded for the tuned problem
};

struct RuntimeOptions {
  std::string db_path;             // "" or a missing file: no store; opened read-only otherwise
  std::vector<std::string> tables; // more table files (ktune.table/1), after the store
  bool shipped_tables = true;      // the tables embedded in the library, last
  // Opt-in: also the shipped gemm_tf32x3 table of the arch (tables/<arch>-tf32x3.json), ahead of
  // the plain shipped table. gemm_tf32x3 computes FP32 GEMM on the TF32 tensor cores with a
  // big/small split of every operand: its error against FP64 is at or below cuBLAS SGEMM's on
  // finite inputs of ordinary range, but results are not bit-identical to FFMA, and an infinite
  // input, or one within 2^-11 of FLT_MAX, gives NaN (docs/TEMPLATES.md). Off by default, as
  // cuBLAS keeps TF32 off unless asked. Only sm_90 ships such a table so far; elsewhere the option
  // changes nothing (best_config's `source` names the table each answer came from).
  bool tf32x3 = false;
  std::string arch;                // "" = the arch of `device` (needs a GPU)
  int device = 0;
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions o = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const std::string& arch() const;
  size_t entries() const; // tuned problems known to the index

  // Throws UsageError for an invalid problem.
  Selection best_config(const GemmProblem& p) const;

  // C = alpha * A * B + beta * C on stream, with the layouts, sizes and leading dimensions of p
  // (its alpha and beta are replaced by these). The alignment class is narrowed to what the
  // pointers allow before the lookup. Throws Error on CUDA, NVRTC or cuBLAS failure.
  void gemm(const GemmProblem& p, const float* A, const float* B, float* C, float alpha, float beta,
            CUstream stream = nullptr);

  // The same with a given selection (e.g. a pinned config, or a kernel that the recorded
  // cuBLAS time beat, forced by setting provenance to anything but cublas). The config must be
  // valid for p; throws UsageError otherwise.
  void gemm(const GemmProblem& p, const Selection& s, const float* A, const float* B, float* C, float alpha, float beta,
            CUstream stream = nullptr);

  struct Impl;

 private:
  // Compiles or loads what launching s on p needs, once per key (thread-safe).
  std::shared_ptr<void> prepare(const std::string& key, const GemmProblem& p, const Selection& s);
  void launch(const std::shared_ptr<void>& prepared, const GemmProblem& p, const float* A, const float* B, float* C,
              CUstream stream);

  std::unique_ptr<Impl> impl_;
};

} // namespace ktune
