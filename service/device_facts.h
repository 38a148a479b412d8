// What the executor is told of the device a job runs on (its HBM, the MXU
// the advisor pads to, the peak the step time is estimated at): one
// generation's cited facts (scheduler/generation.cc), for the advice given
// at validation and the run on an agent alike.
#pragma once

#include "executor/spec.h"
#include "scheduler/generation.h"

namespace tpujobs::service {

executor::DeviceFacts device_facts(scheduler::Generation generation);

}  // namespace tpujobs::service
