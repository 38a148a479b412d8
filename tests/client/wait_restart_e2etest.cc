// `tpujobs wait` and `tpujobs submit --wait` ride out a restart of the
// service: while it is down they reconnect with backoff, and the exit code
// is the job's outcome once it is back.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "tests/client/client_process.h"
#include "tests/e2e/service_process.h"
#include "tests/e2e/training_jobs.h"

namespace tpujobs::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A port nobody listens on right now (the service needs the same one twice).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(address.sin_port);
}

// Trains until its max_time (10 s of training, counted across the
// restart) ends it, as Lightning's Timer does: the service restarts in the
// middle (training_jobs.h).
json long_spec() {
  json spec = restartable_job_spec("restart-me");
  spec["trainer"]["max_time"] = "00:00:00:10";
  spec["expect"] = {{"val_accuracy", {{"min", 0.5}}}};
  return spec;
}

TEST(WaitAcrossRestart, WaitEndsWithTheJobOutcomeAfterTheServiceComesBack) {
  std::string pattern = (fs::temp_directory_path() / "tpujobs-cli-restart-XXXXXX").string();
  ASSERT_NE(nullptr, mkdtemp(pattern.data()));
  const fs::path root = pattern;
  // PostgreSQL may run as another user (when the tests run as root): it
  // must be able to reach the state directory inside.
  fs::permissions(root, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  fs::create_directory(root / "state");
  fs::create_directory(root / "client");
  const int port = free_port();
  ASSERT_NE(0, port);

  ServiceProcess::Options options;
  options.state_dir = root / "state";
  options.extra_args = {"--listen",
                        "127.0.0.1:" + std::to_string(port)};  // the same port after the restart
  auto first = std::make_unique<ServiceProcess>(options);
  ASSERT_EQ("", first->start()) << first->log();
  ASSERT_EQ(port, first->port());
  HttpResponse created = first->post("/v1/jobs", long_spec().dump());
  ASSERT_EQ(201, created.status) << created.body;
  const std::string id = std::to_string(created.json()["id"].get<std::int64_t>());

  const Environment env = {{"TPUJOBS_URL", "http://127.0.0.1:" + std::to_string(port)}};
  const pid_t client = spawn_client({"wait", id, "--timeout", "5m"}, env, root / "client");

  // Stop the service while the job runs and the client waits on it.
  for (int i = 0; i < 600; ++i) {
    const json job = first->get("/v1/jobs/" + id).json();
    if (job.value("state", "") == "RUNNING" && job["progress"].is_object() &&
        job["progress"].value("step", 0) >= 20) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(0, first->stop()) << first->log();
  first.reset();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the client finds nobody listening

  ServiceProcess second(options);
  ASSERT_EQ("", second.start()) << second.log();
  const ClientRun run = wait_client(client, root / "client", std::chrono::seconds(300));
  EXPECT_EQ(0, run.exit_code) << run.err << second.log();
  EXPECT_NE(std::string::npos, run.err.find("tpujobs: lost the service")) << run.err;
  EXPECT_NE(std::string::npos, run.err.find("tpujobs: reconnected")) << run.err;
  EXPECT_NE(std::string::npos, run.out.find("job " + id + " restart-me  SUCCEEDED")) << run.out;
  EXPECT_EQ(0, second.stop()) << second.log();
  std::error_code ignored;
  fs::remove_all(root, ignored);
}

}  // namespace
}  // namespace tpujobs::testing
