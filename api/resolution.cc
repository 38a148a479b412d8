#include "api/resolution.h"

#include <string>
#include <utility>

namespace tpujobs::api {
namespace {

constexpr scheduler::Generation kGenerations[] = {scheduler::Generation::kV2, scheduler::Generation::kV3,
                                                  scheduler::Generation::kV4};

scheduler::RequestKind request_kind(lightning::DeviceRequest::Kind kind) {
  switch (kind) {
    case lightning::DeviceRequest::Kind::kCpu: return scheduler::RequestKind::kCpu;
    case lightning::DeviceRequest::Kind::kSingleCore: return scheduler::RequestKind::kSingleCore;
    case lightning::DeviceRequest::Kind::kHost: return scheduler::RequestKind::kHost;
    case lightning::DeviceRequest::Kind::kSlice: return scheduler::RequestKind::kSlice;
  }
  return scheduler::RequestKind::kCpu;
}

}  // namespace

lightning::PoolView pool_view(const scheduler::PoolCapacity& capacity) {
  lightning::PoolView view;
  for (scheduler::Generation generation : kGenerations) {
    const scheduler::GenerationFacts& f = scheduler::facts(generation);
    const auto hosts = capacity.hosts.find(generation);
    view.generations.push_back({std::string(f.name), f.devices_per_host, f.name_units_per_device,
                                {f.slice_sizes.begin(), f.slice_sizes.end()},
                                hosts == capacity.hosts.end() ? 0 : hosts->second});
  }
  return view;
}

Resolution resolve(const lightning::TrainerSettings& settings, const scheduler::PoolCapacity& capacity) {
  Resolution out;
  static_cast<lightning::Resolution&>(out) = lightning::resolve(settings, pool_view(capacity));
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

}  // namespace tpujobs::api
