// What serves a problem before any measurement: an exact entry of the store or a table (unless
// cuBLAS was faster there by the margin), else the lenders the tuned index predicts within reach
// of cuBLAS and their families' neighbours, else the families' defaults, else cuBLAS; for row ops
// the lenders and defaults that first use times against each other. Each answer says why.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "ktune/error.h"
#include "runtime/runtime_impl.h"

namespace ktune {
namespace {

CandidateConfig candidate_of(const Lent& l) {
  CandidateConfig c;
  c.family = l.family;
  c.config = l.config;
  c.source = l.from->source;
  c.tuned = l.from->entry.problem.key();
  c.distance = l.distance;
  c.home_ratio = l.home_ratio;
  c.score = l.score;
  c.generalized = l.generalized;
  c.time_ms = l.from->entry.time_ms;
  c.cublas_ms = l.from->entry.cublas_ms;
  return c;
}

} // namespace

void Runtime::Impl::add(Table t, const std::string& source, SourceTier tier) {
  // An entry that passed only an older verification gate (core/trial.h) was never checked
  // under the conditions it would be served in (alpha, beta, least-aligned pointers): not
  // served. Said once per source, with the way out.
  const auto older = std::stable_partition(t.entries.begin(), t.entries.end(),
                                           [](const TableEntry& e) { return e.gate >= kGateVersion; });
  if (const size_t n = size_t(t.entries.end() - older)) {
    std::fprintf(stderr,
                 "ktune: %zu entr%s of %s passed only an older verification gate (%d; this ktune's is %d) and %s not "
                 "served (first: %s %s); re-run `ktune tune` on %s to verify %s again\n",
                 n, n == 1 ? "y" : "ies", source.c_str(), older->gate, kGateVersion, n == 1 ? "is" : "are",
                 older->problem.key().c_str(), older->family.c_str(), n == 1 ? "its problem" : "their problems",
                 n == 1 ? "it" : "them");
    t.entries.erase(older, t.entries.end());
  }
  std::vector<std::string> skipped;
  index->add(t, source, tier, &skipped);
  // A database or table written by another ktune may hold entries this one cannot run: say so
  // once per source and go on without them.
  if (!skipped.empty())
    std::fprintf(stderr, "ktune: skipped %zu invalid entr%s of %s (first: %s)\n", skipped.size(),
                 skipped.size() == 1 ? "y" : "ies", source.c_str(), skipped.front().c_str());
}

Selection Runtime::Impl::from_exact(const Lent& l) const {
  const TableEntry& e = l.from->entry;
  Selection s;
  s.provenance = Provenance::exact;
  s.family = e.family;
  s.config = l.config;
  s.generalized = l.generalized;
  s.source = l.from->source;
  s.tuned = e.problem.key();
  s.time_ms = e.time_ms;
  s.cublas_ms = e.cublas_ms;
  // The kernel must have beaten cuBLAS by the margin first use demands (measure_margin): a
  // recorded lead smaller than that is within the noise of two timings taken minutes apart (an
  // H100 tune recorded gemm_wgmma 1.8 % ahead at f16 2048x4096x4096 where a bench of the same
  // day measured it 13 % behind), and cuBLAS is the promise.
  if (s.cublas_ms && *s.time_ms >= *s.cublas_ms * (1.0 - opts.measure_margin)) {
    s.provenance = Provenance::cublas;
    s.why = (*s.cublas_ms < *s.time_ms ? "tuned for this problem, but cuBLAS was faster there"
                                       : "tuned for this problem, but not faster than cuBLAS there by the margin") +
            fmt(" (%.4f ms against %.4f ms, margin %.0f %%)", *s.cublas_ms, *s.time_ms, 100 * opts.measure_margin);
  } else {
    s.why = "tuned for this problem" +
            (s.cublas_ms ? fmt(" (%.4f ms, cuBLAS %.4f ms)", *s.time_ms, *s.cublas_ms) : std::string());
    // Recorded on another device model of this arch, by a lead that may not carry over: the
    // entry's config is timed against cuBLAS here at first use (one candidate).
    const std::string& there = l.from->device_name;
    if (s.cublas_ms && opts.arch.empty() /* a real device, not a nominal one */ && !there.empty() &&
        there != device.name && *s.cublas_ms < *s.time_ms * kTrustOtherDevice && opts.measure_untuned) {
      s.candidates.push_back(candidate_of(l));
      s.measure_pending = true;
      s.why = "tuned for this problem on " + there + fmt(" (%.2fx cuBLAS there)", *s.cublas_ms / *s.time_ms) +
              ": timed against cuBLAS on " + device.name + " at first use";
    }
  }
  return s;
}

// Appends to cands the neighbours (Family::neighbors_of) of the candidates at `from`, in that
// order, those valid for p and not already there, up to kMaxNeighbours a family. Each keeps its
// source's provenance (source, tuned problem, distance) but no score or recorded times: those were
// measured for the source's config, not for this one. GEMM takes them from the first lender of
// each family (its best scored), every family's: at decode shapes gemm_skinny16 and gemm_wgmma both
// lend, and when the decode family came first its neighbours alone cost 32x6144x4096 the swapped
// wgmma form that was its fastest kernel (66.2 against 68.9 TFLOPS; docs/runs/
// performance-log-2026-11.md, "Decode shapes nobody tuned").
void Runtime::Impl::add_neighbours(std::vector<CandidateConfig>& cands, const Problem& p,
                                   const std::vector<size_t>& from) const {
  if (!opts.time_neighbours) return;
  std::map<std::string, size_t> added; // neighbours a family so far
  for (size_t i : from) {
    const CandidateConfig source = cands[i]; // a copy: cands grows below
    const Family* f = family(source.family);
    if (!f) continue;
    for (const Config& n : f->neighbors_of(source.config, p, device)) {
      if (added[source.family] == kMaxNeighbours) break;
      if (!f->valid(n, p, device)) continue;
      const bool seen = std::any_of(cands.begin(), cands.end(), [&](const CandidateConfig& c) {
        return c.family == source.family && c.config == n;
      });
      if (seen) continue;
      CandidateConfig d = source;
      d.config = n;
      d.neighbour = true;
      d.score = 0;
      d.home_ratio = 1;
      d.time_ms.reset();
      d.cublas_ms.reset();
      cands.push_back(std::move(d));
      ++added[source.family];
    }
  }
}

// The choice before any measurement at p.
Selection Runtime::Impl::select(const GemmProblem& p) const {
  // tf32 names a compute mode (RuntimeOptions::tf32x3), not what A, B and C hold.
  if (p.dtype == DType::tf32)
    throw UsageError("no kernel family can serve " + p.key() +
                     ": tf32 is not a storage type (f32 problems opt in to the "
                     "tensor cores with RuntimeOptions::tf32x3)");
  if (const auto ex = index->exact(p); !ex.empty()) return from_exact(ex.front());
  Selection s;
  s.provenance = Provenance::cublas;
  for (const Lent& l : index->lenders(p, kCandidatesPerFamily)) {
    if (l.score < kMeasureFloor || s.candidates.size() == kMaxCandidates) continue;
    s.candidates.push_back(candidate_of(l));
  }
  {
    std::set<std::string> first; // each family's best lender
    std::vector<size_t> from;
    for (size_t i = 0; i < s.candidates.size(); ++i)
      if (first.insert(s.candidates[i].family).second) from.push_back(i);
    add_neighbours(s.candidates, p, from);
  }
  if (s.candidates.empty() && !index->has_group(p)) {
    // Nothing of this dtype is tuned on this arch (a GPU nobody tuned): the families' defaults
    // are the only kernels there are, and first use measures them against cuBLAS like lenders.
    for (const auto& f : index->families()) {
      if (!f.has_default() || f.op() != "gemm") continue;
      Config c = f.default_config(p, device);
      if (!f.valid(c, p, device)) continue;
      CandidateConfig d;
      d.family = f.name();
      d.config = std::move(c);
      d.source = "default";
      s.candidates.push_back(std::move(d));
      if (s.candidates.size() == kCandidatesPerFamily) break;
    }
    if (!s.candidates.empty()) s.provenance = Provenance::default_config;
  }
  if (s.candidates.empty()) {
    const auto all = index->lenders(p, 1);
    s.why = all.empty()
                ? "no tuned config can serve this problem: cuBLAS"
                : "no tuned config is predicted within reach of cuBLAS here (best: " + all.front().from->entry.family +
                      " tuned for " + all.front().from->entry.problem.key() +
                      fmt(", %.2fx cuBLAS there, log distance %.2f, predicted %.2fx here): cuBLAS",
                          all.front().home_ratio, all.front().distance, all.front().score);
    return s;
  }
  if (s.provenance == Provenance::cublas) s.provenance = Provenance::nearest;
  const CandidateConfig& top = s.candidates.front();
  adopt(s, top);
  s.measure_pending = true;
  s.why = top.tuned.empty()
              ? "nothing of this dtype is tuned here: " + std::to_string(s.candidates.size()) +
                    " family default(s) to time against cuBLAS at first use"
              : std::to_string(s.candidates.size()) +
                    " candidate(s) to time against cuBLAS at first use (best predicted: " + top.family + " tuned for " +
                    top.tuned + fmt(", %.2fx cuBLAS there, %.2fx predicted here)", top.home_ratio, top.score);
  if (!opts.measure_untuned) return unmeasured(std::move(s), "measuring is off");
  return s;
}

// An op without a baseline library (the row ops): its exact entry, else candidates timed against
// each other at first use: the nearest lender of each family that serves p (best ranked first;
// home speedups are unknown, so the score ranks by distance) and each family's default that is
// valid for p. Which family wins moves with the row length (on the H100 a bulk config lent from
// 16384x4096 ran a row op at 8192x2048 at 71 % of the copy rate where the one-warp-per-row
// default reaches 98 %: docs/runs/performance-log-2026-11.md, "Row ops at shapes no table holds"), so distance
// alone is not a rule worth trusting. Until measured, the first candidate runs.
Selection Runtime::Impl::select_generic(const Problem& p) const {
  if (const auto ex = index->exact(p); !ex.empty()) return from_exact(ex.front());
  Selection s;
  std::set<std::string> seen; // family + config: a default equal to a lender is offered once
  for (const Lent& l : index->lenders(p, 1)) {
    if (s.candidates.size() == kMaxRowCandidates) break;
    CandidateConfig c = candidate_of(l);
    if (seen.insert(c.family + c.config.to_json()).second) s.candidates.push_back(std::move(c));
  }
  const bool lent = !s.candidates.empty();
  for (const auto& f : index->families()) {
    if (s.candidates.size() == kMaxRowCandidates) break;
    if (f.op() != p.op || !f.has_default()) continue;
    Config c = f.default_config(p, device);
    if (!f.valid(c, p, device) || !seen.insert(f.name() + f.canonical(c).to_json()).second) continue;
    CandidateConfig d;
    d.family = f.name();
    d.config = f.canonical(c);
    d.source = "default";
    s.candidates.push_back(std::move(d));
  }
  if (s.candidates.empty()) throw UsageError("no kernel family can serve " + p.key());
  // Where a family declares neighbours (attention_decode: its rule's nearest alternatives), those
  // of its default, then of its lender: the default is the rule's config for this very shape, a
  // lender was tuned for another.
  {
    std::vector<size_t> from;
    for (int pass = 0; pass < 2; ++pass)
      for (size_t i = 0; i < s.candidates.size(); ++i)
        if ((s.candidates[i].source == "default") == (pass == 0)) from.push_back(i);
    add_neighbours(s.candidates, p, from);
  }
  s.provenance = lent ? Provenance::nearest : Provenance::default_config;
  adopt(s, s.candidates.front());
  s.measure_pending = s.candidates.size() > 1 && opts.measure_untuned;
  const std::string first = lent ? "nearest tuned problem " + *s.tuned + fmt(" (log distance %.2f)", s.distance)
                                 : "nothing of this op and dtype is tuned near: " + s.family + "'s default";
  s.why = s.measure_pending ? std::to_string(s.candidates.size()) +
                                  " candidates (lenders, family defaults and their neighbours) to time at first use; "
                                  "until then " + first
                            : first;
  return s;
}

// Where no measurement can be made: the best lender only if predicted clearly faster.
Selection Runtime::Impl::unmeasured(Selection s, const std::string& reason) {
  s.measure_pending = false;
  // An exact entry waiting for its first-use check (recorded on another device, kTrustOtherDevice)
  // runs as recorded, as it did before that check existed.
  if (s.provenance == Provenance::exact) {
    s.why = reason + ": the tuned entry as recorded" +
            (s.cublas_ms && s.time_ms ? fmt(" (%.2fx cuBLAS there)", *s.cublas_ms / *s.time_ms) : std::string());
    return s;
  }
  if (s.candidates.empty() || s.candidates.front().score < kTrustUnmeasured) {
    s.provenance = Provenance::cublas;
    s.why = reason + ": cuBLAS, since no candidate is predicted " + fmt("%.2fx", kTrustUnmeasured) +
            " faster than cuBLAS" + (s.candidates.empty() ? "" : fmt(" (best %.2fx)", s.candidates.front().score));
  } else {
    s.why = reason + ": " + s.family + fmt(" predicted %.2fx cuBLAS", s.candidates.front().score);
  }
  return s;
}

Selection Runtime::best_config(const GemmProblem& p) const {
  const std::string key = p.key();
  {
    std::lock_guard<std::mutex> lk(impl_->sel_mu);
    if (auto it = impl_->selections.find(key); it != impl_->selections.end()) return it->second;
  }
  p.validate();
  Selection s = impl_->select(p);
  std::lock_guard<std::mutex> lk(impl_->sel_mu);
  return impl_->selections.emplace(key, std::move(s)).first->second;
}

Selection Runtime::best_config(const Problem& p) const {
  if (p.op == "gemm") return best_config(GemmProblem::from(p));
  // An op registered after the index was built (a user kernel's spec loaded since, e.g. from
  // Python): its entries and family join the index first.
  if (impl_->index_ops != ops().size()) impl_->refresh_index();
  const Problem served = serving_problem(p); // the choice is made and kept for it (OpInfo::serve_as)
  const std::string key = served.key();
  {
    std::lock_guard<std::mutex> lk(impl_->sel_mu);
    if (auto it = impl_->selections.find(key); it != impl_->selections.end()) return it->second;
  }
  validate(p);
  Selection s = impl_->select_generic(served);
  std::lock_guard<std::mutex> lk(impl_->sel_mu);
  return impl_->selections.emplace(key, std::move(s)).first->second;
}

} // namespace ktune
