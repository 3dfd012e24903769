#include "db/lending.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <utility>

#include "ktune/error.h"
#include "core/embedded.h"

namespace ktune {
namespace {

std::string base_arch(const std::string& arch) {
  return !arch.empty() && arch.back() == 'a' ? arch.substr(0, arch.size() - 1) : arch;
}

// A tuned shape's config serves another problem as the same kernel launched on other sizes: the
// key of p's own tuned form (leading dimensions at their minimum, p's alignment class).
std::string tuned_key(const Problem& p) {
  Problem q = Problem::make(p.op, p.dims, p.layout, p.dtype);
  q.align = p.align;
  return q.key();
}

// Storage flags that differ between two layouts of one op, a position each (GEMM: one per operand
// stored in the other order).
int layout_differences(const std::string& a, const std::string& b) {
  int n = int(a.size() > b.size() ? a.size() - b.size() : b.size() - a.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += a[i] != b[i];
  return n;
}

double home_ratio(const TableEntry& e) {
  return e.cublas_ms && *e.cublas_ms > 0 && e.time_ms > 0 ? *e.cublas_ms / e.time_ms : 1.0;
}

Lent lent(const IndexedEntry& ie, const std::pair<Config, bool>& form) {
  Lent l;
  l.from = &ie;
  l.family = ie.entry.family;
  l.config = form.first;
  l.generalized = form.second;
  l.home_ratio = home_ratio(ie.entry);
  return l;
}

} // namespace

TunedIndex::TunedIndex(DeviceInfo device) : device_(std::move(device)), families_(builtin_families()) {}

const Family* TunedIndex::family(const std::string& name) const {
  for (const auto& f : families_)
    if (f.name() == name) return &f;
  return nullptr;
}

bool TunedIndex::has_group(const Problem& p) const {
  for (const auto& e : entries_)
    if (e->entry.problem.op == p.op && e->entry.problem.dtype == p.dtype) return true;
  return false;
}

size_t TunedIndex::add(const Table& t, const std::string& source, SourceTier tier, std::vector<std::string>* skipped,
                       bool any_arch) {
  if (!any_arch && base_arch(t.arch) != base_arch(device_.arch)) return 0;
  size_t added = 0;
  for (const auto& e : t.entries) {
    // Judged where it was recorded (its arch's limits); whether it serves a problem here is
    // serves()'s question, against this device.
    const std::string why = e.arch.empty() ? invalid_reason(e, device_) : invalid_reason(e);
    if (!why.empty()) {
      if (skipped) skipped->push_back(source + ": " + e.problem.key() + " " + e.family + ": " + why);
      continue;
    }
    const std::string key = e.problem.key();
    const bool dup = std::any_of(entries_.begin(), entries_.end(), [&](const auto& x) {
      return x->entry.family == e.family && x->entry.problem.key() == key;
    });
    if (dup) continue;
    entries_.push_back(std::make_unique<IndexedEntry>(IndexedEntry{e, source, tier, t.device_name}));
    ++added;
  }
  return added;
}

std::optional<std::pair<Config, bool>> TunedIndex::serves(const IndexedEntry& ie, const Problem& p,
                                                          const std::string& name) const {
  const Family* f = family(name.empty() ? ie.entry.family : name);
  if (!f) return std::nullopt;
  try {
    const Config c = f->canonical(Config::from_json(ie.entry.config_json));
    if (f->valid(c, p, device_)) return std::make_pair(c, false);
    for (const Config& g : f->generalized(c))
      if (f->valid(g, p, device_)) return std::make_pair(g, true);
  } catch (const Error&) {
  }
  return std::nullopt;
}

std::vector<Lent> TunedIndex::exact(const Problem& p) const {
  const std::string key = tuned_key(p);
  std::vector<Lent> out;
  for (const auto& ie : entries_) {
    if (ie->entry.problem.key() != key) continue;
    auto c = serves(*ie, p);
    if (!c) continue;
    Lent l = lent(*ie, *c);
    l.score = l.home_ratio;
    out.push_back(std::move(l));
  }
  if (out.empty()) return out;
  // The most trusted tier alone: a user's own measurement on their GPU outranks a shipped one.
  const SourceTier top = std::min_element(out.begin(), out.end(), [](const Lent& a, const Lent& b) {
                           return a.from->tier < b.from->tier;
                         })->from->tier;
  out.erase(std::remove_if(out.begin(), out.end(), [&](const Lent& l) { return l.from->tier != top; }), out.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const Lent& a, const Lent& b) { return a.from->entry.time_ms < b.from->entry.time_ms; });
  return out;
}

std::vector<Lent> TunedIndex::lenders(const Problem& p, size_t per_family, const std::string& only) const {
  const std::string key = tuned_key(p);
  // The op p's op lends from, and the problem p stands for there.
  const OpInfo::LendsFrom& from = op_info(p.op).lends_from;
  std::optional<Problem> as;
  if (!from.op.empty()) as = from.as(p);
  std::vector<Lent> all;
  for (const auto& ie : entries_) {
    const TableEntry& e = ie->entry;
    if (!lends_across(e.problem.dtype, p.dtype)) continue;
    std::string serving = e.family; // the family that would run p
    const Problem* near = &p;       // what the distance is measured from
    if (e.problem.op != p.op) {
      if (!as || e.problem.op != from.op) continue;
      const auto f = std::find_if(from.families.begin(), from.families.end(),
                                  [&](const auto& m) { return m.first == e.family; });
      if (f == from.families.end()) continue;
      serving = f->second;
      near = &*as;
    } else if (e.problem.key() == key) {
      continue; // exact(): measured where it stands
    }
    if (!only.empty() && serving != only) continue;
    auto c = serves(*ie, p, serving);
    if (!c) continue;
    Lent l = lent(*ie, *c);
    l.family = serving;
    l.distance = log_distance(*near, e.problem) + (e.problem.align != near->align ? kAlignPenalty : 0.0) +
                 kLayoutPenalty * layout_differences(e.problem.layout, near->layout) +
                 (e.problem.dtype != p.dtype ? kDtypePenalty : 0.0);
    // A speedup recorded in another alignment class says how cuBLAS handles that class as much as
    // how fast the kernel is (cuBLAS bf16 runs 2999^3 at a seventh of its aligned rate), so it does
    // not carry over: such a lender predicts from a neutral ratio of 1. Otherwise the unaligned
    // public entries (3-4x cuBLAS at home) outranked every aligned lender at aligned untuned shapes
    // and took the family's slots with configs tuned for packed, bounds-checked tiles.
    const double carried = e.problem.align == near->align ? l.home_ratio : 1.0;
    const Family* f = family(serving); // serves() found it
    l.score = carried * std::exp(-f->lend_decay().value_or(kLendDecay) * l.distance);
    all.push_back(std::move(l));
  }
  // Best score first; ties to the nearer, then the smaller key, so that the order does not depend
  // on the order tables were loaded in.
  std::sort(all.begin(), all.end(), [](const Lent& a, const Lent& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.distance != b.distance) return a.distance < b.distance;
    return a.from->entry.problem.key() < b.from->entry.problem.key();
  });
  std::vector<Lent> out;
  std::map<std::string, size_t> taken;
  for (auto& l : all) {
    size_t& n = taken[l.family];
    if (n >= per_family) continue;
    // The same config lent by two problems is one candidate.
    const bool same = std::any_of(out.begin(), out.end(), [&](const Lent& o) {
      return o.family == l.family && o.config == l.config;
    });
    if (same) continue;
    ++n;
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<std::pair<Table, std::string>> shipped_tables(const std::string& arch, bool tf32x3) {
  const std::string base = base_arch(arch);
  std::vector<std::pair<Table, std::string>> out;
  // Every embedded table of the arch: tables/<arch>.json and tables/<arch>-<anything>.json, so that
  // an op's table ships by being added to configs/tables/. The 3xTF32 one (an opt-in numerics)
  // only when asked for, first; then <arch>.json; then the others by name.
  const std::string tf = base + "-tf32x3";
  std::vector<std::pair<std::string, std::string_view>> found; // name, text
  for (const auto& f : embedded_files()) {
    const std::string path(f.path);
    if (path.rfind("tables/", 0) != 0 || path.size() < 12 || path.compare(path.size() - 5, 5, ".json") != 0) continue;
    const std::string name = path.substr(7, path.size() - 12);
    if ((name == base || name.rfind(base + "-", 0) == 0) && (tf32x3 || name != tf)) found.emplace_back(name, f.text);
  }
  auto rank = [&](const std::string& n) { return n == tf ? 0 : n == base ? 1 : 2; };
  std::sort(found.begin(), found.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(rank(a.first), a.first) < std::make_pair(rank(b.first), b.first);
  });
  for (const auto& [name, text] : found) {
    Table t = parse_table(std::string(text), "shipped table " + name);
    t.arch = arch;
    for (auto& e : t.entries) e.arch = arch;
    out.emplace_back(std::move(t), "shipped table " + name);
  }
  return out;
}

} // namespace ktune
