#include "service/device_facts.h"

#include <string>

namespace tpujobs::service {

executor::DeviceFacts device_facts(scheduler::Generation generation) {
  const scheduler::GenerationFacts& f = scheduler::facts(generation);
  executor::DeviceFacts device;
  device.generation = std::string(f.name);
  device.hbm_bytes = f.hbm_bytes_per_device;
  device.hbm_capacity_bytes = f.hbm_reported_bytes;
  device.peak_flops = f.peak_bf16_flops_per_device;
  device.mxu_dim = f.mxu_dim;
  return device;
}

}  // namespace tpujobs::service
