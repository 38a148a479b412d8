// Resolving a job's trainer settings against the pool: lightning/'s rules,
// fed with the scheduler's generation facts, and their result mapped onto
// the scheduler's ResourceRequest.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/result.h"
#include "lightning/resolve.h"
#include "scheduler/capacity.h"
#include "scheduler/request.h"

namespace tpujobs::api {

// lightning::Resolution, with `device` as the scheduler places it.
struct Resolution : lightning::Resolution {
  scheduler::ResourceRequest request;
};

// The pool as lightning/ sees it: every generation the scheduler knows, with
// its facts and its host count in `capacity`.
lightning::PoolView pool_view(const scheduler::PoolCapacity& capacity);

// lightning::resolve() on pool_view(capacity), with the request mapped; its
// refusal (field errors and the warnings given before it) as it is.
base::Result<Resolution> resolve(const lightning::TrainerSettings& settings,
                                 const scheduler::PoolCapacity& capacity);
// The same on a view made once, for many settings against one pool.
base::Result<Resolution> resolve(const lightning::TrainerSettings& settings,
                                 const lightning::PoolView& view);

// "2.5" for 205: a torch_xla version as Resolution::torch_xla_version holds it.
std::string torch_xla_version_name(int version);

// The resolved request as the API shows it ("resolved" in a job and in the
// :validate answer): what the job takes of the pool, and which rules and
// texts apply: Lightning's release and tag, Lightning's own precision flag,
// and the torch_xla whose metric names and report layout the job prints.
nlohmann::json resolution_json(const Resolution& resolution);

}  // namespace tpujobs::api
