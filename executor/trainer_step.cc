// One optimizer step's compute: its micro-batches on this process's
// replicas (the emulated XLA compile and transfers around them), and the
// all-reduce of their gradients, within a host and across a slice's hosts.
#include <algorithm>
#include <cstring>

#include "executor/all_reduce.h"
#include "executor/random.h"
#include "executor/trainer.h"

namespace tpujobs::executor::internal {
namespace {

constexpr std::uint64_t kDropoutStream = 0xd20;

}  // namespace

void Trainer::run_micro_batch(std::int64_t batch, int index_in_group,
                              const std::vector<std::vector<std::int64_t>>& shards) {
  const int rows = batch_rows(prepared_.sampler, spec_.data.batch_size, batch);
  const int world = local_replicas_;
  const int features = prepared_.data.train.features;

  // The emulated XLA compile: a graph per (model, batch shape). Sizing the
  // step's buffers for a shape not seen before is this emulation's compile.
  nanoseconds planning{0};
  auto plan = planned_rows_.find(rows);
  if (plan == planned_rows_.end()) {
    const auto begin = clock_.now();
    ensure_replicas();
    const std::string graph_key = "train_step[" + fingerprint_ + "] x=f32[" + std::to_string(rows) +
                                  "," + std::to_string(features) + "] y=[" + std::to_string(rows) +
                                  "]";
    plan = planned_rows_.emplace(rows, graph_key).first;
    planning = clock_.now() - begin;
  }
  xla_.compile(plan->second, planning);

  std::vector<double>& losses = replica_losses_;
  std::vector<nanoseconds>& transfer = replica_transfer_;
  const std::uint64_t step_seed =
      derive_seed(spec_.seed, {kDropoutStream, static_cast<std::uint64_t>(step_),
                               static_cast<std::uint64_t>(index_in_group)});
  const float loss_scale = 1.0f / static_cast<float>(spec_.accumulate_grad_batches);
  const Dataset& train = prepared_.data.train;
  auto run_replica = [&](int r) {
    Replica& replica = *replicas_[r];
    const auto copy_begin = clock_.now();
    const std::int64_t first = batch * spec_.data.batch_size;
    float* input = replica.input();
    float* labels = replica.labels();
    for (int i = 0; i < rows; ++i) {
      const std::int64_t sample = shards[first_replica_ + r][first + i];
      std::copy_n(train.values.data() + sample * features, features,
                  input + std::size_t(i) * features);
      labels[i] = train.labels[sample];
    }
    transfer[r] = clock_.now() - copy_begin;
    const BatchLoss result = replica.train_batch(
        rows, loss_scale, derive_seed(step_seed, {std::uint64_t(first_replica_ + r)}),
        /*accumulate=*/index_in_group > 0);
    losses[r] = result.loss_sum / rows;
  };
  const auto begin = clock_.now();
  // Waking pool threads costs more than tiny models' passes: those run here.
  // The result is the same bits either way.
  constexpr std::int64_t kInlineMultiplyAdds = std::int64_t{1} << 21;
  if (std::int64_t{world} * rows * prepared_.shape.macs_per_sample() * 3 < kInlineMultiplyAdds) {
    for (int r = 0; r < world; ++r) run_replica(r);
  } else {
    workers_.parallel_for(world, run_replica);
  }
  const nanoseconds elapsed = clock_.now() - begin;
  nanoseconds transfer_total{0};
  for (const nanoseconds& t : transfer) transfer_total += t;
  xla_.transfer_to_device(std::int64_t{world} * rows * (features + 1) * 4, transfer_total);
  xla_.execute(elapsed - transfer_total / world);
  samples_this_run_ += std::int64_t{spec_.world_size} * rows;
  throughput_samples_ += std::int64_t{spec_.world_size} * rows;
  step_losses_.insert(step_losses_.end(), losses.begin(), losses.end());
}

base::Result<std::vector<double>> Trainer::reduce_step(int micro_batches) {
  if (gradient_buffers_.size() != replicas_.size()) {
    gradient_buffers_.clear();
    for (auto& replica : replicas_) gradient_buffers_.push_back(replica->gradients().data());
  }
  if (multi_host_) return reduce_across_hosts(micro_batches);
  const int world = spec_.world_size;
  FloatBuffer& gradients = replicas_[0]->gradients();
  ring_all_reduce(gradient_buffers_, gradients.size(), 1.0f / static_cast<float>(world), &workers_);
  std::vector<double> means(micro_batches, 0.0);
  for (int m = 0; m < micro_batches; ++m) {
    for (int r = 0; r < world; ++r)
      means[m] += step_losses_[std::size_t(m) * world + r];  // fixed order
    means[m] /= world;
  }
  return means;
}

base::Result<std::vector<double>> Trainer::reduce_across_hosts(int micro_batches) {
  const int per_host = spec_.devices_per_host;
  const int local_hosts = local_replicas_ / per_host;
  const std::size_t count = replicas_[0]->gradients().size();
  // One row per host: its replicas' gradient sum, then its replicas' losses
  // of each micro-batch (doubles, as pairs of floats' bits), then the step
  // it took (an int64's bits): parts that resumed from different
  // checkpoints must not be summed.
  const std::size_t loss_floats = std::size_t(micro_batches) * per_host * 2;
  const std::size_t row = count + loss_floats + 2;
  gather_send_.resize(row * local_hosts);
  for (int h = 0; h < local_hosts; ++h) {
    std::vector<float*> host(gradient_buffers_.begin() + h * per_host,
                             gradient_buffers_.begin() + (h + 1) * per_host);
    ring_all_reduce(host, count, 1.0f, &workers_);  // today's in-process ring, unscaled
    float* out = gather_send_.data() + row * h;
    std::copy_n(host[0], count, out);
    std::vector<double> losses;
    for (int m = 0; m < micro_batches; ++m) {
      for (int r = 0; r < per_host; ++r) {
        losses.push_back(step_losses_[std::size_t(m) * local_replicas_ + h * per_host + r]);
      }
    }
    std::memcpy(out + count, losses.data(), loss_floats * sizeof(float));
    const std::int64_t step = step_ + 1;
    std::memcpy(out + count + loss_floats, &step, sizeof step);
  }
  const float* rows = gather_send_.data();
  if (control_.slice != nullptr && control_.slice->collective != nullptr) {
    const SlicePart& part = *control_.slice;
    std::vector<std::size_t> counts;
    for (int hosts : part.hosts_per_rank) counts.push_back(row * hosts);
    gather_all_.resize(row * slice_hosts_);
    const auto begin = clock_.now();
    const base::Status gathered =
        part.collective->all_gather(gather_send_.data(), gather_all_.data(), counts);
    if (!gathered.ok()) {
      log(gathered.error().type + ": " + gathered.error().message);
      return gathered.error();
    }
    xla_.cross_host_gather(
        static_cast<std::int64_t>((gather_all_.size() - gather_send_.size()) * sizeof(float)),
        clock_.now() - begin);
    rows = gather_all_.data();
    for (int h = 0; h < slice_hosts_; ++h) {
      std::int64_t step = 0;
      std::memcpy(&step, rows + row * h + count + loss_floats, sizeof step);
      if (step != step_ + 1) {
        const std::string message = "host " + std::to_string(h) + " of the slice took step " +
                                    std::to_string(step) + " while this one took step " +
                                    std::to_string(step_ + 1) +
                                    ": its parts resumed from different checkpoints";
        log("INTERNAL: " + message);
        return job_error("INTERNAL", message, "Resubmit the job; report this as a bug.");
      }
    }
  }
  // The hosts' sums added in host order, then scaled: the same bits however
  // the hosts are split among processes.
  std::vector<const float*> host_sums;
  for (int h = 0; h < slice_hosts_; ++h) host_sums.push_back(rows + row * h);
  ordered_sum(host_sums, count, 1.0f / static_cast<float>(spec_.world_size),
              replicas_[0]->gradients().data());
  std::vector<double> means(micro_batches, 0.0);
  std::vector<double> losses(std::size_t(micro_batches) * per_host);
  for (int h = 0; h < slice_hosts_; ++h) {
    std::memcpy(losses.data(), rows + row * h + count, loss_floats * sizeof(float));
    for (int m = 0; m < micro_batches; ++m) {
      for (int r = 0; r < per_host; ++r) means[m] += losses[std::size_t(m) * per_host + r];
    }
  }
  for (double& mean : means) mean /= spec_.world_size;
  return means;
}

void Trainer::ensure_replicas() {
  if (!replicas_.empty()) return;
  const int world = local_replicas_;
  // Large products run as panels on the pool, nested in the replicas' tasks:
  // threads that have no replica left to run take panels.
  ComputeSplit split;
  split.pool = &workers_;
  for (int r = 0; r < world; ++r) {
    replicas_.push_back(std::make_unique<Replica>(*network_, spec_.data.batch_size, split));
  }
  replica_losses_.assign(world, 0.0);
  replica_transfer_.assign(world, nanoseconds{0});
}

}  // namespace tpujobs::executor::internal
