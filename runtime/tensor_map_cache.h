// The tensor maps TMA steps get (runtime/tensor_maps.h), kept per calling thread: descriptors
// cached per problem and pointer set. A map is a pure function of what cuTensorMapEncodeTiled is
// given: the pointer, the extents, the strides, the box, the element type and the swizzle. A
// problem launched again on the same pointers, as an inference loop does, reuses its encoded 128
// bytes instead of encoding them again; new data at the same address needs no new map (the map
// holds no data), and a new pointer or shape is a new key. Host-only and header-only, so that its CPU test needs no driver.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace ktune {

// Everything an encode depends on (runtime/tensor_maps.cpp fills it with the exact arguments):
// rank dimensions, innermost first, as cuTensorMapEncodeTiled takes them (GEMM's are 2-D; an
// N-dimensional operand's up to 5-D). Unused entries stay zero.
struct TensorMapKey {
  static constexpr int kMaxRank = 5;
  const void* ptr = nullptr;
  int rank = 2;
  uint64_t dims[kMaxRank] = {};
  uint64_t strides[kMaxRank - 1] = {}; // bytes between consecutive indices of dimensions 1..rank-1
  uint32_t box[kMaxRank] = {};
  int type = 0, swizzle = 0; // CUtensorMapDataType, CUtensorMapSwizzle
  int l2_promotion = 3;      // CUtensorMapL2promotion: 256 B (ktune's kernels'; a user's map may ask for another)
  bool operator==(const TensorMapKey& o) const {
    if (ptr != o.ptr || rank != o.rank || type != o.type || swizzle != o.swizzle || l2_promotion != o.l2_promotion) return false;
    for (int i = 0; i < kMaxRank; ++i)
      if (dims[i] != o.dims[i] || box[i] != o.box[i] || (i < kMaxRank - 1 && strides[i] != o.strides[i])) return false;
    return true;
  }
};

// The last N distinct maps, replaced in turn (oldest insert first). N is small: one launch needs at
// most three maps (A, B, C), and an application's hot loop cycles through a few problems; a linear
// scan of N keys costs less than one encode. get() returns the map by value, so a later insert
// cannot change what an earlier call returned.
template <class Map, size_t N>
class TensorMapCache {
  static_assert(N >= 3, "one launch's three maps must not evict each other");

 public:
  // The cached map of k, or encode()'s result, kept. An encode that throws keeps nothing.
  template <class Encode>
  Map get(const TensorMapKey& k, Encode&& encode) {
    for (size_t i = 0; i < used_; ++i)
      if (slots_[i].key == k) {
        ++hits_;
        return slots_[i].map;
      }
    const Map m = encode();
    Slot& s = used_ < N ? slots_[used_++] : slots_[next_++ % N];
    s.key = k, s.map = m;
    ++misses_;
    return m;
  }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  size_t size() const { return used_; }

 private:
  struct Slot {
    TensorMapKey key;
    Map map;
  };
  std::array<Slot, N> slots_{};
  size_t used_ = 0, next_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

} // namespace ktune
