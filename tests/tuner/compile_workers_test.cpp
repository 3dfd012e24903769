// NVRTC in `ktune compile-worker` processes (tune --compile-processes): the same cubins as a
// compile in this process, NVRTC's rejections and a worker's failures reported as in-process
// compiles report them. NVRTC needs no GPU, so all of this runs in CI.
#include <gtest/gtest.h>

#include <cstdio>
#include <future>
#include <string>
#include <vector>

#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/family.h"
#include "tuner/compile_workers.h"

using namespace ktune;

namespace {

std::vector<std::string> worker_argv() { return {std::string(KTUNE_BINARY_DIR) + "/ktune", "compile-worker"}; }

// Three configs of a row-op family (compiles of a fraction of a second).
std::vector<CompileRequest> row_requests() {
  const Family f = find_family("softmax_warp");
  const Problem p = Problem::parse("softmax", "4096x1024", "", DType::f32);
  std::vector<CompileRequest> out;
  for (const Config& c : f.sample(p, DeviceInfo::nominal("sm_90"), 3, 7)) out.push_back(compile_request(f, c, p, "sm_90"));
  return out;
}

// procs.compile(r) throws a CompileError whose message names what_has and whose log has log_has.
void expect_compile_error(CompileProcesses& procs, const CompileRequest& r, const std::string& what_has,
                          const std::string& log_has) {
  try {
    procs.compile(r);
    ADD_FAILURE() << "no compile error for " << r.context;
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(what_has), std::string::npos) << e.what();
    EXPECT_NE(e.log().find(log_has), std::string::npos) << e.log();
  }
}

} // namespace

TEST(CompileWorkers, GiveTheCubinsOfACompileInThisProcess) {
  std::vector<CompileRequest> reqs = row_requests();
  ASSERT_EQ(reqs.size(), 3u);
  // NVRTC names internal symbols with a number drawn per process (the pid) unless given a seed:
  // with one, a request gives the same bytes in any process.
  for (CompileRequest& r : reqs) r.options.push_back("--frandom-seed=ktune");
  CompileProcesses procs(worker_argv(), 2);
  Compiler pooled(2);
  pooled.set_backend([&procs](const CompileRequest& r) { return procs.compile(r); });
  std::vector<std::future<std::shared_ptr<const CompiledKernel>>> fs;
  for (const CompileRequest& r : reqs) fs.push_back(pooled.compile_async(r));
  Compiler here(1);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto a = fs[i].get();
    const auto b = here.compile(reqs[i]);
    EXPECT_FALSE(a->from_cache);
    EXPECT_EQ(a->cache_key, b->cache_key);
    EXPECT_EQ(a->lowered_names, b->lowered_names) << reqs[i].context;
    EXPECT_EQ(a->cubin, b->cubin) << reqs[i].context;
  }
  // The Compiler's cache stays in front of the processes.
  EXPECT_TRUE(pooled.compile(reqs[0])->from_cache);
  EXPECT_EQ(pooled.cache_hits(), 1u);
}

TEST(CompileWorkers, NvrtcRejectionsComeBackAsCompileErrorsWithTheirLog) {
  CompileProcesses procs(worker_argv(), 1);
  CompileRequest bad = row_requests().front();
  bad.source += "\nthis is not C++;\n";
  bad.context = "family softmax_warp planted-syntax-error";
  expect_compile_error(procs, bad, "planted-syntax-error", "error");
  // The same process goes on with the next request.
  EXPECT_FALSE(procs.compile(row_requests().front())->cubin.empty());
}

// A worker that dies twice or answers nonsense on a request failed that config (a compile error,
// the run goes on with a new worker); one death is retried; a reply that parses but cannot be a
// result is an error. All name the request.
TEST(CompileWorkers, AWorkerThatDiesTwiceFailsItsConfigAndNonsenseIsAnError) {
  CompileRequest r = row_requests().front();
  r.context = "family softmax_warp the-request";
  // A worker that dies on its first `deaths` requests (a count in a file), then compiles as
  // ktune's does.
  const auto dying = [](int deaths, const std::string& counter) {
    std::remove(counter.c_str());
    return std::vector<std::string>{
        "/bin/sh", "-c",
        "n=$(cat " + counter + " 2>/dev/null || echo 0); if [ $n -lt " + std::to_string(deaths) + " ]; then echo $((n+1)) > " +
            counter + "; read line; exit 3; fi; exec " + worker_argv()[0] + " compile-worker"};
  };
  const std::string counter = ::testing::TempDir() + "ktune-compile-worker-deaths";
  {
    // One death (as of a process killed while idle): retried on a fresh process, no error.
    CompileProcesses procs(dying(1, counter), 1);
    EXPECT_FALSE(procs.compile(r)->cubin.empty());
  }
  {
    // Two deaths on one request: that config's compile error; the next request is compiled.
    CompileProcesses procs(dying(2, counter), 1);
    expect_compile_error(procs, r, "the-request", "status 3");
    EXPECT_FALSE(procs.compile(r)->cubin.empty()) << "a new worker compiles the next request";
  }
  std::remove(counter.c_str());
  {
    // A reply that is not JSON: the process is broken on this request, as if it died.
    CompileProcesses procs({"/bin/sh", "-c", "read line; echo not-json; sleep 5"}, 1);
    expect_compile_error(procs, r, "the-request", "not-json");
  }
  {
    // JSON that says ok with a cubin that is not one: an error of the pool, not of the config.
    CompileProcesses procs({"/bin/sh", "-c", R"(read line; echo '{"status":"ok","cubin":"@@@@","lowered":[]}'; sleep 5)"}, 1);
    try {
      procs.compile(r);
      FAIL() << "no error from a worker sending a broken cubin";
    } catch (const CompileError& e) {
      FAIL() << "a broken reply reported as a compile error: " << e.what();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the-request"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(CompileProcesses({}, 1), UsageError);
}

// A source with bytes that are not UTF-8 (a Latin-1 comment in a user kernel) compiles in a worker
// as it does here: the source travels unchanged.
TEST(CompileWorkers, SourcesThatAreNotUtf8CompileUnchanged) {
  CompileRequest r = row_requests().front();
  r.source = "// (c) \xA9 1999 \xE9t\xE9\n" + r.source;
  r.options.push_back("--frandom-seed=ktune");
  CompileProcesses procs(worker_argv(), 1);
  EXPECT_EQ(procs.compile(r)->cubin, Compiler(1).compile(r)->cubin);
}

// A request's in-memory headers (a user kernel's standard headers) reach the worker: a source that
// includes one only they hold compiles there as here, and the headers are part of the key.
TEST(CompileWorkers, InMemoryHeadersTravelWithTheRequest) {
  CompileRequest r;
  r.source = "#include <ktune_test_only.h>\n__global__ void k(float* y) { y[0] = KTUNE_TEST_VALUE; }\n";
  r.source_name = "headers.cu";
  r.name_expressions = {"k"};
  r.arch = "sm_90";
  r.options = {"--frandom-seed=ktune"};
  r.context = "in-memory headers";
  const std::string bare_key = r.cache_key();
  r.headers = {{"ktune_test_only.h", "#define KTUNE_TEST_VALUE 3.5f\n"}};
  EXPECT_NE(r.cache_key(), bare_key);
  CompileRequest other = r;
  other.headers[0].second = "#define KTUNE_TEST_VALUE 4.5f\n";
  EXPECT_NE(other.cache_key(), r.cache_key()) << "a header's text is in the key";
  CompileProcesses procs(worker_argv(), 1);
  EXPECT_EQ(procs.compile(r)->cubin, Compiler(1).compile(r)->cubin);
}
