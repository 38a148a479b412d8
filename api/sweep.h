// Sweeps (job arrays, DESIGN §3): "sweep": {"optimizer.lr": [0.001, 0.003],
// "data.batch_size": [32, 64]} stands for one child job per combination of
// the values (their cartesian product), as Slurm's --array and a Determined
// grid search. Each child is the spec without "sweep", with each path set
// to its value; the children are then validated one by one like any job.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "api/problem.h"
#include "base/result.h"

namespace tpujobs::api {

// At most this many children per sweep (a larger product is a 422).
inline constexpr std::size_t kMaxSweepChildren = 256;

struct SweepChild {
  int index = 0;          // its place in the product, 0-based; the last path varies fastest
  nlohmann::json spec;    // the spec to validate and submit
  nlohmann::json values;  // {path: value} the sweep set
};

// Expands body["sweep"] (body must be an object that has it). Paths are
// dot-separated object keys, each optionally followed by [i] to pick an
// element of an array that exists ("model.layers[0].out"); missing objects
// on the way are created. Errors name "sweep" or "sweep.<path>" and say
// what to change; the children, or kInvalid with the errors in its fields.
// With `max_children`, only the first that many children are made (the
// spec is copied once per child: a caller checks the first before paying
// for the rest).
base::Result<std::vector<SweepChild>> expand_sweep(const nlohmann::json& body,
                                                   std::size_t max_children = kMaxSweepChildren);

}  // namespace tpujobs::api
