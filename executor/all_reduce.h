// The all-reduce of gradients across replicas, as a ring: deterministic for a
// given world size because every element is summed in a fixed order.
#pragma once

#include <cstddef>
#include <vector>

namespace tpujobs::executor {

class WorkerPool;

// Ring all-reduce (reduce-scatter, then all-gather) of `buffers` (one per
// replica, each `count` floats): the buffer is cut into one chunk per replica,
// and chunk c is summed along the ring starting at replica c:
// ((b[c] + b[c+1]) + b[c+2]) + ... (indices mod the world size). The sum,
// times `scale`, ends up in buffers[0]; the other buffers are left as they
// were. Large reductions run their chunks in parallel on `pool` (if not
// null); the bits do not depend on that.
void ring_all_reduce(const std::vector<float*>& buffers, std::size_t count, float scale,
                     WorkerPool* pool);

// out[i] = (((terms[0][i] + terms[1][i]) + terms[2][i]) + ...) * scale: the
// terms added in the order given. `out` may be one of the terms.
void ordered_sum(const std::vector<const float*>& terms, std::size_t count, float scale,
                 float* out);

}  // namespace tpujobs::executor
