// A user's kernel, tuned without rebuilding ktune: a JSON spec beside the .cu file declares its
// parameters, constraints, launch geometry, arguments and check (docs/KERNEL_SPEC.md). Loading it
// registers an op (and its one family) that the tuner, store, tables and runtime serve like a
// built-in one.
#pragma once
#include <string>

namespace ktune {

// Reads the spec at `path` and its sources and registers the op they describe; returns the op's
// name, "<name>@<version>", where version is 8 hex digits of a hash of the spec and every source
// text it compiles (a changed kernel is another op: it never reuses results of the old one).
// Loading the same unchanged spec again returns the same name. Throws UsageError
// "<path>: <field>: <what is wrong>" for a bad spec, a missing source, a bad expression.
std::string load_kernel_spec(const std::string& path);
// The same for a spec given as JSON text; `origin` names it in messages and `base_dir` resolves
// its relative paths (Python's inline specs).
std::string load_kernel_spec_text(const std::string& json, const std::string& origin, const std::string& base_dir);

// The absolute path of the spec file a registered user kernel was loaded from (a worker process
// loads it again); throws UsageError for one given as text, Error for a built-in op.
std::string spec_path(const std::string& op);

// "conv2d@1a2b3c4d" -> "conv2d"; a name without a version is returned as it is.
std::string spec_base_name(const std::string& op);

} // namespace ktune
