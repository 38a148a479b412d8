#include "service/telemetry_writer.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "db/cluster_repository.h"
#include "db/repositories.h"
#include "service/job_views.h"

namespace tpujobs::service {

using nlohmann::json;

RepositoryTelemetryStore::RepositoryTelemetryStore(db::Repositories& repo,
                                                   db::ClusterRepository& cluster,
                                                   WakeBus* wake_bus)
    : repo_(repo), cluster_(cluster), wake_bus_(wake_bus) {}

void RepositoryTelemetryStore::changed(std::int64_t job) {
  if (wake_bus_ != nullptr) wake_bus_->publish(kJobsChangedChannel, std::to_string(job));
}

base::Status RepositoryTelemetryStore::append_logs(const std::vector<db::LogLine>& lines) {
  return repo_.outputs.append_logs(lines);
}

base::Status RepositoryTelemetryStore::append_metrics(const std::vector<db::MetricPoint>& points) {
  return repo_.outputs.append_metrics(points);
}

base::Status RepositoryTelemetryStore::save_checkpoint(std::int64_t job,
                                                       const executor::Checkpoint& checkpoint,
                                                       std::int64_t fence) {
  base::Status saved = repo_.outputs.save_checkpoint(job, checkpoint.step, checkpoint.epoch,
                                                     checkpoint.bytes, fence);
  changed(job);  // a failed write may have landed
  return saved;
}

base::Status RepositoryTelemetryStore::update_progress(std::int64_t job,
                                                       const std::string& progress_json,
                                                       const std::string& metrics_json,
                                                       std::int64_t fence) {
  base::Status updated = repo_.jobs.update_progress(job, progress_json, metrics_json, fence);
  changed(job);  // as above
  return updated;
}

void RepositoryTelemetryStore::logs_stored(const std::set<std::int64_t>& jobs) {
  if (jobs.empty()) return;
  // Followers on every replica wake ("id,id,...").
  const std::string payload = format_job_ids({jobs.begin(), jobs.end()});
  if (wake_bus_ != nullptr) {
    wake_bus_->publish(db::kLogChannel, payload);
  } else {
    (void)cluster_.notify(db::kLogChannel, payload);
  }
}

std::string metric_values_json(const std::map<std::string, double>& values) {
  json out = json::object();
  for (const auto& [name, value] : values) {
    if (std::isfinite(value)) out[name] = value;
  }
  return out.dump();
}

std::string progress_json(const executor::Progress& progress) {
  return views::progress_view(progress).dump();
}

TelemetryWriter::TelemetryWriter(TelemetryStore& store, TelemetryWriterOptions options)
    : store_(store), options_(options) {}

TelemetryWriter::~TelemetryWriter() { stop(); }

void TelemetryWriter::start() {
  thread_ = std::thread([this] { loop(); });
}

void TelemetryWriter::stop() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  room_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool TelemetryWriter::flush_due_locked() const {
  // While the database is away the held lines stay counted and a held
  // checkpoint stays queued: they wake nothing, the interval paces the tries.
  if (retry_paced_) return false;
  return !checkpoints_.empty() ||
         (!lines_unstorable_ && queued_line_bytes_ >= options_.max_queued_line_bytes / 2);
}

void TelemetryWriter::loop() {
  base::MutexLock lock(mutex_);
  while (!stopping_) {
    options_.clock->wait_for(lock, wake_, options_.interval,
                             [this]() REQUIRES(mutex_) { return stopping_ || flush_due_locked(); });
    lock.unlock();
    const bool stored = flush();
    lock.lock();
    retry_paced_ = !stored;
  }
  // Stopped while a flush ran: what was queued after it began is stored too.
  lock.unlock();
  flush();
}

namespace {

std::size_t held_bytes(const db::LogLine& line) { return sizeof line + line.line.size(); }
std::size_t held_bytes(const db::MetricPoint& point) {
  return sizeof point + point.metrics_json.size();
}

}  // namespace

bool TelemetryWriter::take_room(base::MutexLock& lock, std::size_t bytes) {
  // (Only when it starts a flush: a producer at the bound while the
  // database is away would otherwise wake the writer for every line.)
  if (flush_due_locked()) wake_.notify_one();
  lock.wait(room_, [this]() REQUIRES(mutex_) {
    return stopping_ || lines_unstorable_ || queued_line_bytes_ < options_.max_queued_line_bytes;
  });
  // Once dropping, everything is dropped until the database is back: the
  // dropped lines of a spell are one run of seqs, which its marker names.
  if (dropping_ ||
      (lines_unstorable_ && queued_line_bytes_ + bytes > options_.max_queued_line_bytes)) {
    return false;
  }
  queued_line_bytes_ += bytes;
  return true;
}

void TelemetryWriter::count_dropped(std::int64_t job, std::int64_t fence, std::int64_t line_seq,
                                    db::TimePoint at, bool line) {
  if (!dropping_) {
    std::cerr << "tpujobs: the database is unavailable and " << options_.max_queued_line_bytes
              << " bytes of job output wait for it: dropping further log lines and metric "
                 "points (counted; each job's log gets a line saying how many)\n";
    dropping_ = true;
  }
  Dropped& d = dropped_[job];
  if (line && d.first_seq < 0) {
    d.first_seq = line_seq;
    d.at = at;
  }
  d.fence = fence;
  ++(line ? d.lines : d.points);
  ++(line ? dropped_lines_ : dropped_points_);
}

void TelemetryWriter::release_room(std::size_t bytes) {
  {
    base::MutexLock lock(mutex_);
    queued_line_bytes_ -= std::min(bytes, queued_line_bytes_);
    database_answered();
  }
  room_.notify_all();
}

void TelemetryWriter::database_answered() {
  lines_unstorable_ = false;
  if (!dropping_) return;
  dropping_ = false;
  std::cerr << "tpujobs: the database stores job output again; " << dropped_.size()
            << " job(s) lost output while it was unavailable (their logs say how much)\n";
  for (db::LogLine& marker : take_drop_markers()) markers_.push_back(std::move(marker));
}

std::vector<db::LogLine> TelemetryWriter::take_drop_markers() {
  std::vector<db::LogLine> markers;
  for (const auto& [job, d] : dropped_) {
    const std::string text =
        "tpujobs: " + std::to_string(d.lines) + " log lines and " + std::to_string(d.points) +
        " metric points were dropped here while the database was "
        "unavailable (at most " +
        std::to_string(options_.max_queued_line_bytes >> 20) + " MiB of output waits for it)";
    if (d.first_seq < 0) {  // no line of its own to take the place of
      std::cerr << "tpujobs: job " << job << ": " << text << "\n";
      continue;
    }
    markers.push_back({job, d.first_seq, d.at, text, d.fence});
    queued_line_bytes_ += held_bytes(markers.back());
  }
  dropped_.clear();
  return markers;
}

TelemetryWriter::Rate* TelemetryWriter::rate_of(std::int64_t job) {
  if (options_.output_per_second <= 0) return nullptr;
  auto [it, added] = rates_.try_emplace(job);
  if (added) {
    it->second.lines = it->second.points = 10 * options_.output_per_second;
    it->second.at = options_.clock->now();
  }
  return &it->second;
}

bool TelemetryWriter::within_rate(Rate& rate, bool line, std::int64_t fence) {
  const double per_second = options_.output_per_second;
  const double burst = 10 * per_second;
  const auto now = options_.clock->now();
  const double refill = std::chrono::duration<double>(now - rate.at).count() * per_second;
  rate.lines = std::min(burst, rate.lines + refill);
  rate.points = std::min(burst, rate.points + refill);
  rate.at = now;
  double& tokens = line ? rate.lines : rate.points;
  if (tokens >= 1) {
    tokens -= 1;
    return true;
  }
  rate.fence = fence;
  ++(line ? rate.dropped_lines : rate.dropped_points);
  ++(line ? limited_lines_ : limited_points_);
  return false;
}

void TelemetryWriter::push_line(base::MutexLock& lock, db::LogLine line) {
  if (!take_room(lock, held_bytes(line))) {
    count_dropped(line.job_id, line.fence, line.seq, line.at, true);
    return;
  }
  logs_.push_back(std::move(line));
}

bool TelemetryWriter::push_rate_marker(base::MutexLock& lock, std::int64_t job, Rate& rate,
                                       std::int64_t seq, bool end) {
  if (rate.dropped_lines == 0 && rate.dropped_points == 0) return false;
  const auto now = options_.clock->now();
  if (!end && rate.marked && now - *rate.marked < std::chrono::seconds(10)) return false;
  std::ostringstream text;
  text << "tpujobs: " << rate.dropped_lines << " log lines and " << rate.dropped_points
       << " metric points were dropped "
       << (rate.marked ? "since the previous line like this one" : "so far in this run")
       << ": the job wrote more than " << options_.output_per_second
       << " of each a second (--job-output-rate)";
  rate.dropped_lines = rate.dropped_points = 0;
  rate.marked = now;
  push_line(lock, {job, seq, options_.clock->wall_now(), text.str(), rate.fence});
  return true;
}

std::int64_t TelemetryWriter::log(db::LogLine line) {
  base::MutexLock lock(mutex_);
  Rate* rate = rate_of(line.job_id);
  if (rate != nullptr) {
    if (!within_rate(*rate, true, line.fence)) {
      rate->next_seq = line.seq;
      return line.seq;  // the next line takes its seq
    }
    if (push_rate_marker(lock, line.job_id, *rate, line.seq, false)) ++line.seq;
    rate->next_seq = line.seq + 1;
  }
  const std::int64_t next = line.seq + 1;
  push_line(lock, std::move(line));
  return next;
}

void TelemetryWriter::metric(db::MetricPoint point) {
  base::MutexLock lock(mutex_);
  if (Rate* rate = rate_of(point.job_id); rate && !within_rate(*rate, false, point.fence)) return;
  if (!take_room(lock, held_bytes(point))) {
    count_dropped(point.job_id, point.fence, -1, point.at, false);
    return;
  }
  metrics_.push_back(std::move(point));
}

void TelemetryWriter::progress(std::int64_t job, std::int64_t fence, std::string progress_json,
                               std::string metrics_json) {
  base::MutexLock lock(mutex_);
  progress_[job] = {fence, std::move(progress_json), std::move(metrics_json)};
}

void TelemetryWriter::checkpoint(std::int64_t job, std::int64_t fence,
                                 std::shared_ptr<const executor::Checkpoint> checkpoint) {
  // Megabytes: the older one is freed outside the lock every log line takes.
  FencedCheckpoint newest{fence, std::move(checkpoint)};
  bool due = false;
  {
    base::MutexLock lock(mutex_);
    auto [it, added] = checkpoints_.try_emplace(job, std::move(newest));
    if (!added) std::swap(it->second, newest);
    due = flush_due_locked();
  }
  if (due) wake_.notify_one();
}

bool TelemetryWriter::ready_for_checkpoint(std::int64_t job) {
  const base::Clock::time_point now = options_.clock->now();
  base::MutexLock lock(mutex_);
  if (checkpoints_.count(job) > 0 || storing_.count(job) > 0) return false;
  const auto next = next_checkpoint_.find(job);
  return next == next_checkpoint_.end() || next->second <= now;
}

bool TelemetryWriter::stored_or_dropped(const base::Status& status, const char* what) {
  if (status.ok()) return true;
  if (status.code() == base::ErrorCode::kUnavailable) return false;
  std::cerr << "tpujobs: storing " << what << " failed, dropped: " << status.error().message
            << "\n";
  return true;
}

bool TelemetryWriter::store_checkpoint(std::int64_t job, const FencedCheckpoint& c) {
  if (!stored_or_dropped(store_.save_checkpoint(job, *c.checkpoint, c.fence), "a checkpoint"))
    return false;
  if (on_checkpoint_stored) on_checkpoint_stored(job, *c.checkpoint);
  return true;
}

bool TelemetryWriter::store_progress(std::int64_t job, const Progress& p) {
  return stored_or_dropped(store_.update_progress(job, p.progress, p.metrics, p.fence), "progress");
}

void TelemetryWriter::note_unavailable(const std::string& message) {
  base::MutexLock lock(mutex_);
  if (lines_unstorable_) return;  // reported when the outage began
  std::cerr << "tpujobs: job output waits for the database (" << message << ")\n";
}

template <typename Item, typename Append>
bool TelemetryWriter::store_batches(std::vector<Item>& items, Append append, const char* what) {
  const std::size_t per_store = std::max<std::size_t>(1, options_.max_lines_per_store);
  std::size_t done = 0;
  bool reachable = true;
  while (done < items.size()) {
    const std::size_t end = std::min(items.size(), done + per_store);
    std::vector<Item> batch(std::make_move_iterator(items.begin() + done),
                            std::make_move_iterator(items.begin() + end));
    const base::Status status = append(batch);
    if (!stored_or_dropped(status, what)) {
      note_unavailable(status.error().message);
      std::move(batch.begin(), batch.end(), items.begin() + done);
      reachable = false;
      break;
    }
    std::size_t bytes = 0;
    for (const Item& item : batch) bytes += held_bytes(item);
    release_room(bytes);
    done = end;
  }
  items.erase(items.begin(), items.begin() + done);
  return reachable;
}

bool TelemetryWriter::store_lines(std::vector<db::LogLine>& logs,
                                  std::vector<db::MetricPoint>& metrics) {
  std::set<std::int64_t> jobs;  // of the lines stored
  const bool logs_stored = store_batches(
      logs,
      [&](const std::vector<db::LogLine>& batch) {
        base::Status status = store_.append_logs(batch);
        if (status.ok()) {
          for (const db::LogLine& line : batch) jobs.insert(line.job_id);
        }
        return status;
      },
      "log lines");
  if (!jobs.empty()) store_.logs_stored(jobs);
  const bool metrics_stored = logs_stored && store_batches(
                                                 metrics,
                                                 [this](const std::vector<db::MetricPoint>& b) {
                                                   return store_.append_metrics(b);
                                                 },
                                                 "metric points");
  if (metrics_stored) return true;  // (a store that took anything ended an outage)
  requeue_lines(logs, metrics);
  return false;
}

void TelemetryWriter::requeue_lines(std::vector<db::LogLine>& logs,
                                    std::vector<db::MetricPoint>& metrics) {
  base::MutexLock lock(mutex_);
  // The database is away: producers no longer wait for room; past the bound
  // what they produce is dropped and counted (the held lines stay queued,
  // in order, for after it; their bytes are still counted).
  lines_unstorable_ = true;
  room_.notify_all();
  logs_.insert(logs_.begin(), std::make_move_iterator(logs.begin()),
               std::make_move_iterator(logs.end()));
  metrics_.insert(metrics_.begin(), std::make_move_iterator(metrics.begin()),
                  std::make_move_iterator(metrics.end()));
  logs.clear();
  metrics.clear();
}

namespace {

// Moves the items of the jobs in `jobs` from `taken` back to the (empty)
// `queue`, in order.
template <typename Item>
void leave_queued(const std::set<std::int64_t>& jobs, std::vector<Item>& taken,
                  std::vector<Item>& queue) {
  if (jobs.empty()) return;
  const auto left = std::stable_partition(
      taken.begin(), taken.end(), [&](const Item& item) { return jobs.count(item.job_id) == 0; });
  queue.insert(queue.end(), std::make_move_iterator(left), std::make_move_iterator(taken.end()));
  taken.erase(left, taken.end());
}

// Moves `job`'s items from `queue` to the end of `taken`, in order.
template <typename Item>
void take_of_job(std::int64_t job, std::vector<Item>& queue, std::vector<Item>& taken) {
  const auto kept = std::stable_partition(queue.begin(), queue.end(),
                                          [&](const Item& item) { return item.job_id != job; });
  taken.insert(taken.end(), std::make_move_iterator(kept), std::make_move_iterator(queue.end()));
  queue.erase(kept, queue.end());
}

}  // namespace

void TelemetryWriter::take_job_lines(std::int64_t job, std::vector<db::LogLine>& logs,
                                     std::vector<db::MetricPoint>& metrics) {
  take_of_job(job, markers_, logs);  // (a marker goes before the lines queued after it)
  take_of_job(job, logs_, logs);
  take_of_job(job, metrics_, metrics);
}

void TelemetryWriter::end_flush() {
  {
    base::MutexLock lock(mutex_);
    in_flush_.clear();
  }
  flush_ended_.notify_all();
}

bool TelemetryWriter::flush_job(std::int64_t job) {
  std::vector<db::LogLine> logs;
  std::vector<db::MetricPoint> metrics;
  std::optional<FencedCheckpoint> checkpoint;
  std::optional<Progress> progress;
  {
    base::MutexLock lock(mutex_);
    lock.wait(flush_ended_, [&]() REQUIRES(mutex_) { return in_flush_.count(job) == 0; });
    // Its end: what it dropped past its bound since its last line is said.
    if (const auto rate = rates_.find(job); rate != rates_.end()) {
      if (rate->second.next_seq > 0)
        (void)push_rate_marker(lock, job, rate->second, rate->second.next_seq, true);
      rates_.erase(rate);
    }
    in_job_flush_.insert(job);
    take_job_lines(job, logs, metrics);
    if (auto c = checkpoints_.find(job); c != checkpoints_.end()) {
      checkpoint = std::move(c->second);
      checkpoints_.erase(c);
    }
    if (auto p = progress_.find(job); p != progress_.end()) {
      progress = std::move(p->second);
      progress_.erase(p);
    }
  }
  bool stored = store_lines(logs, metrics);
  if (stored && checkpoint) stored = store_checkpoint(job, *checkpoint);  // (as in flush())
  if (stored && progress) stored = store_progress(job, *progress);
  base::MutexLock lock(mutex_);
  in_job_flush_.erase(job);
  if (stored) return true;
  // What was queued meanwhile is newer and wins.
  if (checkpoint) checkpoints_.try_emplace(job, std::move(*checkpoint));
  if (progress) progress_.try_emplace(job, std::move(*progress));
  return false;
}

void TelemetryWriter::take_lines(std::vector<db::LogLine>& logs,
                                 std::vector<db::MetricPoint>& metrics) {
  // The markers of the last outage first (their bytes are counted already):
  // they are stored before, or with, every line queued after them, so a
  // follower that has read past a line never misses a marker before it.
  if (markers_.empty()) {
    logs.swap(logs_);
  } else {
    logs.swap(markers_);
    logs.insert(logs.end(), std::make_move_iterator(logs_.begin()),
                std::make_move_iterator(logs_.end()));
    logs_.clear();
  }
  metrics.swap(metrics_);
  leave_queued(in_job_flush_, logs, logs_);
  leave_queued(in_job_flush_, metrics, metrics_);
  for (const db::LogLine& line : logs) in_flush_.insert(line.job_id);
  for (const db::MetricPoint& point : metrics) in_flush_.insert(point.job_id);
}

bool TelemetryWriter::flush() {
  base::MutexLock flush(flush_mutex_);
  std::vector<db::LogLine> logs;
  std::vector<db::MetricPoint> metrics;
  std::map<std::int64_t, Progress> progress;
  std::map<std::int64_t, FencedCheckpoint> checkpoints;
  {
    base::MutexLock lock(mutex_);
    take_lines(logs, metrics);
    progress.swap(progress_);
    checkpoints.swap(checkpoints_);
    for (const auto& [id, c] : checkpoints) storing_.insert(id), in_flush_.insert(id);
    for (const auto& [id, p] : progress) in_flush_.insert(id);
  }
  const bool lines_stored = store_lines(logs, metrics);
  std::map<std::int64_t, FencedCheckpoint> checkpoints_left;
  std::map<std::int64_t, base::Clock::time_point> next_checkpoint;
  const double wait_per_store = 1.0 / options_.checkpoint_time_share - 1.0;
  for (auto& [id, c] : checkpoints) {
    const base::Clock::time_point begin = options_.clock->now();
    if (!lines_stored || !store_checkpoint(id, c)) {
      checkpoints_left.emplace(id, std::move(c));
      continue;
    }
    const base::Clock::time_point end = options_.clock->now();
    next_checkpoint[id] =
        end + std::chrono::duration_cast<std::chrono::nanoseconds>((end - begin) * wait_per_store);
  }
  std::map<std::int64_t, Progress> progress_left;
  for (auto& [id, p] : progress) {
    if (!store_progress(id, p)) progress_left.emplace(id, std::move(p));
  }
  const base::Clock::time_point now = options_.clock->now();
  {
    base::MutexLock lock(mutex_);
    storing_.clear();  // (one flush at a time)
    std::erase_if(next_checkpoint_, [&](const auto& next) { return next.second <= now; });
    for (const auto& [id, next] : next_checkpoint) next_checkpoint_[id] = next;
    // What was queued meanwhile is newer and wins.
    for (auto& [id, c] : checkpoints_left) checkpoints_.try_emplace(id, std::move(c));
    for (auto& [id, p] : progress_left) progress_.try_emplace(id, std::move(p));
  }
  end_flush();  // (after the requeue: a flush_job() waiting for it finds what was left)
  return lines_stored && checkpoints_left.empty() && progress_left.empty();
}

bool TelemetryWriter::flush_until(const std::function<bool()>& give_up) {
  auto delay = std::chrono::milliseconds(50);
  for (;;) {
    if (flush()) return true;
    if (give_up()) {
      std::cerr << "tpujobs: database unavailable, " << queued()
                << " telemetry item(s) not stored yet\n";
      return false;
    }
    options_.clock->sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(2000));
  }
}

void TelemetryWriter::flush_lines() {
  base::MutexLock flush(flush_mutex_);
  std::vector<db::LogLine> logs;
  std::vector<db::MetricPoint> metrics;
  {
    base::MutexLock lock(mutex_);
    take_lines(logs, metrics);
  }
  store_lines(logs, metrics);
  end_flush();
}

std::size_t TelemetryWriter::queued() {
  base::MutexLock lock(mutex_);
  return logs_.size() + metrics_.size() + checkpoints_.size() + progress_.size();
}

std::size_t TelemetryWriter::queued_line_bytes() {
  base::MutexLock lock(mutex_);
  return queued_line_bytes_;
}

std::uint64_t TelemetryWriter::dropped_lines() {
  base::MutexLock lock(mutex_);
  return dropped_lines_;
}

std::uint64_t TelemetryWriter::limited_lines() {
  base::MutexLock lock(mutex_);
  return limited_lines_;
}

std::uint64_t TelemetryWriter::limited_points() {
  base::MutexLock lock(mutex_);
  return limited_points_;
}

std::uint64_t TelemetryWriter::dropped_points() {
  base::MutexLock lock(mutex_);
  return dropped_points_;
}

}  // namespace tpujobs::service
