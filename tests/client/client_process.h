// Runs the built `tpujobs` client as a child process with an exact
// environment, in a working directory, capturing stdout and stderr to files
// there (header-only: shared by the cli end-to-end tests).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/build_paths.h"

namespace tpujobs::testing {

using Environment = std::map<std::string, std::string>;

struct ClientRun {
  int exit_code = -1;  // -1: killed or did not exit in time
  std::string out;
  std::string err;
};

inline std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Starts tpujobs_binary() with `args` (argv[1...]). Returns the child's pid.
inline pid_t spawn_client(const std::vector<std::string>& args, const Environment& environment,
                          const std::filesystem::path& directory) {
  std::vector<std::string> argv_text = {tpujobs_binary()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<std::string> env_text;
  for (const auto& [name, value] : environment) env_text.push_back(name + "=" + value);
  // Under the sanitizers the client aborts on memory errors or UB; a leak at
  // exit must not change the exit code the test checks (leaks are checked by
  // the in-process tests).
  if (environment.find("ASAN_OPTIONS") == environment.end()) {
    env_text.push_back("ASAN_OPTIONS=detect_leaks=0:abort_on_error=1");
  }
  const std::string out_path = (directory / "stdout.txt").string();
  const std::string err_path = (directory / "stderr.txt").string();
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(directory.c_str()) != 0) _exit(126);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// Waits for a child started by spawn_client (SIGKILL after `timeout`).
inline ClientRun wait_client(pid_t pid, const std::filesystem::path& directory,
                             std::chrono::seconds timeout = std::chrono::seconds(180)) {
  ClientRun result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = file_text(directory / "stdout.txt");
  result.err = file_text(directory / "stderr.txt");
  return result;
}

inline ClientRun run_client_process(const std::vector<std::string>& args,
                                    const Environment& environment,
                                    const std::filesystem::path& directory) {
  return wait_client(spawn_client(args, environment, directory), directory);
}

}  // namespace tpujobs::testing
