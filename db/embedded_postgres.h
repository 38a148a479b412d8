// A private PostgreSQL server for one state directory: initdb on first use,
// then postgres listening only on a Unix socket inside that directory. Used
// by `tpujobs serve` without --database-url, and by the tests (each with its
// own temporary directory, so no TCP port is ever shared).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/result.h"

namespace tpujobs::db {

class EmbeddedPostgres {
 public:
  struct Options {
    // Holds pgdata/, the socket, and postgres.log. Created when missing.
    std::filesystem::path state_dir;
    // Directory with initdb and postgres; empty: the newest
    // /usr/lib/postgresql/<version>/bin.
    std::string bin_dir;
    std::chrono::seconds start_timeout{30};
    // How long a shutdown may take before SIGQUIT, then SIGKILL.
    std::chrono::seconds stop_timeout{30};
    // A postmaster still alive on state_dir (say, one finishing its shutdown
    // after the previous service died) is waited for this long before
    // start() gives up with an error.
    std::chrono::seconds wait_for_previous_server{5};
    // initdb normally syncs the new cluster to disk; tests may skip that.
    bool sync_initdb = true;
    // Extra "name=value" server settings, applied after the defaults.
    std::vector<std::pair<std::string, std::string>> settings;
    // The waits for start-up, shutdown and restarts are read off it; must
    // outlive the server.
    base::Clock* clock = &base::real_clock();
  };

  // Initialises the cluster if needed, starts the server, waits until it
  // accepts connections and makes sure database "tpujobs" exists. Runs the
  // server as an unprivileged user (postgres, else nobody) when called as
  // root. The server is stopped when the returned object dies. Errors:
  // kInvalid for an unusable state_dir or bin_dir (as root: also when the
  // unprivileged user cannot reach state_dir), kConflict when another live
  // postmaster owns state_dir, kUnavailable when the server does not
  // come up in time (the message quotes the tail of postgres.log).
  //
  // The server gets the parent-death signal of the calling thread: call from
  // a thread that lives as long as the server (the main thread).
  static base::Result<std::unique_ptr<EmbeddedPostgres>> start(Options options);

  ~EmbeddedPostgres();
  EmbeddedPostgres(const EmbeddedPostgres&) = delete;
  EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;

  // "host='<state_dir>' port=5432 dbname='tpujobs' user=tpujobs" (values
  // quoted for libpq).
  std::string conninfo() const { return conninfo_for("tpujobs"); }
  // The same server, another database.
  std::string conninfo_for(const std::string& database) const;

  enum class Shutdown {
    // SIGINT: sessions end, a checkpoint is written, the server exits.
    kFast,
    // SIGQUIT: exit at once; the next start replays the WAL. For clusters
    // about to be deleted, where the final checkpoint would be wasted work.
    kImmediate,
  };
  // Stops the server; escalates to SIGQUIT, then SIGKILL, when it takes
  // longer than stop_timeout. kUnavailable when it had to escalate. Ends
  // supervision first (waiting for a restart attempt in progress).
  // Idempotent.
  base::Status stop(Shutdown mode = Shutdown::kFast);
  // Starts the server again after stop() (same state_dir and options), and
  // supervises it again if it was supervised. Ok at once while it runs or
  // while supervision is bringing it back.
  base::Status restart();

  // Keeps the server up: from a thread of its own, notices when the
  // postmaster exits without stop() (killed, crashed), reports it and starts
  // it again, retrying with back-off (100 ms doubling to 5 s; after a crash
  // the old backends hold the shared memory for a moment) until it is up or
  // stop() is called. Every event is one line for `report`, called from that
  // thread. Only the postmaster's own PID is waited for: other children of
  // the process are never reaped here. The restarted server gets the
  // parent-death signal of the supervising thread, which lives until stop().
  // Calling it again while supervising does nothing.
  using Report = std::function<void(const std::string& line)>;
  void supervise(Report report);

  // A line for the service's log when Linux's autogroup is on (the
  // kernel.sched_autogroup_enabled sysctl, read at `sysctl`): PostgreSQL
  // starts each backend in a session of its own, so each backend is a
  // scheduling group of its own (docs/deploy.md, "PostgreSQL"). Empty when
  // it is off or cannot be read.
  static std::string scheduling_note(
      const std::filesystem::path& sysctl = "/proc/sys/kernel/sched_autogroup_enabled");

  bool running() const { return postmaster_pid_ > 0; }
  pid_t postmaster_pid() const { return postmaster_pid_; }
  const std::filesystem::path& state_dir() const { return options_.state_dir; }
  std::filesystem::path data_dir() const { return options_.state_dir / "pgdata"; }
  std::filesystem::path log_file() const { return options_.state_dir / "postgres.log"; }

 private:
  explicit EmbeddedPostgres(Options options) : options_(std::move(options)) {}
  base::Status launch();
  // launch()'s steps, in order.
  base::Status initialize_cluster();
  base::Status clear_stale_pid_file();
  base::Status spawn_postmaster();
  base::Status wait_until_accepting();
  base::Status create_database();
  // stop() without touching supervision: signals, waits, escalates.
  base::Status shut_down(Shutdown mode);
  void end_supervision();
  void watch();
  // Starts the server again after it died; false when stop() came first.
  bool relaunch_after_crash();

  Options options_;
  uid_t run_as_uid_ = 0;
  gid_t run_as_gid_ = 0;
  bool switch_user_ = false;
  // Written by the controlling thread and the supervisor, never at once
  // (stop() ends supervision before it touches the server); read anywhere.
  std::atomic<pid_t> postmaster_pid_{-1};

  base::Mutex supervision_mutex_;
  std::condition_variable supervision_wake_;
  bool supervising_ GUARDED_BY(supervision_mutex_) = false;
  Report report_;
  std::thread supervisor_;
};

}  // namespace tpujobs::db
