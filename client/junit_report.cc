#include "client/junit_report.h"

#include <cstdio>

#include "client/options.h"

namespace tpujobs::client {
namespace {

using nlohmann::json;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

std::string string_field(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<double> number_field(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string gate_name(const GateOutcome& gate) {
  std::string name = "expect " + gate.metric;
  if (gate.min) name += " >= " + number(*gate.min);
  if (gate.min && gate.max) name += " and";
  if (gate.max) name += " <= " + number(*gate.max);
  return name;
}

std::string tail_text(const std::vector<std::string>& log_tail) {
  std::string text;
  for (const std::string& line : log_tail) text += line + "\n";
  return text;
}

}  // namespace

bool is_terminal_state(const std::string& state) {
  return state == "SUCCEEDED" || state == "FAILED" || state == "CANCELLED";
}

std::optional<int> exit_code_for_job(const json& job) {
  const std::string state = string_field(job, "state");
  if (state == "SUCCEEDED") return kExitSucceeded;
  if (state == "FAILED") return kExitJobFailed;
  if (state == "CANCELLED") return kExitCancelled;
  return std::nullopt;
}

std::vector<GateOutcome> evaluate_gates(const json& job) {
  std::vector<GateOutcome> gates;
  const json spec = job.is_object() ? job.value("spec", json::object()) : json::object();
  const json expect = spec.is_object() ? spec.value("expect", json::object()) : json::object();
  if (!expect.is_object()) return gates;
  const json metrics = job.is_object() && job.contains("metrics") ? job["metrics"] : json(nullptr);
  const std::string state = string_field(job, "state");
  for (const auto& [metric, bound] : expect.items()) {  // nlohmann objects iterate in key order
    GateOutcome gate;
    gate.metric = metric;
    gate.min = number_field(bound, "min");
    gate.max = number_field(bound, "max");
    gate.value = number_field(metrics, metric.c_str());
    if (!gate.value) {
      if (state == "SUCCEEDED" ||
          (state == "FAILED" &&
           string_field(job.value("error", json(nullptr)), "type") == "EXPECTATION_FAILED")) {
        gate.message = "the job did not report the metric " + metric;
      } else {
        gate.skipped = true;
        gate.message = state.empty() ? "the job has no state"
                                     : "the job is " + state + " without a final " + metric;
      }
    } else if (!is_terminal_state(state)) {
      gate.skipped = true;
      gate.message =
          "the job is still " + state + " (" + metric + " = " + number(*gate.value) + " so far)";
    } else if (gate.min && !(*gate.value >= *gate.min)) {
      gate.message =
          metric + " = " + number(*gate.value) + " is below the minimum " + number(*gate.min);
    } else if (gate.max && !(*gate.value <= *gate.max)) {
      gate.message =
          metric + " = " + number(*gate.value) + " is above the maximum " + number(*gate.max);
    } else if (state != "SUCCEEDED" && state != "FAILED") {
      // A cancelled job's metrics are those of an unfinished run.
      gate.skipped = true;
      gate.message = "the job was " + state + " before training finished";
    } else {
      gate.passed = true;
    }
    gates.push_back(std::move(gate));
  }
  return gates;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 has no way to write other control characters, even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string junit_report(const json& job, const std::vector<std::string>& log_tail, bool timed_out,
                         double elapsed_seconds) {
  const std::string state = string_field(job, "state");
  const std::string name = string_field(job, "name").empty() ? "job" : string_field(job, "name");
  const std::string id = job.is_object() && job.contains("id") ? job["id"].dump() : "?";
  const json error = job.is_object() && job.contains("error") ? job["error"] : json(nullptr);
  const std::string time = number(elapsed_seconds);
  const std::vector<GateOutcome> gates = evaluate_gates(job);

  // The outcome test case.
  std::string failure_type;
  std::string failure_message;
  if (timed_out) {
    failure_type = "TIMEOUT";
    failure_message = "gave up waiting after " + time + "s; job " + id + " is still " + state;
  } else if (state == "FAILED" || state == "CANCELLED") {
    failure_type = string_field(error, "type").empty() ? state : string_field(error, "type");
    failure_message = string_field(error, "message").empty() ? "job " + id + " " + state
                                                             : string_field(error, "message");
  } else if (state != "SUCCEEDED") {
    failure_type = "NOT_FINISHED";
    failure_message = "job " + id + " is " + (state.empty() ? "in an unknown state" : state);
  }
  int failures = failure_type.empty() ? 0 : 1;
  int skipped = 0;
  for (const GateOutcome& gate : gates) {
    if (gate.skipped)
      ++skipped;
    else if (!gate.passed)
      ++failures;
  }
  const std::size_t tests = 1 + gates.size();

  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  const std::string counts = " tests=\"" + std::to_string(tests) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"0\" skipped=\"" +
                             std::to_string(skipped) + "\" time=\"" + time + "\"";
  xml += "<testsuites name=\"tpujobs\"" + counts + ">\n";
  xml += "  <testsuite name=\"" + xml_escape("tpujobs." + name) + "\"" + counts + ">\n";
  xml += "    <properties>\n";
  xml += "      <property name=\"job_id\" value=\"" + xml_escape(id) + "\"/>\n";
  xml += "      <property name=\"state\" value=\"" + xml_escape(state) + "\"/>\n";
  xml += "    </properties>\n";

  const std::string classname = xml_escape("tpujobs." + name);
  xml += "    <testcase classname=\"" + classname + "\" name=\"training run\" time=\"" + time +
         "\">\n";
  if (!failure_type.empty()) {
    std::string body = failure_message + "\n";
    if (const std::string hint = string_field(error, "hint"); !hint.empty())
      body += "hint: " + hint + "\n";
    if (!log_tail.empty()) body += "\nlast log lines:\n" + tail_text(log_tail);
    xml += "      <failure type=\"" + xml_escape(failure_type) + "\" message=\"" +
           xml_escape(failure_message) + "\">" + xml_escape(body) + "</failure>\n";
  }
  // A failure carries the log tail already.
  if (!log_tail.empty() && failure_type.empty())
    xml += "      <system-out>" + xml_escape(tail_text(log_tail)) + "</system-out>\n";
  xml += "    </testcase>\n";

  for (const GateOutcome& gate : gates) {
    xml += "    <testcase classname=\"" + classname + ".expect\" name=\"" +
           xml_escape(gate_name(gate)) + "\" time=\"0\">\n";
    if (gate.value) {
      xml += "      <properties><property name=\"value\" value=\"" + number(*gate.value) +
             "\"/></properties>\n";
    }
    if (gate.skipped) {
      xml += "      <skipped message=\"" + xml_escape(gate.message) + "\"/>\n";
    } else if (!gate.passed) {
      std::string body = gate.message + "\n";
      if (!log_tail.empty()) body += "\nlast log lines:\n" + tail_text(log_tail);
      xml += "      <failure type=\"EXPECTATION_FAILED\" message=\"" + xml_escape(gate.message) +
             "\">" + xml_escape(body) + "</failure>\n";
    }
    xml += "    </testcase>\n";
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

std::string junit_array_report(std::int64_t array_id, const std::vector<json>& children,
                               const std::vector<bool>& timed_out, double elapsed_seconds) {
  const std::string name = children.empty() || string_field(children.front(), "name").empty()
                               ? "array"
                               : string_field(children.front(), "name");
  const std::string classname = xml_escape("tpujobs." + name);
  std::string cases;
  int failures = 0;
  for (std::size_t i = 0; i < children.size(); ++i) {
    const json& job = children[i];
    const json array = job.is_object() ? job.value("array", json::object()) : json::object();
    const std::string values =
        array.is_object() && array.contains("values") ? array["values"].dump() : "{}";
    const std::string index =
        array.is_object() && array.contains("index") ? array["index"].dump() : std::to_string(i);
    const std::string state = string_field(job, "state");
    const std::string id = job.is_object() && job.contains("id") ? job["id"].dump() : "?";
    std::string failure_type;
    std::string failure_message;
    if (i < timed_out.size() && timed_out[i]) {
      failure_type = "TIMEOUT";
      failure_message = "gave up waiting; job " + id + " is still " + state;
    } else if (state != "SUCCEEDED") {
      const json error = job.is_object() && job.contains("error") ? job["error"] : json(nullptr);
      failure_type = string_field(error, "type").empty() ? (state.empty() ? "NOT_FINISHED" : state)
                                                         : string_field(error, "type");
      failure_message = string_field(error, "message").empty() ? "job " + id + " is " + state
                                                               : string_field(error, "message");
    } else {
      for (const GateOutcome& gate : evaluate_gates(job)) {
        if (gate.skipped || gate.passed) continue;
        failure_type = "EXPECTATION_FAILED";
        failure_message += (failure_message.empty() ? "" : "; ") + gate.message;
      }
    }
    cases += "    <testcase classname=\"" + classname + "\" name=\"" +
             xml_escape("child " + index + " " + values) + "\" time=\"0\">\n";
    cases += "      <properties>\n";
    cases += "        <property name=\"job_id\" value=\"" + xml_escape(id) + "\"/>\n";
    cases += "        <property name=\"state\" value=\"" + xml_escape(state) + "\"/>\n";
    if (job.is_object() && job.contains("metrics") && job["metrics"].is_object()) {
      for (const auto& [metric, value] : job["metrics"].items()) {
        if (value.is_number()) {
          cases += "        <property name=\"" + xml_escape(metric) + "\" value=\"" +
                   number(value.get<double>()) + "\"/>\n";
        }
      }
    }
    cases += "      </properties>\n";
    if (!failure_type.empty()) {
      ++failures;
      cases += "      <failure type=\"" + xml_escape(failure_type) + "\" message=\"" +
               xml_escape(failure_message) + "\">" + xml_escape(failure_message) + "</failure>\n";
    }
    cases += "    </testcase>\n";
  }
  const std::string counts = " tests=\"" + std::to_string(children.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"0\" skipped=\"0\" time=\"" +
                             number(elapsed_seconds) + "\"";
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += "<testsuites name=\"tpujobs\"" + counts + ">\n";
  xml += "  <testsuite name=\"" + xml_escape("tpujobs." + name) + "\"" + counts + ">\n";
  xml += "    <properties>\n";
  xml += "      <property name=\"array_id\" value=\"" + std::to_string(array_id) + "\"/>\n";
  xml += "    </properties>\n";
  xml += cases;
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

}  // namespace tpujobs::client
