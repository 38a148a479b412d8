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

// The JSON text of `listed` ({"jobs": [...], "next_cursor": ...}, as
// nlohmann::json writes it), cut to the jobs that fit in max_bytes (at least
// one) with the cursor of the last job kept. The cursors come from the read
// that listed the jobs, so following them skips no job even when jobs were
// submitted in between. Errors pass through.
base::Result<std::string> cap_job_list(base::Result<JobListPage> listed,
                                       std::size_t max_bytes = kMaxListBytes);

}  // namespace tpujobs::api
