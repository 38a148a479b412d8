#include "api/fair_lane.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <vector>

#include "base/thread_priority.h"

namespace tpujobs::api {
namespace {

using namespace std::chrono_literals;

TEST(FairLane, TenantsTakeTurnsAndEachTenantsWorkRunsInTheOrderItCame) {
  std::mutex mutex;
  std::vector<std::string> ran;
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> done;
  {
    FairLane lane(1);
    // The lane's one thread is held while the rest is queued.
    lane.post("a", [&] {
      started.set_value();
      released.wait_for(60s);
    });
    ASSERT_EQ(started.get_future().wait_for(60s), std::future_status::ready);
    auto record = [&](std::string name) {
      return [&, name] {
        std::lock_guard lock(mutex);
        ran.push_back(name);
      };
    };
    for (const char* item : {"a2", "a3", "a4", "b1", "c1", "b2"}) {
      lane.post(std::string(1, item[0]), record(item));
    }
    EXPECT_EQ(lane.waiting(), 6u);
    release.set_value();
  }  // destroyed: it runs what was queued first
  EXPECT_EQ(ran, (std::vector<std::string>{"a2", "b1", "c1", "a3", "b2", "a4"}));
}

TEST(FairLane, WorkRunsOnTheLanesThreadsNotTheCallers) {
  std::promise<std::thread::id> ran_on;
  FairLane lane(2);
  lane.post("a", [&] { ran_on.set_value(std::this_thread::get_id()); });
  auto id = ran_on.get_future();
  ASSERT_EQ(id.wait_for(60s), std::future_status::ready);
  EXPECT_NE(id.get(), std::this_thread::get_id());
}

TEST(FairLane, ItsThreadsRunAtTheNiceItWasGivenAndTheCallersKeepTheirs) {
  const int before = base::this_thread_nice();
  const int wanted = before < 5 ? 5 : before;  // raising it is always allowed
  std::promise<int> nice;
  FairLane lane(1, wanted);
  lane.post("a", [&] { nice.set_value(base::this_thread_nice()); });
  auto got = nice.get_future();
  ASSERT_EQ(got.wait_for(60s), std::future_status::ready);
  EXPECT_EQ(got.get(), wanted);
  EXPECT_EQ(base::this_thread_nice(), before);
}

}  // namespace
}  // namespace tpujobs::api
