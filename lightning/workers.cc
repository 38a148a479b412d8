// resources.workers: the workers (hosts, numbered from 0) of a slice a job
// is launched on, as `gcloud compute tpus tpu-vm ssh TPU --worker=all|0,1
// --command=...` starts a script on them. A multi-host slice runs one
// training process per host, and each needs every other.
//
// What happens upstream when some workers are not launched. The launched
// processes do not learn the slice's hosts from the launch but from the TPU
// VM's metadata: torch_xla's get_worker_ips() reads `worker-network-endpoints`
// (pytorch/xla v2.1.0 torch_xla/_internal/tpu.py:186-200; v2.5.0 :195-209;
// v2.0.0 torch_xla/experimental/tpu.py:126-140) and configure_topology()
// hands every worker's address to the TPU runtime in TPU_PROCESS_ADDRESSES
// (v2.1.0 :262, v2.5.0 :271, v2.0.0 :197). The processes on the launched
// workers then wait in the TPU runtime (libtpu, not open source) for the
// others. Neither torch_xla nor Lightning prints a message of its own there:
// no .0 tag of pytorch/xla (v1.5.0 to v2.9.0) has a text about missing
// worker addresses, and Lightning's XLA strategy only calls xm.rendezvous (2.0.0 to
// 2.5.0 src/lightning/pytorch/strategies/xla.py, `barrier`). So the texts
// below are tpujobs' own, and say so.
#include <algorithm>
#include <set>

#include "lightning/checks.h"

namespace tpujobs::lightning {
namespace {

// "v5p-32 slice" / "host", for the messages.
std::string slice_name(const Context& c) {
  if (c.out.device.accelerator_type.empty()) return "host";
  return c.out.device.accelerator_type + (c.out.device.hosts > 1 ? " slice" : " host");
}

// "worker 0", "workers 1, 2, 3".
std::string workers_text(const std::vector<std::int64_t>& workers) {
  std::vector<std::string> names;
  for (std::int64_t w : workers) names.push_back(std::to_string(w));
  return (workers.size() == 1 ? "worker " : "workers ") + join(names, ", ");
}

std::string workers_range(int hosts) {
  return hosts == 1 ? "worker 0 only" : "workers 0-" + std::to_string(hosts - 1);
}

LaunchFailure launch_failure(const Context& c, const std::vector<std::int64_t>& launched,
                             const std::vector<std::int64_t>& missing, int hosts) {
  const std::string slice = slice_name(c);
  const std::string count = std::to_string(hosts);
  LaunchFailure failure;
  failure.type = "UNAVAILABLE";
  failure.log_lines = {
      "tpujobs: launched on " + workers_text(launched) + " of the " + slice + "'s " + count +
          " hosts (resources.workers); " + workers_text(missing) + " run nothing",
      "tpujobs: torch_xla gives the TPU runtime all " + count +
          " workers' addresses (from the TPU VM's metadata, not from the launch); the "
          "processes on " +
          workers_text(launched) + " wait for " + workers_text(missing) + ", which never join",
  };
  failure.message = "tpujobs: the " + slice + "'s rendezvous failed: " + workers_text(missing) +
                    " of its " + count +
                    " hosts were not launched. torch_xla and Lightning print no message for "
                    "this (the launched processes wait in the TPU runtime, libtpu); this text "
                    "is tpujobs' own.";
  failure.hint =
      "Launch on every worker (`--worker=all`): set resources.workers to \"all\" or leave it "
      "out.";
  return failure;
}

}  // namespace

void check_workers(Context& c) {
  if (!c.settings.workers) return;
  if (!c.errors.empty() || !c.request_ok) return;  // no slice to judge against
  const int hosts = c.accelerator == Accelerator::kTpu ? std::max(1, c.out.device.hosts) : 1;
  const std::vector<std::int64_t>& asked = *c.settings.workers;
  for (std::int64_t w : asked) {
    if (w >= 0 && w < hosts) continue;
    const std::string what = c.accelerator == Accelerator::kTpu
                                 ? "this job's " + slice_name(c)
                                 : "this CPU job (it takes no TPU host)";
    c.error(kFieldWorkers,
            "tpujobs: worker " + std::to_string(w) + " is not a host of " + what + ": it has " +
                std::to_string(hosts) +
                (hosts == 1 ? " host, worker 0" : " hosts, workers 0-" + std::to_string(hosts - 1)),
            "Name " + workers_range(hosts) +
                " (as `gcloud compute tpus tpu-vm ssh --worker=0,1` does), or \"all\" to launch "
                "on every worker.");
    return;
  }
  const std::set<std::int64_t> launched(asked.begin(), asked.end());
  if (static_cast<int>(launched.size()) >= hosts) return;
  std::vector<std::int64_t> missing;
  for (int w = 0; w < hosts; ++w) {
    if (!launched.contains(w)) missing.push_back(w);
  }
  const std::vector<std::int64_t> sorted(launched.begin(), launched.end());
  c.out.launch_failure = launch_failure(c, sorted, missing, hosts);
  c.warn("tpujobs: resources.workers launches the job on " + workers_text(sorted) + " of the " +
         slice_name(c) + "'s " + std::to_string(hosts) +
         " hosts: it will fail at launch, its rendezvous never complete");
}

}  // namespace tpujobs::lightning
