// What a preemption records in job_events (scheduler/preemption.h), the same
// texts in one process and in a cluster: the victim's RUNNING -> QUEUED
// event and the preemptor's (a QUEUED -> QUEUED event), each with a detail
// naming the other job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpujobs::service {

// "Preempted by job 12; requeued to resume from its last checkpoint"
std::string preempted_reason(std::int64_t preemptor);
// {"preempted_by": 12}
std::string preempted_detail(std::int64_t preemptor);
// A preempted job's pending_detail while it waits: "preempted by job 12;
// resumes from its last checkpoint"
std::string preempted_pending_detail(std::int64_t preemptor);
// "Preempted job 7 to start (it resumes from its last checkpoint)" or
// "Preempted jobs 7, 9 to start (they resume from their last checkpoints)"
std::string preempting_reason(const std::vector<std::int64_t>& victims);
// {"preempted": [7, 9]}
std::string preempting_detail(const std::vector<std::int64_t>& victims);

}  // namespace tpujobs::service
