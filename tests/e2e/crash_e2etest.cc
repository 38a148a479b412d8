// Every 201 survives a crash: clients submit as fast as they can, the
// service is killed with SIGKILL at a random moment (after a random number
// of 201s, never a time tuned to a machine's speed), and after a restart
// every job that got a 201 exists (and no core is left held).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "service_process.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;

TEST(Crash, EveryAcknowledgedSubmitSurvivesKillNine) {
  ServiceProcess first;
  ASSERT_EQ(first.start(), "");
  // Drain the pool so the jobs wait instead of competing for the CPU.
  const json pool = first.get("/v1/pool").json();
  ASSERT_EQ(pool["hosts"].size(), 4u);
  for (const json& host : pool["hosts"]) {
    ASSERT_EQ(first.post("/v1/pool/hosts/" + host["name"].get<std::string>() + ":drain").status,
              200);
  }
  const json spec = {{"name", "crash-me"},
                     {"trainer", {{"devices", 1}, {"max_epochs", 1}}},
                     {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
                     {"data", {{"dataset", "iris"}}}};
  const std::string body = spec.dump();

  std::mutex mutex;
  std::set<std::int64_t> acknowledged;
  std::atomic<bool> stop{false};
  std::atomic<int> answers{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      while (!stop) {
        HttpResponse r = http(first.port(), "POST", "/v1/jobs", body, {}, std::chrono::seconds(5));
        if (r.status == 201) {
          std::lock_guard lock(mutex);
          acknowledged.insert(r.json()["id"].get<std::int64_t>());
        }
        if (r.status == 0) break;  // the service is gone
        ++answers;
      }
    });
  }
  // A random moment among the submits: after 20 to 400 of them were
  // answered 201, while the clients go on.
  std::mt19937 rng(std::random_device{}());
  const std::size_t kill_after = 20 + rng() % 381;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto acknowledged_so_far = [&] {
    std::lock_guard lock(mutex);
    return acknowledged.size();
  };
  while (acknowledged_so_far() < kill_after && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  first.kill9();
  stop = true;
  for (std::thread& t : clients) t.join();
  ASSERT_GE(acknowledged.size(), kill_after) << "the submits did not reach it within 120 s";

  ServiceProcess::Options options;
  options.state_dir = first.state_dir();
  ServiceProcess second(options);
  ASSERT_EQ(second.start(), "") << second.log();
  for (std::int64_t id : acknowledged) {
    HttpResponse r = second.get("/v1/jobs/" + std::to_string(id));
    ASSERT_EQ(r.status, 200) << "job " << id << " got a 201 but is gone after the crash";
    EXPECT_EQ(r.json()["name"], "crash-me");
  }
  EXPECT_EQ(second.get("/v1/pool").json()["used_cores"], 0);
  RecordProperty("acknowledged", static_cast<int>(acknowledged.size()));
  std::printf("%zu acknowledged submits, killed after the %zuth: all present after restart\n",
              acknowledged.size(), kill_after);
  EXPECT_EQ(second.stop(), 0);
}

}  // namespace
}  // namespace tpujobs::testing
