#include "ktune/runtime.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <unordered_map>

#include "db/store.h"
#include "db/table.h"
#include "gemm/gemm_families.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/embedded.h"
#include "runtime/module.h"
#include "tuner/cublas.h"

namespace ktune {

const char* to_string(Provenance p) {
  switch (p) {
    case Provenance::exact: return "exact";
    case Provenance::nearest: return "nearest";
    case Provenance::default_config: return "default";
    case Provenance::cublas: return "cublas";
  }
  return "?";
}

namespace {

struct IndexEntry {
  TableEntry entry;
  std::string source;
};

// Problems that may lend each other configs: same op, dtype, layout and alignment class (the
// arch is the runtime's own).
std::string group_key(const GemmProblem& p) {
  return std::string(to_string(p.dtype)) + "/" + p.layout_string() + "/a" + std::to_string(p.align);
}

// A tuned shape's config serves another problem as the same kernel launched on other sizes.
GemmProblem as_tuned(const GemmProblem& p) {
  GemmProblem q = GemmProblem::make(p.m, p.n, p.k, p.layout_string(), p.dtype);
  q.align = p.align;
  return q;
}

// The launch-ready form of a selection for one problem: cached per problem key.
struct Prepared {
  Selection sel;
  std::shared_ptr<Module> module; // null when the selection is cuBLAS
  LaunchPlan plan;
};

} // namespace

struct Runtime::Impl {
  RuntimeOptions opts;
  std::string arch;
  DeviceInfo device; // limits used for validity: the real device when there is one
  std::unique_ptr<Store> store;
  std::vector<Family> families = builtin_families();
  std::unordered_map<std::string, IndexEntry> exact;               // problem key -> entry
  std::map<std::string, std::vector<const IndexEntry*>> by_group;  // group key -> entries

  // Process-wide caches of this runtime; each behind its own mutex.
  mutable std::mutex sel_mu;
  mutable std::unordered_map<std::string, Selection> selections;
  std::mutex mod_mu;
  std::unordered_map<std::string, std::shared_ptr<Module>> modules; // compile cache key -> module
  std::unordered_map<std::string, std::shared_ptr<Prepared>> prepared; // by problem key (+ selection)
  std::mutex ws_mu;
  std::map<CUstream, std::shared_ptr<DeviceBuffer>> workspaces;
  std::mutex gpu_mu; // context creation, cuBLAS handle (not safe for concurrent use)
  std::unique_ptr<CudaContext> ctx;
  std::unique_ptr<Cublas> cublas;
  std::unique_ptr<Compiler> compiler;

  const Family* family(const std::string& name) const {
    for (const auto& f : families)
      if (f.name() == name) return &f;
    return nullptr;
  }

  void add(const Table& t, const std::string& source) {
    if (t.arch != arch) return;
    for (const auto& e : t.entries) {
      // Earlier sources win: the user's own store over extra tables over shipped tables.
      auto [it, inserted] = exact.emplace(e.problem.key(), IndexEntry{e, source});
      if (inserted) by_group[group_key(e.problem)].push_back(&it->second);
    }
  }

  Selection from_entry(const IndexEntry& ie, const Config& config, Provenance prov, double distance) const {
    Selection s;
    s.provenance = prov;
    s.family = ie.entry.family;
    s.config = config;
    s.generalized = !(config == family(ie.entry.family)->canonical(Config::from_json(ie.entry.config_json)));
    s.source = ie.source;
    s.tuned = ie.entry.problem.key();
    s.distance = distance;
    s.time_ms = ie.entry.time_ms;
    s.cublas_ms = ie.entry.cublas_ms;
    if (s.cublas_ms && *s.cublas_ms < *s.time_ms) s.provenance = Provenance::cublas;
    return s;
  }

  // The entry's config, or its general form, if either is valid for p.
  std::optional<Config> serves(const IndexEntry& ie, const GemmProblem& p) const {
    const Family* f = family(ie.entry.family);
    if (!f) return std::nullopt; // a table from a newer ktune may name families this one lacks
    try {
      const Config c = f->canonical(Config::from_json(ie.entry.config_json));
      if (f->valid(c, p, device)) return c;
      for (const Config& g : f->generalized(c))
        if (f->valid(g, p, device)) return g;
    } catch (const Error&) {
    }
    return std::nullopt;
  }

  Selection select(const GemmProblem& p) const {
    const GemmProblem q = as_tuned(p);
    if (auto it = exact.find(q.key()); it != exact.end())
      if (auto c = serves(it->second, p)) return from_entry(it->second, *c, Provenance::exact, 0);
    if (auto g = by_group.find(group_key(q)); g != by_group.end()) {
      const IndexEntry* best = nullptr;
      Config best_c;
      double best_d = 0;
      for (const IndexEntry* ie : g->second) {
        const double d = log_distance(q, ie->entry.problem);
        // Ties go to the smaller key, so that the choice does not depend on load order.
        if (best && (d > best_d || (d == best_d && ie->entry.problem.key() >= best->entry.problem.key()))) continue;
        auto c = serves(*ie, p);
        if (!c) continue;
        best = ie, best_c = *c, best_d = d;
      }
      if (best) return from_entry(*best, best_c, Provenance::nearest, best_d);
    }
    for (const auto& f : families)
      if (f.has_default()) {
        Config c = f.default_config(p, device);
        if (!f.valid(c, p, device)) continue;
        Selection s;
        s.provenance = Provenance::default_config;
        s.family = f.name();
        s.config = std::move(c);
        s.source = "default";
        return s;
      }
    throw Error("no kernel family can serve " + p.key() + " on " + arch);
  }
};

Runtime::Runtime(RuntimeOptions o) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.opts = std::move(o);
  if (m.opts.arch.empty()) {
    std::string why;
    const auto devs = list_devices(&why);
    if (devs.empty()) throw Error("ktune runtime: no GPU (" + why + ") and no arch given");
    if (m.opts.device < 0 || m.opts.device >= int(devs.size()))
      throw UsageError("ktune runtime: no GPU with ordinal " + std::to_string(m.opts.device));
    m.device = devs[size_t(m.opts.device)];
    m.arch = m.device.arch;
  } else {
    m.device = DeviceInfo::nominal(m.opts.arch);
    m.arch = m.opts.arch;
  }
  if (!m.opts.db_path.empty() && std::filesystem::exists(m.opts.db_path)) {
    m.store = std::make_unique<Store>(m.opts.db_path, /*read_only=*/true);
    if (const auto archs = m.store->best_archs(); std::find(archs.begin(), archs.end(), m.arch) != archs.end())
      m.add(m.store->export_table(m.arch), "store " + m.opts.db_path);
  }
  for (const auto& t : m.opts.tables) m.add(read_table_file(t), "table " + t);
  // sm_90a runs sm_90 code: its shipped tables are sm_90's.
  const std::string base = m.arch.back() == 'a' ? m.arch.substr(0, m.arch.size() - 1) : m.arch;
  auto add_shipped = [&](const std::string& name) {
    for (const auto& f : embedded_files())
      if (f.path == "tables/" + name + ".json") {
        Table t = parse_table(std::string(f.text), "shipped table " + name);
        t.arch = m.arch;
        for (auto& e : t.entries) e.arch = m.arch;
        m.add(t, "shipped table " + name);
      }
  };
  if (m.opts.tf32x3) add_shipped(base + "-tf32x3");
  if (m.opts.shipped_tables) add_shipped(base);
}

Runtime::~Runtime() = default;

const std::string& Runtime::arch() const { return impl_->arch; }
size_t Runtime::entries() const { return impl_->exact.size(); }

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

namespace {

// p with alpha, beta and the alignment class the pointers allow.
GemmProblem launched(const GemmProblem& problem, const float* A, const float* B, float* C, float alpha, float beta) {
  GemmProblem p = problem;
  p.alpha = alpha, p.beta = beta;
  p.align = GemmProblem::alignment_with_pointers(GemmProblem::alignment_of(p.eff_lda(), p.eff_ldb(), p.eff_ldc()), A, B, C);
  return p;
}

} // namespace

std::shared_ptr<void> Runtime::prepare(const std::string& key, const GemmProblem& p, const Selection& sel) {
  Impl& m = *impl_;
  if (m.device.ordinal < 0) throw Error("ktune::Runtime::gemm: this runtime was made for arch " + m.arch + " without a GPU");
  {
    std::lock_guard<std::mutex> lk(m.gpu_mu);
    if (!m.ctx) m.ctx = std::make_unique<CudaContext>(m.device.ordinal);
  }
  {
    std::lock_guard<std::mutex> lk(m.mod_mu);
    if (auto it = m.prepared.find(key); it != m.prepared.end()) return it->second;
  }
  auto prep = std::make_shared<Prepared>();
  prep->sel = sel;
  if (sel.provenance != Provenance::cublas) {
    const Family* f = m.family(sel.family);
    if (!f) throw UsageError("ktune::gemm: unknown family '" + sel.family + "'");
    const Config c = f->canonical(sel.config);
    const CompileRequest req = compile_request(*f, c, p, m.arch); // validates c for p
    const std::string ck = req.cache_key();
    std::shared_ptr<Module> mod;
    {
      std::lock_guard<std::mutex> lk(m.mod_mu);
      if (auto it = m.modules.find(ck); it != m.modules.end()) mod = it->second;
    }
    if (!mod) {
      std::vector<char> cubin;
      std::vector<std::string> names;
      // The store's binary cache first; NVRTC only on a miss.
      if (!m.store || !m.store->get_binary(ck, &cubin, &names)) {
        std::unique_lock<std::mutex> lk(m.gpu_mu);
        if (!m.compiler) m.compiler = std::make_unique<Compiler>(1);
        lk.unlock();
        const auto k = m.compiler->compile(req);
        cubin = k->cubin, names = k->lowered_names;
      }
      mod = std::make_shared<Module>(cubin, names, req.context);
      std::lock_guard<std::mutex> lk(m.mod_mu);
      mod = m.modules.emplace(ck, mod).first->second;
    }
    prep->module = mod;
    prep->plan = f->launch_plan(c, p);
  }
  std::lock_guard<std::mutex> lk(m.mod_mu);
  return m.prepared.emplace(key, prep).first->second;
}

void Runtime::launch(const std::shared_ptr<void>& prepared, const GemmProblem& p, const float* A, const float* B, float* C,
                     CUstream stream) {
  Impl& m = *impl_;
  const auto* prep = static_cast<const Prepared*>(prepared.get());
  CUcontext cur = nullptr;
  check_cu(driver().cuCtxGetCurrent(&cur), "cuCtxGetCurrent", "ktune::gemm");
  if (!cur) m.ctx->make_current();
  KtuneGemmArgs a = gemm_args(p, A, B, C, nullptr);
  if (!prep->module) {
    std::lock_guard<std::mutex> lk(m.gpu_mu);
    if (!m.cublas) m.cublas = std::make_unique<Cublas>();
    m.cublas->sgemm(p, a, stream);
    return;
  }
  std::shared_ptr<DeviceBuffer> ws;
  if (prep->plan.workspace_bytes) {
    // One workspace per stream: launches on one stream are ordered, so they may share it.
    std::lock_guard<std::mutex> lk(m.ws_mu);
    auto& slot = m.workspaces[stream];
    if (!slot || slot->bytes() < prep->plan.workspace_bytes)
      slot = std::make_shared<DeviceBuffer>(prep->plan.workspace_bytes, "workspace (split-K sums, packed operands) for " + p.key());
    ws = slot;
    a.workspace = ws->as<float>();
  }
  launch_gemm(*prep->module, prep->plan, a, stream);
}

void Runtime::gemm(const GemmProblem& problem, const float* A, const float* B, float* C, float alpha, float beta,
                   CUstream stream) {
  const GemmProblem p = launched(problem, A, B, C, alpha, beta);
  const std::string key = p.key();
  std::shared_ptr<void> prep;
  {
    std::lock_guard<std::mutex> lk(impl_->mod_mu);
    if (auto it = impl_->prepared.find(key); it != impl_->prepared.end()) prep = it->second;
  }
  if (!prep) prep = prepare(key, p, best_config(p));
  launch(prep, p, A, B, C, stream);
}

void Runtime::gemm(const GemmProblem& problem, const Selection& s, const float* A, const float* B, float* C, float alpha,
                   float beta, CUstream stream) {
  const GemmProblem p = launched(problem, A, B, C, alpha, beta);
  // Keyed apart from the per-problem cache of the plain gemm().
  const std::string key = p.key() + "|" + (s.provenance == Provenance::cublas ? "cublas" : s.family + s.config.to_json());
  launch(prepare(key, p, s), p, A, B, C, stream);
}

} // namespace ktune
