// Lists cap the size of an answer (issue 34: 32 connections reading
// GET /v1/jobs?limit=500, 1.26 MB an answer, pushed another tenant's submits
// to 2.1-2.6 s). A page whose JSON passes the cap is cut to the jobs that fit
// (at least one), with the next_cursor of that shorter page, so a client
// that follows next_cursor still reads every job once.
#pragma once

#include <cstddef>
#include <string>

#include "api/job_service.h"

namespace tpujobs::api {

// What GET /v1/jobs answers at most: 256 KiB of JSON (about 100 jobs of the
// usual size; one job larger than that is still answered, alone).
inline constexpr std::size_t kMaxListBytes = std::size_t{256} << 10;

// `listed` is the answer to `query` ({"jobs": [...], "next_cursor": ...}).
// When its JSON passes max_bytes, the page is asked of `service` again with
// the limit of the jobs that fit: that page and its cursor come from one
// read, so no job is skipped even when jobs were submitted in between. It
// tries three times, then answers what it has. Errors pass through.
// Answers the page's JSON text, as json_response would write it: each job
// is written once, both to measure the page and to answer it.
base::Result<std::string> cap_job_list(base::Result<nlohmann::json> listed, JobQuery query,
                                       JobService& service, std::size_t max_bytes = kMaxListBytes);

}  // namespace tpujobs::api
