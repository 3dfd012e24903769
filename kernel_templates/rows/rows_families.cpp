// Descriptors of the row kernels (rows_warp.cu, rows_block.cu, rows_stream.cu, rows_cluster.cu,
// rows_bulk.cu) and the OpInfo the three row ops share. The host rules each kernel's header
// states become the constraints below; the register table of rows_common.cuh becomes the
// cached-floats limits.
#include <algorithm>
#include <climits>
#include <string>

#include "core/embedded.h"
#include "ktune/error.h"
#include "rows/rows_families.h"

namespace ktune {
namespace {

int64_t rows(const Problem& p) { return p.dims[0]; }
int64_t cols(const Problem& p) { return p.dims[1]; }
int elem(const Problem& p) { return element_bytes(p.dtype); }
int dt_code(const Problem& p) { return p.dtype == DType::f32 ? 0 : p.dtype == DType::bf16 ? 1 : 2; }

// Floats a thread caches (rows_common.cuh's table, measured with ptxas for sm_90: every
// instantiation within these limits has no spills; 1024 threads cap a thread at 64 registers,
// 512 at 128).
int cached(const Config& c) { return c["CHUNKS"] * c["VEC"]; }
// The SHIFT form (shifted() below) holds more registers for the ragged ends and the shifted weight
// vectors (ptxas, CUDA 13.0, sm_90): at 512 threads (128 registers) F = 40 spilled 16 bytes (bf16
// LayerNorm, VEC 2), F = 32 did not; at 1024 threads (64) F = 16 spilled 16 bytes (f32 LayerNorm
// in rows_warp), F = 12 did not.
bool fits_registers(int floats, int threads, bool shift = false) {
  return floats <= (threads >= 1024 ? (shift ? 12 : 16) : threads >= 512 ? (shift ? 32 : 48) : 64);
}

// Whole vectors only: VEC elements of at most 16 bytes, and for VEC > 1 cols, both leading
// dimensions and every pointer (the alignment class) multiples of a vector.
bool vector_ok(const Config& c, const Problem& p) {
  const int v = c["VEC"];
  if (v * elem(p) > 16) return false;
  if (v == 1) return true;
  return cols(p) % v == 0 && p.ld[0] % v == 0 && p.ld[1] % v == 0 && p.align >= v * elem(p);
}

// rows_warp / rows_block with vectors the problem's rows are not made of (an odd cols, a leading
// dimension or pointer off a vector): their SHIFT form, aligned vectors over the row and its two
// ragged ends an element at a time (rows_common.cuh, Span).
bool shifted(const Config& c, const Problem& p) { return c["VEC"] > 1 && !vector_ok(c, p); }
// The columns a thread group's chunks must cover: the row, plus up to VEC - 1 of its first vector
// in the SHIFT form.
int64_t covered(const Config& c, const Problem& p) { return cols(p) + (shifted(c, p) ? c["VEC"] - 1 : 0); }

// The widest vector a problem allows: the stream and bulk defaults take it, the cached families'
// start from it (cached_default_vec).
int widest_vec(const Problem& p) {
  for (int v : {8, 4, 2}) {
    Config c;
    c.set("VEC", v);
    if (vector_ok(c, p)) return v;
  }
  return 1;
}

// The cached families' default vector: the widest whole one where it is at least 8 bytes; else,
// on rows of 4 KB and more, a full 16-byte one in the SHIFT form (rows of an odd number of 16-bit
// elements: VEC 8, not 1); shorter rows keep the widest whole one. An exhaustive LayerNorm sweep
// over rows_block (64-512 threads, H100) had VEC 1 at 10.0 us against 11.7 for the best
// SHIFT config at 3000x1001 bf16, and 12.9 against 16.6 at 2048x2047 (the SHIFT form's extra
// VEC - 1 columns rule out a 2048-column tiling there), while at 4096x4099 the SHIFT form's VEC 8
// won (39 us; VEC 1 needs 1024 threads there: 57.7 % of copy for RMSNorm against 79); softmax
// 3000x1001 ran 8.4 us on rows_warp VEC 1 and 8.7-8.8 on its SHIFT VEC 8. The runtime's first use
// still measures the SHIFT form there when an aligned entry lends it.
int cached_default_vec(const Problem& p) {
  const int v = widest_vec(p);
  if (v * elem(p) >= 8 || cols(p) * elem(p) < 4096) return v;
  return 16 / elem(p);
}

std::string instance(const char* kernel, const RowsOpSpec& s, const Problem& p, std::initializer_list<int> params) {
  std::string n = std::string(kernel) + "<" + std::to_string(s.code) + "," + std::to_string(dt_code(p));
  for (int v : params) n += "," + std::to_string(v);
  return n + ">";
}

LaunchPlan one_step(unsigned grid, unsigned block) {
  LaunchPlan plan;
  LaunchStep st;
  st.grid[0] = grid;
  st.block[0] = block;
  plan.steps.push_back(st);
  return plan;
}

const std::vector<int> kVec = {1, 2, 4, 8};
// Chunk counts fine enough that a row fills its last chunk mostly (768 = 3 sweeps of 256 halves).
const std::vector<int> kChunks = {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64};
const std::vector<int> kThreads = {64, 128, 256, 512, 1024};

// The chunks of kChunks a thread needs for `width` threads with vectors of v to cover cols
// columns (plus `extra`: the SHIFT form's first vector, covered()), every chunk reaching into the
// row (the cached families' "every chunk reaches the row"); 0 where no count of kChunks does (the
// count would be 7, 9, ... or above 64).
int chunks_for(int64_t cols, int64_t width, int v, int64_t extra = 0) {
  const int64_t need = (cols + extra + width * v - 1) / (width * v);
  for (int c : kChunks)
    if (c >= need) return (c - 1) * width * v < cols ? c : 0;
  return 0;
}

// The kernel's source with the op's math appended (kernel_templates/<op>/<op>_rows.cuh: its
// RowMath; the kernels name it only through OP, so it may come after them). Each op's families
// then hash (and cache) their own math only.
Family common(const RowsOpSpec& s, const std::string& kind, const std::string& about) {
  const std::string path = "rows/rows_" + kind + ".cu";
  Family f(s.name + "_" + kind, path);
  f.source_text(std::string(embedded_file(path)) + "\n#include \"" + s.name + "_rows.cuh\"\n");
  f.op(s.name).dtypes({DType::f32, DType::bf16, DType::f16}).describe(about);
  return f;
}

Family warp_family(const RowsOpSpec& s) {
  Family f = common(s, "warp", "one warp per row, WARPS rows a block, the row cached in registers");
  f.param("VEC", kVec, "elements per load").param("CHUNKS", kChunks, "vectors a lane caches").param("WARPS", {1, 2, 4, 8, 16, 32}, "rows (warps) per block");
  f.restrict("vectors of at most 16 bytes", {"VEC"}, [](const Config& c, const Problem& p, const DeviceInfo&) { return c["VEC"] * elem(p) <= 16; })
      .restrict("the row fits the warp's registers", {"VEC", "CHUNKS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return covered(c, p) <= 32LL * c["VEC"] * c["CHUNKS"]; })
      .restrict("every chunk reaches the row", {"VEC", "CHUNKS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return (c["CHUNKS"] - 1) * 32LL * c["VEC"] < cols(p); })
      .restrict("cached floats within the register budget", {"VEC", "CHUNKS", "WARPS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return fits_registers(cached(c), 32 * c["WARPS"], shifted(c, p)); });
  f.kernels([s](const Config& c, const Problem& p) {
    return std::vector<std::string>{instance("rows_warp", s, p, {c["VEC"], c["CHUNKS"], c["WARPS"], shifted(c, p) ? 1 : 0})};
  });
  // The widest vectors with which a chunk count covers the row, 4 rows a block (the tuned entries
  // of rows.json: 8192x2048 bf16 VEC 8 CHUNKS 8). Invalid (so not offered) where no vector width
  // lets a warp's registers hold the row.
  f.defaults([](const Problem& p, const DeviceInfo&) {
    Config c;
    c.set("WARPS", 4);
    for (int v = cached_default_vec(p); v >= 1; v /= 2) {
      c.set("VEC", v);
      const int ch = chunks_for(cols(p), 32, v, covered(c, p) - cols(p));
      c.set("CHUNKS", std::max(ch, 1));
      if (ch > 0 && fits_registers(ch * v, 128, shifted(c, p))) break;
    }
    return c;
  });
  f.launch([](const Config& c, const Problem& p) {
    return one_step(unsigned((rows(p) + c["WARPS"] - 1) / c["WARPS"]), unsigned(32 * c["WARPS"]));
  });
  return f;
}

Family block_family(const RowsOpSpec& s) {
  Family f = common(s, "block", "one block per row, the row cached in registers, a block reduction");
  f.param("VEC", kVec, "elements per load").param("CHUNKS", kChunks, "vectors a thread caches").param("THREADS", kThreads, "threads per block");
  f.restrict("vectors of at most 16 bytes", {"VEC"}, [](const Config& c, const Problem& p, const DeviceInfo&) { return c["VEC"] * elem(p) <= 16; })
      .restrict("the row fits the block's registers", {"VEC", "CHUNKS", "THREADS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return covered(c, p) <= int64_t(c["THREADS"]) * c["VEC"] * c["CHUNKS"]; })
      .restrict("every chunk reaches the row", {"VEC", "CHUNKS", "THREADS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) {
                  return (c["CHUNKS"] - 1) * int64_t(c["THREADS"]) * c["VEC"] < cols(p);
                })
      .restrict("cached floats within the register budget", {"VEC", "CHUNKS", "THREADS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return fits_registers(cached(c), c["THREADS"], shifted(c, p)); })
      .restrict("one block per row fits the grid", {"VEC"},
                [](const Config&, const Problem& p, const DeviceInfo&) { return rows(p) <= INT_MAX; });
  f.kernels([s](const Config& c, const Problem& p) {
    return std::vector<std::string>{instance("rows_block", s, p, {c["VEC"], c["CHUNKS"], c["THREADS"], shifted(c, p) ? 1 : 0})};
  });
  f.launch([](const Config& c, const Problem& p) { return one_step(unsigned(rows(p)), unsigned(c["THREADS"])); });
  // The widest vectors, about four of them a thread: the fewest threads (a power of two, 64 to
  // 1024) for which a chunk count of at least four vectors covers the row within the register
  // budget (tuned entries of rows.json and of the unseen shapes: layernorm 8192x2048 bf16 VEC 8
  // CHUNKS 4 THREADS 64, rmsnorm 8192x2560 f16 VEC 4 CHUNKS 5 THREADS 128). Invalid where 1024
  // threads cannot hold the row. With VEC 1 (short odd rows, cached_default_vec) about eight a
  // thread: the LayerNorm sweep's best at 3000x1001 and 2048x2047 had 128 and 256 threads of 8.
  f.defaults([](const Problem& p, const DeviceInfo&) {
    Config c;
    const int v = cached_default_vec(p);
    const int per_thread = v == 1 ? 8 : 4;
    c.set("VEC", v);
    c.set("THREADS", 1024);
    c.set("CHUNKS", 1);
    for (int t : kThreads) {
      const int ch = chunks_for(cols(p), t, v, covered(c, p) - cols(p));
      if (ch == 0 || !fits_registers(ch * v, t, shifted(c, p)) || (int64_t(t) * v * per_thread < cols(p) && t < 1024)) continue;
      c.set("THREADS", t);
      c.set("CHUNKS", ch);
      break;
    }
    return c;
  });
  return f;
}

Family stream_family(const RowsOpSpec& s) {
  Family f = common(s, "stream", "one block per row, nothing cached: statistics in one pass, a second pass writes");
  f.param("VEC", kVec, "elements per load").param("THREADS", kThreads, "threads per block");
  f.restrict("whole vectors", {"VEC"}, [](const Config& c, const Problem& p, const DeviceInfo&) { return vector_ok(c, p); })
      .restrict("one block per row fits the grid", {"VEC"},
                [](const Config&, const Problem& p, const DeviceInfo&) { return rows(p) <= INT_MAX; });
  f.kernels([s](const Config& c, const Problem& p) {
    return std::vector<std::string>{instance("rows_stream", s, p, {c["VEC"], c["THREADS"]})};
  });
  f.launch([](const Config& c, const Problem& p) { return one_step(unsigned(rows(p)), unsigned(c["THREADS"])); });
  // Valid for every problem: the widest vector it allows, a block wide enough for long rows.
  f.defaults([](const Problem& p, const DeviceInfo&) {
    Config c;
    c.set("VEC", widest_vec(p));
    c.set("THREADS", cols(p) >= 8192 ? 1024 : cols(p) >= 2048 ? 512 : 256);
    return c;
  });
  return f;
}

// The slice of a row a CTA of the cluster caches (rows_cluster.cu, and rows_bulk.cu in shared
// memory: ceil(cols / CL) rounded up to a warp's sweep of 32 * VEC elements).
int64_t slice(const Config& c, const Problem& p) {
  const int64_t sweep = 32LL * c["VEC"];
  const int64_t per = (cols(p) + c["CL"] - 1) / c["CL"];
  return (per + sweep - 1) / sweep * sweep;
}

Family cluster_family(const RowsOpSpec& s) {
  Family f = common(s, "cluster", "a cluster of CL CTAs per row, each caching a slice, statistics through DSMEM");
  f.min_arch(90);
  f.param("VEC", kVec, "elements per load").param("CL", {2, 4, 8}, "CTAs per cluster (one row)")
      .param("CHUNKS", kChunks, "vectors a thread caches").param("THREADS", {128, 256, 512, 1024}, "threads per CTA");
  f.restrict("whole vectors", {"VEC"}, [](const Config& c, const Problem& p, const DeviceInfo&) { return vector_ok(c, p); })
      .restrict("CL CTAs per row fit the grid", {"VEC", "CL"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return rows(p) * c["CL"] <= INT_MAX; })
      .restrict("every CTA's slice fits its registers", {"VEC", "CL", "CHUNKS", "THREADS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return slice(c, p) <= int64_t(c["THREADS"]) * c["VEC"] * c["CHUNKS"]; })
      .restrict("every chunk reaches the slice", {"VEC", "CL", "CHUNKS", "THREADS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) {
                  return (c["CHUNKS"] - 1) * int64_t(c["THREADS"]) * c["VEC"] < slice(c, p);
                })
      .restrict("cached floats within the register budget", {"VEC", "CL", "CHUNKS", "THREADS"},
                [](const Config& c, const Problem&, const DeviceInfo&) { return fits_registers(cached(c), c["THREADS"]); })
      // A row a single block holds gains nothing from a cluster's extra barrier and exchange.
      .restrict("the row is too long for one block", {"VEC", "CL"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return cols(p) > 1024LL * c["VEC"] * 8; });
  f.kernels([s](const Config& c, const Problem& p) {
    return std::vector<std::string>{instance("rows_cluster", s, p, {c["VEC"], c["CHUNKS"], c["THREADS"], c["CL"]})};
  });
  f.launch([](const Config& c, const Problem& p) { return one_step(unsigned(rows(p) * c["CL"]), unsigned(c["THREADS"])); });
  return f;
}

// rows_bulk.cu's slice (slice() above) in bytes.
int64_t bulk_slice_bytes(const Config& c, const Problem& p) { return slice(c, p) * elem(p); }

// Whether every row of p is whole 16-byte lines (x aligned, rows a multiple of 16 bytes apart and
// long): the bulk copies then move whole slices. Else a slice may begin inside a line and its
// buffer is 16 bytes longer (rows_bulk.cu's SliceLayout; the kernel tests the same from its pointers).
bool whole_lines(const Problem& p) {
  return p.align >= 16 && (cols(p) * elem(p)) % 16 == 0 && (p.ld[0] * elem(p)) % 16 == 0;
}

// One of rows_bulk.cu's slice buffers: the slice, 16 bytes more where rows begin inside a line.
int64_t bulk_buffer_bytes(const Config& c, const Problem& p) { return bulk_slice_bytes(c, p) + (whole_lines(p) ? 0 : 16); }

// rows_bulk.cu's dynamic shared memory: STAGES buffers.
int64_t bulk_buffers_bytes(const Config& c, const Problem& p) { return c["STAGES"] * bulk_buffer_bytes(c, p); }

Family bulk_family(const RowsOpSpec& s) {
  Family f = common(s, "bulk", "the row (a cluster of CL CTAs: a slice each) in shared memory through bulk copies, statistics as pieces land");
  f.min_arch(90);
  f.param("VEC", kVec, "elements per shared-memory read and store").param("THREADS", {128, 256, 512, 1024}, "threads per CTA")
      .param("CL", {1, 2, 4, 8, 16}, "CTAs per cluster (one row)").param("PIECES", {1, 2, 4, 8}, "bulk copies a slice arrives in")
      .param("RPC", {1, 2, 4, 8, 16}, "rows a cluster serves in turn").param("STAGES", {1, 2}, "slice buffers (2: the next row's copies in flight)")
      .param("STORE", {0, 1}, "1: results staged in shared memory and bulk-stored")
      .param("LB", {0, 1}, "1: load-balancing cluster scheduling (CL > 1)");
  // Rows that start inside a 16-byte line (odd vocabularies: 50257 columns) are served: the kernel
  // moves their whole lines with bulk copies and the ragged ends element by element, and reads its
  // vectors from shared memory at positions aligned whatever x's alignment. Ops with weight and
  // bias vectors read those from global memory at the row's columns, so they keep the vector rule
  // and whole lines.
  const bool any_alignment = s.vectors_per_row == 0;
  f.restrict("whole vectors", {"VEC"},
             [any_alignment](const Config& c, const Problem& p, const DeviceInfo&) {
               return any_alignment ? c["VEC"] * elem(p) <= 16 : vector_ok(c, p);
             })
      .restrict("bulk copies move 16-byte granules", {"VEC"},
                [any_alignment](const Config&, const Problem& p, const DeviceInfo&) {
                  return any_alignment || whole_lines(p);
                })
      .restrict("CL CTAs per row fit the grid", {"VEC", "CL"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return rows(p) * c["CL"] <= INT_MAX; })
      .restrict("the slice fits shared memory", {"VEC", "CL"},
                [](const Config& c, const Problem& p, const DeviceInfo& d) {
                  return bulk_buffer_bytes(c, p) + 1024 <= d.max_smem_per_block_optin; // 1 KB: the static barriers and stats
                })
      // A cluster only where one CTA's share would be large: shorter rows gain nothing from its
      // barriers and exchange.
      .restrict("a cluster only for rows over 32 KB", {"VEC", "CL"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return c["CL"] == 1 || cols(p) * elem(p) > 32 * 1024; })
      .restrict("every thread has a vector of its slice", {"VEC", "CL", "THREADS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return int64_t(c["THREADS"]) * c["VEC"] * elem(p) <= bulk_slice_bytes(c, p); })
      .restrict("every piece at least a warp's sweep", {"VEC", "CL", "PIECES"},
                [](const Config& c, const Problem& p, const DeviceInfo&) {
                  return c["PIECES"] == 1 || bulk_slice_bytes(c, p) >= int64_t(c["PIECES"]) * 32 * c["VEC"] * elem(p);
                })
      .restrict("a cluster serves no more rows than there are", {"VEC", "CL", "PIECES", "RPC"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return c["RPC"] == 1 || c["RPC"] < rows(p); })
      .restrict("a second buffer only when a next row can use it", {"VEC", "CL", "PIECES", "RPC", "STAGES"},
                [](const Config& c, const Problem&, const DeviceInfo&) { return c["STAGES"] == 1 || c["RPC"] > 1; })
      .restrict("the slice buffers fit shared memory", {"VEC", "CL", "PIECES", "RPC", "STAGES"},
                [](const Config& c, const Problem& p, const DeviceInfo& d) {
                  return bulk_buffers_bytes(c, p) + 1024 <= d.max_smem_per_block_optin;
                })
      .restrict("bulk stores move 16-byte granules", {"VEC", "CL", "PIECES", "RPC", "STAGES", "STORE"},
                [](const Config& c, const Problem& p, const DeviceInfo&) {
                  return c["STORE"] == 0 || (whole_lines(p) && (p.ld[1] * elem(p)) % 16 == 0);
                })
      .restrict("a scheduling policy only for clusters", {"VEC", "CL", "PIECES", "RPC", "STAGES", "STORE", "LB"},
                [](const Config& c, const Problem&, const DeviceInfo&) { return c["LB"] == 0 || c["CL"] > 1; });
  // Configs recorded before RPC, STAGES, STORE and LB ran one row per cluster from one buffer,
  // stored from registers and launched with the default cluster policy.
  f.upgrade([](Config c) {
    if (!c.has("RPC")) c.set("RPC", 1);
    if (!c.has("STAGES")) c.set("STAGES", 1);
    if (!c.has("STORE")) c.set("STORE", 0);
    if (!c.has("LB")) c.set("LB", 0);
    return c;
  });
  f.kernels([s](const Config& c, const Problem& p) {
    return std::vector<std::string>{instance("rows_bulk", s, p, {c["VEC"], c["THREADS"], c["CL"], c["PIECES"], c["RPC"], c["STAGES"], c["STORE"]})};
  });
  // 16-byte vectors, the fewest CTAs a row whose slices are at most 32 KB, the slice in one piece,
  // the load-balancing policy for clusters; one row a cluster from one buffer, stored from
  // registers. With the cluster all-reduce by pushes (rows_common.cuh), 256-thread configs with
  // 32 KB slices and one piece were the best or within 1 % of it at every softmax row of rows.json
  // tried both ways (docs/runs/2026-11-25-h100-s15-retune-trials.jsonl.gz): 512x128256 CL 8
  // 86.9 us, 4096x32000 CL 2 173.2 against one 64 KB CTA in 4 pieces 174.6, 1x32000 CL 2 6.8
  // against 8.4, 1x128256 CL 8 7.0 against CL 4 in 4 pieces 8.6 (64 KB slices in 4 pieces).
  f.defaults([any_alignment](const Problem& p, const DeviceInfo&) {
    Config c;
    // Shared-memory vectors of 16 bytes whatever x's alignment where the op allows it.
    c.set("VEC", any_alignment ? 16 / elem(p) : widest_vec(p));
    int cl = 1;
    c.set("CL", cl);
    while (cl < 16 && bulk_slice_bytes(c, p) > 32 * 1024) c.set("CL", cl *= 2);
    // 256 threads, 128 where the slice has no vector for each of 256 (invalid below that: a row of
    // under 2 KB gains nothing from bulk copies).
    c.set("THREADS", bulk_slice_bytes(c, p) >= 256LL * c["VEC"] * elem(p) ? 256 : 128);
    c.set("PIECES", 1);
    c.set("RPC", 1);
    c.set("STAGES", 1);
    c.set("STORE", 0);
    c.set("LB", cl > 1 ? 1 : 0);
    return c;
  });
  f.launch([](const Config& c, const Problem& p) {
    LaunchPlan plan = one_step(unsigned((rows(p) + c["RPC"] - 1) / c["RPC"] * c["CL"]), unsigned(c["THREADS"]));
    plan.steps[0].dynamic_smem = unsigned(bulk_buffers_bytes(c, p));
    plan.steps[0].balance_clusters = c["LB"] == 1;
    return plan;
  });
  return f;
}

} // namespace

OpInfo rows_op_info(const RowsOpSpec& s) {
  OpInfo o;
  o.name = s.name;
  o.about = s.about;
  o.dims = {"rows", "cols"};
  o.ld_names = {"ldx", "ldy"};
  // rows fill grid.x (at most 2^31 - 1) and the kernels count columns in int (rows_common.cuh);
  // strides are 64-bit there (KtuneRowsArgs), bounded at 2^40 elements (4 TiB of f32 per row,
  // beyond any GPU) so that one read from a file stays far from int64 overflow in byte arithmetic.
  o.max_dim = INT32_MAX;
  o.max_ld = int64_t(1) << 40;
  o.scalars = s.scalars;
  o.min_ld = [](const std::vector<int64_t>& d, const std::string&) { return std::vector<int64_t>{d[1], d[1]}; };
  o.validate = [](const Problem& p) {
    if (p.dims[0] < 1 || p.dims[1] < 1) throw UsageError("invalid " + p.op + " problem " + p.key() + ": rows and cols must be >= 1");
    if (p.dtype == DType::tf32) throw UsageError("invalid " + p.op + " problem " + p.key() + ": tf32 is not a storage type");
  };
  const double fpe = s.flops_per_element;
  o.flops = [fpe](const Problem& p) { return fpe * double(p.dims[0]) * double(p.dims[1]); };
  const int vectors = s.vectors_per_row;
  o.min_bytes = [vectors](const Problem& p) {
    return double(element_bytes(p.dtype)) * (2.0 * double(p.dims[0]) * double(p.dims[1]) + vectors * double(p.dims[1]));
  };
  o.runner = "rows";
  o.row_vectors = vectors;
  o.reference_row = s.reference_row;
  o.row_op = s.code;
  o.families = [s] { return rows_families(s); };
  return o;
}

std::vector<Family> rows_families(const RowsOpSpec& s) {
  return {warp_family(s), block_family(s), stream_family(s), cluster_family(s), bulk_family(s)};
}

} // namespace ktune
