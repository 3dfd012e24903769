// A kernel that calls Thrust's algorithms under thrust::seq on a thread's own arrays, through raw
// pointers and a thrust::device_ptr (as xgboost's, cuDF's and cuGraph's device code does), and a reference kernel that computes the same
// 32 numbers a thread with plain loops and Thrust's documented results. Shared by the CPU test
// (it compiles, with and without host_code skip) and the GPU test (the two agree exactly).
#pragma once

#include <string>

namespace ktune::testing {

inline const std::string kThrustSeqSource = R"CUDA(#include <thrust/binary_search.h>
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/extrema.h>
#include <thrust/find.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/inner_product.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/mismatch.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/tabulate.h>
#include <thrust/transform_reduce.h>

// The j-th of thread i's values, in [0, m).
__host__ __device__ inline int value(int i, int j, int m) {
  unsigned x = unsigned(i) * 2654435761u ^ (unsigned(j) * 40503u + 7u);
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return int(x % unsigned(m));
}
struct add_to {
  int* s;
  __host__ __device__ void operator()(int x) const { *s += x; }
};
struct by_tens {
  __host__ __device__ bool operator()(int x, int y) const { return x / 10 < y / 10; }
};
struct tens {
  __host__ __device__ int operator()(int x) const { return x / 10; }
};
struct odd_j {
  __host__ __device__ int operator()(int j) const { return 2 * j + 1; }
};
struct above {
  int t;
  __host__ __device__ bool operator()(int x) const { return x > t; }
};
struct is_odd {
  __host__ __device__ bool operator()(int x) const { return x % 2 == 1; }
};

template <int B> __global__ void algos(int* out, int n) {
  const int i = blockIdx.x * B + threadIdx.x;
  if (i >= n) return;
  int a[16], b[16], c[16], d[16];
  for (int j = 0; j < 16; ++j) a[j] = value(i, j, 40), b[j] = value(i, j + 16, 8);
  int* o = out + 32 * i;
  // b holds 8 values in 16 places: ties, where Thrust's largest is the first (the standard's, the last)
  thrust::pair<int*, int*> mm = thrust::minmax_element(thrust::seq, b, b + 16);
  o[0] = int(mm.first - b) * 100 + int(mm.second - b);
  o[1] = int(thrust::max_element(thrust::seq, b, b + 16) - b) * 100 + int(thrust::min_element(thrust::seq, b, b + 16, thrust::greater<int>()) - b);
  thrust::stable_sort(thrust::seq, a, a + 16, by_tens());
  for (int j = 0; j < 16; ++j) o[16 + j] = a[j];
  thrust::sort(thrust::seq, a, a + 16);
  const int key = value(i, 99, 40);
  o[2] = int(thrust::lower_bound(thrust::seq, a, a + 16, key) - a) * 100 + int(thrust::upper_bound(thrust::seq, a, a + 16, key) - a);
  thrust::pair<int*, int*> r = thrust::equal_range(thrust::seq, a, a + 16, key);
  o[3] = int(r.first - a) * 100 + int(r.second - a) + (thrust::binary_search(thrust::seq, a, a + 16, key) ? 10000 : 0);
  int s = 0;
  const thrust::device_ptr<const int> pa(a);  // a device pointer that device code walks (xgboost's dh::tcbegin)
  o[4] = int(thrust::for_each(thrust::seq, pa, pa + 16, add_to{&s}) - pa) * 10000 + s;
  o[5] = thrust::reduce(thrust::seq, a, a + 16);
  o[6] = thrust::reduce(thrust::seq, b, b + 16, -1, thrust::maximum<int>()) * 1000 +
         thrust::transform_reduce(thrust::seq, b, b + 16, thrust::negate<int>(), 0, thrust::plus<int>());
  thrust::inclusive_scan(thrust::seq, b, b + 16, c);
  o[7] = c[15] * 1000 + c[6];
  thrust::exclusive_scan(thrust::seq, b, b + 16, c, 5);
  o[8] = c[15] * 1000 + c[0];
  thrust::exclusive_scan(thrust::seq, b, b + 16, c);
  o[9] = c[15] * 1000 + c[1];
  thrust::sequence(thrust::seq, c, c + 16, 3, 2);
  o[10] = thrust::inner_product(thrust::seq, b, b + 16, c, 0);
  thrust::tabulate(thrust::seq, c, c + 16, odd_j());
  thrust::sequence(thrust::seq, d, d + 16);
  for (int j = 0; j < 16; ++j) d[j] = 2 * d[j] + 1;
  d[value(i, 77, 16)] = 0;
  thrust::pair<int*, int*> m = thrust::mismatch(thrust::seq, c, c + 16, d);
  o[11] = int(m.first - c) * 100 + int(m.second - d);
  o[12] = int(thrust::count(thrust::seq, b, b + 16, 3)) * 100 + int(thrust::find_if(thrust::seq, b, b + 16, above{5}) - b);
  o[13] = int(thrust::copy_if(thrust::seq, b, b + 16, c, is_odd()) - c) * 1000 + c[0];
  thrust::transform_iterator<tens, int*> t(a, tens());
  o[14] = int(thrust::lower_bound(thrust::seq, t, t + 16, key / 10) - t);
  o[15] = thrust::count_if(thrust::seq, pa, pa + 16, above{19}) + (thrust::is_sorted(thrust::seq, pa, pa + 16) ? 100 : 0) +
          (thrust::raw_pointer_cast(pa + 3) == a + 3 && pa[5] == a[5] ? 1000 : 0);
}

__global__ void algos_reference(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int a[16], b[16];
  for (int j = 0; j < 16; ++j) a[j] = value(i, j, 40), b[j] = value(i, j + 16, 8);
  int* o = out + 32 * i;
  int imin = 0, imax = 0, sumb = 0;
  for (int j = 0; j < 16; ++j) {
    if (b[j] < b[imin]) imin = j;
    if (b[j] > b[imax]) imax = j;
    sumb += b[j];
  }
  o[0] = imin * 100 + imax;
  o[1] = imax * 101;
  int k = 16;  // stable by tens: each decade's values in their first order
  for (int t = 3; t >= 0; --t)
    for (int j = 15; j >= 0; --j)
      if (a[j] / 10 == t) o[16 + --k] = a[j];
  int sorted[16], at = 0, suma = 0;  // a counting sort
  for (int v = 0; v < 40; ++v)
    for (int j = 0; j < 16; ++j)
      if (a[j] == v) sorted[at++] = v;
  const int key = value(i, 99, 40);
  int less = 0, not_more = 0, key_tens = 0, over19 = 0;
  for (int j = 0; j < 16; ++j) {
    less += sorted[j] < key;
    not_more += sorted[j] <= key;
    key_tens += sorted[j] / 10 < key / 10;
    over19 += sorted[j] > 19;
    suma += sorted[j];
  }
  o[2] = less * 100 + not_more;
  o[3] = less * 100 + not_more + (not_more > less ? 10000 : 0);
  o[4] = 16 * 10000 + suma;
  o[5] = suma;
  o[6] = b[imax] * 1000 - sumb;
  int run = 0, seven = 0;
  for (int j = 0; j < 16; ++j) run += b[j], seven += j <= 6 ? b[j] : 0;
  o[7] = run * 1000 + seven;
  o[8] = (5 + run - b[15]) * 1000 + 5;
  o[9] = (run - b[15]) * 1000 + b[0];
  int dot = 0, threes = 0, first_above = 16, odds = 0, first_odd = 1;
  for (int j = 0; j < 16; ++j) {
    dot += b[j] * (3 + 2 * j);
    threes += b[j] == 3;
    if (first_above == 16 && b[j] > 5) first_above = j;
    if (b[j] % 2 == 1 && odds++ == 0) first_odd = b[j];
  }
  o[10] = dot;
  o[11] = value(i, 77, 16) * 101;
  o[12] = threes * 100 + first_above;
  o[13] = odds * 1000 + first_odd;
  o[14] = key_tens;
  o[15] = over19 + 1100;
}
)CUDA";

inline const char* const kThrustSeqSpec = R"JSON({
  "ktune_kernel_spec": 1, "sources": ["seq.cu"], "kernel": "algos<{B}>", "params_as": "template",
  "dims": ["n"], "params": {"B": [128, 256]}, "launch": {"grid": ["ceil_div(n, B)"], "block": ["B"]},
  "args": [{"name": "out", "kind": "buffer", "dtype": "i32", "count": "32 * n", "intent": "out"},
           {"name": "n", "kind": "scalar", "dtype": "i32", "value": "n"}],
  "check": {"reference": {"kernel": "algos_reference", "launch": {"grid": ["ceil_div(n, 128)"], "block": [128]}}}})JSON";

} // namespace ktune::testing
