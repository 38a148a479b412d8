// The harness itself: a test process that dies (ctest kills one at its
// timeout) takes the services it started with it, embedded PostgreSQL
// included, instead of leaving them to load the machine for the tests that
// run after it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "tests/e2e/service_process.h"

namespace tpujobs::testing {
namespace {

// Gone, or a zombie its new parent has not reaped yet.
bool exited(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t end = stat.rfind(')');
  return end == std::string::npos || stat.compare(end + 2, 1, "Z") == 0;
}

bool exits_within(pid_t pid, std::chrono::seconds within) {
  for (auto until = std::chrono::steady_clock::now() + within;
       std::chrono::steady_clock::now() < until;) {
    if (exited(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return exited(pid);
}

TEST(Harness, AServiceStopsWhenTheTestThatStartedItIsKilled) {
  std::string pattern = (std::filesystem::temp_directory_path() / "tpujobs-harness-XXXXXX");
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path state_dir = pattern;
  int pids[2];
  ASSERT_EQ(pipe(pids), 0);
  const pid_t test = fork();  // the test process that ctest kills
  ASSERT_GE(test, 0);
  if (test == 0) {
    close(pids[0]);
    ServiceProcess::Options options;
    options.pool = "v3-8";
    options.state_dir = state_dir;
    ServiceProcess service(options);
    const pid_t started[2] = {service.start().empty() ? service.pid() : -1,
                              service.embedded_postmaster_pid()};
    if (write(pids[1], started, sizeof(started)) != sizeof(started)) _exit(1);
    // Killed, this process never removes its service's log: the test does.
    // Its length first: the service holds the pipe open too, so no end of
    // file comes while it runs.
    const std::string log = service.log_path();
    const std::size_t length = log.size();
    if (write(pids[1], &length, sizeof(length)) != sizeof(length)) _exit(1);
    if (write(pids[1], log.data(), length) != static_cast<ssize_t>(length)) _exit(1);
    pause();  // until SIGKILL
    _exit(0);
  }
  close(pids[1]);
  pid_t started[2] = {-1, -1};
  const bool read_all = read(pids[0], started, sizeof(started)) == sizeof(started);
  std::size_t length = 0;
  std::string log;
  if (read_all && read(pids[0], &length, sizeof(length)) == sizeof(length) && length < 4096) {
    log.resize(length);
    if (read(pids[0], log.data(), length) != static_cast<ssize_t>(length)) log.clear();
  }
  close(pids[0]);
  kill(test, SIGKILL);
  waitpid(test, nullptr, 0);
  ASSERT_TRUE(read_all);
  ASSERT_GT(started[0], 0) << "the service did not start";
  ASSERT_GT(started[1], 0) << "no embedded PostgreSQL";
  EXPECT_TRUE(exits_within(started[0], std::chrono::seconds(90)))
      << "the service outlived the test that started it";
  EXPECT_TRUE(exits_within(started[1], std::chrono::seconds(90)))
      << "its embedded PostgreSQL outlived it";
  if (!exited(started[0])) kill(started[0], SIGKILL);
  std::error_code ignored;
  std::filesystem::remove_all(state_dir, ignored);
  if (!log.empty()) std::filesystem::remove(log, ignored);
}

}  // namespace
}  // namespace tpujobs::testing
