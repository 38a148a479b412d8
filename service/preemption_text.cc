#include "service/preemption_text.h"

#include <nlohmann/json.hpp>

namespace tpujobs::service {

std::string preempted_reason(std::int64_t preemptor) {
  return "Preempted by job " + std::to_string(preemptor) +
         "; requeued to resume from its last checkpoint";
}

std::string preempted_detail(std::int64_t preemptor) {
  return nlohmann::json{{"preempted_by", preemptor}}.dump();
}

std::string preempted_pending_detail(std::int64_t preemptor) {
  return "preempted by job " + std::to_string(preemptor) + "; resumes from its last checkpoint";
}

std::string preempting_reason(const std::vector<std::int64_t>& victims) {
  std::string ids;
  for (std::int64_t id : victims) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  return victims.size() == 1
             ? "Preempted job " + ids + " to start (it resumes from its last checkpoint)"
             : "Preempted jobs " + ids + " to start (they resume from their last checkpoints)";
}

std::string preempting_detail(const std::vector<std::int64_t>& victims) {
  return nlohmann::json{{"preempted", victims}}.dump();
}

}  // namespace tpujobs::service
