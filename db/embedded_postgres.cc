#include "db/embedded_postgres.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "db/connection.h"

namespace tpujobs::db {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPort = "5432";  // only names the socket file
constexpr const char* kSuperuser = "tpujobs";
constexpr const char* kDatabase = "tpujobs";

std::string errno_text() { return std::strerror(errno); }

// The newest /usr/lib/postgresql/<major>/bin that has a postgres binary.
std::string find_bin_dir() {
  std::error_code error;
  int best_version = -1;
  std::string best;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", error)) {
    const std::string name = entry.path().filename().string();
    int version = 0;
    try {
      version = std::stoi(name);
    } catch (...) {
      continue;
    }
    if (version > best_version && fs::exists(entry.path() / "bin" / "postgres", error)) {
      best_version = version;
      best = (entry.path() / "bin").string();
    }
  }
  return best;
}

std::string tail_of(const fs::path& file, std::size_t bytes = 1500) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > static_cast<std::streamoff>(bytes) ? size - bytes : 0;
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text;
}

// Quotes a conninfo value: 'a b' -> 'a b', with \ and ' escaped.
std::string quote_conninfo(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

// "was killed by SIGKILL", "exited with status 1": a waitpid() status in words.
std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return "was killed by " +
           (name ? "SIG" + std::string(name) : "signal " + std::to_string(WTERMSIG(status)));
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

// One line of a multi-line start-up error: its first line, and the last
// FATAL line of the quoted log when there is one (the reason).
std::string summary_of(const std::string& message) {
  std::string summary = message.substr(0, message.find('\n'));
  const std::size_t fatal = message.rfind("FATAL:");
  if (fatal != std::string::npos) {
    summary += " " + message.substr(fatal, message.find('\n', fatal) - fatal);
  }
  return summary;
}

bool alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// True when pid is a running PostgreSQL server process working on data_dir.
// A PID recorded by a server that crashed may since have been given to an
// unrelated process, or to another cluster's server.
bool is_live_postgres(pid_t pid, const fs::path& data_dir) {
  if (pid <= 0 || pid == getpid() || !alive(pid)) return false;
  const std::string proc = "/proc/" + std::to_string(pid);
  char target[4096];
  ssize_t length = readlink((proc + "/exe").c_str(), target, sizeof target - 1);
  if (length < 0) return errno != ENOENT;  // cannot tell (permissions): assume it is
  target[length] = '\0';
  if (!fs::path(target).filename().string().starts_with("postgres")) return false;
  // The postmaster and its children run with the data directory as cwd.
  length = readlink((proc + "/cwd").c_str(), target, sizeof target - 1);
  if (length < 0) return errno != ENOENT;
  target[length] = '\0';
  std::error_code error;
  const fs::path ours = fs::canonical(data_dir, error);
  return error || fs::path(target) == ours;
}

// Waits until the child exits or the deadline passes; true when it exited.
bool wait_for_exit(base::Clock& clock, pid_t pid, base::Clock::time_point deadline,
                   int* exit_status = nullptr) {
  for (;;) {
    int status = 0;
    const pid_t reaped = waitpid(pid, &status, WNOHANG);
    if (reaped == pid) {
      if (exit_status) *exit_status = status;
      return true;
    }
    // Not our child (SIGCHLD ignored, or started elsewhere): poll for it.
    if (reaped < 0 && errno == ECHILD && !alive(pid)) return true;
    if (clock.now() >= deadline) return false;
    clock.sleep_for(std::chrono::milliseconds(10));
  }
}

struct Identity {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

// fork + exec of a PostgreSQL program with stdout/stderr to log_fd, as the
// unprivileged identity when asked. Everything the child needs is prepared
// before fork: only async-signal-safe calls happen in between.
base::Result<pid_t> spawn(const std::vector<std::string>& args, int log_fd,
                          const Identity& identity, bool die_with_parent) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return base::make_error(base::ErrorCode::kInternal, "fork failed: " + errno_text());
  if (pid == 0) {
    // Signals the service ignores or blocks must not reach the server so.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int signal_number : {SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1}) {
      signal(signal_number, SIG_DFL);
    }
    // A Ctrl-C in the terminal goes to the service, which stops us. The
    // server's session does not decide how its backends are scheduled:
    // PostgreSQL starts each child in a session of its own
    // (InitPostmasterChild), so with Linux's autogroup each backend is a
    // scheduling group of its own (docs/deploy.md, bench/RESULTS.md session 52).
    setsid();
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    if (identity.switch_user) {
      if (setgroups(0, nullptr) != 0 || setgid(identity.gid) != 0 || setuid(identity.uid) != 0) {
        _exit(126);
      }
    }
    if (die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGINT);
      if (getppid() != parent) _exit(0);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

base::Result<Identity> unprivileged_identity() {
  Identity identity;
  if (geteuid() != 0) return identity;
  // PostgreSQL refuses to run as root.
  for (const char* name : {"postgres", "nobody"}) {
    if (const passwd* entry = getpwnam(name)) {
      identity.switch_user = true;
      identity.uid = entry->pw_uid;
      identity.gid = entry->pw_gid;
      return identity;
    }
  }
  return base::make_error(base::ErrorCode::kInvalid,
                          "running as root, and neither user 'postgres' nor 'nobody' exists to run "
                          "PostgreSQL as");
}

// Every ancestor of dir must be searchable by the server's user.
base::Status check_reachable(const fs::path& dir, const Identity& identity) {
  for (fs::path current = dir.parent_path(); !current.empty(); current = current.parent_path()) {
    struct stat info;
    if (stat(current.c_str(), &info) != 0) break;
    const bool searchable = (info.st_mode & S_IXOTH) ||
                            (info.st_uid == identity.uid && (info.st_mode & S_IXUSR)) ||
                            (info.st_gid == identity.gid && (info.st_mode & S_IXGRP));
    if (!searchable) {
      return base::make_error(
          base::ErrorCode::kInvalid,
          "PostgreSQL runs as uid " + std::to_string(identity.uid) + " and cannot reach " +
              dir.string() + ": " + current.string() +
              " is not searchable by it; choose a state directory outside it (for "
              "example under /var/lib or /tmp)");
    }
    if (current == current.root_path()) break;
  }
  return base::Status::Ok();
}

base::Status chown_tree(const fs::path& root, const Identity& identity) {
  if (lchown(root.c_str(), identity.uid, identity.gid) != 0) {
    return base::make_error(base::ErrorCode::kInvalid,
                            "chown " + root.string() + ": " + errno_text());
  }
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(root, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (lchown(it->path().c_str(), identity.uid, identity.gid) != 0) {
      return base::make_error(base::ErrorCode::kInvalid,
                              "chown " + it->path().string() + ": " + errno_text());
    }
  }
  return base::Status::Ok();
}

}  // namespace

base::Result<std::unique_ptr<EmbeddedPostgres>> EmbeddedPostgres::start(Options options) {
  if (options.state_dir.empty()) {
    return base::make_error(base::ErrorCode::kInvalid,
                            "embedded PostgreSQL needs a state directory");
  }
  std::error_code error;
  options.state_dir = fs::absolute(options.state_dir, error).lexically_normal();
  if (options.state_dir.filename().empty()) options.state_dir = options.state_dir.parent_path();
  // The socket path must fit sockaddr_un (108 bytes with its terminator).
  if ((options.state_dir / ".s.PGSQL.5432").string().size() > 100) {
    return base::make_error(
        base::ErrorCode::kInvalid,
        "state directory path too long for a Unix socket: " + options.state_dir.string());
  }
  if (options.bin_dir.empty()) options.bin_dir = find_bin_dir();
  if (options.bin_dir.empty() || !fs::exists(fs::path(options.bin_dir) / "postgres", error)) {
    return base::make_error(
        base::ErrorCode::kInvalid,
        "no PostgreSQL server binaries found (looked in " +
            (options.bin_dir.empty() ? std::string("/usr/lib/postgresql/*/bin") : options.bin_dir) +
            "); install the postgresql package");
  }
  fs::create_directories(options.state_dir, error);
  if (error) {
    return base::make_error(base::ErrorCode::kInvalid,
                            "cannot create " + options.state_dir.string() + ": " + error.message());
  }

  base::Result<Identity> identity = unprivileged_identity();
  if (!identity.ok()) return identity.error();
  std::unique_ptr<EmbeddedPostgres> server(new EmbeddedPostgres(std::move(options)));
  server->switch_user_ = identity->switch_user;
  server->run_as_uid_ = identity->switch_user ? identity->uid : geteuid();
  server->run_as_gid_ = identity->switch_user ? identity->gid : getegid();
  if (identity->switch_user) {
    if (base::Status reachable = check_reachable(server->state_dir(), *identity); !reachable.ok()) {
      return reachable.error();
    }
    // A state directory made by root (or copied in) is handed over whole.
    struct stat info;
    if (stat(server->data_dir().c_str(), &info) == 0 && info.st_uid != identity->uid) {
      if (base::Status owned = chown_tree(server->state_dir(), *identity); !owned.ok()) {
        return owned.error();
      }
    }
    if (lchown(server->state_dir().c_str(), identity->uid, identity->gid) != 0) {
      return base::make_error(base::ErrorCode::kInvalid,
                              "chown " + server->state_dir().string() + ": " + errno_text());
    }
  }
  chmod(server->state_dir().c_str(), 0700);
  if (base::Status launched = server->launch(); !launched.ok()) return launched.error();
  return server;
}

std::string EmbeddedPostgres::conninfo_for(const std::string& database) const {
  return "host=" + quote_conninfo(options_.state_dir.string()) + " port=" + kPort +
         " dbname=" + quote_conninfo(database) + " user=" + kSuperuser;
}

std::string EmbeddedPostgres::scheduling_note(const std::filesystem::path& sysctl) {
  std::ifstream in(sysctl);
  std::string value;
  if (!(in >> value) || value == "0") return "";
  return "Linux's autogroup is on (kernel.sched_autogroup_enabled = " + value +
         "): every PostgreSQL backend is a scheduling group of its own, and on a saturated "
         "machine a woken backend waited 0.7 s for a core and scheduling passes took up to "
         "1.8 s. On a machine that runs tpujobs alone, set it to 0 (docs/deploy.md, "
         "\"PostgreSQL\")";
}

base::Status EmbeddedPostgres::launch() {
  if (base::Status made = initialize_cluster(); !made.ok()) return made;
  if (base::Status cleared = clear_stale_pid_file(); !cleared.ok()) return cleared;
  if (base::Status spawned = spawn_postmaster(); !spawned.ok()) return spawned;
  if (base::Status accepting = wait_until_accepting(); !accepting.ok()) return accepting;
  return create_database();
}

// initdb, once: into a side directory, then renamed into place.
base::Status EmbeddedPostgres::initialize_cluster() {
  const Identity identity{switch_user_, run_as_uid_, run_as_gid_};
  const fs::path bin(options_.bin_dir);
  std::error_code error;
  if (fs::exists(data_dir() / "PG_VERSION", error)) return base::Status::Ok();
  if (fs::exists(data_dir(), error) && !fs::is_empty(data_dir(), error)) {
    return base::make_error(base::ErrorCode::kInvalid,
                            data_dir().string() + " exists but holds no PostgreSQL cluster");
  }
  fs::remove(data_dir(), error);
  // initdb into a side directory and rename: a crash half-way leaves no
  // half-made cluster where the next start would look.
  const fs::path staging = options_.state_dir / "pgdata.initdb";
  fs::remove_all(staging, error);
  const fs::path initdb_log = options_.state_dir / "initdb.log";
  FileDescriptor log(open(initdb_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
  if (log.get() < 0) {
    return base::make_error(base::ErrorCode::kInvalid, "cannot write " + initdb_log.string());
  }
  if (switch_user_ && fchown(log.get(), run_as_uid_, run_as_gid_) != 0) {
    return base::make_error(base::ErrorCode::kInvalid,
                            "chown " + initdb_log.string() + ": " + errno_text());
  }
  std::vector<std::string> args = {
      (bin / "initdb").string(), "-D",        staging.string(), "-U", kSuperuser, "--auth=trust",
      "--encoding=UTF8",         "--locale=C"};
  if (!options_.sync_initdb) args.push_back("--no-sync");
  base::Result<pid_t> pid = spawn(args, log.get(), identity, /*die_with_parent=*/false);
  if (!pid.ok()) return pid.error();
  int status = 0;
  while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return base::make_error(
        base::ErrorCode::kInternal,
        "initdb failed (see " + initdb_log.string() + "):\n" + tail_of(initdb_log));
  }
  fs::rename(staging, data_dir(), error);
  if (error)
    return base::make_error(base::ErrorCode::kInternal, "rename pgdata: " + error.message());
  return base::Status::Ok();
}

base::Status EmbeddedPostgres::clear_stale_pid_file() {
  std::error_code error;
  // A postmaster.pid left behind by a crash names a PID that is gone or that
  // now belongs to another program; remove it. A live server is a conflict.
  const fs::path pid_file = data_dir() / "postmaster.pid";
  if (std::ifstream in(pid_file); in) {
    pid_t recorded = 0;
    in >> recorded;
    const auto deadline = options_.clock->now() + options_.wait_for_previous_server;
    while (is_live_postgres(recorded, data_dir()) && options_.clock->now() < deadline) {
      options_.clock->sleep_for(std::chrono::milliseconds(20));
    }
    if (is_live_postgres(recorded, data_dir())) {
      return base::make_error(base::ErrorCode::kConflict,
                              "PostgreSQL (pid " + std::to_string(recorded) +
                                  ") is already running on " + data_dir().string() +
                                  "; stop it or use another state directory");
    }
    fs::remove(pid_file, error);
  }
  return base::Status::Ok();
}

base::Status EmbeddedPostgres::spawn_postmaster() {
  const Identity identity{switch_user_, run_as_uid_, run_as_gid_};
  const fs::path bin(options_.bin_dir);
  FileDescriptor log(open(log_file().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
  if (log.get() < 0)
    return base::make_error(base::ErrorCode::kInvalid, "cannot write " + log_file().string());
  if (switch_user_ && fchown(log.get(), run_as_uid_, run_as_gid_) != 0) {
    return base::make_error(base::ErrorCode::kInvalid,
                            "chown " + log_file().string() + ": " + errno_text());
  }
  std::vector<std::string> args = {(bin / "postgres").string(),
                                   "-D",
                                   data_dir().string(),
                                   "-k",
                                   options_.state_dir.string(),
                                   "-p",
                                   kPort,
                                   "-c",
                                   "listen_addresses=",
                                   "-c",
                                   "fsync=on",
                                   "-c",
                                   "synchronous_commit=on",
                                   "-c",
                                   "shared_buffers=128MB",
                                   "-c",
                                   "max_connections=100"};
  // WAL kept between checkpoints: PostgreSQL's default of 1 GB is as much as
  // one long job's checkpoints wrote (issue 34; bench/RESULTS.md). A lock
  // waited on for more than a second (deadlock_timeout) is logged with its
  // holder: a statement that got no answer in time names its server process
  // (db::Connection), whose wait is then in postgres.log.
  for (const char* setting : {"max_wal_size=256MB", "min_wal_size=64MB", "log_lock_waits=on"}) {
    args.push_back("-c");
    args.push_back(setting);
  }
  for (const auto& [name, value] : options_.settings) {
    args.push_back("-c");
    args.push_back(name + "=" + value);
  }
  base::Result<pid_t> pid = spawn(args, log.get(), identity, /*die_with_parent=*/true);
  if (!pid.ok()) return pid.error();
  postmaster_pid_ = *pid;
  return base::Status::Ok();
}

// Until the postmaster answers a ping; a start-up that fails or takes past
// start_timeout is an error quoting postgres.log.
base::Status EmbeddedPostgres::wait_until_accepting() {
  const std::string socket_dir = options_.state_dir.string();
  const char* keywords[] = {"host", "port", "dbname", "user", "connect_timeout", nullptr};
  const char* values[] = {socket_dir.c_str(), kPort, "postgres", kSuperuser, "2", nullptr};
  const auto deadline = options_.clock->now() + options_.start_timeout;
  for (;;) {
    int status = 0;
    if (waitpid(postmaster_pid_, &status, WNOHANG) == postmaster_pid_) {
      postmaster_pid_ = -1;
      return base::make_error(base::ErrorCode::kUnavailable,
                              "PostgreSQL exited during start-up (see " + log_file().string() +
                                  "):\n" + tail_of(log_file()));
    }
    if (PQpingParams(keywords, values, 0) == PQPING_OK) break;
    if (options_.clock->now() >= deadline) {
      (void)shut_down(Shutdown::kFast);
      return base::make_error(base::ErrorCode::kUnavailable,
                              "PostgreSQL did not accept connections within " +
                                  std::to_string(options_.start_timeout.count()) + " s (see " +
                                  log_file().string() + "):\n" + tail_of(log_file()));
    }
    options_.clock->sleep_for(std::chrono::milliseconds(20));
  }
  return base::Status::Ok();
}

// Database "tpujobs", which another process may be creating at the same moment.
base::Status EmbeddedPostgres::create_database() {
  base::Result<std::unique_ptr<Connection>> admin =
      Connection::open(conninfo_for("postgres"), std::chrono::milliseconds(0), *options_.clock);
  if (!admin.ok()) return admin.error();
  base::Result<QueryResult> existing =
      (*admin)->execute("SELECT 1 FROM pg_database WHERE datname = $1", {kDatabase});
  if (!existing.ok()) return existing.error();
  if (existing->rows() == 0) {
    base::Status created = (*admin)->execute_script("CREATE DATABASE tpujobs");
    // Another process may have created it at the same moment.
    if (!created.ok() && created.code() != base::ErrorCode::kConflict) return created;
  }
  return base::Status::Ok();
}

base::Status EmbeddedPostgres::stop(Shutdown mode) {
  end_supervision();
  return shut_down(mode);
}

base::Status EmbeddedPostgres::shut_down(Shutdown mode) {
  if (postmaster_pid_ <= 0) return base::Status::Ok();
  const pid_t pid = postmaster_pid_;
  postmaster_pid_ = -1;
  kill(pid, mode == Shutdown::kFast ? SIGINT : SIGQUIT);
  if (wait_for_exit(*options_.clock, pid, options_.clock->now() + options_.stop_timeout))
    return base::Status::Ok();
  kill(pid, SIGQUIT);  // immediate shutdown: recovery runs at the next start
  if (wait_for_exit(*options_.clock, pid, options_.clock->now() + std::chrono::seconds(5))) {
    return base::make_error(base::ErrorCode::kUnavailable,
                            "PostgreSQL needed an immediate shutdown");
  }
  kill(pid, SIGKILL);
  wait_for_exit(*options_.clock, pid, options_.clock->now() + std::chrono::seconds(5));
  return base::make_error(base::ErrorCode::kUnavailable, "PostgreSQL had to be killed");
}

base::Status EmbeddedPostgres::restart() {
  {
    base::MutexLock lock(supervision_mutex_);
    if (supervising_) return base::Status::Ok();  // running, or being brought back
  }
  if (running()) return base::Status::Ok();
  base::Status launched = launch();
  if (launched.ok() && report_) supervise(report_);
  return launched;
}

void EmbeddedPostgres::supervise(Report report) {
  {
    base::MutexLock lock(supervision_mutex_);
    if (supervising_) return;
    supervising_ = true;
  }
  // The previous supervisor, if any, was joined by end_supervision().
  report_ = std::move(report);
  supervisor_ = std::thread([this] { watch(); });
}

void EmbeddedPostgres::end_supervision() {
  {
    base::MutexLock lock(supervision_mutex_);
    supervising_ = false;
  }
  supervision_wake_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
}

void EmbeddedPostgres::watch() {
  base::MutexLock lock(supervision_mutex_);
  for (;;) {
    // Polled rather than a blocking waitpid(), so that stop() can end the
    // watch at any moment without a signal.
    if (options_.clock->wait_for(lock, supervision_wake_, std::chrono::milliseconds(100),
                                 [this]() REQUIRES(supervision_mutex_) { return !supervising_; })) {
      return;
    }
    const pid_t pid = postmaster_pid_;
    int status = 0;
    if (pid <= 0 || waitpid(pid, &status, WNOHANG) != pid) continue;
    postmaster_pid_ = -1;
    lock.unlock();
    report_("embedded PostgreSQL (pid " + std::to_string(pid) + ") " + describe_exit(status) +
            " unexpectedly; starting it again");
    const bool back = relaunch_after_crash();
    lock.lock();
    if (!back) return;
  }
}

bool EmbeddedPostgres::relaunch_after_crash() {
  const auto began = options_.clock->now();
  auto delay = std::chrono::milliseconds(100);
  for (int attempt = 1;; ++attempt) {
    base::Status launched = launch();
    if (launched.ok()) {
      const auto took =
          std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock->now() - began);
      report_("embedded PostgreSQL is back (pid " + std::to_string(postmaster_pid_) + ") after " +
              std::to_string(took.count()) + " ms, attempt " + std::to_string(attempt));
      return true;
    }
    // A server that came up but failed a later check is started afresh.
    (void)shut_down(Shutdown::kImmediate);
    report_("embedded PostgreSQL restart attempt " + std::to_string(attempt) +
            " failed: " + summary_of(launched.error().message) + "; next attempt in " +
            std::to_string(delay.count()) + " ms");
    base::MutexLock lock(supervision_mutex_);
    if (options_.clock->wait_for(lock, supervision_wake_, delay,
                                 [this]() REQUIRES(supervision_mutex_) { return !supervising_; }))
      return false;
    delay = std::min(delay * 2, std::chrono::milliseconds(5000));
  }
}

EmbeddedPostgres::~EmbeddedPostgres() { (void)stop(); }

}  // namespace tpujobs::db
