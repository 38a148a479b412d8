#include "service_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "build_paths.h"

namespace tpujobs::testing {

ServiceProcess::ServiceProcess(Options options) : options_(std::move(options)) {
  if (options_.state_dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "tpujobs-e2e-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    options_.state_dir = pattern;
    temporary_ = true;
  }
}

ServiceProcess::~ServiceProcess() {
  if (pid_ > 0) stop();
  // A failing assertion has printed log() by now; keep the files only on request.
  if (std::getenv("TPUJOBS_KEEP_TEST_LOGS") == nullptr) {
    std::error_code ignored;
    for (const auto& path : log_paths_) std::filesystem::remove(path, ignored);
  }
  if (temporary_) {
    std::error_code ignored;
    std::filesystem::remove_all(options_.state_dir, ignored);
  }
}

std::string ServiceProcess::log() const {
  if (log_paths_.empty()) return {};
  std::ifstream in(log_paths_.back());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ServiceProcess::start(std::chrono::seconds timeout) {
  // A new file each start, created here before the fork: a file left by an
  // earlier process that had the same pid must never be read as this
  // service's output (its "listening on" line names another port).
  std::string pattern =
      (std::filesystem::temp_directory_path() / "tpujobs-e2e-log-XXXXXX").string();
  const int log_fd = mkstemp(pattern.data());
  if (log_fd < 0) return "mkstemp failed for the service log";
  log_paths_.push_back(pattern);
  const bool agent = options_.command == "agent";
  std::vector<std::string> args = {
      tpujobs_binary(), "serve",       "--listen",    "127.0.0.1:0",
      "--pool",         options_.pool, "--state-dir", options_.state_dir.string()};
  if (agent) args = {tpujobs_binary(), "agent"};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  const pid_t test_pid = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    close(log_fd);
    return "fork failed";
  }
  if (pid_ == 0) {
    // A test killed at its ctest timeout takes its services with it (a
    // graceful stop, which stops an embedded PostgreSQL too) instead of
    // leaving them to load the machine for the tests after it. The signal
    // comes when the thread that forked ends: every test starts its
    // services from its main thread.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != test_pid) _exit(127);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    close(log_fd);
    // In a sanitizer build the service aborts on any memory error or UB
    // (halt_on_error); leaks are checked by the in-process tests, not in
    // every service process a test kills.
    setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1);
    if (!options_.network_namespace.empty()) {
      const int ns = open(("/run/netns/" + options_.network_namespace).c_str(), O_RDONLY);
      if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
        std::perror("joining the network namespace");
        _exit(127);
      }
      close(ns);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  const std::regex listening(agent ? "tpujobs agent \\S+ running()"
                                   : "listening on http://127\\.0\\.0\\.1:([0-9]+)");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch match;
    const std::string text = log();
    if (std::regex_search(text, match, listening)) {
      port_ = agent ? 0 : std::stoi(match[1]);
      return {};
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return "tpujobs exited before listening:\n" + text;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "tpujobs did not start listening in time:\n" + log();
}

int ServiceProcess::stop(std::chrono::seconds timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  return -1;
}

void ServiceProcess::kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ServiceProcess::pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}

void ServiceProcess::resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

bool ServiceProcess::alive() const {
  if (pid_ <= 0) return false;
  siginfo_t info{};
  // WNOWAIT: look without reaping, so stop() and kill9() keep working.
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == 0;
}

pid_t ServiceProcess::embedded_postmaster_pid() const {
  std::ifstream in(options_.state_dir / "pgdata" / "postmaster.pid");
  pid_t pid = -1;
  if (!(in >> pid)) return -1;
  return pid;
}

nlohmann::json ServiceProcess::wait_terminal(std::int64_t id, std::chrono::seconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  nlohmann::json job;
  while (std::chrono::steady_clock::now() < deadline) {
    HttpResponse r = http(port_, "GET", "/v1/jobs/" + std::to_string(id) + "/wait?timeout=10");
    if (r.status == 200) {
      job = r.json();
      const std::string state = job.value("state", "");
      if (state == "SUCCEEDED" || state == "FAILED" || state == "CANCELLED") return job;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return job;
}

std::string read_source_file(const std::string& relative) {
  std::ifstream in(source_dir() + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string create_token(const ServiceProcess& service, const std::string& tenant,
                         const std::string& role) {
  const std::string command = tpujobs_binary() + " token create --tenant " + tenant + " --role " +
                              role + " --state-dir " + service.state_dir().string() +
                              " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "";
  char line[256] = {0};
  std::string token;
  if (fgets(line, sizeof line, pipe)) token = line;
  pclose(pipe);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  return token;
}

std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t after_name = text.rfind(')');
  if (after_name == std::string::npos) return {};
  std::istringstream stream(text.substr(after_name + 2));
  std::vector<std::string> fields;
  for (std::string field; stream >> field;) fields.push_back(field);
  return fields;
}

namespace {

double field_sum(const std::vector<std::string>& fields, std::initializer_list<int> numbers) {
  double ticks = 0;
  for (int number : numbers) {
    if (static_cast<std::size_t>(number - 3) < fields.size())
      ticks += std::stod(fields[number - 3]);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

double cpu_seconds(pid_t pid) { return field_sum(stat_fields(pid), {14, 15}); }  // utime, stime

std::vector<pid_t> process_tree(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    const std::vector<std::string> fields = stat_fields(pid);
    if (fields.size() > 1) children[std::stoi(fields[1])].push_back(pid);  // field 4: ppid
  }
  std::vector<pid_t> tree;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t pid = todo.back();
    todo.pop_back();
    tree.push_back(pid);
    for (pid_t child : children[pid]) todo.push_back(child);
  }
  return tree;
}

double tree_cpu_seconds(pid_t root) {
  double seconds = 0;
  for (pid_t pid : process_tree(root)) {
    seconds += field_sum(stat_fields(pid), {14, 15, 16, 17});  // and cutime, cstime
  }
  return seconds;
}

double machine_busy_cpu_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;  // "cpu": the sum over the cores
  double busy = 0;
  for (int i = 0; i < 8; ++i) {  // user nice system idle iowait irq softirq steal
    double ticks = 0;
    in >> ticks;
    if (i != 3 && i != 4) busy += ticks;
  }
  return busy / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace tpujobs::testing
