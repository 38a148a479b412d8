// Lists cap the size of an answer (issue 34): GET /v1/jobs?limit=500 of
// large jobs answered 1.26 MB at a time. A page past kMaxListBytes is cut to
// the jobs that fit, with that shorter page's next_cursor, from the one read
// that listed them: following the cursors reads every job once, also when
// jobs are submitted meanwhile.
#include "api/list_cap.h"

#include <gtest/gtest.h>

#include <set>

#include "api/jobs_api.h"
#include "api/url.h"
#include "fake_job_service.h"

namespace tpujobs::api {
namespace {

using testing::CapturingWriter;

// Jobs newest first, each with a description of `padding` bytes; a cursor is
// the id of the last job shown. `before_list` runs before every read. It
// answers every job the limit asks for, whatever max_bytes says (a service
// may, and need not, stop at it).
class ListingService : public testing::FakeJobService {
 public:
  std::vector<std::int64_t> ids;  // newest first
  std::size_t padding = 4000;
  int reads = 0;
  std::size_t max_bytes = 0;  // as the last read was told
  std::function<void()> before_list = [] {};

  base::Result<JobListPage> list_jobs(const JobQuery& query) override {
    ++reads;
    max_bytes = query.max_bytes;
    before_list();
    JobListPage page;
    std::size_t i = 0;
    if (query.cursor) {
      while (i < ids.size() && std::to_string(ids[i]) != *query.cursor) ++i;
      ++i;
    }
    for (; i < ids.size() && static_cast<int>(page.jobs.size()) < query.limit; ++i) {
      const nlohmann::json view = {
          {"id", ids[i]}, {"name", std::string(padding, 'x')}, {"state", "QUEUED"}};
      page.jobs.push_back({view.dump(), std::to_string(ids[i])});
    }
    if (i < ids.size()) page.next_cursor = page.jobs.back().cursor;
    return page;
  }
};

Response get(JobsApi& api, const std::string& target) {
  Request request;
  request.method = "GET";
  request.target = target;
  RequestTarget split = split_target(target);
  request.path = std::move(split.path);
  request.query = std::move(split.query);
  auto writer = std::make_shared<CapturingWriter>();
  api.handle(std::move(request), writer);
  return writer->response;
}

// Reads every page from the first; the ids in the order read.
std::vector<std::int64_t> read_all(JobsApi& api, std::size_t* largest, int* pages) {
  std::vector<std::int64_t> seen;
  std::string cursor;
  for (*pages = 0; *pages < 1000; ++*pages) {
    const Response r = get(api, "/v1/jobs?limit=500" + (cursor.empty() ? "" : "&cursor=" + cursor));
    EXPECT_EQ(200, r.status) << r.body;
    *largest = std::max(*largest, r.body.size());
    const nlohmann::json page = nlohmann::json::parse(r.body);
    EXPECT_EQ(page.dump(), r.body) << "the page's own text";
    for (const auto& job : page["jobs"]) seen.push_back(job["id"].get<std::int64_t>());
    if (page["next_cursor"].is_null()) break;
    cursor = page["next_cursor"].get<std::string>();
  }
  return seen;
}

TEST(ListCap, AWidePageOfLargeJobsIsCutToTheCapAndTheCursorsReadEveryJobOnce) {
  ListingService service;
  for (std::int64_t id = 500; id >= 1; --id) service.ids.push_back(id);
  JobsApi api(service, {});
  std::size_t largest = 0;
  int pages = 0;
  const std::vector<std::int64_t> seen = read_all(api, &largest, &pages);
  EXPECT_EQ(service.ids, seen);
  EXPECT_LE(largest, kMaxListBytes);
  EXPECT_GT(largest, kMaxListBytes - 5000) << "as many jobs as fit";
  // 500 jobs of about 4 KB: 2 MB, at least 8 pages of at most 256 KiB.
  EXPECT_GE(pages + 1, 8);
  EXPECT_EQ(pages + 1, service.reads) << "each page is read once, not again to fit the cap";
  EXPECT_EQ(kMaxListBytes, service.max_bytes) << "the service is told the cap";
}

TEST(ListCap, APageUnderTheCapIsAnsweredAsReadOnce) {
  ListingService service;
  service.padding = 100;
  for (std::int64_t id = 300; id >= 1; --id) service.ids.push_back(id);
  JobsApi api(service, {});
  const std::string body = get(api, "/v1/jobs?limit=500").body;
  const nlohmann::json page = nlohmann::json::parse(body);
  EXPECT_EQ(300u, page["jobs"].size());
  EXPECT_TRUE(page["next_cursor"].is_null());
  EXPECT_EQ(1, service.reads);
  // Written from each job's text, the answer is the very text of the page.
  EXPECT_EQ(page.dump(), body);
}

TEST(ListCap, JobsSubmittedBetweenPagesAreNeitherSkippedNorRepeated) {
  // Every read sees 7 new jobs at the head of the list, as under a tenant
  // submitting while another lists.
  ListingService service;
  for (std::int64_t id = 200; id >= 1; --id) service.ids.push_back(id);
  std::int64_t next = 201;
  service.before_list = [&] {
    for (int i = 0; i < 7; ++i) service.ids.insert(service.ids.begin(), next++);
  };
  JobsApi api(service, {});
  std::size_t largest = 0;
  int pages = 0;
  const std::vector<std::int64_t> seen = read_all(api, &largest, &pages);
  EXPECT_LE(largest, kMaxListBytes);
  // Newest first, no id twice, and every job that existed at the first read.
  EXPECT_TRUE(std::is_sorted(seen.rbegin(), seen.rend()));
  EXPECT_EQ(seen.size(), std::set<std::int64_t>(seen.begin(), seen.end()).size());
  for (std::int64_t id = 1; id <= 207; ++id) {
    EXPECT_TRUE(std::find(seen.begin(), seen.end(), id) != seen.end()) << "job " << id;
  }
}

TEST(ListCap, OneJobLargerThanTheCapIsAnsweredAlone) {
  ListingService service;
  service.padding = kMaxListBytes + 10;
  service.ids = {3, 2, 1};
  JobsApi api(service, {});
  const nlohmann::json page = nlohmann::json::parse(get(api, "/v1/jobs").body);
  ASSERT_EQ(1u, page["jobs"].size());
  EXPECT_EQ(3, page["jobs"][0]["id"]);
  EXPECT_EQ("3", page["next_cursor"]);
}

}  // namespace
}  // namespace tpujobs::api
