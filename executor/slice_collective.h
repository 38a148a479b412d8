// A pod slice whose hosts belong to several processes (agents, DESIGN §9):
// which part of the slice this process runs, and the collective that joins
// the parts. The executor only sees this interface; the service implements
// it over the network (service/gloo_collective.h) and tests in memory.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include "executor/executor.h"

namespace tpujobs::executor {

// Joins the processes of one slice. Implementations keep a deadline on every
// call: none may block forever when a peer is gone.
class SliceCollective {
 public:
  virtual ~SliceCollective() = default;
  virtual int rank() const = 0;  // this process's place among the slice's processes
  virtual int size() const = 0;  // how many processes run the slice
  // Every process contributes `mine` (counts[rank()] floats); on success
  // `all` holds the contributions of ranks 0, 1, ... back to back (its size
  // is the sum of `counts`, the same list on every process). On a peer that
  // cannot be reached, or the deadline passing, returns an UNAVAILABLE error
  // and `all` is unspecified; the collective is then unusable.
  virtual base::Status all_gather(const float* mine, float* all,
                                  const std::vector<std::size_t>& counts) = 0;
};

// The part of a multi-host slice this process runs: hosts
// [first_host, first_host + hosts) of the slice (each of
// spec.devices_per_host replicas), joined to the other parts by
// `collective`. Gradients are summed over each host's replicas in process
// (the ring of executor/all_reduce.h), the hosts' sums gathered from every
// part, and added in host order: the bits never depend on how the hosts are
// split among processes.
struct SlicePart {
  int first_host = 0;
  int hosts = 0;
  std::vector<int> hosts_per_rank;  // the slice's hosts each rank runs, in rank order
  SliceCollective* collective = nullptr;
};

}  // namespace tpujobs::executor
