// The run of one job on an agent (service/agent.h): from its placement to
// its end. Agent::reconcile (agent.cc) decides which copies run.
#include "service/agent_run.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "api/resolution.h"
#include "base/thread_priority.h"
#include "scheduler/capacity.h"
#include "scheduler/generation.h"
#include "service/agent.h"
#include "service/device_facts.h"
#include "service/gloo_collective.h"
#include "service/job_lifecycle.h"
#include "service/job_views.h"

namespace tpujobs::service {
namespace {

using db::JobState;
using nlohmann::json;

// A part of a slice other than the first writes nothing about the job: the
// first part's copy computes the same bits and reports them.
class DiscardSink final : public executor::TrainingSink {
 public:
  void log(std::string_view) override {}
  void metrics(const executor::MetricPoint&) override {}
  void checkpoint(std::shared_ptr<const executor::Checkpoint>) override {}
  bool ready_for_checkpoint() override { return false; }  // none is stored
  void progress(const executor::Progress&) override {}
};

}  // namespace

// The rendezvous keys of one placement, in PostgreSQL.
class Agent::RendezvousRows final : public RendezvousKeys {
 public:
  RendezvousRows(db::ClusterRepository& cluster, std::int64_t placement)
      : cluster_(cluster), placement_(placement) {}
  base::Status set(const std::string& key, const std::string& value) override {
    return cluster_.set_rendezvous_key(placement_, key, value);
  }
  base::Result<std::optional<std::string>> get(const std::string& key) override {
    return cluster_.get_rendezvous_key(placement_, key);
  }

 private:
  db::ClusterRepository& cluster_;
  std::int64_t placement_;
};

// Routes the executor's output to the telemetry writer, every item fenced
// by the run's placement.
class Agent::Sink final : public executor::TrainingSink {
 public:
  Sink(Agent& agent, Run& run) : agent_(agent), run_(run) {}

  void log(std::string_view line) override {
    run_.next_log_seq =
        agent_.telemetry_.log({run_.row.id, run_.next_log_seq, agent_.options_.clock->wall_now(),
                               std::string(line), run_.fence()});
  }

  void metrics(const executor::MetricPoint& point) override {
    for (const auto& [name, value] : point.values) run_.latest_metrics[name] = value;
    if (run_.skip_metric_points > 0) {  // recorded before the resume
      --run_.skip_metric_points;
      return;
    }
    agent_.telemetry_.metric({run_.row.id, run_.next_metric_seq++, point.step, point.epoch,
                              agent_.options_.clock->wall_now(), metric_values_json(point.values),
                              run_.fence()});
  }

  // Stored after the lines and points queued before it (see
  // service/telemetry_writer.h).
  void checkpoint(std::shared_ptr<const executor::Checkpoint> checkpoint) override {
    agent_.telemetry_.checkpoint(run_.row.id, run_.fence(), std::move(checkpoint));
  }
  bool ready_for_checkpoint() override {
    return agent_.telemetry_.ready_for_checkpoint(run_.row.id);
  }

  void progress(const executor::Progress& progress) override {
    run_.progress = progress;
    const auto now = agent_.options_.clock->now();
    // Other processes show it from the table: often enough to follow.
    if (now - last_write_ < std::chrono::milliseconds(250)) return;
    last_write_ = now;
    record_progress();
    agent_.keep_live_view(run_);
  }

  void record_progress() {
    if (!run_.progress) return;
    agent_.telemetry_.progress(run_.row.id, run_.fence(), progress_json(*run_.progress),
                               metric_values_json(run_.latest_metrics));
  }

 private:
  Agent& agent_;
  Run& run_;
  base::Clock::time_point last_write_{};
};

executor::DeviceFacts Agent::device_for(const db::JobRow& row) const {
  std::optional<scheduler::Generation> generation;
  json allocation = json::parse(row.allocation_json.value_or("{}"), nullptr, false);
  if (allocation.is_object() && allocation.contains("generation") &&
      allocation["generation"].is_string()) {
    generation = scheduler::parse_generation(allocation["generation"].get<std::string>());
  }
  if (!generation && !options_.layout.hosts.empty())
    generation = options_.layout.hosts.front().generation;
  return generation ? device_facts(*generation) : executor::DeviceFacts{};
}

base::Result<std::optional<executor::Checkpoint>> Agent::resume_of(Run& run) {
  // Read with the work that started it (else now), and the checkpoint's
  // bytes only when there is one.
  const std::int64_t id = run.row.id;
  base::Result<db::JobOutputRepository::ResumePoint> point =
      run.resume_point ? base::Result<db::JobOutputRepository::ResumePoint>(*run.resume_point)
                       : repo_.outputs.resume_point(id);
  run.resume_point.reset();
  if (!point.ok()) return point.error();
  run.next_log_seq = point->max_log_seq + 1;
  run.next_metric_seq = point->max_metric_seq + 1;
  run.skip_metric_points = point->metrics_after_checkpoint;
  if (!point->checkpoint_step) return std::optional<executor::Checkpoint>();
  auto checkpoint = repo_.outputs.latest_checkpoint(id);
  if (!checkpoint.ok()) return checkpoint.error();
  if (!*checkpoint) {
    return base::make_error(base::ErrorCode::kUnavailable,
                            "job " + std::to_string(id) + ": its checkpoint went while read");
  }
  executor::Checkpoint resume{(*checkpoint)->step, (*checkpoint)->epoch,
                              std::move((*checkpoint)->bytes)};
  if (resume.step != *point->checkpoint_step) {  // a newer one came in between
    auto recorded = repo_.outputs.count_metrics_after_step(id, resume.step);
    run.skip_metric_points = recorded.ok() ? *recorded : 0;
  }
  return std::optional<executor::Checkpoint>(std::move(resume));
}

void Agent::train_below() {
  if (options_.training_nice == 0) return;
  if (base::Status lowered = base::set_this_thread_nice(options_.training_nice); !lowered.ok()) {
    // Training still runs, at the service's priority.
    std::call_once(nice_refused_, [&lowered] {
      std::cerr << "tpujobs agent: training threads keep the service's priority: "
                << lowered.error().message << "\n";
    });
  }
}

void Agent::start_run(std::shared_ptr<Run> run) {
  const bool started = start_placed(*run);
  base::MutexLock lock(mutex_);
  if (started) {
    run->thread = std::thread([this, run] { run_job(run); });
  } else {
    forget_locked(run);
  }
  --starting_;
  starts_done_.notify_all();
}

bool Agent::start_placed(Run& run) {
  std::optional<api::JobSpec> spec = placed_spec(run);
  if (!spec) return false;

  // Resume from the last checkpoint and continue the sequence numbers.
  auto resumed = resume_of(run);
  if (!resumed.ok()) return false;  // cannot tell where to start: leave it to the next look
  run.resume = std::move(*resumed);
  if (!run.peer() && !run.running_written) {
    const std::string where = run.slice ? "agents of its slice" : "agent " + options_.name;
    const std::optional<std::int64_t> step =
        run.resume ? std::optional<std::int64_t>(run.resume->step) : std::nullopt;
    auto moved = write_viewed(lifecycle::run(
        run.row.id, lifecycle::running_text(lifecycle::running_reason(where), step), run.fence()));
    // Moved on meanwhile, or the database is away: the next look decides.
    if (!moved.ok() || !*moved) return false;
  }
  run.spec = std::move(spec);
  return true;
}

void Agent::run_job(std::shared_ptr<Run> run) {
  train_placed(*run);
  {
    base::MutexLock live(live_mutex_);
    live_views_.erase(run->row.id);
  }
  base::MutexLock lock(mutex_);
  forget_locked(run);
}

void Agent::forget_locked(const std::shared_ptr<Run>& run) {
  auto it = runs_.find(run->row.id);
  if (it == runs_.end() || it->second != run) return;
  if (run->thread.joinable()) ended_.push_back(std::move(run->thread));
  runs_.erase(it);
}

void Agent::train_placed(Run& run) {
  train_below();  // its steps, checkpoints and telemetry; not its start (agent.h)
  Sink sink(*this, run);
  DiscardSink discard;
  executor::TrainingSink& output =
      run.peer() ? static_cast<executor::TrainingSink&>(discard) : sink;
  const executor::TrainingResult result = train(run, *run.spec, run.resume, output);
  if (run.peer()) {  // the first part writes the job's end
    end_slice_part(run);
    return;
  }
  sink.record_progress();
  telemetry_.flush_job(run.row.id);
  std::optional<db::Transition> end = end_of(run, result, run.spec->max_retries);
  if (end) write_end(run, *end);
  // Only now: a look meanwhile finds the job still this part's, and leaves
  // the copy writing its end alone.
  end_slice_part(run);
  if (end) {
    notify(db::kSubmitChannel, "finished");  // cores freed: wake the leader
    // Waits and log followers of the job, on every replica, look now.
    notify(db::kLogChannel, std::to_string(run.row.id));
  }
}

void Agent::end_slice_part(const Run& run) {
  if (!run.slice) return;
  base::MutexLock lock(mutex_);
  ended_slice_placements_.insert(run.slice->placement);
}

void Agent::write_end(Run& run, const db::Transition& end) {
  {
    base::MutexLock lock(mutex_);
    run.ending = true;
  }
  std::chrono::milliseconds wait{100};
  for (base::Result<bool> moved = write_viewed(end); !moved.ok(); moved = write_viewed(end)) {
    if (wait.count() == 100) {
      std::cerr << "tpujobs: job " << end.job_id << ": its end (" << db::to_string(end.to)
                << ") could not be stored: " << moved.error().message << "; trying again"
                << std::endl;
    }
    // Not once this agent stops (its placement is judged where it is lost
    // or left) or a look or a rejoin finds the job moved on (no write of
    // this copy lands then).
    base::MutexLock lock(mutex_);
    if (options_.clock->wait_for(lock, wake_, wait, [this, &run]() REQUIRES(mutex_) {
          return stopping_ || run.moved_on;
        }))
      return;
    wait = std::min(2 * wait, std::chrono::milliseconds(5000));
  }
}

std::optional<api::JobSpec> Agent::placed_spec(Run& run) {
  json spec_json = json::parse(run.row.spec_json, nullptr, false);
  std::optional<api::JobSpec> spec;
  if (auto parsed = api::parse_job_spec(spec_json); parsed.ok()) spec = std::move(*parsed);
  scheduler::PoolCapacity capacity;
  for (const scheduler::HostLayout& h : options_.layout.hosts) ++capacity.hosts[h.generation];
  if (run.slice) {
    // The slice's hosts, most of them another agent's, are what it resolves against.
    const executor::DeviceFacts device = device_for(run.row);
    if (auto generation = scheduler::parse_generation(device.generation)) {
      int hosts = 0;
      for (int part : run.slice->hosts_per_rank) hosts += part;
      capacity.hosts[*generation] = std::max(capacity.hosts[*generation], hosts);
    }
  }
  std::string why = "the stored spec does not parse";
  if (spec) {
    base::Result<api::Resolution> resolution = api::resolve(spec->trainer, capacity);
    if (resolution.ok()) return api::apply_resolution(*resolution, std::move(*spec));
    const base::Error& refused = resolution.error();
    why = refused.fields.empty() ? refused.message : refused.fields.front().message;
  }
  if (!run.peer()) {  // the first part reports it
    (void)write(lifecycle::reject(run.row.id, {JobState::kStarting, JobState::kRunning}, "by agent",
                                  why, run.fence()));
  }
  return std::nullopt;
}

executor::TrainingResult Agent::train(Run& run, const api::JobSpec& spec,
                                      const std::optional<executor::Checkpoint>& resume,
                                      executor::TrainingSink& output) {
  executor::RunControl control;
  control.cancel = &run.cancel;
  control.resume = resume ? &*resume : nullptr;
  control.checkpoint_on_cancel = &run.checkpoint_on_cancel;
  control.stop_reason = [&run]() -> std::string {  // as the executor logs it ("": none)
    switch (run.stop_reason.load()) {
      case StopReason::kShutdown:
        return "its agent is stopping";
      case StopReason::kPreempted:
        return "preempted by job " + std::to_string(run.preempted_by.load());
      case StopReason::kMovedOn:  // its writes no longer land
      case StopReason::kUserCancel:
      case StopReason::kNone:
        break;
    }
    return "";
  };
  control.clock = options_.clock;
  base::Result<std::unique_ptr<executor::SliceCollective>> joined = join_slice(run);
  std::unique_ptr<executor::SliceCollective> collective =
      joined.ok() ? std::move(*joined) : nullptr;
  executor::SlicePart part;
  if (collective) {
    part = executor::SlicePart{run.slice->first_host, run.slice->hosts, run.slice->hosts_per_rank,
                               collective.get()};
    control.slice = &part;
  }
  executor::TrainingResult result;
  if (!joined.ok()) {
    output.log(joined.error().type + ": " + joined.error().message);
    result.outcome = executor::Outcome::kFailed;
    result.error = joined.error();
  } else {
    result =
        executor::train(spec.training, device_for(run.row), workers_, *datasets_, output, control);
  }
  collective.reset();  // its sockets close: peers still waiting fail now, not at their deadline
  return result;
}

std::optional<db::Transition> Agent::end_of(const Run& run, const executor::TrainingResult& result,
                                            int max_retries) {
  const std::int64_t id = run.row.id;
  const StopReason reason = run.stop_reason.load();
  json result_json = {{"metrics", result.final_metrics},
                      {"steps", result.steps},
                      {"xla_report", result.xla_report},
                      {"parameters_digest", result.parameters_digest}};
  if (result.outcome == executor::Outcome::kSucceeded) {
    return lifecycle::finish(id, JobState::kSucceeded, "Training finished", std::nullopt,
                             result_json.dump(), run.fence());
  }
  if (result.outcome == executor::Outcome::kFailed && run.slice &&
      result.error->type == "UNAVAILABLE") {
    // Requeued while retries allow: placed again (on healthy hosts) to
    // resume from its checkpoint.
    if (auto retry = retry_after_unreachable_peer(run, *result.error, max_retries)) return retry;
  }
  if (result.outcome == executor::Outcome::kFailed) {
    const base::Error& e = *result.error;
    return lifecycle::finish(id, JobState::kFailed, e.type + ": " + e.message,
                             lifecycle::error_text(e.type, e.message, e.hint), result_json.dump(),
                             run.fence());
  }
  switch (reason) {
    case StopReason::kUserCancel:
      return lifecycle::finish(id, JobState::kCancelled, "Cancelled by request",
                               lifecycle::error_text("CANCELLED", "the job was cancelled", ""),
                               result_json.dump(), run.fence());
    case StopReason::kShutdown:
      return shutdown_requeue(id, run.fence());
    case StopReason::kPreempted:
      // Not a failure: the attempt count (max_retries) is left alone.
      return lifecycle::preempt(id, run.preempted_by.load(), run.fence());
    case StopReason::kMovedOn:  // the job belongs to another placement now
    case StopReason::kNone:
      break;
  }
  return std::nullopt;
}

base::Result<std::unique_ptr<executor::SliceCollective>> Agent::join_slice(const Run& run) {
  if (!run.slice) return std::unique_ptr<executor::SliceCollective>();
  RendezvousRows keys(cluster_, run.slice->placement);
  GlooOptions options;
  options.host = options_.collective_host;
  options.timeout = options_.collective_timeout;
  options.clock = options_.clock;
  auto connected = GlooCollective::connect(
      keys, run.slice->rank, static_cast<int>(run.slice->hosts_per_rank.size()), options);
  if (!connected.ok()) return connected.error();
  return std::unique_ptr<executor::SliceCollective>(std::move(*connected));
}

db::Transition Agent::shutdown_requeue(std::int64_t job, std::int64_t placement) const {
  return lifecycle::requeue_elsewhere(
      job, "Agent " + options_.name + " stopping; requeued to resume from its last checkpoint",
      placement, /*retry=*/false, {JobState::kStarting, JobState::kRunning});
}

std::optional<db::Transition> Agent::retry_after_unreachable_peer(const Run& run,
                                                                  const base::Error& error,
                                                                  int max_retries) {
  // A launch on some of the slice's workers fails the same way on every
  // attempt: not a peer to retry without.
  if (run.row.attempt >= max_retries ||
      (!error.fields.empty() && error.fields.front().field == "resources.workers"))
    return std::nullopt;
  return lifecycle::requeue_elsewhere(
      run.row.id,
      "UNAVAILABLE: failed to connect to all addresses (a peer of its slice); requeued to resume "
      "from its last checkpoint",
      run.fence(), /*retry=*/true, {JobState::kRunning});
}

}  // namespace tpujobs::service
