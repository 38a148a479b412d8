// The scheduler leader's pass over a fake store and a fake clock
// (service/leader_store.h): the order of its writes, what it does when the
// database is away, how often it writes and reads. Its passes over real
// tables are in scheduler_leader_pgtest.cc.
#include "service/scheduler_leader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <new>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <utility>

#include "service/job_lifecycle.h"
#include "service/wake_bus.h"

// Every allocation of this test binary, counted: a pass over an unchanged
// queue allocates nothing per waiting job.
namespace {
std::atomic<long> allocations{0};
}  // namespace
void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// Every other form too, so that nothing this binary frees with free() came
// from the sanitizer's own operator new (std::get_temporary_buffer takes
// the nothrow form): ASan reports such a pair as alloc-dealloc-mismatch.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace tpujobs::service {
namespace {

using base::JobState;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Spends `cpu` of the calling thread's CPU time.
void spin(milliseconds cpu) {
  const auto until = base::this_thread_cpu_time() + cpu;
  while (base::this_thread_cpu_time() < until) {
  }
}

class FakeLeaderStore final : public LeaderStore {
 public:
  explicit FakeLeaderStore(base::Clock& clock) : clock_(clock) {}

  std::vector<db::AgentRow> agents;
  std::vector<db::ClusterHostRow> hosts;  // agent_state is filled from `agents`
  std::vector<db::JobRow> jobs;
  std::vector<std::string> lost_next;  // what the next mark_lost declares lost
  std::vector<std::string> writes;     // every write and notification, in order
  std::map<std::string, double> factors;
  int fair_share_reads = 0;
  int spec_reads = 0;               // specs read by job_specs, one a job asked for
  bool away = false;                // every call fails, as with the server down
  bool refuse_pending = false;      // set_pending fails as a statement the server refuses
  bool refuse_transitions = false;  // and transition and transitions
  bool late_judgement = false;      // the next mark_lost is answered past its max_answer
  bool refuse_writes = false;       // mark_lost fails as in a read-only database (kUnavailable)
  int judgements = 0;               // mark_lost calls answered
  int reserved_blocks = 0;          // reserve_placements calls answered
  std::vector<std::size_t> batch_sizes;     // of each transitions call answered
  std::chrono::milliseconds max_answer{0};  // what the last mark_lost was given
  std::int64_t term = 0;                    // the scheduler term (begin_term raises it)
  std::int64_t recovered_at = 0;            // what a crash of the server changes
  // The next term's transaction id; by default above every low water read.
  std::optional<std::int64_t> term_xid;

  void add_agent(const std::string& name, std::int64_t epoch, int hosts_of_v3) {
    agents.push_back({name, "alive", epoch, 1, clock_.wall_now(), clock_.wall_now(), 0});
    for (int h = 0; h < hosts_of_v3; ++h)
      hosts.push_back({name + "-h" + std::to_string(h), name, "alive", "v3", h});
  }
  void heartbeat(const std::string& name) {
    for (db::AgentRow& a : agents) {
      if (a.name == name) a.last_heartbeat = clock_.wall_now();
    }
  }
  db::JobRow& add_job(std::int64_t id, const std::string& tenant, int devices,
                      int max_retries = 0) {
    db::JobRow row;
    row.id = id;
    row.tenant = tenant;
    row.spec_json = json{{"name", "j"},
                         {"max_retries", max_retries},
                         {"trainer", {{"devices", devices}, {"max_epochs", 1}}},
                         {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
                         {"data", {{"dataset", "iris"}}}}
                        .dump();
    // Its insert's transaction: after the last read's low water.
    row.changed_xid = reads + 1;
    inserted_[id] = row;
    jobs.push_back(row);
    return jobs.back();
  }
  db::JobRow* find_job(std::int64_t id) {
    for (db::JobRow& row : jobs) {
      if (row.id == id) return &row;
    }
    return nullptr;
  }
  db::JobRow& job(std::int64_t id) {
    if (db::JobRow* row = find_job(id)) return *row;
    throw std::out_of_range("no job");
  }
  int count(const std::string& prefix) const {
    int n = 0;
    for (const std::string& w : writes) n += w.rfind(prefix, 0) == 0;
    return n;
  }

  base::Result<db::ClusterRepository::SchedulerTerm> begin_term(const std::string&) override {
    if (away) return down();
    return db::ClusterRepository::SchedulerTerm{++term, recovered_at, term_xid.value_or(reads + 1)};
  }
  base::Result<std::vector<std::string>> mark_lost(std::chrono::milliseconds silence,
                                                   std::chrono::milliseconds max) override {
    if (away || refuse_writes) return down();
    clock_.sleep_for(judgement_takes);  // a FakeClock moves on
    ++judgements;
    max_answer = max;
    if (silence > std::chrono::hours(24 * 365)) return std::vector<std::string>{};  // no one
    if (late_judgement) {
      late_judgement = false;
      return base::make_error(base::ErrorCode::kUnavailable, "the database took 9000 ms to answer");
    }
    std::vector<std::string> lost = std::move(lost_next);
    lost_next.clear();
    for (db::AgentRow& a : agents) {
      if (std::find(lost.begin(), lost.end(), a.name) != lost.end()) a.state = "lost";
    }
    return lost;
  }
  base::Result<std::vector<db::AgentRow>> list_agents() {
    if (away) return down();
    std::vector<db::AgentRow> out = agents;
    if (after_list_agents) std::exchange(after_list_agents, nullptr)();
    for (db::AgentRow& a : out) {
      a.silent_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.wall_now() -
                                                                          a.last_heartbeat)
                        .count();
    }
    return out;
  }
  base::Result<std::vector<db::ClusterHostRow>> list_hosts() {
    if (away) return down();
    std::vector<db::ClusterHostRow> out = hosts;
    for (db::ClusterHostRow& h : out) h.agent_state = agent(h.agent).state;
    return out;
  }
  // Blocks of kPlacementBlock numbers from 1 on, as the sequence hands them out.
  base::Result<std::int64_t> reserve_placements() override {
    if (away) return down();
    const std::int64_t first = 1 + reserved_blocks * db::ClusterRepository::kPlacementBlock;
    ++reserved_blocks;
    return first;
  }
  base::Status forget_rendezvous_before(std::chrono::milliseconds) override {
    if (away) return down();
    clock_.sleep_for(sweep_takes);
    return base::Status::Ok();
  }
  base::Status notify(const char* channel, const std::string& payload) override {
    writes.push_back(std::string("notify ") + channel + " " + payload);
    return base::Status::Ok();
  }
  // Without their specs, as the repository's (the leader reads them once).
  // A complete read returns every unfinished job; with `incremental` set, a
  // read `since` a low water returns only the rows whose scheduling columns
  // changed since they were last returned (as jobs.changed_xid marks them),
  // finished ones included.
  base::Result<db::JobRepository::ScheduleRead> read_to_schedule(
      const std::optional<db::JobRepository::ScheduleSince>& since) {
    if (away) return down();
    clock_.sleep_for(read_takes);  // a FakeClock moves on
    spin(read_spins);
    db::JobRepository::ScheduleRead read;
    read.complete = !incremental || !since;
    read.low_water = std::to_string(++reads);
    if (read.complete) ++complete_reads;
    for (const db::JobRow& row : jobs) {
      auto last = returned_.find(row.id);
      if (!read.complete && held_as_inserted(*since, row)) {
        returned_[row.id] = row;  // the reader holds it as it is
        continue;
      }
      const bool changed = last == returned_.end() || !same_schedule(last->second, row);
      if (read.complete ? base::is_terminal(row.state) : !changed || unmarked.count(row.id))
        continue;
      read.rows.push_back(row);
      // As the repository reads it: the spec only of a job above the ids read.
      if (read.complete || row.id <= since->specs_above) read.rows.back().spec_json.clear();
      returned_[row.id] = row;
    }
    rows_read += static_cast<int>(read.rows.size());
    if (!read.complete && since->sweep) {
      // The unfinished jobs above `after`, by id, without their specs.
      db::JobRepository::ScheduleRead::Swept swept{since->sweep->after, {}, false};
      std::vector<db::JobRow> sorted = jobs;
      std::sort(sorted.begin(), sorted.end(),
                [](const db::JobRow& a, const db::JobRow& b) { return a.id < b.id; });
      for (db::JobRow& row : sorted) {
        if (base::is_terminal(row.state) || row.id <= swept.after) continue;
        if (static_cast<int>(swept.rows.size()) == since->sweep->limit) break;
        row.spec_json.clear();
        swept.rows.push_back(row);
      }
      swept.to_end = static_cast<int>(swept.rows.size()) < since->sweep->limit;
      swept_slices.push_back(static_cast<int>(swept.rows.size()));
      read.swept = std::move(swept);
    }
    return read;
  }
  // Whether the read leaves `row` out (ScheduleSince::held_ids): held at
  // the changed_xid of its insert, and unchanged since.
  bool held_as_inserted(const db::JobRepository::ScheduleSince& since, const db::JobRow& row) {
    for (std::size_t i = 0; i < since.held_ids.size(); ++i) {
      if (since.held_ids[i] != row.id) continue;
      return since.held_xids[i] == row.changed_xid && same_schedule(inserted_.at(row.id), row);
    }
    return false;
  }
  // Rows whose changes a read since does not return (written unmarked).
  std::set<std::int64_t> unmarked;
  std::vector<int> swept_slices;             // the rows of each slice the sweep read
  std::function<void()> after_list_agents;   // once: what happens between the two reads
  std::function<void()> before_transitions;  // once: what happens between a read and its writes
  bool incremental = false;
  int complete_reads = 0;
  int rows_read = 0;  // rows returned by read_to_schedule, in all
  int reads = 0;
  std::chrono::milliseconds read_takes{0};       // how long each read of the jobs takes
  std::chrono::milliseconds read_spins{0};       // the CPU time it spends (a real one)
  std::chrono::milliseconds judgement_takes{0};  // how long each mark_lost takes
  std::chrono::milliseconds orphans_take{0};     // each read of the orphans
  std::chrono::milliseconds sweep_takes{0};      // each sweep of old rendezvous keys
  base::Result<std::map<std::int64_t, std::string>> job_specs(
      const std::vector<std::int64_t>& ids) override {
    if (away) return down();
    std::map<std::int64_t, std::string> specs;
    for (std::int64_t id : ids) {
      specs[id] = job(id).spec_json;
      ++spec_reads;
    }
    return specs;
  }
  base::Result<std::vector<db::JobRow>> orphaned_jobs() override {
    if (away) return down();
    clock_.sleep_for(orphans_take);
    std::vector<db::JobRow> out;
    for (const db::JobRow& row : jobs) {
      const bool placed = row.state == JobState::kStarting || row.state == JobState::kRunning;
      if (!placed) continue;
      const std::string& state = agent(row.agent.value_or("")).state;
      if (state != "alive" && state != "draining") out.push_back(row);
    }
    return out;
  }
  base::Result<bool> transition(const db::Transition& t) override {
    if (away) return down();
    if (refuse_transitions) return base::make_error(base::ErrorCode::kInvalid, "invalid input");
    db::JobRow* stored = find_job(t.job_id);
    if (stored == nullptr) return false;  // no such row: nothing updated
    db::JobRow& row = *stored;
    const bool from = std::find(t.from.begin(), t.from.end(), row.state) != t.from.end() &&
                      !base::is_terminal(row.state) &&
                      (!t.require_placement || row.placement == t.require_placement);
    const bool agents_alive =
        std::all_of(t.require_alive.begin(), t.require_alive.end(), [&](const auto& required) {
          const db::AgentRow& a = agent(required.first);
          return a.state == "alive" && a.epoch == required.second;
        });
    const bool leads = !t.require_leader_term || *t.require_leader_term == term;
    if (!from || !agents_alive || !leads) return false;
    // An end of a job whose cancel is stored lands CANCELLED (db/job_transitions.cc).
    const JobState to = t.if_cancel_requested && row.cancel_requested ? JobState::kCancelled : t.to;
    writes.push_back("transition " + std::to_string(t.job_id) + " " +
                     std::string(base::to_string(to)));
    row.state = to;
    if (t.increment_attempt) ++row.attempt;
    if (t.count_unstarted_requeue) ++row.unstarted_requeues;
    if (t.clear_placement) row.agent.reset(), row.placement_epoch.reset(), row.placement.reset();
    if (t.agent) row.agent = t.agent;
    if (t.placement_epoch) row.placement_epoch = t.placement_epoch;
    if (t.placement) row.placement = t.placement;
    if (t.allocation_json) row.allocation_json = t.allocation_json;
    if (t.clear_allocation) row.allocation_json.reset();
    if (t.set_requeued_at) row.requeued_at = clock_.wall_now();
    if (t.clear_preempted_by) row.preempted_by.reset();
    if (t.to != JobState::kQueued) row.pending_json.reset();  // as db/migrations/040
    if (t.preempted_by) row.preempted_by = t.preempted_by;
    return true;
  }
  // All or nothing, as one transaction: the fake's failures fail them all.
  base::Result<std::vector<db::TransitionOutcome>> transitions(
      std::span<const db::BatchedTransition> batch) override {
    if (away) return down();
    if (refuse_transitions) return base::make_error(base::ErrorCode::kInvalid, "invalid input");
    if (before_transitions) std::exchange(before_transitions, nullptr)();
    batch_sizes.push_back(batch.size());
    std::vector<db::TransitionOutcome> outcomes;
    for (const db::BatchedTransition& b : batch) {
      if (!b.with_work) {
        auto moved = transition(b.transition);
        const bool applied = moved.ok() && *moved;
        const bool cancelled_instead = applied && b.transition.to != JobState::kCancelled &&
                                       job(b.transition.job_id).state == JobState::kCancelled;
        outcomes.push_back({applied, std::nullopt, cancelled_instead});
        continue;
      }
      auto work = transition_with_work(b.transition);
      outcomes.push_back({work.ok() && work->has_value(), work.ok() ? *work : std::nullopt});
    }
    return outcomes;
  }
  base::Result<std::optional<db::PlacedWork>> transition_with_work(const db::Transition& t) {
    base::Result<bool> moved = transition(t);
    if (!moved.ok()) return moved.error();
    if (!*moved) return std::optional<db::PlacedWork>();
    if (t.then_running) {  // the statement goes on to RUNNING
      writes.back() += " then RUNNING (" + t.then_running->started + ")";
      job(t.job_id).state = JobState::kRunning;
    }
    db::JobOutputRepository::ResumePoint resume;
    resume.max_log_seq = 7;  // as a job requeued after some output resumes
    return std::optional<db::PlacedWork>(db::PlacedWork{job(t.job_id), resume});
  }
  base::Status set_pending(
      const std::vector<std::pair<std::int64_t, std::optional<std::string>>>& batch,
      std::optional<std::int64_t> leader_term) override {
    if (away) return down();
    if (leader_term && *leader_term != term)
      return base::make_error(base::ErrorCode::kConflict, "another replica leads");
    if (refuse_pending && !batch.empty())
      return base::make_error(base::ErrorCode::kInvalid, "value too long for type");
    for (const auto& [id, text] : batch) {
      writes.push_back("pending " + std::to_string(id));
      if (db::JobRow* row = find_job(id)) row->pending_json = text;  // a job gone is skipped
    }
    return base::Status::Ok();
  }
  base::Result<bool> request_preemption(std::int64_t victim, std::int64_t, std::int64_t preemptor,
                                        const std::string&, const std::string&,
                                        std::optional<std::int64_t> leader_term) override {
    if (leader_term && *leader_term != term) return false;
    writes.push_back("preempt " + std::to_string(victim) + " for " + std::to_string(preemptor));
    return true;
  }
  base::Result<std::map<std::int64_t, JobState>> job_states(
      const std::vector<std::int64_t>& ids) override {
    if (away) return down();
    std::map<std::int64_t, JobState> out;
    for (std::int64_t id : ids) out[id] = job(id).state;
    return out;
  }
  base::Result<std::map<std::string, int>> load_quotas() {
    if (away) return down();
    return std::map<std::string, int>{};
  }
  // The four reads one after the other (the repositories send them together).
  base::Result<db::SchedulingRead> read_pass(
      const std::optional<db::JobRepository::ScheduleSince>& since) override {
    auto agents = list_agents();
    if (!agents.ok()) return agents.error();
    auto hosts = list_hosts();
    if (!hosts.ok()) return hosts.error();
    auto queue = read_to_schedule(since);
    if (!queue.ok()) return queue.error();
    auto quotas = load_quotas();
    if (!quotas.ok()) return quotas.error();
    return db::SchedulingRead{std::move(*agents), std::move(*hosts), std::move(*queue),
                              std::move(*quotas)};
  }
  base::Result<std::map<std::string, double>> fair_share(std::chrono::system_clock::time_point,
                                                         const std::set<std::string>&,
                                                         const FairShareOptions&) override {
    if (away) return down();
    ++fair_share_reads;
    return factors;
  }

 private:
  static base::Error down() {
    return base::make_error(base::ErrorCode::kUnavailable, "server closed the connection");
  }
  db::AgentRow& agent(const std::string& name) {
    for (db::AgentRow& a : agents) {
      if (a.name == name) return a;
    }
    throw std::out_of_range("no agent");
  }

  static bool same_schedule(const db::JobRow& a, const db::JobRow& b) {
    return a.state == b.state && a.priority == b.priority && a.tenant == b.tenant &&
           a.cancel_requested == b.cancel_requested && a.agent == b.agent &&
           a.placement_epoch == b.placement_epoch && a.placement == b.placement &&
           a.allocation_json == b.allocation_json && a.preempted_by == b.preempted_by &&
           a.requeued_at == b.requeued_at && a.attempt == b.attempt && a.started_at == b.started_at;
  }

  base::Clock& clock_;
  std::map<std::int64_t, db::JobRow> returned_;  // each row as last read
  std::map<std::int64_t, db::JobRow> inserted_;  // each row as added
};

class SchedulerLeaderPass : public ::testing::Test {
 protected:
  SchedulerLeaderPass() : store_(clock_) {
    clock_.advance(std::chrono::hours(1));
    lead(nullptr);
  }
  // A new leader, woken and waking through `bus` (a standalone serve's
  // wake-ups) or, without one, through the store (NOTIFY).
  void lead(WakeBus* bus) {
    SchedulerLeaderOptions options;
    options.clock = &clock_;
    options.agent_silence = seconds(10);
    options.wake_bus = bus;
    leader_ = std::make_unique<SchedulerLeader>(store_, options);
  }

  // Job `id` RUNNING on `agent` (its first host, under `epoch`), placed by
  // an earlier leader: this one has not read its spec.
  db::JobRow& running_on(std::int64_t id, const std::string& agent, std::int64_t epoch,
                         int max_retries) {
    db::JobRow& job = store_.add_job(id, "t", 8, max_retries);
    job.state = JobState::kRunning;
    job.agent = agent;
    job.placement_epoch = epoch;
    job.placement = -epoch;  // placed before this leader reserved any number
    job.allocation_json = json{{"hosts", {agent + "-h0"}}, {"cores", json::array()}}.dump();
    return job;
  }
  // `agent` stays silent past agent_silence: the next pass declares it lost.
  void lose(const std::string& agent) {
    clock_.advance(seconds(11));
    store_.lost_next = {agent};
    ASSERT_TRUE(leader_->run_pass().ok());
  }

  base::FakeClock clock_;
  FakeLeaderStore store_;
  WakeBus bus_;  // lead(&bus_)
  std::unique_ptr<SchedulerLeader> leader_;
};

// The agents and their hosts are read one after the other: an agent that
// registers in between is in the second read only. Its hosts wait for the
// next pass, which has its epoch to fence the placement with.
TEST_F(SchedulerLeaderPass, AnAgentRegisteredBetweenTheReadsOfAgentsAndHostsIsUsedTheNextPass) {
  store_.add_job(1, "t", 8);
  store_.after_list_agents = [this] { store_.add_agent("a", 1, 1); };
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(store_.count("transition"), 0);
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(store_.job(1).state, JobState::kStarting);
  EXPECT_EQ(store_.job(1).placement_epoch, 1);
}

TEST_F(SchedulerLeaderPass, APlacementIsCommittedBeforeItsAgentIsWoken) {
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t", 8);
  ASSERT_TRUE(leader_->run_pass().ok());
  const std::vector<std::string> expected{"transition 1 STARTING", "notify tpujobs_agent a"};
  EXPECT_EQ(expected, store_.writes);
  EXPECT_EQ("a", store_.job(1).agent.value_or(""));
  EXPECT_EQ(3, store_.job(1).placement_epoch.value_or(0));
  const json allocation = json::parse(store_.job(1).allocation_json.value_or("{}"));
  EXPECT_EQ(json::array({"a-h0"}), allocation["hosts"]);
}

// The agent in the leader's own process, as the leader hands it placements.
class FakeLocalAgent final : public LocalAgent {
 public:
  FakeLocalAgent(std::string name, std::vector<std::string>& writes)
      : name_(std::move(name)), writes_(writes) {}
  const std::string& name() const override { return name_; }
  bool promise_start(std::int64_t job, std::int64_t epoch) override {
    writes_.push_back((promises ? "promised " : "refused ") + std::to_string(job) + " under " +
                      std::to_string(epoch));
    if (promises) promised.insert(job);
    return promises;
  }
  void forgo(std::int64_t job) override {
    writes_.push_back("forgone " + std::to_string(job));
    EXPECT_EQ(1u, promised.erase(job)) << "forgone unpromised";
  }
  bool take_placed(db::PlacedWork work) override {
    writes_.push_back((takes ? "taken " : "left ") + std::to_string(work.row.id));
    EXPECT_EQ(1u, promised.erase(work.row.id)) << "handed unpromised";
    if (takes) taken.push_back(std::move(work));
    return takes;
  }
  bool promises = true;
  bool takes = true;
  std::set<std::int64_t> promised;  // neither taken nor forgone yet
  std::vector<db::PlacedWork> taken;

 private:
  std::string name_;
  std::vector<std::string>& writes_;
};

class SchedulerLeaderWithLocalAgent : public SchedulerLeaderPass {
 protected:
  SchedulerLeaderWithLocalAgent() : local_("a", store_.writes) {
    SchedulerLeaderOptions options;
    options.clock = &clock_;
    options.local_agent = &local_;
    leader_ = std::make_unique<SchedulerLeader>(store_, options);
  }
  FakeLocalAgent local_;
};

// A job placed on the agent in the leader's own process, which promises to
// start it, is committed started (QUEUED -> STARTING -> RUNNING in the
// placement's statement) and handed to it with its row and
// resume point: that agent is not woken to read it. Another agent is. The
// pass's placements commit together, and the job is handed once committed.
TEST_F(SchedulerLeaderWithLocalAgent,
       APlacementOnTheAgentInThisProcessIsCommittedStartedAndHanded) {
  store_.add_agent("a", 3, 1);
  store_.add_agent("b", 5, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);
  ASSERT_TRUE(leader_->run_pass().ok());
  const std::vector<std::string> expected{
      "promised 1 under 3", "transition 1 STARTING then RUNNING (Training started on agent a)",
      "transition 2 STARTING", "taken 1", "notify tpujobs_agent b"};
  EXPECT_EQ(expected, store_.writes);
  EXPECT_EQ(std::vector<std::size_t>{2}, store_.batch_sizes) << "one commit for the pass";
  ASSERT_EQ(1u, local_.taken.size());
  const db::PlacedWork& work = local_.taken.front();
  EXPECT_EQ(JobState::kRunning, work.row.state);
  EXPECT_EQ("a", work.row.agent.value_or(""));
  EXPECT_EQ(3, work.row.placement_epoch.value_or(0));
  EXPECT_FALSE(work.row.spec_json.empty());
  EXPECT_EQ(7, work.resume.max_log_seq);
  EXPECT_EQ("b", store_.job(2).agent.value_or(""));
  EXPECT_EQ(JobState::kStarting, store_.job(2).state) << "another agent starts its own";
  const std::string metrics = leader_->prometheus_metrics();
  EXPECT_NE(std::string::npos,
            metrics.find("tpujobs_scheduler_placements_handed_total{taken=\"true\"} 1\n"));
  EXPECT_NE(std::string::npos,
            metrics.find("tpujobs_scheduler_placements_handed_total{taken=\"false\"} 0\n"));
}

// An agent that promises no start (stopping, rejoining) gets the placement
// STARTING, as any agent, and is woken to read it.
TEST_F(SchedulerLeaderWithLocalAgent, AnAgentThatPromisesNoStartIsPlacedOnAndWoken) {
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t", 8);
  local_.promises = false;
  ASSERT_TRUE(leader_->run_pass().ok());
  const std::vector<std::string> expected{"refused 1 under 3", "transition 1 STARTING",
                                          "notify tpujobs_agent a"};
  EXPECT_EQ(expected, store_.writes);
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
  EXPECT_NE(std::string::npos,
            leader_->prometheus_metrics().find(
                "tpujobs_scheduler_placements_handed_total{taken=\"false\"} 1\n"));
}

// A job committed started that the agent then does not take is left to its
// next look, which finds it RUNNING there with no copy: it is woken.
TEST_F(SchedulerLeaderWithLocalAgent, AStartedPlacementTheAgentDoesNotTakeWakesIt) {
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t", 8);
  local_.takes = false;
  ASSERT_TRUE(leader_->run_pass().ok());
  const std::vector<std::string> expected{
      "promised 1 under 3", "transition 1 STARTING then RUNNING (Training started on agent a)",
      "left 1", "notify tpujobs_agent a"};
  EXPECT_EQ(expected, store_.writes);
  EXPECT_TRUE(local_.promised.empty());
}

// A placement that did not apply (its agent registered again after the
// pass read it) releases the agent's promise, and no agent is woken for it.
TEST_F(SchedulerLeaderWithLocalAgent, APlacementThatDidNotApplyReleasesThePromise) {
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t", 8);
  store_.after_list_agents = [this] { store_.agents.front().epoch = 4; };
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kQueued, store_.job(1).state);
  EXPECT_TRUE(local_.taken.empty());
  EXPECT_TRUE(local_.promised.empty()) << "the agent's stop would wait on it";
  EXPECT_EQ(1, store_.count("forgone 1"));
  for (const std::string& w : store_.writes) {
    EXPECT_EQ(std::string::npos, w.find("left")) << w;
    EXPECT_EQ(std::string::npos, w.find("notify tpujobs_agent")) << w;
  }
}

// A failed write may have landed: the promise is released and the agent is
// woken, so that its look starts a job it finds RUNNING with no copy.
TEST_F(SchedulerLeaderWithLocalAgent, AFailedStartedPlacementReleasesThePromiseAndWakesTheAgent) {
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t", 8);
  store_.refuse_transitions = true;
  EXPECT_FALSE(leader_->run_pass().ok());
  EXPECT_TRUE(local_.promised.empty());
  EXPECT_EQ(1, store_.count("forgone 1"));
  EXPECT_EQ(1, store_.count("notify tpujobs_agent a"));
}

// A slice spanning agents is not handed over, even when its first part is
// this process's agent: every part's agent reads its work.
TEST_F(SchedulerLeaderWithLocalAgent, ASliceSpanningAgentsWakesEachOfThem) {
  store_.add_agent("a", 3, 2);
  store_.add_agent("b", 5, 2);
  db::JobRow& job = store_.add_job(1, "t", 8);
  json spec = json::parse(job.spec_json);
  spec["trainer"]["accelerator"] = "tpu";
  spec["trainer"]["num_nodes"] = 4;
  spec["resources"] = {{"accelerator_type", "v3-32"}};
  job.spec_json = spec.dump();
  ASSERT_TRUE(leader_->run_pass().ok());
  const std::vector<std::string> expected{"transition 1 STARTING", "notify tpujobs_agent a",
                                          "notify tpujobs_agent b"};
  EXPECT_EQ(expected, store_.writes);
  EXPECT_TRUE(local_.taken.empty());
  // Its rendezvous' scope is its placement's number.
  const json allocation = json::parse(store_.job(1).allocation_json.value_or("{}"));
  ASSERT_TRUE(store_.job(1).placement.has_value());
  EXPECT_EQ(*store_.job(1).placement, allocation["slice"].value("placement", std::int64_t{0}));
}

// A pass's placements commit together, one wait for the WAL for all; one
// that no longer applies (its job was cancelled after the read) leaves the
// others placed, and its agent is not woken.
TEST_F(SchedulerLeaderPass, APassPlacementsCommitTogetherAndOneThatNoLongerAppliesIsLeft) {
  store_.add_agent("a", 3, 1);
  store_.add_agent("b", 5, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);
  store_.add_job(3, "t", 8);
  store_.before_transitions = [this] { store_.job(1).state = JobState::kCancelled; };
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(std::vector<std::size_t>{2}, store_.batch_sizes);
  EXPECT_EQ(JobState::kCancelled, store_.job(1).state);
  EXPECT_EQ(JobState::kStarting, store_.job(2).state);
  EXPECT_EQ(JobState::kQueued, store_.job(3).state);
  const std::string woken_agent = store_.job(2).agent.value_or("");
  EXPECT_EQ(1, store_.count("notify tpujobs_agent " + woken_agent));
  EXPECT_EQ(1, store_.count("notify tpujobs_agent ")) << "job 1's agent is not woken";
}

// Of a pass's wall time, how much the leader's thread spent on a CPU (the
// rest waited: for PostgreSQL, or for a core).
TEST_F(SchedulerLeaderPass, MetricsTellThePassesTimeOnTheLeadersCpu) {
  store_.read_takes = std::chrono::milliseconds(100);
  store_.read_spins = std::chrono::milliseconds(20);
  ASSERT_TRUE(leader_->run_pass().ok());
  const std::string text = leader_->prometheus_metrics();
  auto value = [&](const std::string& series) {
    const std::size_t at = text.find("\n" + series + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + series.size() + 2));
  };
  EXPECT_EQ(0.1, value("tpujobs_scheduler_pass_max_seconds")) << text;
  EXPECT_GE(value("tpujobs_scheduler_pass_max_cpu_seconds"), 0.02) << text;
  EXPECT_GE(value("tpujobs_scheduler_pass_cpu_seconds_total"), 0.02) << text;
  EXPECT_LE(value("tpujobs_scheduler_pass_max_cpu_seconds"),
            value("tpujobs_scheduler_pass_cpu_seconds_total"))
      << text;
}

TEST_F(SchedulerLeaderPass, MetricsCountThePassesTheirTimeAndTheLongest) {
  store_.read_takes = std::chrono::milliseconds(7);
  ASSERT_TRUE(leader_->run_pass().ok());
  store_.read_takes = std::chrono::milliseconds(3);
  ASSERT_TRUE(leader_->run_pass().ok());
  const std::string text = leader_->prometheus_metrics();
  EXPECT_NE(text.find("tpujobs_scheduler_pass_seconds_count 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tpujobs_scheduler_pass_seconds_sum 0.01\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tpujobs_scheduler_pass_max_seconds 0.007\n"), std::string::npos) << text;
  // A histogram: how many passes took at most each bound.
  EXPECT_NE(text.find("# TYPE tpujobs_scheduler_pass_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("tpujobs_scheduler_pass_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tpujobs_scheduler_pass_seconds_bucket{le=\"0.01\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tpujobs_scheduler_pass_seconds_bucket{le=\"+Inf\"} 2\n"), std::string::npos)
      << text;
  // Where the time went: here all of it reading the changes.
  EXPECT_NE(text.find("tpujobs_scheduler_pass_phase_seconds_total{phase=\"read\"} 0.01\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tpujobs_scheduler_pass_phase_max_seconds{phase=\"read\"} 0.007\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tpujobs_scheduler_pass_phase_seconds_total{phase=\"plan\"} 0\n"),
            std::string::npos)
      << text;
}

// Housekeeping's steps are timed apart: a long housekeeping phase says
// which of its statements waited.
TEST_F(SchedulerLeaderPass, MetricsTimeHousekeepingsStepsApart) {
  store_.judgement_takes = std::chrono::milliseconds(2);
  store_.orphans_take = std::chrono::milliseconds(5);
  store_.sweep_takes = std::chrono::milliseconds(9);
  ASSERT_TRUE(leader_->run_pass().ok());  // sweeps: none so far
  store_.orphans_take = std::chrono::milliseconds(3);
  ASSERT_TRUE(leader_->run_pass().ok());  // within the minute: no sweep
  ASSERT_TRUE(leader_->run_pass(/*housekeeping=*/false).ok());
  const std::string text = leader_->prometheus_metrics();
  for (const char* series :
       {"tpujobs_scheduler_housekeeping_seconds_total{step=\"judge\"} 0.004\n",
        "tpujobs_scheduler_housekeeping_seconds_total{step=\"orphans\"} 0.008\n",
        "tpujobs_scheduler_housekeeping_seconds_total{step=\"sweep\"} 0.009\n",
        "tpujobs_scheduler_housekeeping_max_seconds{step=\"judge\"} 0.002\n",
        "tpujobs_scheduler_housekeeping_max_seconds{step=\"orphans\"} 0.005\n",
        "tpujobs_scheduler_pass_phase_seconds_total{phase=\"housekeeping\"} 0.021\n"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << text;
  }
}

TEST_F(SchedulerLeaderPass, MetricsKeepTheLongestPassesPhasesTogether) {
  // The longest pass's own phases and steps, not each one's longest: the
  // first pass has the longest sweep, the second is the longest pass.
  store_.judgement_takes = std::chrono::milliseconds(2);
  store_.orphans_take = std::chrono::milliseconds(5);
  store_.sweep_takes = std::chrono::milliseconds(9);
  ASSERT_TRUE(leader_->run_pass().ok());  // 16 ms of housekeeping
  store_.orphans_take = std::chrono::milliseconds(30);
  ASSERT_TRUE(leader_->run_pass().ok());  // 32 ms, no sweep within the minute
  store_.orphans_take = std::chrono::milliseconds(1);
  ASSERT_TRUE(leader_->run_pass().ok());
  const std::string text = leader_->prometheus_metrics();
  for (const char* series :
       {"tpujobs_scheduler_pass_max_seconds 0.032\n",
        "tpujobs_scheduler_longest_pass_phase_seconds{phase=\"housekeeping\"} 0.032\n",
        "tpujobs_scheduler_longest_pass_phase_seconds{phase=\"read\"} 0\n",
        "tpujobs_scheduler_longest_pass_housekeeping_seconds{step=\"judge\"} 0.002\n",
        "tpujobs_scheduler_longest_pass_housekeeping_seconds{step=\"orphans\"} 0.03\n",
        "tpujobs_scheduler_longest_pass_housekeeping_seconds{step=\"sweep\"} 0\n",
        "tpujobs_scheduler_housekeeping_max_seconds{step=\"sweep\"} 0.009\n",
        "tpujobs_scheduler_longest_pass_read_tables 1\n"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << text;
  }
}

TEST_F(SchedulerLeaderPass, WithTheDatabaseAwayAPassFailsAndWritesNothing) {
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t", 8);
  store_.away = true;
  EXPECT_FALSE(leader_->run_pass().ok());
  EXPECT_TRUE(store_.writes.empty());
  store_.away = false;
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
}

TEST_F(SchedulerLeaderPass, AWaitingJobsReasonIsWrittenOnlyWhenItChanges) {
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);  // waits for job 1's host
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(1, store_.count("pending 2"));
  EXPECT_EQ("Resources", json::parse(*store_.job(2).pending_json).value("reason", ""));
  for (int pass = 0; pass < 3; ++pass) ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(1, store_.count("pending 2")) << "the same reason is not written again";
  store_.job(1).state = JobState::kSucceeded;  // its host frees: job 2 is placed
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kStarting, store_.job(2).state);
}

TEST_F(SchedulerLeaderPass, StoredReasonsAreHandedToTheViewsAndOthersChangesForgetThem) {
  std::vector<std::string> written;
  std::vector<std::string> changed;
  bus_.subscribe(kPendingWrittenChannel, [&](const std::string& p) { written.push_back(p); });
  bus_.subscribe(kJobsChangedChannel, [&](const std::string& p) { changed.push_back(p); });
  lead(&bus_);
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);  // waits for job 1's host
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(std::vector<std::string>{"1"}, changed) << "placed: its view is forgotten";
  ASSERT_EQ(1u, written.size());
  EXPECT_EQ((PendingChanges{{2, store_.job(2).pending_json}}), parse_pending_changes(written[0]));

  // A write that failed may or may not have landed: the views forget. It
  // is not the pass's (the reasons are written off it), and the next pass
  // writes every reason again.
  store_.refuse_pending = true;
  store_.add_job(3, "t", 8);
  EXPECT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(1u, written.size());
  EXPECT_EQ("3", changed.back());
  store_.refuse_pending = false;
  ASSERT_TRUE(leader_->run_pass().ok());
  ASSERT_EQ(2u, written.size());
  EXPECT_EQ((PendingChanges{{2, store_.job(2).pending_json}, {3, store_.job(3).pending_json}}),
            parse_pending_changes(written[1]));
}

TEST_F(SchedulerLeaderPass, FairShareIsReadOncePerIntervalNotPerPass) {
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t1", 8);
  store_.add_job(2, "t2", 8);
  store_.add_job(3, "t2", 8);
  store_.factors = {{"t1", 0.25}, {"t2", 1.0}};
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(1, store_.fair_share_reads);
  // t2 used less: of the equal priorities its first job goes first.
  EXPECT_EQ(JobState::kStarting, store_.job(2).state);
  EXPECT_EQ(JobState::kQueued, store_.job(1).state);
  ASSERT_TRUE(leader_->run_pass().ok());
  clock_.advance(seconds(4));
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(1, store_.fair_share_reads);
  clock_.advance(seconds(1));
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(2, store_.fair_share_reads);
}

TEST_F(SchedulerLeaderPass, ALostAgentsJobIsRequeuedAndPlacedOnlyOnAnAgentHeardFromSince) {
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  store_.add_job(1, "t", 8, /*max_retries=*/1);
  ASSERT_TRUE(leader_->run_pass().ok());
  ASSERT_EQ("a", store_.job(1).agent.value_or(""));
  store_.job(1).state = JobState::kRunning;

  lose("a");
  EXPECT_EQ(JobState::kQueued, store_.job(1).state);
  EXPECT_EQ(1, store_.job(1).attempt);
  ASSERT_TRUE(store_.job(1).requeued_at.has_value());
  // b has not heartbeated since the requeue: the retry waits for it.
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kQueued, store_.job(1).state);
  clock_.advance(seconds(1));
  store_.heartbeat("b");
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
  EXPECT_EQ("b", store_.job(1).agent.value_or(""));
}

TEST_F(SchedulerLeaderPass, AJobItsLostAgentNeverStartedIsRequeuedWithoutARetryAFewTimes) {
  store_.add_job(1, "t", 8, /*max_retries=*/0);
  for (int lost = 1; lost <= lifecycle::kFreeUnstartedRequeues + 1; ++lost) {
    const std::string agent = "a" + std::to_string(lost);
    clock_.advance(seconds(1));  // heard from after the last requeue
    store_.add_agent(agent, lost, 1);
    ASSERT_TRUE(leader_->run_pass().ok());
    ASSERT_EQ(agent, store_.job(1).agent.value_or("")) << "placed, not started";
    lose(agent);
    if (lost <= lifecycle::kFreeUnstartedRequeues) {
      EXPECT_EQ(JobState::kQueued, store_.job(1).state) << "loss " << lost;
      EXPECT_EQ(0, store_.job(1).attempt);
      EXPECT_EQ(lost, store_.job(1).unstarted_requeues);
    }
  }
  EXPECT_EQ(JobState::kFailed, store_.job(1).state)
      << "past a few, a loss before the start costs as any other";
}

TEST_F(SchedulerLeaderPass, ARunningJobOfALostAgentStillSpendsARetry) {
  running_on(1, "a", 1, /*max_retries=*/0);
  store_.add_agent("a", 1, 1);
  lose("a");
  EXPECT_EQ(JobState::kFailed, store_.job(1).state);
}

TEST_F(SchedulerLeaderPass, AJobsSpecIsReadOnceNotEveryPass) {
  store_.add_agent("a", 3, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);  // waits for job 1's host
  for (int pass = 0; pass < 5; ++pass) ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(2, store_.spec_reads);
  store_.add_job(3, "t", 8);
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(3, store_.spec_reads) << "only the new job's";
  store_.job(1).state = JobState::kSucceeded;  // job 2 is placed from the spec read once
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kStarting, store_.job(2).state);
  EXPECT_EQ(3, store_.spec_reads);
}

TEST_F(SchedulerLeaderPass, ANewJobsSpecComesWithItsRowAndOneCommittedOutOfOrderIsAskedFor) {
  store_.incremental = true;
  const auto pending_reason = [this](std::int64_t id) -> std::string {
    const auto& pending = store_.job(id).pending_json;
    return pending ? json::parse(*pending).value("reason", "") : "none";
  };
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8);  // placed by the complete read
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(1, store_.spec_reads);
  ASSERT_EQ(JobState::kStarting, store_.job(1).state);
  store_.add_job(3, "t", 8);  // submitted after the read: above every id read
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(1, store_.spec_reads) << "job 3's spec came with its row";
  EXPECT_EQ("Resources", pending_reason(3)) << "known from that spec: it waits for a host";
  store_.add_job(2, "t", 8);  // its id was taken before job 3's, its commit came after
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(2, store_.spec_reads) << "job 2 is below job 3: its spec is read by id";
  EXPECT_EQ("Resources", pending_reason(2));
}

TEST_F(SchedulerLeaderPass, ALeaderThatTakesOverRequeuesALostAgentsJobByItsMaxRetries) {
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  running_on(1, "a", 1, /*max_retries=*/1);
  lose("a");
  EXPECT_EQ(JobState::kQueued, store_.job(1).state) << "requeued, not FAILED: max_retries is 1";
  EXPECT_EQ(1, store_.job(1).attempt);
}

TEST_F(SchedulerLeaderPass, ALostAgentsJobWhoseCancelWasAcceptedEndsCancelled) {
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  running_on(1, "a", 1, /*max_retries=*/1).cancel_requested = true;  // 202, then a went silent
  running_on(2, "a", 1, /*max_retries=*/1).cancel_requested = true;
  lose("a");
  EXPECT_EQ(JobState::kCancelled, store_.job(1).state) << "not requeued, not FAILED";
  EXPECT_EQ(JobState::kCancelled, store_.job(2).state);
  EXPECT_EQ(0, store_.job(1).attempt);
  // Their ends are announced to every replica's waits and followers, in one
  // notification.
  EXPECT_EQ(
      1, std::count_if(store_.writes.begin(), store_.writes.end(),
                       [](const std::string& w) { return w.starts_with("notify tpujobs_logs"); }))
      << ::testing::PrintToString(store_.writes);
  EXPECT_NE(std::find(store_.writes.begin(), store_.writes.end(), "notify tpujobs_logs 1,2"),
            store_.writes.end())
      << ::testing::PrintToString(store_.writes);
}

// A standalone serve's leader announces the ends it writes to the API
// service in its process through the wake bus, not by NOTIFY.
TEST_F(SchedulerLeaderPass, WithAWakeBusTheEndsItWritesAreAnnouncedThroughItNotByNotify) {
  std::vector<std::string> announced;
  bus_.subscribe(db::kLogChannel, [&](const std::string& p) { announced.push_back(p); });
  lead(&bus_);
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  running_on(1, "a", 1, /*max_retries=*/1).cancel_requested = true;
  running_on(2, "a", 1, /*max_retries=*/1).cancel_requested = true;
  lose("a");
  ASSERT_EQ(JobState::kCancelled, store_.job(1).state);
  ASSERT_EQ(JobState::kCancelled, store_.job(2).state);
  EXPECT_EQ(std::vector<std::string>{"1,2"}, announced);
  for (const std::string& write : store_.writes)
    EXPECT_EQ(write.find("notify tpujobs_logs"), std::string::npos) << write;
}

// A lost agent's job with no retry left fails UNAVAILABLE; a cancel stored
// after the leader read it (answered 202) ends it CANCELLED instead, and
// the line the leader writes says so, not the failure.
TEST_F(SchedulerLeaderPass, ALostAgentsJobACancelOvertookIsToldCancelledNotFailed) {
  using ::testing::internal::CaptureStderr;
  using ::testing::internal::GetCapturedStderr;
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  running_on(1, "a", 1, /*max_retries=*/0);
  running_on(2, "a", 1, /*max_retries=*/0);
  store_.before_transitions = [this] { store_.job(1).cancel_requested = true; };
  CaptureStderr();
  lose("a");
  const std::string told = GetCapturedStderr();
  EXPECT_EQ(JobState::kCancelled, store_.job(1).state);
  EXPECT_EQ(JobState::kFailed, store_.job(2).state);
  EXPECT_NE(told.find("tpujobs: job 1: Cancelled by request as it ended (UNAVAILABLE: failed to "
                      "connect to all addresses)\n"),
            std::string::npos)
      << told;
  EXPECT_NE(told.find("tpujobs: job 2: UNAVAILABLE: failed to connect to all addresses\n"),
            std::string::npos)
      << told;
}

TEST_F(SchedulerLeaderPass, ALostAgentsRequeuedJobIsNotAnnouncedAsEnded) {
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  running_on(1, "a", 1, /*max_retries=*/1);
  lose("a");
  ASSERT_EQ(JobState::kQueued, store_.job(1).state);
  for (const std::string& write : store_.writes)
    EXPECT_EQ(write.find("notify tpujobs_logs"), std::string::npos) << write;
}

TEST_F(SchedulerLeaderPass, NoJobIsPlacedOnAnAgentWhoseHeartbeatIsLate) {
  // `a` was killed 5 s ago: alive until declared lost (10 s), but late.
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  clock_.advance(seconds(5));
  store_.heartbeat("b");
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);
  store_.add_job(3, "t", 0).spec_json = json{
      {"name", "cpu"},
      {"trainer", {{"accelerator", "cpu"}}},
      {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
      {"data", {{"dataset", "iris"}}}}.dump();
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ("b", store_.job(1).agent.value_or("")) << "on the punctual agent";
  EXPECT_EQ(JobState::kQueued, store_.job(2).state) << "not on the late one";
  EXPECT_EQ("b", store_.job(3).agent.value_or("")) << "a CPU job neither";
  store_.heartbeat("a");  // it was only slow
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ("a", store_.job(2).agent.value_or(""));
}

TEST_F(SchedulerLeaderPass, AnAgentThatRegistersAgainBetweenAPasssReadsGetsNoJobThatPass) {
  // The soak's r1 died of std::out_of_range here: the agents read said a
  // lost, the hosts read (a moment later, a registered again) said alive.
  store_.add_agent("a", 1, 1);
  lose("a");
  store_.add_job(1, "t", 8);
  store_.after_list_agents = [this] {
    store_.agents[0] = {"a", "alive", 2, 1, clock_.wall_now(), clock_.wall_now(), 0};
  };
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kQueued, store_.job(1).state);
  clock_.advance(seconds(1));  // the next pass reads it alive, epoch 2, in both
  store_.heartbeat("a");
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
  EXPECT_EQ(2, store_.job(1).placement_epoch.value_or(0));
}

TEST_F(SchedulerLeaderPass, PassesThatFailOnARefusedStatementStillDeclareASilentAgentLost) {
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8);
  store_.refuse_transitions = true;  // job 1's placement is refused, each pass
  ASSERT_FALSE(leader_->run_pass().ok());
  store_.lost_next = {"a"};  // what mark_lost declares once the leader judges silence
  for (int second = 0; second < 12; ++second) {
    clock_.advance(seconds(1));
    (void)leader_->run_pass();
  }
  EXPECT_EQ("lost", store_.agents[0].state)
      << "the database answered throughout: the agent's silence is judged";
}

// A judgement of silence the database answers late (it stalled, holding
// the heartbeats up too; ClusterRepository::mark_lost rolls it back) is an
// outage: the agents are judged again only after a full silence the leader
// could observe.
TEST_F(SchedulerLeaderPass, AJudgementAnsweredLateIsAnOutageAndTheSilenceIsJudgedAfresh) {
  store_.add_agent("a", 1, 1);
  clock_.advance(seconds(11));
  store_.late_judgement = true;
  EXPECT_FALSE(leader_->run_pass().ok());
  EXPECT_EQ(milliseconds(2500), store_.max_answer) << "a quarter of the silence";
  store_.lost_next = {"a"};  // what mark_lost declares once the leader judges silence
  for (int second = 0; second < 9; ++second) {
    clock_.advance(seconds(1));
    ASSERT_TRUE(leader_->run_pass().ok());
    ASSERT_EQ("alive", store_.agents[0].state) << "judged " << second + 1 << " s after the stall";
  }
  clock_.advance(seconds(2));
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ("lost", store_.agents[0].state) << "silent for a full span since";
}

// A pass of kSlowPass or more is told on stderr with its phases, so that a
// long one can be placed in time (the metrics keep only the longest); one
// line in kSlowPassesApart at most, the next counting those not told.
TEST_F(SchedulerLeaderPass, ASlowPassIsToldWithItsPhasesAtMostOnceInTenSeconds) {
  using ::testing::internal::CaptureStderr;
  using ::testing::internal::GetCapturedStderr;
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);  // waits for job 1's host
  store_.judgement_takes = milliseconds(300);
  store_.orphans_take = milliseconds(30);
  store_.sweep_takes = milliseconds(4);
  store_.read_takes = milliseconds(20);
  CaptureStderr();
  ASSERT_TRUE(leader_->run_pass().ok());
  // Of it on the leader's CPU: a real measure, some milliseconds at most.
  EXPECT_THAT(GetCapturedStderr(),
              ::testing::MatchesRegex(
                  "tpujobs: a scheduling pass took 354 ms \\([0-9]+ on this thread's CPU\\); its "
                  "phases in ms: housekeeping 334 \\(judge 300, orphans 30, sweep 4\\), read 20, "
                  "plan 0, write 0, reasons 0; jobs waiting at its start: 2\n"));
  store_.orphans_take = milliseconds(0);
  store_.sweep_takes = milliseconds(0);

  CaptureStderr();
  for (int pass = 0; pass < 2; ++pass) {
    clock_.advance(seconds(4));
    store_.heartbeat("a");
    ASSERT_TRUE(leader_->run_pass().ok());
  }
  EXPECT_EQ(GetCapturedStderr(), "") << "within 10 s of the one told";

  store_.judgement_takes = milliseconds(0);
  clock_.advance(seconds(4));
  store_.heartbeat("a");
  CaptureStderr();
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(GetCapturedStderr(), "") << "a pass of 20 ms";

  store_.read_takes = milliseconds(250);
  CaptureStderr();
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_THAT(GetCapturedStderr(),
              ::testing::MatchesRegex(
                  "tpujobs: a scheduling pass took 250 ms \\([0-9]+ on this thread's CPU\\); its "
                  "phases in ms: housekeeping 0, read 250, plan 0, write 0, reasons 0; jobs "
                  "waiting at its start: 1; 2 more passes over 250 ms since the last one told\n"));
}

// A database that answers reads but takes no writes (read-only, its disk
// full) fails the agents' heartbeats. The leader's passes that write nothing
// succeed meanwhile; it still sends its judgement, of no one, every pass, so
// that it sees writes refused until they are taken again, and judges only
// after a whole silence since (issue 34: an outage is not a job's fault).
// Before, a judgement was due 10 s after the last failed one, however
// recently writes had come back: here 6 s after, before the agent's next
// heartbeat could be taken.
TEST_F(SchedulerLeaderPass, AJudgementWaitsAWholeSilenceAfterWritesAreTakenAgain) {
  store_.add_agent("a", 1, 1);
  running_on(1, "a", 1, /*max_retries=*/2);
  store_.refuse_writes = true;
  store_.lost_next = {"a"};  // what mark_lost declares once the leader judges silence
  for (int second = 0; second < 25; ++second) {
    clock_.advance(seconds(1));
    (void)leader_->run_pass();
  }
  ASSERT_EQ("alive", store_.agents[0].state);
  clock_.advance(milliseconds(500));
  store_.refuse_writes = false;  // writes are taken again
  for (int second = 0; second < 9; ++second) {
    clock_.advance(seconds(1));
    ASSERT_TRUE(leader_->run_pass().ok());
    ASSERT_EQ("alive", store_.agents[0].state)
        << "judged " << second + 1 << " s after writes came back";
  }
  EXPECT_EQ(JobState::kRunning, store_.job(1).state);
  EXPECT_EQ(0, store_.job(1).attempt);
  EXPECT_GT(store_.judgements, 0) << "the judgement of no one was sent";
}

// A pass without housekeeping (one only submits woke, soon after the last
// housekeeping) places the new job but neither judges silence nor requeues
// a lost agent's job; the next pass with it does both.
TEST_F(SchedulerLeaderPass, APassWithoutHousekeepingPlacesButJudgesNoSilence) {
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  running_on(1, "a", 1, /*max_retries=*/1);
  ASSERT_TRUE(leader_->run_pass().ok());
  const int judged = store_.judgements;
  clock_.advance(seconds(11));
  store_.heartbeat("b");
  store_.lost_next = {"a"};
  store_.add_job(2, "t", 8);
  ASSERT_TRUE(leader_->run_pass(/*housekeeping=*/false).ok());
  EXPECT_EQ(judged, store_.judgements);
  EXPECT_EQ("alive", store_.agents[0].state);
  EXPECT_EQ(JobState::kRunning, store_.job(1).state) << "not requeued: no orphan read";
  EXPECT_EQ(JobState::kStarting, store_.job(2).state) << "the submitted job is placed";
  EXPECT_EQ("b", store_.job(2).agent.value_or(""));
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(judged + 1, store_.judgements);
  EXPECT_EQ("lost", store_.agents[0].state);
  EXPECT_EQ(JobState::kQueued, store_.job(1).state) << "requeued with its retry";
}

// A clean stop (DESIGN §9): a draining agent's free host takes no new job,
// and the job it still runs is not taken off it (it requeues that itself,
// at a checkpoint, without a retry).
TEST_F(SchedulerLeaderPass, ADrainingAgentGetsNoNewJobAndKeepsTheOneItRuns) {
  store_.add_agent("a", 1, 2);
  store_.add_agent("b", 2, 1);
  running_on(1, "a", 1, /*max_retries=*/0);
  store_.agents[0].state = "draining";
  store_.add_job(2, "t", 8);
  store_.add_job(3, "t", 8);
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kRunning, store_.job(1).state);
  EXPECT_EQ("a", store_.job(1).agent.value_or(""));
  EXPECT_EQ("b", store_.job(2).agent.value_or(""));
  EXPECT_EQ(JobState::kQueued, store_.job(3).state) << "not on a's free host";
  EXPECT_EQ(0, store_.count("transition 1"));
}

// Fencing the leader: once another replica has taken the lead (a new term),
// a leader resuming its pass writes nothing, not even why its jobs wait;
// with a term of its own again, it places, and writes the reasons.
TEST_F(SchedulerLeaderPass, ALeaderWhoseTermPassedToAnotherWritesNothing) {
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);
  ASSERT_TRUE(leader_->begin_term().ok());
  ++store_.term;  // another replica took the lead meanwhile
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kQueued, store_.job(1).state);
  EXPECT_EQ(0, store_.count("transition"));
  EXPECT_FALSE(store_.job(2).pending_json.has_value()) << "the former leader's reason";
  ASSERT_TRUE(leader_->begin_term().ok());
  ASSERT_TRUE(leader_->run_pass().ok());
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
  EXPECT_NE(std::string::npos, store_.job(2).pending_json.value_or("").find("Resources"))
      << store_.job(2).pending_json.value_or("none");
}

// The leader keeps the unfinished jobs between passes
// (scheduler_leader_queue.cc): a pass reads only the rows written since the
// last read, and what it keeps follows them.
class SchedulerLeaderKeptJobs : public SchedulerLeaderPass {
 protected:
  SchedulerLeaderKeptJobs() { store_.incremental = true; }
  void pass() { ASSERT_TRUE(leader_->run_pass().ok()); }
};

// A job that leaves the queue gives its entry to the last one (the kept
// entries are then out of the pass's order): each reason still goes to its
// own job, and one that did not change is not written again.
TEST_F(SchedulerLeaderKeptJobs, ReasonsFollowTheirJobsWhenTheKeptEntriesMove) {
  store_.add_agent("a", 1, 1);
  for (int id = 1; id <= 4; ++id) store_.add_job(id, "t", 8);
  auto position = [&](std::int64_t job) {
    return json::parse(*store_.job(job).pending_json).value("queue_position", 0);
  };
  pass();  // job 1 is placed; 2, 3 and 4 wait in that order
  EXPECT_EQ(3, position(4));
  pass();  // job 1 leaves the entries: job 4's entry takes its place
  EXPECT_EQ(1, store_.count("pending 4")) << "its reason did not change";
  EXPECT_EQ(1, store_.count("pending 2"));
  store_.job(1).state = JobState::kSucceeded;
  pass();  // job 2 is placed
  ASSERT_EQ(JobState::kStarting, store_.job(2).state);
  EXPECT_EQ(1, position(3));
  EXPECT_EQ(2, position(4));
  EXPECT_EQ(2, store_.count("pending 3"));
  EXPECT_EQ(2, store_.count("pending 4"));
}

// A spec this process's API handed over is the one learned: its stored
// text is neither read by id nor parsed (here it would not parse, and the
// job would wait for ever).
TEST_F(SchedulerLeaderKeptJobs, ASpecHandedOverByThisProcesssServiceIsLearnedWithoutItsText) {
  SubmittedSpecs handed;
  handed.set_leading(true);
  SchedulerLeaderOptions options;
  options.clock = &clock_;
  options.agent_silence = seconds(10);
  options.submitted_specs = &handed;
  leader_ = std::make_unique<SchedulerLeader>(store_, options);
  store_.add_agent("a", 1, 1);
  store_.add_job(5, "t", 8);
  pass();  // job 5 learned from its stored text, and placed
  ASSERT_EQ(JobState::kStarting, store_.job(5).state);
  EXPECT_EQ(1, store_.spec_reads);
  base::Result<api::JobSpec> spec = api::parse_job_spec(json::parse(store_.job(5).spec_json));
  ASSERT_TRUE(spec.ok());
  // Job 6 comes with its row; job 2, below the ids read, would be asked for.
  for (std::int64_t id : {6, 2}) {
    db::JobRow& row = store_.add_job(id, "t", 8);
    row.spec_json = "{";
    handed.put(row, placement_spec(*spec));
  }
  pass();
  EXPECT_EQ(1, store_.spec_reads);
  EXPECT_EQ(0u, handed.size()) << "each taken once";
  for (std::int64_t id : {2, 6}) {
    EXPECT_EQ("Resources", json::parse(*store_.job(id).pending_json).value("reason", ""))
        << "job " << id << " waits for job 5's host, not for one its spec could never have";
  }
  store_.job(5).state = JobState::kSucceeded;
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(2).state);
  // Job 7 is read before its spec is handed over: parsed from its text,
  // and its spec, handed over late, goes at the next pass.
  store_.add_job(7, "t", 8);
  pass();
  handed.put(store_.job(7), placement_spec(*spec));
  pass();
  EXPECT_EQ(0u, handed.size()) << "a late hand-over stays no longer than a pass";
  const std::string metrics = leader_->prometheus_metrics();
  EXPECT_NE(std::string::npos,
            metrics.find("tpujobs_scheduler_specs_learned_total{from=\"handed\"} 2\n"));
  EXPECT_NE(std::string::npos,
            metrics.find("tpujobs_scheduler_specs_learned_total{from=\"text\"} 2\n"));
}

// A standalone serve's leader (a wake bus, its API service's hand-overs):
// a pass that only submits woke may place the new jobs from their handed
// rows, without reading the tables (SchedulerLeader::submitted_rows).
class SchedulerLeaderSubmitted : public SchedulerLeaderKeptJobs {
 protected:
  SchedulerLeaderSubmitted() {
    handed_.set_leading(true);
    lead(milliseconds(500));
  }
  // A new leader, polling every `poll_interval`; without the wake bus, as
  // a replica of a cluster.
  void lead(milliseconds poll_interval, bool woken_in_process = true,
            int sweep_rows = SchedulerLeaderOptions{}.sweep_rows) {
    SchedulerLeaderOptions options;
    options.clock = &clock_;
    options.agent_silence = seconds(10);
    options.poll_interval = poll_interval;
    options.wake_bus = woken_in_process ? &bus_ : nullptr;
    options.submitted_specs = &handed_;
    options.sweep_rows = sweep_rows;
    leader_ = std::make_unique<SchedulerLeader>(store_, options);
  }
  // Job `id` committed by this process's API service, which hands it over.
  void submit(std::int64_t id) {
    db::JobRow& row = store_.add_job(id, "t", 8);
    base::Result<api::JobSpec> spec = api::parse_job_spec(json::parse(row.spec_json));
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    handed_.put(row, placement_spec(*spec));
  }
  void pass_woken_by_submits() { ASSERT_TRUE(leader_->run_pass(false, true).ok()); }
  std::int64_t skipped() {
    const std::string metrics = leader_->prometheus_metrics();
    const std::string name = "\ntpujobs_scheduler_reads_skipped_total ";
    const std::size_t at = metrics.find(name);
    return at == std::string::npos ? -1 : std::stoll(metrics.substr(at + name.size()));
  }
  WakeBus bus_;
  SubmittedSpecs handed_;
};

TEST_F(SchedulerLeaderSubmitted, APassOnlySubmitsWokePlacesTheNewJobWithoutARead) {
  store_.add_agent("a", 1, 2);
  pass();  // reads the pool: two hosts free
  const int reads = store_.reads;
  submit(1);
  pass_woken_by_submits();
  EXPECT_EQ(reads, store_.reads) << "placed from the last read and the handed row";
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
  EXPECT_EQ(1, skipped());
  EXPECT_EQ(0u, handed_.size()) << "its spec learned from the hand-over";
  // The leader wrote since its last read: the next pass reads, and finds
  // job 1's host taken.
  submit(2);
  pass_woken_by_submits();
  EXPECT_EQ(reads + 1, store_.reads);
  ASSERT_EQ(JobState::kStarting, store_.job(2).state);
  EXPECT_NE(json::parse(*store_.job(1).allocation_json)["hosts"],
            json::parse(*store_.job(2).allocation_json)["hosts"]);
  // Read once more, with nothing written since: job 3 waits for a host
  // without a read, then the read since finds it as the pass left it.
  pass();
  submit(3);
  pass_woken_by_submits();
  EXPECT_EQ(reads + 2, store_.reads);
  EXPECT_EQ(2, skipped());
  EXPECT_EQ(JobState::kQueued, store_.job(3).state);
  EXPECT_EQ((std::vector<std::int64_t>{3}), leader_->kept_waiting());
  store_.job(1).state = JobState::kSucceeded;
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(3).state);
  pass();  // its placement read back
  EXPECT_TRUE(leader_->kept_waiting().empty());
}

// A burst of submits to a full pool: pass after pass only queues the new
// jobs, and the leader writes nothing to the jobs between them. None of
// those passes reads; the next read (the poll) brings the rows they were
// given, each once.
TEST_F(SchedulerLeaderSubmitted, PassAfterPassOfSubmitsThatOnlyQueueReadsNothing) {
  store_.add_agent("a", 1, 1);
  submit(1);
  pass();  // places job 1 on the only host
  pass();  // reads it back
  const int reads = store_.reads;
  for (std::int64_t id : {2, 3, 4}) {
    submit(id);
    pass_woken_by_submits();
  }
  EXPECT_EQ(reads, store_.reads) << "no write of the leader's since the last read";
  EXPECT_EQ(3, skipped());
  EXPECT_EQ((std::vector<std::int64_t>{2, 3, 4}), leader_->kept_waiting());
  for (std::int64_t id : {2, 3, 4}) {
    ASSERT_TRUE(store_.job(id).pending_json.has_value()) << id;
    EXPECT_EQ(id - 1, json::parse(*store_.job(id).pending_json).value("queue_position", 0)) << id;
  }
  pass();
  EXPECT_EQ(reads + 1, store_.reads);
  EXPECT_EQ((std::vector<std::int64_t>{2, 3, 4}), leader_->kept_waiting());
  // The host frees: the head is placed, a write, so the next submit's pass reads.
  store_.job(1).state = JobState::kSucceeded;
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(2).state);
  submit(5);
  pass_woken_by_submits();
  EXPECT_EQ(reads + 3, store_.reads);
  EXPECT_EQ(3, skipped());
}

TEST_F(SchedulerLeaderSubmitted, APassReadsWhenAnythingButASubmitWokeItOrItsLastReadIsOld) {
  store_.add_agent("a", 1, 4);
  pass();
  int reads = store_.reads;
  submit(1);
  ASSERT_TRUE(leader_->run_pass(false, false).ok());  // an end, a cancel, the poll
  EXPECT_EQ(++reads, store_.reads);
  pass();
  ++reads;
  submit(2);
  ASSERT_TRUE(leader_->run_pass(true, true).ok());  // with housekeeping
  EXPECT_EQ(++reads, store_.reads);
  pass();
  ++reads;
  clock_.advance(milliseconds(500));  // a poll interval since the read
  submit(3);
  pass_woken_by_submits();
  EXPECT_EQ(++reads, store_.reads);
  EXPECT_EQ(0, skipped());
  for (std::int64_t id : {1, 2, 3}) EXPECT_EQ(JobState::kStarting, store_.job(id).state) << id;
  // A failed pass leaves nothing to place by.
  pass();
  ++reads;
  store_.away = true;
  EXPECT_FALSE(leader_->run_pass().ok());
  store_.away = false;
  submit(4);
  pass_woken_by_submits();
  EXPECT_EQ(++reads, store_.reads);
  EXPECT_EQ(JobState::kStarting, store_.job(4).state);
}

// A job committed below an id the leader read (another committer's batch
// committed first) is left to the read: a handed row at or below the
// highest id read may be of a job that ended since.
TEST_F(SchedulerLeaderSubmitted, AJobCommittedBelowTheIdsReadIsLeftToTheRead) {
  store_.add_agent("a", 1, 4);
  store_.add_job(5, "t", 8);
  pass();
  const int reads = store_.reads;
  submit(4);
  pass_woken_by_submits();
  EXPECT_EQ(reads + 1, store_.reads);
  EXPECT_EQ(JobState::kStarting, store_.job(4).state);
  EXPECT_EQ(0, skipped());
}

// In a burst, a read leaves out the rows the passes since took from the
// hand-over, while they are as their inserts wrote them; one written
// since (a cancel) it brings. The sweep's slice stays whole.
TEST_F(SchedulerLeaderSubmitted, AReadLeavesOutTheRowsThePassesTookFromTheHandOver) {
  lead(milliseconds(500), true, /*sweep_rows=*/16);
  pass();  // no agent: every job waits
  for (int id = 1; id <= 10; ++id) {
    submit(id);
    pass_woken_by_submits();
  }
  EXPECT_EQ(10, skipped());
  store_.job(4).cancel_requested = true;
  const int rows = store_.rows_read;
  clock_.advance(seconds(1));  // the poll and sweep intervals
  pass();
  EXPECT_EQ(rows + 1, store_.rows_read) << "job 4's row alone, written since its insert";
  EXPECT_EQ(10, store_.swept_slices.back()) << "the whole slice: jobs 1 to 10";
  EXPECT_EQ(JobState::kCancelled, store_.job(4).state);
  std::vector<std::int64_t> waiting = leader_->kept_waiting();
  std::sort(waiting.begin(), waiting.end());
  EXPECT_EQ((std::vector<std::int64_t>{1, 2, 3, 5, 6, 7, 8, 9, 10}), waiting);
  // Job 2's priority is raised: the next read brings it.
  store_.job(2).priority = 5;
  pass();
  EXPECT_EQ(rows + 3, store_.rows_read) << "job 2's row, and job 4's cancel";
  auto position = [&](std::int64_t id) {
    return json::parse(store_.job(id).pending_json.value_or("{}")).value("queue_position", 0);
  };
  EXPECT_EQ(1, position(2)) << "ahead of the others";
  EXPECT_EQ(2, position(1));
}

// A pass that reads (here: no wake bus, as a replica of a cluster) takes
// the new jobs' rows from the hand-over, and the read leaves them out:
// their rows and specs are not read. One cancelled before the pass is
// read, and its cancel done.
TEST_F(SchedulerLeaderSubmitted, APassThatReadsTakesTheHandedRowsWithoutReadingThem) {
  lead(milliseconds(500), /*woken_in_process=*/false);
  store_.add_agent("a", 1, 2);
  pass();
  pass();
  const int rows = store_.rows_read;
  for (int id = 1; id <= 3; ++id) submit(id);
  store_.job(3).cancel_requested = true;
  pass();
  EXPECT_EQ(rows + 1, store_.rows_read) << "job 3's row alone";
  EXPECT_EQ(0, store_.spec_reads);
  EXPECT_EQ(0u, handed_.size()) << "each spec taken once";
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
  EXPECT_EQ(JobState::kStarting, store_.job(2).state);
  EXPECT_EQ(JobState::kCancelled, store_.job(3).state);
  // Their placements, the leader's own writes, are read back.
  pass();
  EXPECT_EQ(rows + 4, store_.rows_read);
}

// Without a read, the agents' silence is the last read's and the time
// since: an agent whose heartbeat turned late meanwhile gets no job.
TEST_F(SchedulerLeaderSubmitted, AnAgentWhoseHeartbeatTurnedLateSinceTheReadGetsNoJob) {
  lead(seconds(5));  // late_heartbeat: 3 s
  store_.add_agent("a", 1, 4);
  store_.heartbeat("a");
  pass();
  clock_.advance(milliseconds(2500));
  pass();  // a read: heard 2.5 s ago
  clock_.advance(seconds(1));
  submit(1);
  pass_woken_by_submits();
  EXPECT_EQ(1, skipped());
  EXPECT_EQ(JobState::kQueued, store_.job(1).state);
  store_.heartbeat("a");
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
}

// Two committers commit their batches in either order: a read brings jobs
// below the last ones kept. Their entries take their places in id order,
// with their notes, and later changes still reach them.
TEST_F(SchedulerLeaderKeptJobs, JobsCommittedOutOfIdOrderAreKeptInIt) {
  for (int id : {2, 3, 7, 8}) store_.add_job(id, "t", 8);  // no agent: they wait
  pass();
  EXPECT_EQ((std::vector<std::int64_t>{2, 3, 7, 8}), leader_->kept_waiting());
  for (int id : {5, 4, 6}) store_.add_job(id, "t", 8);
  pass();
  EXPECT_EQ((std::vector<std::int64_t>{2, 3, 4, 5, 6, 7, 8}), leader_->kept_waiting());
  auto position = [&](std::int64_t job) {
    return json::parse(*store_.job(job).pending_json).value("queue_position", 0);
  };
  for (int id = 2; id <= 8; ++id) EXPECT_EQ(id - 1, position(id)) << "job " << id;
  const int written = store_.count("pending");
  pass();
  EXPECT_EQ(written, store_.count("pending")) << "each note moved with its job";
  store_.job(7).priority = 5;  // reaches job 7's entry, wherever it is now
  pass();
  EXPECT_EQ(1, position(7));
  EXPECT_EQ(2, position(2));
  EXPECT_EQ(7, position(8));
}

TEST_F(SchedulerLeaderKeptJobs, APassOverAnUnchangedQueueReadsNoRow) {
  store_.add_agent("a", 1, 1);
  for (int id = 1; id <= 5; ++id) store_.add_job(id, "t", 8);
  pass();  // job 1 is placed, 2 to 5 wait
  pass();  // job 1's placement is read back
  const int read = store_.rows_read;
  for (int n = 0; n < 3; ++n) pass();
  EXPECT_EQ(read, store_.rows_read);
  EXPECT_EQ(1, store_.complete_reads);
  store_.job(1).state = JobState::kSucceeded;
  pass();
  EXPECT_EQ(read + 1, store_.rows_read);
  EXPECT_EQ(JobState::kStarting, store_.job(2).state) << "the kept queue, in order";
  EXPECT_EQ(JobState::kQueued, store_.job(3).state);
}

TEST_F(SchedulerLeaderKeptJobs, ARowWrittenSinceChangesTheQueue) {
  store_.add_agent("a", 1, 1);
  for (int id = 1; id <= 4; ++id) store_.add_job(id, "t", 8);
  pass();
  store_.job(2).cancel_requested = true;
  store_.job(4).priority = 5;
  pass();
  EXPECT_EQ(JobState::kCancelled, store_.job(2).state);
  store_.job(1).state = JobState::kSucceeded;
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(4).state) << "its new priority";
  store_.job(4).state = JobState::kFailed;
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(3).state);
}

TEST_F(SchedulerLeaderKeptJobs, TheSweepDropsAJobWhoseRowWentUnseen) {
  store_.add_agent("a", 1, 1);
  for (int id = 1; id <= 3; ++id) store_.add_job(id, "t", 8);
  pass();
  store_.jobs.erase(store_.jobs.begin() + 1);  // job 2's row is gone, unmarked
  store_.job(1).state = JobState::kSucceeded;
  clock_.advance(seconds(1));  // sweep_interval
  store_.heartbeat("a");
  pass();
  EXPECT_EQ(1, store_.complete_reads) << "a slice, not a read of every job";
  EXPECT_EQ(std::vector<int>({1}), store_.swept_slices);
  EXPECT_EQ(JobState::kStarting, store_.job(3).state) << "job 2 is no longer kept";
}

// A queue read back in slices of 2: no pass reads more, a job a read since
// missed is found by its slice, and a job gone unmarked is dropped only once
// the sweep has read every slice.
TEST_F(SchedulerLeaderKeptJobs, TheSweepReadsTheQueueBackInSlicesAndFindsWhatTheReadsSinceMissed) {
  SchedulerLeaderOptions options;
  options.clock = &clock_;
  options.agent_silence = seconds(10);
  options.sweep_rows = 2;
  leader_ = std::make_unique<SchedulerLeader>(store_, options);
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8).priority = 10;  // placed, runs
  for (int id = 2; id <= 6; ++id) store_.add_job(id, "t", 8);
  pass();
  ASSERT_EQ(JobState::kStarting, store_.job(1).state);
  store_.job(1).state = JobState::kRunning;
  store_.unmarked = {4, 7};
  store_.job(4).priority = 5;                  // a change the reads since miss
  store_.add_job(7, "t", 8).priority = 1;      // a job they miss
  store_.jobs.erase(store_.jobs.begin() + 1);  // job 2 is gone, unmarked
  auto slice = [&] {
    clock_.advance(milliseconds(500));
    store_.heartbeat("a");
    pass();
  };
  slice();  // jobs 1 and 3
  slice();  // 4 and 5: job 4's priority is known again
  slice();  // 6 and 7: job 7 is learned
  EXPECT_EQ(std::vector<int>({2, 2, 2}), store_.swept_slices);
  EXPECT_EQ(1, store_.complete_reads);
  store_.unmarked.clear();                     // the reads since see their next changes
  store_.job(1).state = JobState::kSucceeded;  // the core frees
  slice();  // none above 7: the sweep is whole, and job 2 is dropped
  EXPECT_EQ(0, store_.swept_slices.back());
  EXPECT_EQ(JobState::kStarting, store_.job(4).state) << "its priority, read by the sweep";
  store_.job(4).state = JobState::kSucceeded;
  slice();
  EXPECT_EQ(JobState::kStarting, store_.job(7).state) << "found by the sweep; priority 1";
  store_.job(7).state = JobState::kSucceeded;
  slice();
  EXPECT_EQ(JobState::kStarting, store_.job(3).state) << "job 2, gone, is not kept ahead of it";
  EXPECT_EQ(1, store_.complete_reads);
}

// A job that a read since and the sweep's slice both bring in one pass is
// learned once: its spec is asked for and parsed once.
TEST_F(SchedulerLeaderKeptJobs, AJobTheReadSinceAndTheSweepBothBringIsLearnedOnce) {
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(5, "t", 8);
  pass();
  ASSERT_EQ(2, store_.spec_reads);
  store_.add_job(3, "t", 8);   // below the ids read: its spec is asked for by id
  clock_.advance(seconds(1));  // sweep_interval: the sweep's first slice comes too
  store_.heartbeat("a");
  pass();
  ASSERT_EQ(1u, store_.swept_slices.size());
  EXPECT_EQ(3, store_.spec_reads);
  EXPECT_NE(std::string::npos, leader_->prometheus_metrics().find(
                                   "tpujobs_scheduler_specs_learned_total{from=\"text\"} 3\n"));
  EXPECT_EQ("Resources", json::parse(*store_.job(3).pending_json).value("reason", ""));
}

TEST_F(SchedulerLeaderKeptJobs, ARequeuedJobReturnsToTheQueue) {
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  store_.add_job(1, "t", 8, /*max_retries=*/1);
  store_.add_job(2, "t", 8);
  store_.add_job(3, "t", 8);  // waits
  pass();
  store_.job(1).state = JobState::kRunning;
  store_.job(2).state = JobState::kRunning;
  const std::string first = store_.job(1).agent.value_or("");
  lose(first);
  EXPECT_EQ(JobState::kQueued, store_.job(1).state);
  clock_.advance(seconds(1));
  store_.heartbeat(first == "a" ? "b" : "a");
  store_.job(2).state = JobState::kSucceeded;  // its host frees
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(1).state) << "requeued ahead of job 3 (lower id)";
  EXPECT_EQ(JobState::kQueued, store_.job(3).state);
}

TEST_F(SchedulerLeaderKeptJobs, AJobNoAgentCanRunWaitsUntilOneRegisters) {
  store_.add_job(1, "t", 8);
  pass();
  EXPECT_EQ("HostUnhealthy", json::parse(*store_.job(1).pending_json).value("reason", ""));
  store_.add_agent("a", 1, 1);
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
}

TEST_F(SchedulerLeaderKeptJobs, APassOverAnUnchangedQueueAllocatesNothingPerJob) {
  store_.add_agent("a", 1, 1);
  std::int64_t next = 1;
  auto allocations_of_a_quiet_pass = [&](int queued) {
    while (next <= queued) store_.add_job(next++, "t", 8);
    // The reasons settle: a bounded number is written per pass.
    int passes = 0;
    for (int written = -1; written != store_.count("pending ") && passes < 100; ++passes) {
      written = store_.count("pending ");
      pass();
    }
    EXPECT_LT(passes, 100) << "the reasons never settled";
    const long before = allocations.load();
    pass();
    return allocations.load() - before;
  };
  const long small = allocations_of_a_quiet_pass(1000);
  const long large = allocations_of_a_quiet_pass(4000);
  EXPECT_LT(large, small + 50) << small << " allocations at 1,000 queued, " << large << " at 4,000";
}

// A replica whose lock lapsed and who takes the next term keeps what it
// read; after another leader's term, or a crash of the server, it reads
// everything again. Either way it writes every reason again: reasons are
// committed without waiting for the disk, and a database that restarted
// (which ends the lock's session) may have lost the last ones.
TEST_F(SchedulerLeaderKeptJobs, AnotherLeadersTermOrACrashMakesEveryJobReadAgain) {
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);  // waits
  ASSERT_TRUE(leader_->begin_term().ok());
  pass();
  EXPECT_EQ(1, store_.count("pending 2"));
  pass();
  EXPECT_EQ(1, store_.count("pending 2")) << "an unchanged reason is not written again";
  ASSERT_TRUE(leader_->begin_term().ok());  // the next term: its own
  pass();
  EXPECT_EQ(2, store_.count("pending 2")) << "its unchanged reason is written again";
  EXPECT_EQ(1, store_.complete_reads);
  ++store_.term;  // another replica led meanwhile
  ASSERT_TRUE(leader_->begin_term().ok());
  pass();
  EXPECT_EQ(3, store_.count("pending 2"));
  EXPECT_EQ(2, store_.complete_reads);
  store_.recovered_at = 1;  // a crash; the next term is its own again
  ASSERT_TRUE(leader_->begin_term().ok());
  pass();
  EXPECT_EQ(3, store_.complete_reads) << "a crash may have undone what it read";
  ASSERT_TRUE(leader_->begin_term().ok());
  pass();
  EXPECT_EQ(3, store_.complete_reads) << "no crash since";
  store_.term_xid = store_.reads - 1;  // below the last low water: ids given out again
  ASSERT_TRUE(leader_->begin_term().ok());
  pass();
  EXPECT_EQ(4, store_.complete_reads) << "an id below what it read";
}

// A crash of the server undid a placement (committed without waiting for
// the disk): the row is QUEUED again, older than what the leader last read,
// so no read since returns it. The leader takes the lock again after the
// recovery, a term that follows its own, and places the job at once instead
// of after its sweep: on the same agent, under the same epoch, but as
// another placement (its number from the block reserved before), so that
// the copy of the undone one writes nothing.
TEST_F(SchedulerLeaderKeptJobs, APlacementACrashUndidIsPlacedAgainInTheNextTerm) {
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8);
  ASSERT_TRUE(leader_->begin_term().ok());
  pass();  // job 1 is placed
  pass();  // its placement is read back
  ASSERT_EQ(JobState::kStarting, store_.job(1).state);
  const std::optional<std::int64_t> undone_placement = store_.job(1).placement;
  EXPECT_EQ(1, undone_placement.value_or(0)) << "the first number of the first block";
  db::JobRow& undone = store_.job(1);
  undone.state = JobState::kQueued;
  undone.agent.reset();
  undone.placement_epoch.reset();
  undone.placement.reset();
  undone.allocation_json.reset();
  store_.unmarked = {1};
  store_.recovered_at = 1;
  ASSERT_TRUE(leader_->begin_term().ok());
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(1).state) << "placed again";
  EXPECT_EQ(2, store_.count("transition 1 STARTING"));
  EXPECT_EQ(1, store_.job(1).placement_epoch.value_or(0));
  // The server that recovered may be a standby the first block's
  // reservation never reached: a new block.
  EXPECT_EQ(1 + db::ClusterRepository::kPlacementBlock, store_.job(1).placement.value_or(0));
  EXPECT_EQ(2, store_.reserved_blocks);
}

// A term that follows this replica's own keeps its block of placement
// numbers; one after another replica's term takes a new block.
TEST_F(SchedulerLeaderKeptJobs, AFormerLeaderTakesANewBlockOfPlacementNumbers) {
  store_.add_agent("a", 1, 3);
  store_.add_job(1, "t", 8);
  ASSERT_TRUE(leader_->begin_term().ok());
  pass();
  EXPECT_EQ(1, store_.job(1).placement.value_or(0));
  ASSERT_TRUE(leader_->begin_term().ok());  // its own next term
  store_.add_job(2, "t", 8);
  pass();
  EXPECT_EQ(2, store_.job(2).placement.value_or(0));
  ++store_.term;  // another replica led meanwhile
  ASSERT_TRUE(leader_->begin_term().ok());
  store_.add_job(3, "t", 8);
  pass();
  pass();
  EXPECT_EQ(1 + db::ClusterRepository::kPlacementBlock, store_.job(3).placement.value_or(0))
      << "not 3, of its first block";
  EXPECT_EQ(2, store_.reserved_blocks);
}

// A pass that finds nothing changed since the last plan but the time has
// that plan again (scheduler::PassPlan::holds_until): it plans and writes
// nothing. Anything the plan read that changes makes the next pass plan.
int plans_reused(const SchedulerLeader& leader) {
  const std::string text = leader.prometheus_metrics();
  const std::string name = "\ntpujobs_scheduler_plans_reused_total ";
  const std::size_t at = text.find(name);
  return at == std::string::npos ? -1 : std::stoi(text.substr(at + name.size()));
}

TEST_F(SchedulerLeaderKeptJobs, AQuietPassHasTheLastPlanAgainAndWritesNothing) {
  store_.add_agent("a", 1, 1);
  for (int id = 1; id <= 3; ++id) store_.add_job(id, "t", 8);
  pass();  // job 1 is placed
  pass();  // its placement is read back
  EXPECT_EQ(0, plans_reused(*leader_));
  const std::size_t writes = store_.writes.size();
  pass();
  clock_.advance(seconds(20));  // nothing in the plan depends on the time
  store_.heartbeat("a");
  pass();
  EXPECT_EQ(2, plans_reused(*leader_));
  EXPECT_EQ(writes, store_.writes.size());
  store_.job(1).state = JobState::kSucceeded;
  pass();
  EXPECT_EQ(2, plans_reused(*leader_));
  EXPECT_EQ(JobState::kStarting, store_.job(2).state);
}

TEST_F(SchedulerLeaderKeptJobs, AStartByDeadlineEndsItsJobThoughNothingElseChanged) {
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8);
  db::JobRow& late = store_.add_job(2, "t", 8);
  late.created_at = clock_.wall_now();
  json spec = json::parse(late.spec_json);
  spec["start_by"] = "20s";
  late.spec_json = spec.dump();
  pass();
  pass();
  pass();
  EXPECT_EQ(1, plans_reused(*leader_));
  clock_.advance(seconds(19));  // the sweep reads the queue back and finds nothing changed
  store_.heartbeat("a");
  pass();
  EXPECT_EQ(2, plans_reused(*leader_)) << "the deadline is still ahead";
  EXPECT_EQ(JobState::kQueued, store_.job(2).state);
  clock_.advance(seconds(1));
  store_.heartbeat("a");
  pass();
  EXPECT_EQ(JobState::kCancelled, store_.job(2).state);
}

TEST_F(SchedulerLeaderKeptJobs, AFairShareOrAnAgentThatChangesPlansAgain) {
  store_.add_agent("a", 1, 1);
  store_.add_job(1, "t", 8);
  store_.add_job(2, "t", 8);  // waits
  pass();
  pass();
  pass();
  ASSERT_EQ(1, plans_reused(*leader_));
  EXPECT_EQ(1, store_.count("pending 2"));
  store_.factors["t"] = 0.5;
  clock_.advance(seconds(5));  // fair_share_interval: read again
  store_.heartbeat("a");
  pass();
  EXPECT_EQ(1, plans_reused(*leader_));
  EXPECT_EQ(2, store_.count("pending 2"));
  EXPECT_EQ(0.5, json::parse(*store_.job(2).pending_json).value("fair_share", 0.0));
  clock_.advance(seconds(4));  // a's heartbeat is late: the plan reads it
  pass();
  EXPECT_EQ(1, plans_reused(*leader_));
}

// The plan of a job requeued after a failure depends on heartbeats, which
// the leader does not compare: each pass plans it.
TEST_F(SchedulerLeaderKeptJobs,
       ARequeuedJobIsPlacedOnceAnAgentIsHeardFromThoughNothingElseChanged) {
  store_.add_agent("a", 1, 1);
  store_.add_agent("b", 2, 1);
  store_.add_job(1, "t", 8, /*max_retries=*/1);
  pass();
  store_.job(1).state = JobState::kRunning;
  const std::string first = store_.job(1).agent.value_or("");
  const std::string other = first == "a" ? "b" : "a";
  lose(first);
  ASSERT_EQ(JobState::kQueued, store_.job(1).state);
  store_.heartbeat(other);  // not since the requeue
  pass();
  pass();
  EXPECT_EQ(JobState::kQueued, store_.job(1).state);
  clock_.advance(milliseconds(500));
  store_.heartbeat(other);
  pass();
  EXPECT_EQ(JobState::kStarting, store_.job(1).state);
  EXPECT_EQ(other, store_.job(1).agent.value_or(""));
}

TEST_F(SchedulerLeaderKeptJobs, APassWritesABoundedNumberOfReasonsTheFirstInTheQueueFirst) {
  const int jobs = 1010;  // no agent yet: every job waits
  for (int id = 1; id <= jobs; ++id) store_.add_job(id, "t", 8);
  pass();
  EXPECT_EQ(1000, store_.count("pending "));
  EXPECT_EQ(1, store_.count("pending 1000"));
  EXPECT_EQ(0, store_.count("pending 1001"));
  pass();
  EXPECT_EQ(jobs, store_.count("pending "));
  EXPECT_EQ(1, store_.count("pending 1010"));
  pass();
  EXPECT_EQ(jobs, store_.count("pending ")) << "nothing changed";
}

}  // namespace
}  // namespace tpujobs::service

namespace tpujobs::service {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The start of each pass the pacer allows when a wake-up comes the moment
// it may (woken after each pass, never during one) and every pass takes
// `took`.
std::vector<PassPacer::time_point> passes_woken_without_pause(PassPacer& pacer,
                                                              PassPacer::time_point start,
                                                              PassPacer::duration took, int count) {
  std::vector<PassPacer::time_point> began{start};
  while (static_cast<int>(began.size()) < count) {
    began.push_back(pacer.next(began.back(), began.back() + took, /*woken_during_pass=*/false));
  }
  return began;
}

TEST(PassPacer, AJobSubmittedJustAfterAPassIsPlacedAtOnce) {
  PassPacer pacer(milliseconds(20));
  const PassPacer::time_point t0{};
  // A job's end woke a 2-ms pass; the next job, submitted 0.5 ms after it
  // ended, is placed at once, not 2 ms later.
  EXPECT_EQ(pacer.next(t0, t0 + milliseconds(2), /*woken_during_pass=*/false),
            t0 + milliseconds(2));
  // One wake-up during a pass (a submit while the pass for another job's
  // end ran) is not a burst either.
  EXPECT_EQ(pacer.next(t0 + microseconds(2500), t0 + microseconds(5500), true),
            t0 + microseconds(5500));
}

TEST(PassPacer, ALeaderWokenWithoutPausePassesAtMostAboutHalfTheTime) {
  PassPacer pacer(milliseconds(20));
  const PassPacer::time_point t0{};
  const auto began = passes_woken_without_pause(pacer, t0, milliseconds(4), 300);
  // The credit of an idle leader (20 ms) lets the first passes go back to
  // back...
  EXPECT_EQ(began[1], t0 + milliseconds(4));
  EXPECT_EQ(began[5], t0 + milliseconds(20));
  // ...then each waits as long as it took.
  EXPECT_EQ(began[200] - began[199], milliseconds(8));
  const auto span = began.back() - began.front();
  const auto busy = milliseconds(4) * (began.size() - 1);
  EXPECT_LE(busy, span / 2 + milliseconds(20));
  // Idle again, it earns its credit back, and no more than 20 ms of it.
  const auto later = began.back() + milliseconds(4) + seconds(5);
  const auto again = passes_woken_without_pause(pacer, later, milliseconds(4), 8);
  EXPECT_EQ(again[5], later + milliseconds(20));
  EXPECT_EQ(again[6] - again[5], milliseconds(8));
}

TEST(PassPacer, WakeUpsDuringTwoPassesInARowAreABurstThatWaitsTheWholeInterval) {
  PassPacer pacer(milliseconds(20));
  PassPacer::time_point t{};
  auto pass = [&](bool woken_during_pass) {
    const auto next = pacer.next(t, t + milliseconds(2), woken_during_pass);
    const auto gap = next - (t + milliseconds(2));
    t = next;
    return gap;
  };
  EXPECT_EQ(pass(true), milliseconds(0));
  EXPECT_EQ(pass(true), milliseconds(20));
  EXPECT_EQ(pass(true), milliseconds(20)) << "the burst goes on";
  EXPECT_EQ(pass(false), milliseconds(0)) << "and ends";
}

TEST(Housekeeping, OnlyAPassThatSubmitsAloneWokeSoonAfterTheLastSkipsIt) {
  base::FakeClock clock;
  Housekeeping housekeeping(milliseconds(100));
  EXPECT_TRUE(housekeeping.due(clock.now(), /*submits_only=*/true)) << "never done yet";
  housekeeping.done(clock.now());
  clock.advance(milliseconds(30));
  EXPECT_FALSE(housekeeping.due(clock.now(), true));
  EXPECT_TRUE(housekeeping.due(clock.now(), false)) << "a job ended, an agent left, the poll";
  clock.advance(milliseconds(70));
  EXPECT_TRUE(housekeeping.due(clock.now(), true)) << "the interval passed";
  housekeeping.done(clock.now());
  housekeeping.failed();
  EXPECT_TRUE(housekeeping.due(clock.now(), true)) << "the pass after a failed one";
}

TEST(PassPacer, ALongPassStillLeavesTheIntervalBeforeTheNextAndNoMore) {
  PassPacer pacer(milliseconds(20));
  const PassPacer::time_point t0{};
  EXPECT_EQ(pacer.next(t0, t0 + milliseconds(45), false), t0 + milliseconds(45) + milliseconds(20));
  // Its debt is bounded: a short pass after it waits only as long as it took.
  EXPECT_EQ(pacer.next(t0 + milliseconds(65), t0 + milliseconds(67), false),
            t0 + milliseconds(67) + milliseconds(2));
}

}  // namespace
}  // namespace tpujobs::service
