#include "service/job_manager.h"

#include <algorithm>
#include <iostream>

#include "api/problem.h"
#include "api/request_reading.h"
#include "api/usage.h"
#include "base/prometheus.h"
#include "service/database_datasets.h"
#include "service/device_facts.h"
#include "service/job_lifecycle.h"
#include "service/job_views.h"
#include "service/pool_views.h"

namespace tpujobs::service {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

using db::is_terminal;
using db::JobState;

std::string state_name(JobState state) { return std::string(db::to_string(state)); }

using views::iso_time;
using views::parse_or_null;
using views::response_body;

base::Result<nlohmann::json> not_found(std::int64_t id) {
  return base::make_error(base::ErrorCode::kNotFound, "no job " + std::to_string(id));
}

}  // namespace

JobManager::JobManager(db::ConnectionPool& pool, scheduler::PoolLayout layout,
                       JobManagerOptions options)
    : pool_(pool),
      repo_(pool),
      cluster_(pool),
      layout_(std::move(layout)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : base::real_clock()),
      datasets_(std::make_unique<DatabaseDatasets>(repo_.datasets)),
      views_(options_.view_bytes) {}

JobManager::~JobManager() {
  shutdown();
  close();
}

base::Status JobManager::start() {
  renderer_ = std::make_unique<ViewRenderer>(views_);
  if (options_.wake_bus != nullptr) {
    // The leader runs in this process: it names every job whose row it
    // changes, so a waiting job's view can be served from memory.
    options_.wake_bus->subscribe(kJobsChangedChannel, [this](const std::string& payload) {
      views_.forget(parse_job_ids(payload));
    });
    options_.wake_bus->subscribe(kPendingWrittenChannel, [this](const std::string& payload) {
      views_.set_pending(parse_pending_changes(payload));
      renderer_->wake();
    });
    // Its agent stored lines of these jobs, or the leader or the agent
    // ended them: their log followers and waits look now.
    options_.wake_bus->subscribe(db::kLogChannel, [this](const std::string& payload) {
      const std::vector<std::int64_t> jobs = parse_job_ids(payload);
      log_streams_.wake(jobs);
      waits_.wake(jobs);
    });
    queued_views_told_ = true;
  }
  readiness_probe_.start();
  started_ = true;
  committer_.start();
  log_listener_ = std::thread([this] { log_listener_loop(); });
  return base::Status::Ok();
}

void JobManager::shutdown() {
  if (!started_ || shut_down_.exchange(true)) return;
  committer_.close();  // it answers what it already took
  // Answered now, while the HTTP server still writes: a wait would hold its
  // request in flight until the server's shutdown deadline.
  waits_.close();
}

void JobManager::close() {
  if (closed_) return;
  closed_ = true;
  readiness_probe_.stop();
  {
    base::MutexLock lock(log_listener_mutex_);
    log_listener_stopping_ = true;
  }
  log_listener_wake_.notify_all();
  if (log_listener_.joinable()) log_listener_.join();
  if (renderer_) renderer_->stop();
  timers_.stop();
  // No stream keeps a connection past this: the HTTP server is destroyed
  // after close(), and a writer must not outlive it.
  log_streams_.close();
}

void JobManager::wake(const char* channel, const std::string& payload) {
  if (options_.wake_bus != nullptr) {
    options_.wake_bus->publish(channel, payload);
  } else {
    (void)cluster_.notify(channel, payload);
  }
}

// ---------------------------------------------------------------- submit

void JobManager::submit(api::SubmitRequest request, std::function<void(api::SubmitOutcome)> done) {
  committer_.submit(std::move(request), std::move(done));
}

void JobManager::submit_array(std::vector<api::SubmitRequest> children,
                              std::function<void(std::vector<api::SubmitOutcome>)> done) {
  committer_.submit_array(std::move(children), std::move(done));
}

namespace {
// The view cache's generation before this committer thread's last insert:
// on_committed, on the same thread, keeps the views of the new jobs only
// if the leader did not change them in between (it may place a job as soon
// as its row commits).
thread_local std::uint64_t views_before_insert = 0;
}  // namespace

base::Result<std::vector<db::InsertedJob>> JobManager::JobStore::insert_jobs(
    const std::vector<db::NewJob>& rows) {
  views_before_insert = manager_.views_.generation();
  auto inserted = manager_.repo_.jobs.insert_jobs(rows);
  manager_.database_ok_ = inserted.ok() || inserted.code() != base::ErrorCode::kUnavailable;
  // /readyz: a refused insert (full disk, read-only) is a failing write.
  manager_.readiness_probe_.note_write(inserted.ok() ||
                                       inserted.code() == base::ErrorCode::kConflict ||
                                       inserted.code() == base::ErrorCode::kInvalid);
  if (!inserted.ok() && inserted.error().maybe_applied) {
    for (const db::ServerProcess& process : manager_.repo_.jobs.take_unanswered_inserts())
      manager_.settle_unconfirmed_insert(process);
  }
  return inserted;
}

// An insert whose answer was lost may still commit later (its server process
// waits on a lock, or on the disk). It is settled here: its server process is
// ended, so the job is stored already (the leader finds it in the table) or
// never will be, and the submit's 503 "may or may not have been stored" means
// one or the other, not a job that appears minutes later. When the process
// cannot be ended (the database is away, pg_terminate_backend refused), the
// insert may still land; a retry with the same Idempotency-Key finds it.
void JobManager::settle_unconfirmed_insert(const db::ServerProcess& process) {
  const std::chrono::milliseconds answer = pool_.answer_timeout();
  const std::chrono::milliseconds exit_wait =
      answer.count() > 0 ? std::min(std::chrono::milliseconds(1000), answer / 2)
                         : std::chrono::milliseconds(1000);
  base::Result<bool> gone = repo_.jobs.end_server_process(process, exit_wait);
  if (!gone.ok() || !*gone) {
    std::cerr << "tpujobs: an insert whose answer was lost could not be settled; it may still "
                 "be stored: "
              << (gone.ok() ? "its server process has not exited" : gone.error().message)
              << std::endl;
  }
}

void JobManager::on_committed(std::vector<CommittedSubmit>& committed) {
  using Kind = api::SubmitOutcome::Kind;
  job_counts_.forget();
  // First, before the views are rendered: a leader pass that reads the new
  // rows now finds their specs handed over.
  if (options_.submitted_specs != nullptr) {
    for (const CommittedSubmit& c : committed) {
      if (c.outcome.kind == Kind::kCreated)
        options_.submitted_specs->put(c.row, placement_spec(c.pending.request.spec));
    }
  }
  // Committed: wake the scheduler leader, wherever it runs. One new job (a
  // submit to a quiet pool) wakes it before its view is rendered (85-240
  // us), so the pass overlaps the rendering. Several wake it after, so that
  // fewer of their reasons come before their views are kept (4,539 first
  // reads went to the database in a read run at 100,000 queued, 0.76x the
  // reads; bench/RESULTS.md, session 48). A pass already under way still
  // may: put_submitted gives such a view the newer reason.
  const bool wake_first =
      std::count_if(committed.begin(), committed.end(),
                    [](const CommittedSubmit& c) { return c.outcome.kind == Kind::kCreated; }) == 1;
  if (wake_first) wake(db::kSubmitChannel, std::string(db::kSubmitPayload));
  for (CommittedSubmit& c : committed) {
    if (c.outcome.kind == Kind::kExisting) {
      c.outcome.job = response_body(views::render_row(c.row));
      continue;
    }
    if (c.outcome.kind != Kind::kCreated) continue;
    ++submitted_total_;
    c.outcome.job =
        views::submitted_body(c.row, c.pending.request.spec_json, submitted_text(c.pending));
    // Every change of the job will be told: its view is served from memory
    // from now on, without a read or a parse.
    if (queued_views_told_ && c.row.state == JobState::kQueued && !c.row.started_at) {
      views_.put_submitted(views_before_insert, c.row.id, c.row.tenant, c.outcome.job,
                           c.row.priority, c.row.pending_json);
    }
  }
  if (!wake_first) wake(db::kSubmitChannel, std::string(db::kSubmitPayload));
}

base::Result<std::map<std::int64_t, JobState>> JobManager::job_states(
    const std::string& tenant, const std::vector<std::int64_t>& ids) {
  return repo_.workload.job_states(ids, tenant);
}

base::Result<std::vector<api::UsageRow>> JobManager::usage(const api::UsageQuery& query) {
  auto rows =
      repo_.workload.usage(query.from, query.to, query.by_label, query.label_key, query.tenant);
  if (!rows.ok()) return rows.error();
  std::vector<api::UsageRow> out;
  out.reserve(rows->size());
  for (db::UsageRow& row : *rows) {
    out.push_back({std::move(row.group), std::move(row.generation), row.jobs, row.core_seconds});
  }
  return out;
}

// ----------------------------------------------------------------- views

base::Result<db::JobRow> JobManager::load_visible(std::int64_t id, const std::string& tenant) {
  auto row = repo_.jobs.get_job(id);
  if (!row.ok()) return row.error();
  if (!*row || (*row)->tenant != tenant)
    return base::make_error(base::ErrorCode::kNotFound, "no job " + std::to_string(id));
  return std::move(**row);
}

base::Result<nlohmann::json> JobManager::get_job(std::int64_t id, const std::string& tenant) {
  base::Result<std::string> text = get_job_text(id, tenant);
  if (!text.ok()) return text.error();
  return json::parse(*text);
}

base::Result<std::string> JobManager::get_job_text(std::int64_t id, const std::string& tenant) {
  // A finished job's view from the cache, so `wait` on a finished job needs
  // no database round trip, also while the database is away.
  if (std::optional<ViewCache::Entry> hit = views_.find(id)) {
    ++views_from_memory_;
    if (hit->tenant != tenant) return not_found(id).error();
    return std::move(hit->body);
  }
  ++views_from_database_;
  const std::uint64_t seen = views_.generation();
  // The row and, for a job that started, where a resume would begin: one read.
  auto job = repo_.jobs.get_job_with_checkpoint(id);
  if (!job.ok() && job.code() == base::ErrorCode::kUnavailable && live_view_) {
    // The database is away: a job this process runs shows its last progress.
    if (auto live = live_view_(id)) {
      if (live->first != tenant) return not_found(id).error();
      return std::move(live->second);
    }
  }
  if (!job.ok()) return job.error();
  if (!*job || (*job)->row.tenant != tenant) return not_found(id).error();
  const db::JobRow& row = (*job)->row;
  std::string body = views::job_body(**job);
  if (is_terminal(row.state)) {
    views_.put_read_if_current(seen, id, row.tenant, body);
  } else if (row.state == JobState::kQueued && !row.started_at) {
    // A waiting job's view changes through the leader or a cancel; each is
    // told here (queued_views_told_).
    if (queued_views_told_)
      views_.put_if_current(seen, id, row.tenant, body, row.priority, row.pending_json);
  } else if (row.state != JobState::kQueued && options_.wake_bus != nullptr) {
    // A placed one's changes through its agent too, which says so only
    // through the wake bus (service/view_cache.h).
    views_.put_read_if_current(seen, id, row.tenant, body);
  }
  return body;
}

void JobManager::written(std::uint64_t seen, const db::JobWithCheckpoint& job) {
  views_.put_written(seen, job.row.id, job.row.tenant, views::job_body(job));
}

base::Result<std::string> JobManager::stored_job_text(std::int64_t id, const std::string& tenant) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  return response_body(views::render_row(*row));
}

base::Result<api::JobListPage> JobManager::list_jobs(const api::JobQuery& query) {
  return lists_.list(query);
}

void JobManager::wait_job(std::int64_t id, const std::string& tenant,
                          std::chrono::milliseconds timeout,
                          std::function<void(base::Result<nlohmann::json>)> done) {
  if (timeout.count() > 0) return waits_.wait(id, tenant, clock_.now() + timeout, std::move(done));
  done(get_job(id, tenant));
}

base::Result<nlohmann::json> JobManager::cancel_job(std::int64_t id, const std::string& tenant) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  if (is_terminal(row->state)) {
    return base::make_error(base::ErrorCode::kConflict,
                            "job " + std::to_string(id) + " is already " + state_name(row->state) +
                                "; only unfinished jobs can be cancelled");
  }
  if (row->state == JobState::kQueued) {
    // Not placed yet: it ends here, unless the leader places it first.
    auto moved = repo_.jobs.transition(lifecycle::cancel_queued(id));
    views_.forget({id});  // after the write: a read before it kept the old state
    if (!moved.ok()) return moved.error();
    if (*moved) {
      waits_.wake({id});
      // The leader's kept queue drops it now, not at its next read.
      wake(db::kSubmitChannel, "cancelled");
      auto now = load_visible(id, tenant);
      if (!now.ok()) return now.error();
      return views::render_row(*now);
    }
  }
  // Placed: the request is stored before it is answered (after a crash the
  // job ends CANCELLED rather than resuming), and its agent woken.
  base::Status requested = repo_.jobs.request_cancel(id);
  views_.forget({id});  // after the write, as above (a failed one may have landed)
  if (!requested.ok()) return requested.error();
  wake(db::kAgentChannel, row->agent.value_or(""));
  json view = views::render_row(*row);
  view["cancel_requested"] = true;
  return view;
}

// ------------------------------------------------------------------ logs

base::Result<nlohmann::json> JobManager::job_logs(std::int64_t id, const std::string& tenant,
                                                  std::int64_t after, int limit) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  auto lines = repo_.outputs.list_logs(id, after, limit);
  if (!lines.ok()) return lines.error();
  json out = json::array();
  std::int64_t last = after;
  for (const db::LogLine& l : *lines) {
    out.push_back({{"seq", l.seq}, {"at", iso_time(l.at)}, {"line", l.line}});
    last = l.seq;
  }
  return json{{"job_id", id}, {"lines", out}, {"next_after", last}};
}

void JobManager::follow_logs(std::int64_t id, const std::string& tenant, std::int64_t after,
                             api::ResponseWriterPtr writer) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) {
    // 404, or 503 in the service's own words: PostgreSQL's text goes to the log.
    writer->respond(api::answer(base::Result<nlohmann::json>(row.error())));
    return;
  }
  api::Response head;
  head.content_type = "text/event-stream";
  head.header("X-Accel-Buffering", "no");
  writer->start_stream(std::move(head));
  log_streams_.follow(id, after, std::move(writer));
}

base::Result<std::vector<db::LogLine>> JobManager::Logs::stored_lines(std::int64_t job,
                                                                      std::int64_t after,
                                                                      int limit) {
  return manager_.repo_.outputs.list_logs(job, after, limit);
}

base::Result<std::optional<JobState>> JobManager::Logs::stored_state(std::int64_t job) {
  auto row = manager_.repo_.jobs.get_job(job);
  if (!row.ok()) return row.error();
  if (!*row) return std::optional<JobState>();
  return std::optional<JobState>((*row)->state);
}

base::Result<nlohmann::json> JobManager::job_metrics(std::int64_t id, const std::string& tenant,
                                                     std::int64_t after) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  auto points = repo_.outputs.list_metrics(id, after, 100000);
  if (!points.ok()) return points.error();
  json out = json::array();
  std::int64_t last = after;
  for (const db::MetricPoint& m : *points) {
    json values = json::parse(m.metrics_json, nullptr, false);
    out.push_back({{"seq", m.seq},
                   {"step", m.step},
                   {"epoch", m.epoch},
                   {"at", iso_time(m.at)},
                   {"values", values}});
    last = m.seq;
  }
  return json{{"job_id", id}, {"points", out}, {"next_after", last}};
}

base::Result<nlohmann::json> JobManager::job_events(std::int64_t id, const std::string& tenant) {
  if (auto row = load_visible(id, tenant); !row.ok()) return row.error();
  auto events = repo_.jobs.list_events(id);
  if (!events.ok()) return events.error();
  json out = json::array();
  for (const db::JobEventRow& e : *events) {
    out.push_back({{"at", iso_time(e.at)},
                   {"from", e.from_state ? json(state_name(*e.from_state)) : json(nullptr)},
                   {"to", state_name(e.to_state)},
                   {"reason", e.reason}});
  }
  return json{{"job_id", id}, {"events", out}};
}

base::Result<std::string> JobManager::xla_report(std::int64_t id, const std::string& tenant) {
  auto row = load_visible(id, tenant);
  if (!row.ok()) return row.error();
  json result = parse_or_null(row->result_json);
  if (!result.is_object() || !result.contains("xla_report") || !result["xla_report"].is_string() ||
      result["xla_report"].get<std::string>().empty()) {
    return base::make_error(base::ErrorCode::kConflict,
                            "job " + std::to_string(id) + " is " + state_name(row->state) +
                                ": the XLA metrics report is written when it ends");
  }
  return result["xla_report"].get<std::string>();
}

// ------------------------------------------------------------------ pool

nlohmann::json JobManager::pool_view() {
  auto agents = cluster_.list_agents();
  auto hosts = cluster_.list_hosts();
  auto placed = repo_.jobs.load_placed();
  auto queued = queued_count_.get([&] { return repo_.jobs.count_queued(); });
  if (!agents.ok() || !hosts.ok() || !placed.ok() || !queued.ok()) {
    return {{"error", "the database did not answer"},
            {"hosts", json::array()},
            {"agents", json::array()}};
  }
  return views::cluster_pool(*agents, *hosts, *placed, **queued);
}

base::Result<nlohmann::json> JobManager::set_host_health(const std::string& host,
                                                         scheduler::HostHealth health) {
  return pool_admin_.set_host_health(host, health);
}

base::Result<nlohmann::json> JobManager::force_release(std::int64_t id) {
  return pool_admin_.force_release(id);
}

base::Result<api::JobService::UploadedDataset> JobManager::upload_dataset(
    const DatasetUpload& upload) {
  base::Result<executor::CsvTable> parsed = executor::parse_csv(upload.csv);
  if (!parsed.ok()) return parsed.error();
  const executor::CsvTable& table = *parsed;
  auto stored = repo_.datasets.create_dataset({.tenant = upload.tenant,
                                               .name = upload.name,
                                               .rows = table.rows,
                                               .columns = static_cast<int>(table.columns.size()),
                                               .classes = table.classes,
                                               .csv = upload.csv,
                                               .idempotency_key = upload.idempotency_key,
                                               .content_hash = upload.content_hash});
  if (!stored.ok()) return stored.error();
  return UploadedDataset{json{{"id", stored->id},
                              {"name", upload.name},
                              {"rows", table.rows},
                              {"features", table.features},
                              {"classes", table.classes},
                              {"columns", table.columns}},
                         stored->existing};
}

scheduler::PoolCapacity JobManager::capacity(Freshness freshness) {
  // Every registered agent's hosts: a job for the hosts of a lost agent
  // waits for it rather than being refused. A recent read serves a second
  // of submits; what it refuses or leaves on the CPU is resolved again on
  // a read made now (api/job_submit.cc), so an agent that registered just
  // before a submit is seen. A host gone within the second only makes a
  // job wait for it, as for a lost agent's.
  auto read = capacity_.get(
      [&]() -> base::Result<scheduler::PoolCapacity> {
        auto hosts = cluster_.list_hosts();
        if (!hosts.ok()) return hosts.error();
        scheduler::PoolCapacity capacity;
        for (const db::ClusterHostRow& h : *hosts) {
          if (auto generation = scheduler::parse_generation(h.generation))
            ++capacity.hosts[*generation];
        }
        return capacity;
      },
      /*now=*/freshness == Freshness::kNow);
  // The database did not answer and never did: no hosts known.
  return read.ok() ? **read : scheduler::PoolCapacity{};
}

executor::DeviceFacts JobManager::device_for(
    std::optional<scheduler::Generation> generation) const {
  if (!generation && !layout_.hosts.empty()) generation = layout_.hosts.front().generation;
  return generation ? device_facts(*generation) : executor::DeviceFacts{};
}

JobManager::Estimate JobManager::estimate(const api::JobSpec& spec,
                                          const api::Resolution& resolution) {
  std::optional<scheduler::Generation> generation = resolution.request.generation;
  if (!generation) {
    const scheduler::PoolCapacity pool = capacity(Freshness::kRecent);
    if (!pool.hosts.empty()) generation = pool.hosts.begin()->first;
  }
  if (!generation) {
    for (const scheduler::HostLayout& h : layout_.hosts) {
      if (resolution.request.kind != scheduler::RequestKind::kHost ||
          scheduler::facts(h.generation).devices_per_host == resolution.request.devices_per_host) {
        generation = h.generation;
        break;
      }
    }
  }
  const executor::DeviceFacts device = device_for(generation);
  // The dry run loads the dataset: remember answers for identical specs.
  json key_parts = {spec.training_key, device.generation, spec.training.world_size};
  const std::string key = key_parts.dump();
  {
    base::MutexLock lock(estimate_mutex_);
    auto it = estimate_cache_.find(key);
    if (it != estimate_cache_.end()) return it->second;
  }
  Estimate out;
  base::Result<executor::Estimate> result = executor::estimate(spec.training, device, *datasets_);
  if (!result.ok()) {
    const base::Error& error = result.error();
    out.error = error.fields.empty() ? base::FieldError{"spec", error.message, error.hint}
                                     : error.fields.front();
    return out;  // not cached: an upload may appear later
  }
  const executor::Estimate& e = *result;
  const executor::HbmUsage& hbm = e.hbm;
  out.advice = e.advice;
  out.estimate = {{"input_features", e.input_features},
                  {"classes", e.classes},
                  {"train_samples", e.train_samples},
                  {"steps_per_epoch", e.steps_per_epoch},
                  {"total_steps", e.total_steps},
                  {"device", device.generation},
                  {"hbm_per_core",
                   {{"parameters", hbm.parameters},
                    {"gradients", hbm.gradients},
                    {"optimizer_state", hbm.optimizer_state},
                    {"activations", hbm.activations},
                    {"total", hbm.total},
                    {"capacity", hbm.capacity},
                    {"fits", hbm.fits}}},
                  {"estimated_step_seconds", e.estimated_step_seconds},
                  {"mxu_utilization", e.mxu_utilization},
                  {"note", "step time and MXU utilisation are estimates for a real " +
                               device.generation + " device, not measurements"}};
  if (!hbm.fits && hbm.certain) {
    out.error = base::FieldError{"data.batch_size", hbm.message(), hbm.hint()};
  }
  base::MutexLock lock(estimate_mutex_);
  if (estimate_cache_.size() > 4096) estimate_cache_.clear();
  estimate_cache_[key] = out;
  return out;
}

// ------------------------------------------------------ tokens, quotas

base::Result<std::optional<api::Principal>> JobManager::authenticate(std::string_view token) {
  return tokens_.authenticate(token);
}

bool JobManager::auth_required() { return tokens_.auth_required(); }

base::Result<std::optional<api::Principal>> JobManager::Tokens::find(
    const std::string& token_hash) {
  auto row = repo_.tokens.find_token(token_hash);
  if (!row.ok()) return row.error();
  if (!*row) return std::optional<api::Principal>();
  return std::optional(api::Principal{(*row)->tenant, (*row)->role == "admin"});
}

base::Result<std::int64_t> JobManager::Tokens::count_active() {
  return repo_.tokens.count_active_tokens();
}

base::Result<nlohmann::json> JobManager::set_quota(const std::string& tenant,
                                                   std::optional<int> max_cores) {
  base::Result<nlohmann::json> answer = pool_admin_.set_quota(tenant, max_cores);
  if (!answer.ok()) return answer;
  quotas_.forget();  // this replica's next submit check reads it
  return answer;
}

std::optional<int> JobManager::quota(const std::string& tenant) {
  auto quotas = quotas_.get([&] { return repo_.pool_state.load_quotas(); });
  if (!quotas.ok()) return std::nullopt;  // the leader enforces the stored quotas
  auto it = (*quotas)->find(tenant);
  if (it == (*quotas)->end()) return std::nullopt;
  return it->second;
}

bool JobManager::ready() {
  // The probe's last answer: /readyz never waits on the database, which
  // may hang (a stopped server) where the API's requests wait.
  const bool ok = readiness_probe_.ready();
  database_ok_ = ok;
  return ok;
}

namespace {

void gauge(std::string& out, const std::string& name, const std::string& help,
           const std::string& type, std::int64_t value) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  out += name + " " + std::to_string(value) + "\n";
}

}  // namespace

std::string JobManager::prometheus_metrics() {
  std::string out;
  auto counts = job_counts_.get([&] { return repo_.jobs.count_jobs_by_state(); });
  out +=
      "# HELP tpujobs_jobs Jobs by state, counted at most a second ago (at once after this "
      "process's submits).\n# TYPE tpujobs_jobs gauge\n";
  for (JobState state : {JobState::kQueued, JobState::kStarting, JobState::kRunning,
                         JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    std::int64_t n = 0;
    if (counts.ok()) {
      auto it = (*counts)->find(state_name(state));
      if (it != (*counts)->end()) n = it->second;
    }
    out += "tpujobs_jobs{state=\"" + state_name(state) + "\"} " + std::to_string(n) + "\n";
  }
  // The cluster's pool, as every replica sees it in the tables.
  const json pool = pool_view();
  gauge(out, "tpujobs_queue_depth", "Jobs waiting for cores.", "gauge",
        pool.value("queued_jobs", 0));
  gauge(out, "tpujobs_cores_in_use", "Emulated TPU cores held by running jobs.", "gauge",
        pool.value("used_cores", 0));
  gauge(out, "tpujobs_pool_cores", "Emulated TPU cores in the pool.", "gauge",
        pool.value("total_cores", 0));
  gauge(out, "tpujobs_cores_healthy", "Cores on healthy hosts.", "gauge",
        pool.value("healthy_cores", 0));
  gauge(out, "tpujobs_running_jobs", "Jobs running in the pool.", "gauge",
        pool.value("running_jobs", 0));
  gauge(out, "tpujobs_jobs_submitted_total", "Jobs committed by this process.", "counter",
        submitted_total_.load());
  out += base::counter_family(
      "tpujobs_job_views_total",
      "Job views (GET /v1/jobs/{id}, waits) this process answered, by where they came from: "
      "its cache of rendered views, or a database read.",
      "from", {{"memory", views_from_memory_.load()}, {"database", views_from_database_.load()}});
  gauge(out, "tpujobs_view_cache_bytes", "Bytes of rendered job views kept in memory.", "gauge",
        static_cast<std::int64_t>(views_.bytes()));
  out +=
      "# HELP tpujobs_database_up Whether the last database call succeeded.\n# TYPE "
      "tpujobs_database_up gauge\n";
  out += std::string("tpujobs_database_up ") + (database_ok_ ? "1" : "0") + "\n";
  return out;
}

}  // namespace tpujobs::service
