// resources.workers (lightning/workers.cc): the workers of a slice a job is
// launched on. Each index must be a host of the resolved slice (422 on
// resources.workers); a multi-host slice launched on fewer than all its
// workers fails at launch, under every Lightning release, on v5e, v5p and
// v6e slices alike, with tpujobs' own texts (upstream prints none).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "lightning/resolve.h"
#include "tests/lightning/pool_view.h"

namespace tpujobs::lightning {
namespace {

TrainerSettings Slice(const std::string& type, const std::string& version,
                      std::optional<std::vector<std::int64_t>> workers) {
  TrainerSettings settings;
  settings.accelerator = "tpu";
  settings.accelerator_type = type;
  settings.lightning_version = version;
  settings.workers = std::move(workers);
  return settings;
}

const char* const kVersions[] = {"1.6", "1.7", "1.8", "1.9", "2.0",
                                 "2.1", "2.2", "2.3", "2.4", "2.5"};

struct SliceCase {
  const char* type;
  int hosts;
  const char* missing;  // the workers a launch on worker 0 leaves out
};
const SliceCase kSlices[] = {
    {"v5litepod-16", 2, "worker 1"},
    {"v5p-32", 4, "workers 1, 2, 3"},
    {"v6e-16", 2, "worker 1"},
};

std::string Errors(const base::Result<Resolution>& r) {
  std::string out;
  for (const base::FieldError& e : base::field_errors(r)) out += e.field + ": " + e.message + "\n";
  return out;
}

TEST(Workers, OneWorkerOfAMultiHostSliceFailsAtLaunchUnderEveryRelease) {
  for (const SliceCase& s : kSlices) {
    const PoolView pool = View({s.type});
    for (const char* version : kVersions) {
      SCOPED_TRACE(std::string(s.type) + " Lightning " + version);
      const base::Result<Resolution> r =
          resolve(Slice(s.type, version, std::vector<std::int64_t>{0}), pool);
      ASSERT_TRUE(r.ok()) << Errors(r);
      EXPECT_EQ(s.hosts, r->device.hosts);
      ASSERT_TRUE(r->launch_failure);
      const LaunchFailure& f = *r->launch_failure;
      EXPECT_EQ("UNAVAILABLE", f.type);
      EXPECT_EQ("tpujobs: the " + std::string(s.type) + " slice's rendezvous failed: " + s.missing +
                    " of its " + std::to_string(s.hosts) +
                    " hosts were not launched. torch_xla and Lightning print no message for "
                    "this (the launched processes wait in the TPU runtime, libtpu); this text "
                    "is tpujobs' own.",
                f.message);
      EXPECT_EQ(
          "Launch on every worker (`--worker=all`): set resources.workers to \"all\" or leave "
          "it out.",
          f.hint);
      ASSERT_EQ(2u, f.log_lines.size());
      EXPECT_EQ("tpujobs: launched on worker 0 of the " + std::string(s.type) + " slice's " +
                    std::to_string(s.hosts) + " hosts (resources.workers); " + s.missing +
                    " run nothing",
                f.log_lines[0]);
      ASSERT_FALSE(resolution_warnings(r).empty());
      EXPECT_TRUE(resolution_warnings(r).back().starts_with(
          "tpujobs: resources.workers launches the job on "
          "worker 0 of the " +
          std::string(s.type)))
          << resolution_warnings(r).back();
    }
  }
}

TEST(Workers, EveryWorkerOrAllLaunchesNormally) {
  for (const SliceCase& s : kSlices) {
    const PoolView pool = View({s.type});
    std::vector<std::int64_t> every;
    for (int w = s.hosts - 1; w >= 0; --w) every.push_back(w);  // any order
    for (const char* version : {"1.9", "2.0", "2.1", "2.5"}) {
      SCOPED_TRACE(std::string(s.type) + " Lightning " + version);
      const base::Result<Resolution> listed = resolve(Slice(s.type, version, every), pool);
      ASSERT_TRUE(listed.ok()) << Errors(listed);
      EXPECT_FALSE(listed->launch_failure);
      const base::Result<Resolution> all = resolve(Slice(s.type, version, std::nullopt), pool);
      ASSERT_TRUE(all.ok()) << Errors(all);
      EXPECT_FALSE(all->launch_failure);
    }
  }
}

TEST(Workers, AnIndexPastTheSlicesHostsIs422OnTheField) {
  const base::Result<Resolution> r =
      resolve(Slice("v5p-32", "2.5", std::vector<std::int64_t>{0, 4}), View({"v5p-32"}));
  ASSERT_EQ(1u, base::field_errors(r).size());
  EXPECT_EQ("resources.workers", r.error().fields[0].field);
  EXPECT_EQ(
      "tpujobs: worker 4 is not a host of this job's v5p-32 slice: it has 4 hosts, workers 0-3",
      r.error().fields[0].message);
  EXPECT_EQ(
      "Name workers 0-3 (as `gcloud compute tpus tpu-vm ssh --worker=0,1` does), or \"all\" to "
      "launch on every worker.",
      r.error().fields[0].hint);
  EXPECT_TRUE(r.error().fields[0].source.empty());  // tpujobs' own

  // A one-host slice has worker 0 only; [0] is the whole slice.
  const base::Result<Resolution> host =
      resolve(Slice("v6e-8", "2.1", std::vector<std::int64_t>{1}), View({"v6e-8"}));
  ASSERT_EQ(1u, base::field_errors(host).size());
  EXPECT_EQ("tpujobs: worker 1 is not a host of this job's v6e-8 host: it has 1 host, worker 0",
            host.error().fields[0].message);
  const base::Result<Resolution> zero =
      resolve(Slice("v5litepod-8", "1.9", std::vector<std::int64_t>{0}), View({"v5litepod-8"}));
  ASSERT_TRUE(zero.ok()) << Errors(zero);
  EXPECT_FALSE(zero->launch_failure);

  // A CPU job runs on one host, worker 0.
  TrainerSettings cpu;
  cpu.accelerator = "cpu";
  cpu.workers = std::vector<std::int64_t>{1};
  const base::Result<Resolution> on_cpu = resolve(cpu, View({"v5p-32"}));
  ASSERT_EQ(1u, base::field_errors(on_cpu).size()) << Errors(on_cpu);
  EXPECT_EQ(
      "tpujobs: worker 1 is not a host of this CPU job (it takes no TPU host): it has 1 "
      "host, worker 0",
      on_cpu.error().fields[0].message);
  cpu.workers = std::vector<std::int64_t>{0};
  EXPECT_TRUE(resolve(cpu, View({"v5p-32"})).ok());
}

TEST(Workers, OtherErrorsComeAloneAndNothingIsJudgedWithoutASlice) {
  // A slice the pool does not have: its own error, not one about workers.
  const base::Result<Resolution> r =
      resolve(Slice("v5p-64", "2.5", std::vector<std::int64_t>{7}), View({"v5p-32"}));
  ASSERT_FALSE(r.ok());
  for (const base::FieldError& e : base::field_errors(r))
    EXPECT_NE("resources.workers", e.field) << e.message;
}

}  // namespace
}  // namespace tpujobs::lightning
