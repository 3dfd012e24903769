// ktune report: the page and its figures from a database built through the store, with known
// trials. No GPU. The figures' point counts are checked against what the store holds.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "db/store.h"
#include "ktune/config.h"
#include "test_paths.h"
#include "ktune/gemm_problem.h"

namespace {

using namespace ktune;
namespace fs = std::filesystem;

using CliResult = ktune::testing::CliRun;
using ktune::testing::run_ktune;

std::string bytes_of(const fs::path& p) { return ktune::testing::file_bytes(p.string()); }

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

// Every <svg ...>...</svg> of a text: id -> (data-points, elements of class "point" inside).
std::map<std::string, std::pair<size_t, size_t>> figures_of(const std::string& text) {
  std::map<std::string, std::pair<size_t, size_t>> out;
  const std::regex open("<svg[^>]*\\bid=\"([^\"]+)\"[^>]*\\bdata-points=\"([0-9]+)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), open); it != std::sregex_iterator(); ++it) {
    const size_t start = size_t(it->position(0));
    const size_t end = text.find("</svg>", start);
    const std::string body = text.substr(start, end - start);
    out[(*it)[1]] = {std::stoul((*it)[2]), count_of(body, "class=\"point\"")};
  }
  return out;
}

TrialRecord trial(const std::string& family, const std::string& config, double ms, TrialStatus st = TrialStatus::ok) {
  TrialRecord t;
  t.family = family;
  t.config_json = config;
  t.config_hash = fnv1a_hex(config);
  t.template_hash = "t1";
  t.status = st;
  if (st == TrialStatus::ok) t.timing = Timing{ms, ms, ms, ms, 10};
  else t.error = "failed <on purpose>";
  t.compile_s = 0.5, t.bench_s = 0.1;
  return t;
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("ktune-report-" + std::to_string(getpid()) + "-" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = dir_ / "t.db";
    Store s(db_.string());
    DeviceInfo d;
    d.name = "GPU <b>&\"quoted\"";
    d.arch = "sm_90";
    d.uuid = "uuid-1";
    d.sm_count = 132;
    const int64_t dev = s.device_id(d);

    // A: 256^3 f32: six gemm_simt trials (BM decides the time, ST varies, BN constant, ID unique
    // per trial), one of a family whose name needs escaping, one compile error. cuBLAS recorded.
    const int64_t a = s.problem_id(GemmProblem::make(256, 256, 256));
    const int bm[] = {64, 128, 64, 128, 64, 128}, st[] = {2, 3, 4, 2, 3, 4};
    for (int i = 0; i < 6; ++i) {
      const std::string c = "{\"BM\":" + std::to_string(bm[i]) + ",\"BN\":64,\"ST\":" + std::to_string(st[i]) +
                            ",\"ID\":" + std::to_string(i) + "}";
      s.record_trial(dev, a, "sm_90", trial("gemm_simt", c, (bm[i] == 64 ? 0.020 : 0.010) * (1 + 0.01 * i)));
    }
    s.record_trial(dev, a, "sm_90", trial("x<y&z", "{\"Q\":1}", 0.05));
    s.record_trial(dev, a, "sm_90", trial("gemm_simt", "{\"BM\":256,\"BN\":64,\"ST\":9,\"ID\":9}", 0, TrialStatus::compile_error));
    s.record_baseline(dev, a, "cublas", Timing{0.012, 0.012, 0.012, 0.012, 10}, 2.8);

    // B: 16x4096x4096 bf16: three ok gemm_skinny16 trials, a timeout; no cuBLAS time.
    const int64_t b = s.problem_id(GemmProblem::make(16, 4096, 4096, "NN", DType::bf16));
    for (int v : {2, 4, 8})
      s.record_trial(dev, b, "sm_90", trial("gemm_skinny16", "{\"VEC\":" + std::to_string(v) + ",\"KC\":256}", 0.03 + 0.001 * v));
    s.record_trial(dev, b, "sm_90", trial("gemm_skinny16", "{\"VEC\":16,\"KC\":256}", 0, TrialStatus::timeout));

    // C: only a crash.
    const int64_t c = s.problem_id(GemmProblem::make(1024, 1024, 1024));
    s.record_trial(dev, c, "sm_90", trial("gemm_simt", "{\"BM\":64}", 0, TrialStatus::crash));
    s.record_baseline(dev, c, "cublas", Timing{0.1, 0.1, 0.1, 0.1, 10}, 21);

    // What each figure should plot, from the store itself. C has one trial: no convergence plots,
    // a row of the single-trial table instead.
    size_t i = 1;
    for (int64_t p : {a, b, c}) {
      size_t ok = 0;
      if (s.trials(dev, p).size() <= 1) continue;
      for (const auto& t : s.trials(dev, p)) ok += t.status == TrialStatus::ok;
      char id[64];
      std::snprintf(id, sizeof id, "conv-trials-%02zu", i);
      expected_[id] = ok;
      std::snprintf(id, sizeof id, "conv-seconds-%02zu", i);
      expected_[id] = ok;
      ++i;
    }
    expected_["vs-cublas"] = 1;  // A only: B has no cuBLAS time, C no ok trial
    expected_["roofline"] = 2;   // A and B have a best
    expected_["importance"] = 2; // gemm_simt BM and ST; ID leaves no degrees of freedom, BN is constant,
                                 // x<y&z has one trial, gemm_skinny16's VEC (3 values in 3 trials) none
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_, db_;
  std::map<std::string, size_t> expected_;
};

TEST_F(ReportTest, WritesASelfContainedPageWithTheExpectedPoints) {
  const std::string before = bytes_of(db_);
  const fs::path out = dir_ / "report";
  const CliResult r = run_ktune("report --db " + q(db_) + " -o " + q(out));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(bytes_of(db_), before) << "the report must not write the database";

  const std::string html = bytes_of(out / "index.html");
  ASSERT_FALSE(html.empty());
  // Nothing fetched at view time: no URL, script, external style sheet, font or image.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("@font-face"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  for (size_t at = html.find("url("); at != std::string::npos; at = html.find("url(", at + 1))
    EXPECT_EQ(html.compare(at, 5, "url(#"), 0) << "only in-page references: " << html.substr(at, 40);
  const std::regex href("href=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), href); it != std::sregex_iterator(); ++it) {
    const std::string h = (*it)[1];
    EXPECT_TRUE(h == "data:," || (h.find(':') == std::string::npos && h.find('/') == std::string::npos)) << h;
    if (h != "data:,") {
      EXPECT_TRUE(fs::exists(out / h)) << h;
    }
  }

  // Every figure inline, with data-points equal to its point elements and to the store's rows.
  const auto figs = figures_of(html);
  EXPECT_EQ(figs.size(), expected_.size());
  EXPECT_NE(html.find("1 problem(s) with a single recorded trial"), std::string::npos);
  // Bars are labelled shape first (labels are cut to fit): A's bar says its shape.
  EXPECT_NE(html.find(">256x256x256 f32 NN<"), std::string::npos);
  EXPECT_NE(html.find("gemm/f32/NN/1024x1024x1024/a16</td>"), std::string::npos);
  for (const auto& [id, n] : expected_) {
    const auto it = figs.find(id);
    ASSERT_NE(it, figs.end()) << id;
    EXPECT_EQ(it->second.first, n) << id;
    EXPECT_EQ(it->second.second, n) << id;
  }

  // Each figure also as its own SVG file, the same points.
  size_t svgs = 0;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.path().extension() != ".svg") continue;
    ++svgs;
    const std::string svg = bytes_of(e.path());
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << e.path();
    EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos) << e.path();
    const auto f = figures_of(svg);
    ASSERT_EQ(f.size(), 1u) << e.path();
    const auto& [id, counts] = *f.begin();
    ASSERT_TRUE(expected_.count(id)) << id;
    EXPECT_EQ(counts.first, expected_[id]) << e.path();
    EXPECT_EQ(counts.second, expected_[id]) << e.path();
    EXPECT_EQ(count_of(svg, "<svg"), 1u);
  }
  EXPECT_EQ(svgs, expected_.size());

  // Text from the database is escaped.
  EXPECT_EQ(html.find("<b>&"), std::string::npos);
  EXPECT_NE(html.find("GPU &lt;b&gt;&amp;&quot;quoted&quot;"), std::string::npos);
  EXPECT_EQ(html.find("x<y&z"), std::string::npos);
  EXPECT_NE(html.find("x&lt;y&amp;z"), std::string::npos);
  // The roofs it had to assume say so; the importance says where it comes from.
  EXPECT_NE(html.find("3 TB/s (assumed)"), std::string::npos);
  EXPECT_NE(html.find("f32 peak 66.9 TFLOPS (assumed)"), std::string::npos);
  EXPECT_NE(html.find("bf16 peak 989.4 TFLOPS (assumed)"), std::string::npos);
  EXPECT_NE(html.find("exposes no importance"), std::string::npos);
}

TEST_F(ReportTest, GivenRoofsAreNotMarkedAssumed) {
  const fs::path out = dir_ / "r2";
  const CliResult r = run_ktune("report --db " + q(db_) + " -o " + q(out) + " --copy-tb-s 2.5 --peak-tflops 50");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string html = bytes_of(out / "index.html");
  EXPECT_NE(html.find("memory roof 2.5 TB/s (given)"), std::string::npos);
  EXPECT_NE(html.find("peak 50 TFLOPS (given)"), std::string::npos);
  EXPECT_EQ(html.find("(assumed)"), std::string::npos);
}

TEST_F(ReportTest, BadInputsAreRefusedAndTheDatabaseIsLeftAlone) {
  const std::string before = bytes_of(db_);
  const fs::path out = dir_ / "out";
  // Usage: exit 2.
  CliResult r = run_ktune("report --db " + q(dir_ / "missing.db") + " -o " + q(out));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "missing.db"));
  r = run_ktune("report --db " + q(db_));
  EXPECT_EQ(r.status, 2) << r.out;
  r = run_ktune("report --db " + q(db_) + " -o " + q(out) + " --copy-tb-s -1");
  EXPECT_EQ(r.status, 2) << r.out;
  r = run_ktune("report --db " + q(db_) + " -o " + q(out) + " --peak-tflops 0");
  EXPECT_EQ(r.status, 2) << r.out;
  r = run_ktune("report --db " + q(db_) + " -o " + q(out) + " --arch sm_80");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no trials for sm_80"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out)) << "a refused report writes nothing";

  // Run time: exit 1. Not a database; an output folder that cannot be made or is a file.
  const fs::path junk = dir_ / "junk.db";
  std::ofstream(junk) << "this is not SQLite, not even close; padding padding padding padding padding padding\n";
  const std::string junk_before = bytes_of(junk);
  r = run_ktune("report --db " + q(junk) + " -o " + q(out));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("junk.db"), std::string::npos) << r.out;
  EXPECT_EQ(bytes_of(junk), junk_before);
  const fs::path file = dir_ / "a-file";
  std::ofstream(file) << "x";
  r = run_ktune("report --db " + q(db_) + " -o " + q(file / "sub"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("cannot create the report folder"), std::string::npos) << r.out;
  r = run_ktune("report --db " + q(db_) + " -o " + q(file));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("not a folder"), std::string::npos) << r.out;

  EXPECT_EQ(bytes_of(db_), before);
}

TEST_F(ReportTest, SeveralArchsNeedArch) {
  {
    Store s(db_.string());
    DeviceInfo d;
    d.name = "Other";
    d.arch = "sm_80";
    d.uuid = "uuid-2";
    const int64_t dev = s.device_id(d);
    const int64_t p = s.problem_id(GemmProblem::make(64, 64, 64));
    s.record_trial(dev, p, "sm_80", trial("gemm_simt", "{\"BM\":64}", 0.01));
  }
  const std::string before = bytes_of(db_);
  CliResult r = run_ktune("report --db " + q(db_) + " -o " + q(dir_ / "o"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--arch"), std::string::npos) << r.out;
  r = run_ktune("report --db " + q(db_) + " -o " + q(dir_ / "o") + " --arch sm_80");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto figs = figures_of(bytes_of(dir_ / "o" / "index.html"));
  EXPECT_EQ(figs.count("conv-trials-01"), 0u); // one trial: listed, not plotted
  EXPECT_NE(bytes_of(dir_ / "o" / "index.html").find("gemm/f32/NN/64x64x64/a16</td>"), std::string::npos);
  EXPECT_EQ(figs.at("roofline").first, 1u);
  EXPECT_EQ(figs.at("vs-cublas").first, 0u);
  EXPECT_EQ(bytes_of(db_), before);
}

} // namespace
