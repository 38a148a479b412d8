#include "api/resolution.h"

#include <string>
#include <utility>

namespace tpujobs::api {
namespace {

scheduler::RequestKind request_kind(lightning::DeviceRequest::Kind kind) {
  switch (kind) {
    case lightning::DeviceRequest::Kind::kCpu:
      return scheduler::RequestKind::kCpu;
    case lightning::DeviceRequest::Kind::kSingleCore:
      return scheduler::RequestKind::kSingleCore;
    case lightning::DeviceRequest::Kind::kHost:
      return scheduler::RequestKind::kHost;
    case lightning::DeviceRequest::Kind::kSlice:
      return scheduler::RequestKind::kSlice;
  }
  return scheduler::RequestKind::kCpu;
}

}  // namespace

lightning::PoolView pool_view(const scheduler::PoolCapacity& capacity) {
  lightning::PoolView view;
  for (scheduler::Generation generation : scheduler::all_generations()) {
    const scheduler::GenerationFacts& f = scheduler::facts(generation);
    const auto hosts = capacity.hosts.find(generation);
    lightning::TpuGeneration& g = view.generations.emplace_back();
    g.name = std::string(f.name);
    g.devices_per_host = f.devices_per_host;
    g.units_per_device = f.name_units_per_device;
    g.slice_sizes = {f.slice_sizes.begin(), f.slice_sizes.end()};
    g.hosts = hosts == capacity.hosts.end() ? 0 : hosts->second;
    g.type_prefix = std::string(f.type_prefix);
    g.type_counts_chips = f.tensorcores_per_chip == 1;
    for (int size : f.slice_sizes) {
      if (std::optional<scheduler::Topology> t = scheduler::SliceType{generation, size}.topology())
        g.topologies.emplace_back(t->text(), size);
    }
  }
  return view;
}

base::Result<Resolution> resolve(const lightning::TrainerSettings& settings,
                                 const scheduler::PoolCapacity& capacity) {
  return api::resolve(settings, pool_view(capacity));
}

base::Result<Resolution> resolve(const lightning::TrainerSettings& settings,
                                 const lightning::PoolView& view) {
  base::Result<lightning::Resolution> resolved = lightning::resolve(settings, view);
  if (!resolved.ok()) return resolved.error();
  Resolution out;
  static_cast<lightning::Resolution&>(out) = std::move(*resolved);
  const lightning::DeviceRequest& device = out.device;
  scheduler::ResourceRequest& request = out.request;
  request.kind = request_kind(device.kind);
  if (device.generation) request.generation = scheduler::parse_generation(*device.generation);
  request.devices_per_host = device.devices_per_host;
  request.hosts = device.hosts;
  request.pinned_core = device.pinned_core;
  request.accelerator_type = device.accelerator_type;
  return out;
}

std::string torch_xla_version_name(int version) {
  return std::to_string(version / 100) + "." + std::to_string(version % 100);
}

nlohmann::json resolution_json(const Resolution& r) {
  using nlohmann::json;
  const scheduler::ResourceRequest& q = r.request;
  json out = {{"accelerator", r.accelerator},
              {"precision", lightning::precision_name(r.precision)},
              {"lightning_precision", r.lightning_precision},
              {"strategy", r.strategy},
              {"world_size", r.world_size},
              {"lightning_version", r.lightning_version},
              {"lightning_source", "Lightning-AI/pytorch-lightning@" + r.lightning_tag},
              {"torch_xla_version", torch_xla_version_name(r.torch_xla_version)},
              {"cores", q.cores()},
              {"hosts", q.hosts},
              {"devices_per_host", q.devices_per_host}};
  out["kind"] = q.kind == scheduler::RequestKind::kCpu          ? "cpu"
                : q.kind == scheduler::RequestKind::kSingleCore ? "single_core"
                : q.kind == scheduler::RequestKind::kHost       ? "host"
                                                                : "slice";
  out["generation"] = q.generation ? json(scheduler::facts(*q.generation).name) : json(nullptr);
  out["accelerator_type"] = q.accelerator_type.empty() ? json(nullptr) : json(q.accelerator_type);
  out["pinned_core"] = q.pinned_core ? json(*q.pinned_core) : json(nullptr);
  return out;
}

}  // namespace tpujobs::api
