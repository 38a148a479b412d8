#include "api/usage.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

#include "api/job_spec.h"

namespace tpujobs::api {

using nlohmann::json;

std::optional<std::chrono::system_clock::time_point> parse_usage_time(
    std::string_view text, std::chrono::system_clock::time_point now) {
  if (text.empty() || text.size() > 40) return std::nullopt;
  if (std::optional<std::chrono::milliseconds> age = parse_duration(text)) return now - *age;
  const std::string copy(text);
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, used = 0;
  if (std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &used) != 6 ||
      used != 19) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(19);
  double fraction = 0;
  if (!rest.empty() && rest.front() == '.') {
    std::size_t digits = 1;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == 1) return std::nullopt;
    fraction = std::stod("0" + std::string(rest.substr(0, digits)));
    rest = rest.substr(digits);
  }
  if (rest != "Z" && rest != "+00:00") return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  std::tm utc{};
  utc.tm_year = year - 1900;
  utc.tm_mon = month - 1;
  utc.tm_mday = day;
  utc.tm_hour = hour;
  utc.tm_min = minute;
  utc.tm_sec = second;
  const std::time_t seconds = timegm(&utc);
  return std::chrono::system_clock::from_time_t(seconds) +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(fraction));
}

std::string rfc3339(std::chrono::system_clock::time_point time) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char out[64];
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms % 1000));
  return out;
}

json usage_json(const UsageQuery& query, const std::vector<UsageRow>& rows) {
  struct Group {
    double core_seconds = 0;
    std::int64_t jobs = 0;
    json by_generation = json::object();
  };
  std::map<std::string, Group> groups;
  double total = 0;
  for (const UsageRow& row : rows) {
    Group& g = groups[row.group];
    g.core_seconds += row.core_seconds;
    // A job counts once per generation it ran on; the group's count is the
    // sum (a job moved between generations by a retry counts twice).
    g.jobs += row.jobs;
    g.by_generation[row.generation] = row.core_seconds;
    total += row.core_seconds;
  }
  std::vector<std::pair<std::string, Group>> ordered(groups.begin(), groups.end());
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.second.core_seconds > b.second.core_seconds;
  });
  json out_groups = json::array();
  for (auto& [name, g] : ordered) {
    out_groups.push_back({{"group", name},
                          {"core_seconds", g.core_seconds},
                          {"jobs", g.jobs},
                          {"by_generation", g.by_generation}});
  }
  json out = {{"from", rfc3339(query.from)},
              {"to", rfc3339(query.to)},
              {"group_by", query.by_label ? "label" : "tenant"},
              {"total_core_seconds", total},
              {"groups", out_groups}};
  if (query.label_key) out["label"] = *query.label_key;
  return out;
}

std::string usage_csv(const std::vector<UsageRow>& rows) {
  auto field = [](const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  };
  std::string csv = "group,generation,jobs,core_seconds\r\n";
  for (const UsageRow& row : rows) {
    char seconds[64];
    std::snprintf(seconds, sizeof seconds, "%.3f", row.core_seconds);
    csv += field(row.group) + "," + field(row.generation) + "," + std::to_string(row.jobs) + "," +
           seconds + "\r\n";
  }
  return csv;
}

}  // namespace tpujobs::api
