// The per-thread cache of TMA tensor maps (runtime/tensor_map_cache.h): a map is reused only for
// the same pointer, extents, stride, box, type and swizzle; anything else encodes again; the oldest
// insert goes first once it is full; an encode that throws keeps nothing.
#include "runtime/tensor_map_cache.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

using ktune::TensorMapCache;
using ktune::TensorMapKey;

struct FakeMap {
  int id = -1;
};

TensorMapKey key_of(const void* ptr, uint64_t rows) {
  TensorMapKey k;
  k.ptr = ptr, k.dims[0] = 4096, k.dims[1] = rows, k.strides[0] = 8192, k.box[0] = 64, k.box[1] = 128;
  k.type = 7, k.swizzle = 3;
  return k;
}

TEST(TensorMapCache, ReusesAMapOnlyForTheSameEncodeArguments) {
  TensorMapCache<FakeMap, 4> cache;
  int encodes = 0;
  auto encode = [&] { return FakeMap{encodes++}; };
  const int a = 0, b = 0;
  const TensorMapKey ka = key_of(&a, 2048);
  EXPECT_EQ(cache.get(ka, encode).id, 0);
  EXPECT_EQ(cache.get(ka, encode).id, 0); // same arguments: no encode
  EXPECT_EQ(encodes, 1);
  EXPECT_EQ(cache.get(key_of(&b, 2048), encode).id, 1); // another pointer
  TensorMapKey other = ka;
  for (auto change : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
    other = ka;
    if (change == 0) other.dims[0] = 4000;
    if (change == 1) other.dims[1] = 2000;
    if (change == 2) other.strides[0] = 8000;
    if (change == 7) other.rank = 3;
    if (change == 8) other.dims[4] = 1;
    if (change == 9) other.strides[3] = 16;
    if (change == 3) other.box[0] = 32;
    if (change == 4) other.box[1] = 64;
    if (change == 5) other.type = 6;
    if (change == 6) other.swizzle = 2;
    const int before = encodes;
    cache.get(other, encode);
    EXPECT_EQ(encodes, before + 1) << "field " << change << " must be part of the key";
  }
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 12u);
  EXPECT_EQ(cache.size(), 4u);
}

TEST(TensorMapCache, ReplacesTheOldestInsertAndKeepsNothingOnAThrow) {
  TensorMapCache<FakeMap, 3> cache;
  int encodes = 0;
  auto encode = [&] { return FakeMap{encodes++}; };
  const int p[4] = {};
  for (int i = 0; i < 3; ++i) cache.get(key_of(&p[i], 64), encode);
  EXPECT_EQ(cache.get(key_of(&p[2], 64), encode).id, 2);
  EXPECT_EQ(cache.get(key_of(&p[3], 64), encode).id, 3); // evicts p[0]'s map
  EXPECT_EQ(cache.get(key_of(&p[1], 64), encode).id, 1); // still there
  EXPECT_EQ(cache.get(key_of(&p[0], 64), encode).id, 4); // encoded again (evicts p[1]'s)
  EXPECT_EQ(encodes, 5);
  const TensorMapKey bad = key_of(&p[0], 1);
  EXPECT_THROW(cache.get(bad, []() -> FakeMap { throw std::runtime_error("cuTensorMapEncodeTiled failed"); }), std::runtime_error);
  EXPECT_EQ(cache.get(bad, encode).id, 5); // the failed encode left nothing behind
  EXPECT_EQ(cache.size(), 3u);
}

} // namespace
