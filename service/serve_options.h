// The command lines of `tpujobs serve` and `tpujobs agent`, declared once
// with CLI11: each option bound to the field it fills, and --help generated
// from the same declarations.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "api/stream_slots.h"
#include "base/result.h"

namespace tpujobs::service {

struct ServeOptions {
  std::string address = "127.0.0.1";
  int port = 8080;
  std::string pool = "v3-32";
  std::string database_url;         // TPUJOBS_DATABASE_URL when not given
  std::string state_dir = "state";  // TPUJOBS_STATE_DIR when not given
  int io_threads = 2;
  int db_timeout_seconds = 10;
  int workers = 0;             // 0: the CPU count
  int training_nice = 10;      // AgentOptions::training_nice
  int job_output_rate = 2000;  // AgentOptions::output_per_second
  std::size_t max_body = 1 << 20;
  std::string name;
  int agent_silence_seconds = 10;
  int leader_nice = -10;                          // SchedulerLeaderOptions::thread_nice
  std::optional<std::chrono::seconds> retention;  // none: keep every job's outputs
  std::chrono::seconds fair_share_half_life{3600};
  std::string collective_address;
  int collective_timeout_seconds = 30;
  std::vector<std::string> notify_allow;  // added to the stored allow-list at start
  int first_byte_timeout_seconds = 5;
  int stream_buffer_limit = 4 << 20;
  api::StreamLimits followers{16, 1024};
  api::StreamLimits waiters{64, 4096};
  api::StreamLimits wide_requests{4, 64};  // lists of more than 50 jobs, waiting or running
  // Per-tenant limits' defaults; 0: no bound.
  int default_max_queued = 10000;
  int default_max_array_size = 256;
  int default_submits_per_second = 0;
  int default_submit_burst = 0;
  int default_requests_per_second = 0;
  int default_request_burst = 0;
  // Options given that no longer do anything, each with why: said on stderr.
  std::vector<std::string> ignored;
};

enum class ServeCommand { kServe, kAgent };

struct ServeLine {
  ServeOptions options;
  bool help = false;  // -h / --help: print serve_usage() and stop
};

// The command line after the command's name; kInvalid with the message
// ("--db-timeout must be an integer from 1 to 3600") on a usage error.
// Reads TPUJOBS_DATABASE_URL and TPUJOBS_STATE_DIR for what is not given.
base::Result<ServeLine> parse_serve_line(ServeCommand command,
                                         const std::vector<std::string>& args);

// The command's --help.
std::string serve_usage(ServeCommand command);

}  // namespace tpujobs::service
