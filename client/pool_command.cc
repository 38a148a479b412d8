// `tpujobs pool`: the hosts, their cores and jobs, the generations and the
// agents (a standalone serve's own one, or a cluster's).
#include <algorithm>
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class PoolCommand final : public Session {
 public:
  using Session::Session;

  // Each generation's layout (GET /v1/pool "generations"): hosts, devices
  // per host, the largest slice they form and its topology, the host's own
  // block of chips, HBM (and what XLA reports usable), MXU, bf16 peak.
  void print_generations(const json& generations) {
    if (!generations.is_array() || generations.empty()) return;
    std::vector<std::vector<std::string>> rows = {{"GENERATION", "HOSTS", "DEVICES/HOST", "SLICE",
                                                   "TOPOLOGY", "HOST BLOCK", "HBM/DEVICE",
                                                   "XLA HBM", "MXU", "BF16 TFLOP/S"}};
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    for (const json& g : generations) {
      const std::string topology = string_of(g, "topology");
      const std::string mxu = string_of(g, "mxu_dim");
      rows.push_back(
          {string_of(g, "generation"), string_of(g, "hosts"), string_of(g, "devices_per_host"),
           string_of(g, "slice"), topology.empty() ? "-" : topology,
           g.value("host_block", json()).is_string() ? g["host_block"].get<std::string>() : "-",
           number_text(g.value("hbm_bytes_per_device", 0.0) / kGiB, "%.0f") + " GiB",
           number_text(g.value("hbm_reported_bytes", 0.0) / kGiB, "%.2f") + "G", mxu + "x" + mxu,
           number_text(g.value("peak_bf16_flops_per_device", 0.0) / 1e12, "%.0f")});
    }
    print_table(rows);
  }

  int run() {
    HttpResponse response = call({"GET", "/v1/pool", "", {}});
    if (response.status != 200) return report_failure(response, "reading the pool");
    const json view = json::parse(response.body, nullptr, false);
    if (line_.json) {
      out_ << view.dump(2) << "\n";
      return kExitSucceeded;
    }
    // Each host names its agent, and the agents are listed below.
    std::vector<std::vector<std::string>> rows = {
        {"HOST", "AGENT", "GENERATION", "HEALTH", "CORES", "IN USE", "JOBS"}};
    for (const json& host : view.value("hosts", json::array())) {
      std::vector<std::string> jobs;
      for (const json& core : host.value("cores", json::array())) {
        const std::string job = string_of(core, "job");
        if (!job.empty() && std::find(jobs.begin(), jobs.end(), job) == jobs.end())
          jobs.push_back(job);
      }
      std::string job_text;
      for (const std::string& j : jobs) job_text += (job_text.empty() ? "" : ",") + j;
      const std::string agent = string_of(host, "agent");
      const std::string state = string_of(host, "agent_state");
      rows.push_back({string_of(host, "name"),
                      agent.empty()                       ? "-"
                      : state.empty() || state == "alive" ? agent
                                                          : agent + " (" + state + ")",
                      string_of(host, "generation"), string_of(host, "health"),
                      string_of(host, "devices"), string_of(host, "cores_in_use"),
                      job_text.empty() ? "-" : job_text});
    }
    print_table(rows);
    const double utilization = view.value("utilization", 0.0);
    out_ << view.value("total_cores", 0) << " cores, " << view.value("used_cores", 0) << " in use ("
         << number_text(100 * utilization, "%.0f") << "%), " << view.value("healthy_cores", 0)
         << " healthy; " << view.value("running_jobs", 0) << " jobs running, "
         << view.value("queued_jobs", 0) << " queued\n";
    print_generations(view.value("generations", json::array()));
    const json listed = view.value("agents", json::array());
    if (listed.empty()) {
      out_ << "No agent has registered yet: start one with `tpujobs agent`.\n";
    } else {  // who runs which hosts
      std::vector<std::vector<std::string>> agents = {
          {"AGENT", "STATE", "LAST HEARTBEAT", "HOSTS", "RUNNING JOBS"}};
      for (const json& agent : listed) {
        std::string hosts, running;
        for (const json& h : agent.value("hosts", json::array()))
          hosts += (hosts.empty() ? "" : ",") + h.get<std::string>();
        for (const json& j : agent.value("running_jobs", json::array()))
          running += (running.empty() ? "" : ",") + j.dump();
        agents.push_back({string_of(agent, "name"), string_of(agent, "state"),
                          string_of(agent, "last_heartbeat"), hosts.empty() ? "-" : hosts,
                          running.empty() ? "-" : running});
      }
      print_table(agents);
    }
    return kExitSucceeded;
  }
};

}  // namespace

int run_pool_command(const CommandLine& line, const ClientContext& context) {
  return PoolCommand(line, context).run();
}

}  // namespace tpujobs::client
