// Which tuned configs may serve a problem: the one rule the runtime's lookup and the tuner's warm
// starts share.
//
// An index holds the best entries of tuning tables (a user's database, tables given by hand, the
// tables shipped with ktune) for one device. For a problem it answers two questions:
//   exact(p)    the entries tuned for exactly p (every family, every source), fastest first;
//   lenders(p)  entries tuned for other problems of the same dtype, or of its sibling (bf16 and
//               f16: the same kernels but for the conversion), any layout, whose config (or
//               a general form of it, Family::generalized) is valid for p, ranked by a predicted
//               speedup over cuBLAS at p; with them the entries of the op p's op lends from
//               (OpInfo::lends_from), their configs in the counterpart family, at the distance
//               of the problem p stands for there.
//
// The prediction is deliberately simple: the speedup the entry recorded at its own problem
// (cuBLAS time / kernel time there), decayed by how far away that problem is,
//     score = home_ratio * exp(-decay * distance),
// (decay = kLendDecay, or the family's own, Family::lend_decay)
// (home_ratio counted as 1 when the alignment classes differ: cuBLAS's speed changes with the
// class, so a lead recorded in one says little about another), with distance the log distance
// over M, N, K (core/problem.cpp) plus kAlignPenalty when the alignment classes differ and
// kLayoutPenalty for each operand stored in the other order (a
// tiling tuned for row-major B is a candidate for column-major B, not a good guess), and
// kDtypePenalty when it was tuned in the sibling half type. A config far from home has no claim on being faster than cuBLAS;
// the runtime therefore measures the few best-scored lenders against cuBLAS at the new shape
// before it trusts one (runtime/first_use.cpp), and uses the score alone only where it cannot
// measure.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/table.h"
#include "ktune/config.h"
#include "ktune/device_info.h"
#include "ktune/family.h"

namespace ktune {

// Trust order of a table's source for exact answers: the user's own measurements first.
enum class SourceTier { user = 0, shipped = 1 };

struct IndexedEntry {
  TableEntry entry;
  std::string source; // "store PATH", "table PATH", "shipped table sm_90"
  SourceTier tier = SourceTier::user;
  std::string device_name; // the device its table was measured on ("" when unknown)
};

// One tuned config that can serve a problem.
struct Lent {
  const IndexedEntry* from = nullptr;
  // The family that serves the problem with config: the entry's own, or for an entry of the op
  // the problem's op lends from (OpInfo::lends_from), its counterpart.
  std::string family;
  Config config;          // canonical, or the first general form of it that is valid for the problem
  bool generalized = false;
  double distance = 0;    // 0 for an exact entry
  double home_ratio = 1;  // cuBLAS time / kernel time recorded at the tuned problem (1 when unknown)
  double score = 0;       // predicted speedup over cuBLAS at the asked problem
};

constexpr double kLendDecay = 0.4;     // per unit of log distance: e^-0.4 = 0.67 per factor e
constexpr double kAlignPenalty = 0.5;  // a config tuned for another alignment class
constexpr double kLayoutPenalty = 0.5; // per operand (A, B) whose storage order differs
// A config tuned in bf16 for an f16 problem or the other way round: the tensor cores run both at
// one rate and the kernels differ only in conversions, so a small penalty (a tuned entry of the
// problem's own dtype at the same shape always ranks first).
constexpr double kDtypePenalty = 0.25;
// Whether entries tuned in dtype `tuned` may lend to problems of dtype `asked`.
inline bool lends_across(DType tuned, DType asked) { return tuned == asked || (is_half(tuned) && is_half(asked)); }
// Lenders scored below this are not worth measuring: even a generous error in the prediction
// leaves them slower than cuBLAS. Low on purpose: the decay is a rough, family-blind guess (on
// the H100, gemm_tf32x3 configs kept their home speedup up to a log distance of 1.2, gemm_skinny
// ones lost up to half of it; docs/PERFORMANCE.md), and a measurement costs only a compile (about
// a second). 0.5 admits a lender of neutral ratio (another alignment class, or a tie with cuBLAS at
// home) up to a log distance of ~1.7: at 5000x3000x1000 bf16 the nearest aligned lender, 2048^3 at
// 0.97x home and 1.21 away, would be left out at 0.6, where its multicast neighbour ran at 0.90x.
constexpr double kMeasureFloor = 0.5;
// Without a measurement (no GPU at hand, a stream being captured, measuring turned off), a lender
// must be predicted this much faster than cuBLAS to be used.
constexpr double kTrustUnmeasured = 1.15;
// An exact entry measured on another device of the same arch (an H200's table on an H100: the same
// kernels, other memory and clocks) keeps its config, but a recorded lead over cuBLAS smaller than
// this is not carried over unmeasured: first use times it against cuBLAS here. The H200-tuned f16
// decode entry 1x4096x4096 led cuBLAS by 5 % there and trailed it by 4 % on an H100.
constexpr double kTrustOtherDevice = 1.15;

class TunedIndex {
 public:
  // device: the limits configs are checked against (the real device, or a nominal one for an arch).
  explicit TunedIndex(DeviceInfo device);
  TunedIndex(TunedIndex&&) = default;

  // Adds the entries of t whose arch is the device's (or t's arch's base when the device is an
  // 'a' variant). An entry that fails validation against its family (db/table.h invalid_reason:
  // unknown family or parameter, value out of domain, broken constraint on the nominal device
  // of its arch) is skipped; skipped
  // entries are reported in `skipped` as "source: problem family: reason". Returns the number
  // added. Within one (problem, family), the first source added wins. any_arch: take entries of
  // every arch (warm starts from another GPU; whether a config serves is still checked against
  // this index's device).
  size_t add(const Table& t, const std::string& source, SourceTier tier, std::vector<std::string>* skipped = nullptr,
             bool any_arch = false);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::string& arch() const { return device_.arch; }
  const DeviceInfo& device() const { return device_; }
  // Whether any entry of p's dtype exists (any shape, layout or alignment).
  bool has_group(const Problem& p) const;

  // Entries tuned for exactly p (shape, layout, dtype, alignment class) that serve p, from the
  // most trusted tier present, fastest recorded first.
  std::vector<Lent> exact(const Problem& p) const;
  // Entries of other problems (same dtype, any layout) that serve p, best score first; at most
  // per_family of each family (the best of each, so that one family's many entries cannot crowd
  // out another's), only family `only` when it is not empty.
  std::vector<Lent> lenders(const Problem& p, size_t per_family, const std::string& only = {}) const;

  // The config of e in canonical form, or a general form of it, valid for p in family `family`
  // (default: e's own); nullopt if none.
  std::optional<std::pair<Config, bool>> serves(const IndexedEntry& e, const Problem& p,
                                                const std::string& family = {}) const;

  // The built-in families the index judges entries with (null for an unknown name); the runtime
  // launches from the same descriptors.
  const Family* family(const std::string& name) const;
  const std::vector<Family>& families() const { return families_; }

 private:
  DeviceInfo device_;
  std::vector<Family> families_;
  // Stable addresses: Lent points into it.
  std::vector<std::unique_ptr<IndexedEntry>> entries_;
};

// The tables embedded in the library for arch ("sm_90a" reads sm_90's): the plain (f32) table,
// the row ops' (<arch>-rows.json),
// the half-precision one (<arch>-half.json, bf16 and f16), and with tf32x3 also the opt-in
// gemm_tf32x3 table. Each with its source name.
std::vector<std::pair<Table, std::string>> shipped_tables(const std::string& arch, bool tf32x3);

} // namespace ktune
