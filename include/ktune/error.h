// Errors ktune throws. Every message names the failing call and, where there is one, the config
// and the problem, so that a log line alone says what broke.
#pragma once
#include <stdexcept>
#include <string>

namespace ktune {

// Any failure inside ktune: a CUDA/NVRTC/cuBLAS/SQLite call, a bad file, an invalid request.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Input the caller got wrong (bad shape, unknown family, malformed JSON); CLIs exit 2 on it.
class UsageError : public Error {
 public:
  using Error::Error;
};

// NVRTC rejected a source: carries the compiler log and what was being compiled.
class CompileError : public Error {
 public:
  CompileError(const std::string& what, std::string log) : Error(what + "\n" + log), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

} // namespace ktune
