// The paged-cache entry points (Runtime::attention_paged, ktune_attention_paged) against an FP64
// host reference: a cache whose pages are dealt to the sequences out of order (some unused), a
// sequence ending inside a page, one of a single key and one empty, causal rows aligned to each
// sequence's own length, q given as a (B, H, S, D) view through its strides. Nothing is tuned, so
// each call is served by first use (the decode family's default and its neighbours); a block table
// with two sequences' rows swapped must fail the same check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/half.h"
#include "gpu_env.h"
#include "ktune/ktune.h"
#include "ktune/runtime.h"
#include "ops/attention_row_fp64.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/module.h"

using namespace ktune;

namespace {

constexpr int64_t B = 4, H = 8, HK = 2, SQ = 2, D = 128, PS = 64, PER = 5, PAGES = 23;
const int32_t kLens[B] = {PER * PS, 200, 1, 0};

struct Host {
  std::vector<uint16_t> q, k, v; // q as (B, H, S, D); the caches (pages, page_size, kv_heads, head_dim)
  std::vector<int32_t> table;    // (B, PER)
};

// The worst errors of O and lse (a NaN counts as infinite) against an FP64 reference of `h`.
std::pair<double, double> worst_errors(const Host& h, const std::vector<int32_t>& table, const std::vector<uint16_t>& o,
                                       const std::vector<float>& lse) {
  auto err = [](double e) { return std::isnan(e) ? INFINITY : e; };
  double worst_o = 0, worst_l = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hh = 0; hh < H; ++hh)
      for (int64_t i = 0; i < SQ; ++i) {
        const int64_t g = hh / (H / HK), n = std::max<int64_t>(0, std::min<int64_t>(kLens[b], i + kLens[b] - SQ + 1));
        auto key = [&](int64_t j) { return ((int64_t(table[b * PER + j / PS]) * PS + j % PS) * HK + g) * D; };
        const auto ref = ktune::testing::attention_row_fp64(
            n, D, 1 / std::sqrt(double(D)),
            [&](int64_t x) { return half::from_bf16(h.q[((b * H + hh) * SQ + i) * D + x]); },
            [&](int64_t j, int64_t x) { return half::from_bf16(h.k[key(j) + x]); },
            [&](int64_t j, int64_t x) { return half::from_bf16(h.v[key(j) + x]); });
        const double gl = lse[(b * H + hh) * SQ + i];
        worst_l = std::max(worst_l, n == 0 ? (gl == INFINITY ? 0.0 : INFINITY) : err(std::abs(gl - ref.lse)));
        for (int64_t x = 0; x < D; ++x)
          worst_o = std::max(worst_o, err(std::abs(half::from_bf16(o[((b * SQ + i) * H + hh) * D + x]) - ref.o[x])));
      }
  return {worst_o, worst_l};
}

} // namespace

TEST(AttentionGpu, PagedEntriesMatchAHostReferenceOverAShuffledCache) {
  std::string why;
  const DeviceInfo* d = ktune::testing::first_gpu(&why);
  if (!d) GTEST_SKIP() << why;
  CudaContext ctx(d->ordinal);
  Host h;
  // Multiples of 1/4 in [-1, 1]: exact in bf16.
  std::mt19937 rng(7);
  auto fill = [&](std::vector<uint16_t>& x, size_t n) {
    x.resize(n);
    for (auto& e : x) e = half::to_bf16(float(int(rng() % 9) - 4) * 0.25f);
  };
  fill(h.q, B * H * SQ * D);
  fill(h.k, PAGES * PS * HK * D);
  fill(h.v, PAGES * PS * HK * D);
  std::vector<int32_t> pages(PAGES);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  h.table.assign(pages.begin(), pages.begin() + B * PER); // 3 pages of the cache belong to no sequence
  std::vector<int32_t> swapped = h.table;                 // sequences 0 and 1 read each other's pages
  std::swap_ranges(swapped.begin(), swapped.begin() + PER, swapped.begin() + PER);

  DeviceBuffer q(h.q.size() * 2, "q"), k(h.k.size() * 2, "k_cache"), v(h.v.size() * 2, "v_cache"),
      table(4 * B * PER, "block_table"), bad_table(4 * B * PER, "swapped block_table"), lens(4 * B, "seq_lens"),
      o(h.q.size() * 2, "o"), lse(4 * B * H * SQ, "lse");
  check_cu(driver().cuMemcpyHtoD(q.ptr(), h.q.data(), h.q.size() * 2), "cuMemcpyHtoD", "q");
  check_cu(driver().cuMemcpyHtoD(k.ptr(), h.k.data(), h.k.size() * 2), "cuMemcpyHtoD", "k_cache");
  check_cu(driver().cuMemcpyHtoD(v.ptr(), h.v.data(), h.v.size() * 2), "cuMemcpyHtoD", "v_cache");
  check_cu(driver().cuMemcpyHtoD(table.ptr(), h.table.data(), 4 * B * PER), "cuMemcpyHtoD", "block_table");
  check_cu(driver().cuMemcpyHtoD(bad_table.ptr(), swapped.data(), 4 * B * PER), "cuMemcpyHtoD", "swapped table");
  check_cu(driver().cuMemcpyHtoD(lens.ptr(), kLens, 4 * B), "cuMemcpyHtoD", "seq_lens");
  // q as (B, H, S, D), the caches and o packed: batch, sequence and head strides of q, page, slot
  // and head of each cache, then o's.
  const std::vector<int64_t> strides = {H * SQ * D,  D,      SQ * D, PS * HK * D, HK * D, D,
                                        PS * HK * D, HK * D, D,      SQ * H * D,  H * D,  D};
  const std::vector<long long> c_strides(strides.begin(), strides.end());
  // O and lse poisoned before each call (0xff..: NaN in bf16 and FP32): a row left unwritten fails.
  auto poison = [&] {
    check_cu(driver().cuMemsetD8Async(o.ptr(), 0xff, h.q.size() * 2, nullptr), "cuMemsetD8Async", "o");
    check_cu(driver().cuMemsetD8Async(lse.ptr(), 0xff, 4 * B * H * SQ, nullptr), "cuMemsetD8Async", "lse");
  };
  auto result = [&] {
    check_cu(driver().cuCtxSynchronize(), "cuCtxSynchronize", "paged attention");
    std::vector<uint16_t> ho(h.q.size());
    std::vector<float> hl(B * H * SQ);
    check_cu(driver().cuMemcpyDtoH(ho.data(), o.ptr(), ho.size() * 2), "cuMemcpyDtoH", "o");
    check_cu(driver().cuMemcpyDtoH(hl.data(), lse.ptr(), hl.size() * 4), "cuMemcpyDtoH", "lse");
    poison();
    return std::make_pair(ho, hl);
  };
  poison();
  // P rounded to bf16 before P V (2^-8 of sum p |v| <= 2^-8, |v| <= 1) and O's rounding (2^-9 of
  // |o| <= 1) bound O's error by 6e-3; the log-sum-exp is FP32 throughout.
  constexpr double kTolO = 1e-2, kTolL = 1e-4;
  RuntimeOptions opts;
  opts.db_path = "";
  Runtime rt(opts);
  rt.attention_paged(DType::bf16, B, H, HK, SQ, D, PS, PAGES, PER, true, q.as<void>(), k.as<void>(), v.as<void>(),
                     table.as<int32_t>(), lens.as<int32_t>(), o.as<void>(), lse.as<float>(), strides);
  auto [ho, hl] = result();
  auto [eo, el] = worst_errors(h, h.table, ho, hl);
  EXPECT_LT(eo, kTolO) << "Runtime::attention_paged O";
  EXPECT_LT(el, kTolL) << "Runtime::attention_paged lse";
  std::cout << "[ ktune    ] Runtime::attention_paged: worst O error " << eo << ", lse " << el << "\n";

  ktune_handle_t handle = nullptr;
  ASSERT_EQ(ktune_create(&handle, ""), KTUNE_SUCCESS) << ktune_last_error();
  EXPECT_EQ(ktune_attention_paged(handle, KTUNE_R_16BF, B, H, HK, SQ, D, PS, PAGES, PER, 1, q.as<void>(), k.as<void>(),
                                  v.as<void>(), table.as<int>(), lens.as<int>(), o.as<void>(), lse.as<float>(),
                                  c_strides.data(), 0.f, nullptr),
            KTUNE_SUCCESS)
      << ktune_last_error();
  std::tie(ho, hl) = result();
  std::tie(eo, el) = worst_errors(h, h.table, ho, hl);
  EXPECT_LT(eo, kTolO) << "ktune_attention_paged O";
  EXPECT_LT(el, kTolL) << "ktune_attention_paged lse";
  // The C entry checks its strides' count as the op does: 12 are read, none past them.
  EXPECT_EQ(ktune_attention_paged(handle, KTUNE_R_16BF, B, H, HK, SQ, D, PS, PAGES, 0, 1, q.as<void>(), k.as<void>(),
                                  v.as<void>(), table.as<int>(), lens.as<int>(), o.as<void>(), lse.as<float>(), nullptr,
                                  0.f, nullptr),
            KTUNE_INVALID_VALUE);
  EXPECT_NE(std::string(ktune_last_error()).find("pages_per_seq"), std::string::npos) << ktune_last_error();
  ktune_destroy(handle);

  // The check itself: the swapped table reads other pages for sequences 0 and 1.
  rt.attention_paged(DType::bf16, B, H, HK, SQ, D, PS, PAGES, PER, true, q.as<void>(), k.as<void>(), v.as<void>(),
                     bad_table.as<int32_t>(), lens.as<int32_t>(), o.as<void>(), lse.as<float>(), strides);
  std::tie(ho, hl) = result();
  std::tie(eo, el) = worst_errors(h, h.table, ho, hl);
  EXPECT_GT(eo, kTolO) << "a swapped block table passed the O check";
  EXPECT_GT(el, kTolL) << "a swapped block table passed the lse check";
}
