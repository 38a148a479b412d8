// Resolving a job's trainer settings against the pool: lightning/'s rules,
// fed with the scheduler's generation facts, and their result mapped onto
// the scheduler's ResourceRequest.
#pragma once

#include "lightning/resolve.h"
#include "scheduler/capacity.h"
#include "scheduler/request.h"

namespace tpujobs::api {

// lightning::Resolution, with `device` as the scheduler places it.
struct Resolution : lightning::Resolution {
  scheduler::ResourceRequest request;  // meaningful only when errors is empty
};

// The pool as lightning/ sees it: every generation the scheduler knows, with
// its facts and its host count in `capacity`.
lightning::PoolView pool_view(const scheduler::PoolCapacity& capacity);

// lightning::resolve() on pool_view(capacity), with the request mapped.
Resolution resolve(const lightning::TrainerSettings& settings, const scheduler::PoolCapacity& capacity);

}  // namespace tpujobs::api
