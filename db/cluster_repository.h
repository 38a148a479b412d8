// Past one machine (DESIGN §9): the agents that run jobs and their hosts
// (tables agents, agent_hosts), the scheduler leader's lock, the jobs placed
// on each agent, and the NOTIFY wake-ups. PostgreSQL is the only
// coordination engine: every decision here is a row or a lock in it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "db/connection_pool.h"
#include "db/pg_text.h"

namespace tpujobs::db {

// The channels of LISTEN/NOTIFY. Payloads: an agent name (kAgentChannel:
// "" wakes every agent), a job id (kLogChannel).
inline constexpr const char* kSubmitChannel = "tpujobs_submit";  // submit -> leader
inline constexpr const char* kAgentChannel = "tpujobs_agent";    // placement, cancel -> agent
inline constexpr const char* kLogChannel = "tpujobs_logs";       // new log lines -> followers
// kSubmitChannel's payload for a submitted job ("finished", "agent-left",
// "pool" and "released" tell the leader of other changes).
inline constexpr std::string_view kSubmitPayload = "submit";

struct AgentHost {
  std::string name{};        // "agent-a-h0"
  std::string generation{};  // "v3"
};

struct AgentRow {
  std::string name{};
  std::string state{};  // "alive" | "draining" | "lost"
  std::int64_t epoch = 0;
  int workers = 1;
  TimePoint started_at{};
  TimePoint last_heartbeat{};
  std::int64_t silent_ms = 0;  // since last_heartbeat, by the database's clock
};

struct ClusterHostRow {
  std::string name{};
  std::string agent{};
  std::string agent_state{};  // the agent's: "alive" | "draining" | "lost"
  std::string generation{};
  int position = 0;
  std::string health = "healthy";  // pool_hosts' admin health, healthy when unset
};

class ClusterRepository {
 public:
  // The pool (and the clock that times mark_lost's answer) must outlive
  // the repository.
  explicit ClusterRepository(ConnectionPool& pool,
                             std::chrono::milliseconds acquire_timeout = std::chrono::seconds(5),
                             base::Clock& clock = base::real_clock())
      : pool_(pool), acquire_timeout_(acquire_timeout), clock_(clock) {}

  // (Re)registers the agent: alive, a new epoch (larger than any before),
  // its hosts replaced by `hosts`. kConflict when a host name belongs to
  // another agent that is alive. Returns the epoch.
  base::Result<std::int64_t> register_agent(const std::string& name,
                                            const std::vector<AgentHost>& hosts, int workers);
  // The heartbeat: false when the agent no longer is alive (or draining)
  // under this epoch (declared lost, or registered again since): it must
  // stop its jobs.
  base::Result<bool> heartbeat(const std::string& name, std::int64_t epoch);
  // The first step of a clean stop: no job is placed on the agent from the
  // moment this commits (a placement requires its agent alive, see
  // Transition::require_alive), while it stays registered and heartbeats
  // until it leaves. False when it was not alive under this epoch.
  base::Result<bool> drain(const std::string& name, std::int64_t epoch);
  // Declares lost every alive or draining agent whose last heartbeat is
  // older than `silence`; returns their names. Nothing is declared, and the
  // result is kUnavailable, when the server takes longer than `max_answer`
  // to answer: a stall of the database holds up the heartbeats too.
  base::Result<std::vector<std::string>> mark_lost(std::chrono::milliseconds silence,
                                                   std::chrono::milliseconds max_answer);
  // The end of a clean stop: lost at once, so what is left of its jobs
  // moves without waiting.
  base::Status leave(const std::string& name, std::int64_t epoch);

  base::Result<std::vector<AgentRow>> list_agents();

  // A replica that takes the scheduler lead raises the term (table
  // scheduler_term) and returns it: the writes of an earlier leader fenced
  // by theirs (Transition::require_leader_term) no longer land.
  struct SchedulerTerm {
    std::int64_t term = 0;
    // Changes when the server recovers from a crash: when its shared
    // statistics were last reset (µs since 1970; 0: never), which
    // PostgreSQL does when it starts after an unclean shutdown, a
    // backend's crash included (its postmaster then lives on), and after a
    // restore from a backup. Such a recovery may have undone the
    // transactions committed without waiting for the disk, and their
    // transaction ids may be given out again. A reset asked for by hand
    // changes it too; a copy of a cleanly stopped cluster does not.
    std::int64_t recovered_at = 0;
    // The term's own transaction id (pg_current_xact_id). Ids only grow: one
    // below an id read before means ids were given out again (a recovery
    // that lost transactions, an older copy of the cluster).
    std::int64_t xid = 0;
  };
  base::Result<SchedulerTerm> begin_scheduler_term(const std::string& leader);
  // Every host of every registered agent, by agent then position.
  base::Result<std::vector<ClusterHostRow>> list_hosts();
  // The statements of list_agents and list_hosts and their rows, for a
  // caller that sends them with others in one round trip
  // (db/scheduling_read.h).
  static Statement agents_statement();
  static std::vector<AgentRow> agents_from(const QueryResult& rows);
  static Statement hosts_statement();
  static std::vector<ClusterHostRow> hosts_from(const QueryResult& rows);

  // NOTIFY channel, payload (after the current statement, outside any
  // transaction: at once).
  base::Status notify(const char* channel, const std::string& payload);

  // Reserves kPlacementBlock numbers for placements (JobRow::placement),
  // answering the first; the block is first + 0 .. first + kPlacementBlock
  // - 1, and no other reservation overlaps it. Committed synchronously, in
  // a transaction of its own, before any number of it is used: a database
  // crash never hands a number out again (db/migrations/041).
  static constexpr std::int64_t kPlacementBlock = 1000;  // the sequence's INCREMENT
  base::Result<std::int64_t> reserve_placements();
  // The Gloo rendezvous of placement `placement`: set() stores (replacing),
  // get() returns nullopt while the key is absent. Rows of placements older
  // than `keep` are removed by forget_rendezvous_before().
  base::Status set_rendezvous_key(std::int64_t placement, const std::string& key,
                                  std::string_view value);
  base::Result<std::optional<std::string>> get_rendezvous_key(std::int64_t placement,
                                                              const std::string& key);
  base::Status forget_rendezvous_before(std::chrono::milliseconds age);

 private:
  ConnectionPool& pool_;
  std::chrono::milliseconds acquire_timeout_;
  base::Clock& clock_;
};

// The scheduler leader's election: a session advisory lock held on a
// connection of its own. PostgreSQL releases it when that session ends, so
// the leader's death (its socket closing) frees it for another replica. A
// holder that is alive but silent (paused, or cut off by the network) keeps
// its socket open: with an idle timeout, the server ends the session once
// it has sent nothing for that long, and hold() must be called more often.
class LeaderLock {
 public:
  static constexpr std::int64_t kSchedulerKey = 0x7470756a6f62;  // "tpujob"
  // Held alone by a `tpujobs serve` without --name on a database of its
  // own, and shared by every member of a cluster (replicas and agents): a
  // standalone service and a cluster would both run the same jobs.
  static constexpr std::int64_t kStandaloneKey = 0x7470756a6f63;
  enum class Mode { kExclusive, kShared };
  explicit LeaderLock(std::string conninfo, std::int64_t key = kSchedulerKey,
                      Mode mode = Mode::kExclusive,
                      std::chrono::milliseconds idle_timeout = std::chrono::milliseconds(0))
      : conninfo_(std::move(conninfo)), key_(key), mode_(mode), idle_timeout_(idle_timeout) {}
  // True when this process holds the lock now: already held and its session
  // still answers, or just taken; false when another process holds it. An
  // error when the server cannot be reached or refuses the queries: the
  // lock is not held then either (a session that stopped answering is
  // given up).
  base::Result<bool> hold();
  bool held() const { return connection_ != nullptr; }
  void release();

 private:
  std::string conninfo_;
  std::int64_t key_;
  Mode mode_;
  std::chrono::milliseconds idle_timeout_;  // 0: none
  std::unique_ptr<Connection> connection_;
};

}  // namespace tpujobs::db
