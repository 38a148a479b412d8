// Wide requests (lists of more than 50 jobs) run on a lane of their own,
// tenants in turn, never on the I/O thread that read them (issue 34: a
// tenant listing 500 jobs at its rate limit held every I/O thread, and the
// others' status reads waited behind it).
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <semaphore>
#include <thread>

#include "api/jobs_api.h"
#include "fake_job_service.h"

namespace tpujobs::api {
namespace {

using namespace std::chrono_literals;
using testing::CapturingWriter;

// A list of more than 50 jobs waits until the test opens the gate (a minute
// at most, so that a broken lane fails the test instead of hanging it), and
// says on which thread it ran.
class GatedService : public testing::FakeJobService {
 public:
  base::Result<JobListPage> list_jobs(const JobQuery& query) override {
    if (query.limit > 50) {
      {
        std::lock_guard lock(mutex_);
        wide_threads.push_back(std::this_thread::get_id());
      }
      entered_.release();
      gate_.wait_for(60s);
    }
    return JobListPage{};
  }
  bool wait_entered() { return entered_.try_acquire_for(60s); }
  void open() {
    std::call_once(open_once_, [this] { opened_.set_value(); });
  }

  std::mutex mutex_;
  std::vector<std::thread::id> wide_threads;

 private:
  std::counting_semaphore<64> entered_{0};
  std::once_flag open_once_;
  std::promise<void> opened_;
  std::shared_future<void> gate_ = opened_.get_future().share();
};

// Answered from any thread; the test waits on the answer.
class PromisedWriter final : public ResponseWriter {
 public:
  void respond(Response response) override { answer_.set_value(std::move(response)); }
  void start_stream(Response) override {}
  bool write(std::string) override { return true; }
  void end() override {}
  bool closed() const override { return false; }

 private:
  std::promise<Response> answer_;  // before `answer`, which is made from it

 public:
  std::future<Response> answer = answer_.get_future();
};

struct Fixture {
  GatedService service;
  JobsApi api;
  explicit Fixture(StreamLimits bounds = {4, 64})
      : api(service, [&] {
          ApiOptions o;
          o.wide_request_threads = 1;
          o.wide_requests = bounds;
          return o;
        }()) {}
  ~Fixture() { service.open(); }  // whatever the test did, the lane can end

  // `token` empty: the default tenant; "user-token": team-a.
  std::shared_ptr<PromisedWriter> send(std::string target, std::string token = "") {
    Request request = testing::request_for("GET", std::move(target));
    if (!token.empty()) request.headers["authorization"] = "Bearer " + token;
    auto writer = std::make_shared<PromisedWriter>();
    api.handle(std::move(request), writer);
    return writer;
  }
};

bool answered(std::future<Response>& answer, std::chrono::seconds within = 0s) {
  return answer.wait_for(within) == std::future_status::ready;
}

TEST(WideRequests, AnotherTenantsReadIsAnsweredWhileAWideListIsStillRunning) {
  Fixture f;
  auto wide = f.send("/v1/jobs?limit=500");
  ASSERT_TRUE(f.service.wait_entered());
  auto read = f.send("/v1/jobs/1", "user-token");
  ASSERT_TRUE(answered(read->answer));  // answered by the call itself
  EXPECT_EQ(read->answer.get().status, 200);
  EXPECT_FALSE(answered(wide->answer));  // the list is still running
  f.service.open();
  ASSERT_TRUE(answered(wide->answer, 60s));
  EXPECT_EQ(wide->answer.get().status, 200);
  std::lock_guard lock(f.service.mutex_);
  ASSERT_EQ(f.service.wide_threads.size(), 1u);
  EXPECT_NE(f.service.wide_threads[0], std::this_thread::get_id());
}

TEST(WideRequests, ANarrowListIsAnsweredOnTheThreadThatReadIt) {
  Fixture f;
  auto narrow = f.send("/v1/jobs?limit=50");
  ASSERT_TRUE(answered(narrow->answer));
  EXPECT_EQ(narrow->answer.get().status, 200);
}

TEST(WideRequests, OverItsShareATenantIs429WhileAnotherTenantsWideListStillRuns) {
  Fixture f(StreamLimits{1, 2});
  auto first = f.send("/v1/jobs?limit=500");
  ASSERT_TRUE(f.service.wait_entered());
  auto second = f.send("/v1/jobs?limit=500");
  ASSERT_TRUE(answered(second->answer));
  Response refused = second->answer.get();
  ASSERT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.content_type, "application/problem+json");
  const nlohmann::json problem = nlohmann::json::parse(refused.body);
  EXPECT_EQ(problem["limit"], "wide requests per_tenant");
  EXPECT_EQ(problem["value"], 1);
  EXPECT_EQ(problem["current"], 1);
  EXPECT_NE(problem["hint"].get<std::string>().find("fewer jobs a page"), std::string::npos);

  auto other = f.send("/v1/jobs?limit=500", "user-token");  // queued behind the first
  auto full = f.send("/v1/jobs?limit=100", "admin-token");
  ASSERT_TRUE(answered(full->answer));
  EXPECT_EQ(full->answer.get().status, 503);  // two held in all, the total
  EXPECT_FALSE(answered(other->answer));
  f.service.open();
  ASSERT_TRUE(answered(first->answer, 60s));
  ASSERT_TRUE(answered(other->answer, 60s));
  EXPECT_EQ(first->answer.get().status, 200);
  EXPECT_EQ(other->answer.get().status, 200);
  // Answered, their slots are free again.
  auto again = f.send("/v1/jobs?limit=500");
  ASSERT_TRUE(f.service.wait_entered() && f.service.wait_entered());
  ASSERT_TRUE(answered(again->answer, 60s));
  EXPECT_EQ(again->answer.get().status, 200);
}

}  // namespace
}  // namespace tpujobs::api
