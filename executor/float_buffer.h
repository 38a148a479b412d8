// Float arrays that start on a 64-byte boundary: every buffer the training
// engine computes on (parameters, gradients, optimizer state, activations).
//
// Why it matters for bit-reproducibility: Eigen's vectorized loops (the
// reductions of layernorm and the loss, and elementwise assignments) handle
// the elements before the first SIMD-aligned address one by one, and scalar
// and vector code may round differently (FMA contraction, summation order).
// How many elements that is depends on where the array starts modulo the
// vector size; malloc promises only 16 bytes, so with 32-byte AVX vectors two
// runs with one seed could round differently. On a 64-byte boundary (a cache
// line, a whole number of SSE, AVX and AVX-512 vectors) the split depends only
// on offsets within the buffer, which the model's shape fixes.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace tpujobs::executor {

inline constexpr std::size_t kBufferAlignment = 64;

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}

  T* allocate(std::size_t count) {
    return static_cast<T*>(::operator new (count * sizeof(T), std::align_val_t{kBufferAlignment}));
  }
  void deallocate(T* pointer, std::size_t) {
    ::operator delete (pointer, std::align_val_t{kBufferAlignment});
  }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};

using FloatBuffer = std::vector<float, CacheLineAllocator<float>>;

}  // namespace tpujobs::executor
