// What the ktune program's subcommands share: the storage-dtype rule, atomic file writes, loading a
// family (with a restriction) and the problem a family is judged against.
#include "tools/cli.h"

#include <filesystem>
#include <fstream>

#include "ktune/error.h"

namespace ktune::cli {

const char* const kTf32x3Help =
    "Also use the shipped 3xTF32 table (gemm_tf32x3, gemm_wgmma_tf32x3: FP32 on TF32 tensor cores, FP32-accurate on finite inputs; "
    "not bit-identical to FFMA; inf inputs give NaN)";

Family load_family(const std::string& name, const std::string& restrict_file) {
  Family f = find_family(name);
  if (!restrict_file.empty()) f = f.restricted(SpaceRestriction::from_json_file(restrict_file));
  return f;
}

// tf32 names a compute mode, not a storage type: FP32 problems opt in to the tensor cores with
// --tf32x3. Every other dtype is what A, B and C hold.
void require_storage_dtype(DType d) {
  if (d == DType::tf32) throw UsageError("dtype tf32 is not a storage type: tune f32 problems (with --tf32x3 for the tensor cores)");
}

// The problem a space or compile command judges configs against: of the family's op, 4096 in
// every dimension unless given, the op's first layout unless given.
Problem family_problem(const Family& f, const std::string& shape, const std::string& layout, const std::string& dtype) {
  const OpInfo& op = op_info(f.op());
  std::string dflt;
  for (size_t i = 0; i < op.dims.size(); ++i) dflt += i ? "x4096" : "4096";
  return Problem::parse(op.name, shape.empty() ? dflt : shape, layout.empty() && !op.layouts.empty() ? op.layouts[0] : layout,
                        parse_dtype(dtype));
}

// Writes beside the target and renames: a failed export never leaves half a file behind.
void write_atomically(const std::string& out, const std::string& text) {
  const std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw Error("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out, ec);
  if (ec) throw Error("cannot rename " + tmp + " to " + out + ": " + ec.message());
}

std::string command_line(int argc, char** argv) {
  std::string cmd = "ktune";
  for (int i = 1; i < argc; ++i) cmd += std::string(" ") + argv[i];
  return cmd;
}

// Keeps the entries of one dtype ("" keeps all); refuses an unknown name.
void keep_dtype(Table& t, const std::string& dtype) {
  if (dtype.empty()) return;
  const DType d = parse_dtype(dtype);
  std::erase_if(t.entries, [&](const TableEntry& e) { return e.problem.dtype != d; });
}

} // namespace ktune::cli
