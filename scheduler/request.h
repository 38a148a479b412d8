// What a job asks of the pool, once its trainer settings are resolved
// (api/resolution.h maps lightning/'s resolution onto it; scheduler/pass.h
// places it).
#pragma once

#include <optional>
#include <string>

#include "scheduler/generation.h"

namespace tpujobs::scheduler {

enum class RequestKind {
  kCpu,         // accelerator "cpu": runs on the executor's threads, takes no TPU core
  kSingleCore,  // devices: 1 or [k]
  kHost,        // all devices of one host
  kSlice,       // num_nodes > 1 whole hosts forming a pod slice
};

struct ResourceRequest {
  RequestKind kind = RequestKind::kCpu;
  // nullopt: any generation whose host fits (a single core, or a whole host
  // whose device count equals devices_per_host).
  std::optional<Generation> generation;
  int devices_per_host = 0;        // cores used on each host (1 for a single core)
  int hosts = 0;                   // 0 for cpu, 1 for a single core or a host
  std::optional<int> pinned_core;  // devices: [k] -> core k of a host (0-based)
  std::string accelerator_type;    // "v3-32" for a slice or a whole host, "" otherwise

  int cores() const { return devices_per_host * hosts; }
};

}  // namespace tpujobs::scheduler
