// Runs the real `tpujobs serve` binary for end-to-end tests: a private state
// directory (so a private embedded PostgreSQL), a free port, and stop by
// SIGTERM or SIGKILL of the process it started.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http_client.h"

namespace tpujobs::testing {

class ServiceProcess {
 public:
  struct Options {
    std::string pool = "v3-32";
    std::vector<std::string> extra_args;
    std::filesystem::path state_dir;  // empty: a new temporary directory
    // "agent": runs `tpujobs agent EXTRA_ARGS` instead (no listen address,
    // pool or state dir; start() waits for its "running" line).
    std::string command = "serve";
    // A network namespace to run in (/run/netns/NAME, as `ip netns add`
    // makes): the process joins it before it starts. Empty: this one's.
    std::string network_namespace;
  };

  explicit ServiceProcess(Options options);
  ServiceProcess() : ServiceProcess(Options{}) {}
  ~ServiceProcess();  // stops the service, removes a temporary state dir

  // Starts the binary and waits until it listens. Returns an error message, or "".
  std::string start(std::chrono::seconds timeout = std::chrono::seconds(90));
  // SIGTERM and wait for a graceful exit; returns the exit code (-1 on timeout).
  int stop(std::chrono::seconds timeout = std::chrono::seconds(60));
  // SIGKILL: a crash. The embedded PostgreSQL it started is left behind, as
  // after a real crash.
  void kill9();

  // SIGSTOP / SIGCONT: a process paused past its lease, and back.
  void pause();
  void resume();

  // True while the process it started has not exited (it is not reaped here
  // when it has: a later stop() or kill9() still finds it).
  bool alive() const;
  // The embedded PostgreSQL's postmaster: the first line of
  // STATE_DIR/pgdata/postmaster.pid; -1 when there is none.
  pid_t embedded_postmaster_pid() const;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::filesystem::path& state_dir() const { return options_.state_dir; }
  std::string log() const;  // what the service printed
  // The file it printed to (empty before start()); removed with this object.
  std::string log_path() const { return log_paths_.empty() ? "" : log_paths_.back(); }

  HttpResponse get(const std::string& target) const { return http(port_, "GET", target); }
  HttpResponse post(const std::string& target, const std::string& body = "",
                    const std::map<std::string, std::string>& headers = {}) const {
    return http(port_, "POST", target, body, headers);
  }
  // Polls GET /v1/jobs/{id} until its state is terminal; returns the job.
  nlohmann::json wait_terminal(std::int64_t id,
                               std::chrono::seconds timeout = std::chrono::seconds(120)) const;

 private:
  Options options_;
  bool temporary_ = false;
  pid_t pid_ = -1;
  int port_ = 0;
  std::vector<std::filesystem::path> log_paths_;  // every start's output, the last is current
};

// The text of a file in the repository (examples/...).
std::string read_source_file(const std::string& relative);

// Runs `tpujobs token create --tenant TENANT --role ROLE` on the service's
// state directory (before or after start()) and returns the token it
// printed, or "" when it failed.
std::string create_token(const ServiceProcess& service, const std::string& tenant,
                         const std::string& role);

// User + system CPU seconds a process has used so far (/proc/PID/stat).
double cpu_seconds(pid_t pid);
// The fields of /proc/PID/stat from the state on (field 3 is [0]); empty
// when the process is gone.
std::vector<std::string> stat_fields(pid_t pid);
// `root` and every process descended from it that is alive, root first
// (for a postmaster: its backends and helpers, which each have a session
// of their own, so a signal to its process group misses them).
std::vector<pid_t> process_tree(pid_t root);
// The same for `root` and every process descended from it that is alive,
// with the children each has waited for (for a postmaster: its backends).
double tree_cpu_seconds(pid_t root);
// CPU seconds every core has spent busy (not idle, not waiting on I/O)
// since boot, all processes and the kernel (/proc/stat).
double machine_busy_cpu_seconds();

}  // namespace tpujobs::testing
