// resources.workers: the spec's value, and the launch failure it may lead
// to carried over to the executor (api/job_spec.h).
#include <set>

#include "api/job_spec.h"

namespace tpujobs::api {

using nlohmann::json;

base::Result<std::optional<std::vector<std::int64_t>>> parse_workers(const json& value) {
  static constexpr std::size_t kMaxWorkers = 4096;
  const std::string field = "resources.workers";
  const std::string hint =
      "\"all\" launches on every worker (`--worker=all`); a list of worker indexes such as [0, "
      "1] (`--worker=0,1`) on those only";
  const auto invalid = [](std::string path, std::string message, std::string advice) {
    return base::invalid_fields({{std::move(path), std::move(message), std::move(advice)}});
  };
  if (value.is_string() && value.get_ref<const std::string&>() == "all")
    return std::optional<std::vector<std::int64_t>>();
  if (!value.is_array())
    return invalid(field, "must be \"all\" or a list of worker indexes, got " + value.dump(), hint);
  if (value.empty() || value.size() > kMaxWorkers) {
    return invalid(field,
                   value.empty() ? "names no worker"
                                 : "names more than " + std::to_string(kMaxWorkers) + " workers",
                   hint);
  }
  std::vector<std::int64_t> workers;
  std::set<std::int64_t> seen;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const json& w = value[i];
    const std::string path = field + "[" + std::to_string(i) + "]";
    const bool index = (w.is_number_integer() && w.get<std::int64_t>() >= 0 &&
                        w.get<std::int64_t>() < std::int64_t{kMaxWorkers});
    if (!index) {
      return invalid(path,
                     "must be a worker index (an integer from 0 to " +
                         std::to_string(kMaxWorkers - 1) + "), got " + w.dump(),
                     hint);
    }
    if (!seen.insert(w.get<std::int64_t>()).second)
      return invalid(path, "names worker " + w.dump() + " twice", "name each worker once");
    workers.push_back(w.get<std::int64_t>());
  }
  return std::optional<std::vector<std::int64_t>>(std::move(workers));
}

executor::LaunchFailure launch_failure(const lightning::LaunchFailure& failure) {
  return executor::LaunchFailure{failure.log_lines, failure.type, failure.message, failure.hint};
}

}  // namespace tpujobs::api
