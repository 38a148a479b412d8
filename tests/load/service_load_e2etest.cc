// The load test of issue 7: 256 keep-alive connections for 60 s against the
// real `tpujobs serve` and its embedded PostgreSQL on loopback. 224
// connections are pollers reading a job's status (GET /v1/jobs/{id}) ten
// times a second, 32 are submitters posting a job (POST /v1/jobs) four times
// a second: 2,240 + 128 requests a second offered.
//
// Every host of the pool is drained first, so the submitted jobs stay QUEUED
// and no training competes with the service for the CPUs.
//
// Each connection keeps its own schedule (one request per interval, from a
// random phase); an answer that comes late makes the next request due at
// once. Latency is measured from the moment a request is written (what wrk
// reports, and what the 50 ms bound is about); the latency counted from when
// the request was due is printed beside it, so a stall that delayed the
// requests behind it is visible too (coordinated omission).
//
// Asserted: no 5xx and no transport error; every poll answers 200 and every
// submit 201; every 201 is a job PostgreSQL holds afterwards; the p99 of
// status reads is under 50 ms. A sanitizer build (TPUJOBS_SANITIZED) keeps
// every assertion except the p99 one: its latencies measure ASan, not the
// service. So does a run during which other processes (another test, a
// build) took more than a quarter of the machine's CPU, measured from
// /proc/stat against the service's processes (its PostgreSQL included) and
// this one: its latencies measure the contention.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/e2e/service_process.h"

namespace tpujobs::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kConnections = 256;
constexpr int kSubmitters = 32;  // every 8th connection; the other 224 poll
constexpr std::chrono::milliseconds kPollInterval{100};
constexpr std::chrono::milliseconds kSubmitInterval{250};
constexpr double kStatusP99LimitMs = 50;
// Beyond this share of the machine's CPU taken by other processes during
// the run, the p99 bound is reported, not checked.
constexpr double kOthersShareLimit = 0.25;
// A request unanswered this long counts as a transport error.
constexpr std::chrono::seconds kRequestTimeout{10};

// 60 s; TPUJOBS_LOAD_SECONDS shortens it for a trial run by hand.
std::chrono::seconds run_duration() {
  const char* seconds = std::getenv("TPUJOBS_LOAD_SECONDS");
  return std::chrono::seconds(seconds ? std::atoi(seconds) : 60);
}

// A job that would train in well under a second, if a host were not drained.
json tiny_spec(int n) {
  return {{"name", "load-" + std::to_string(n)},
          {"trainer", {{"devices", 1}, {"max_epochs", 1}}},
          {"model", {{"layers", json::array({{{"type", "linear"}, {"out", 3}}})}}},
          {"data", {{"dataset", "iris"}, {"batch_size", 32}}}};
}

// Latencies in microseconds.
class Samples {
 public:
  void add(Clock::duration d) {
    values_.push_back(static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(d).count()));
  }
  std::size_t size() const { return values_.size(); }
  // The q-quantile in milliseconds (nearest rank), 0 without samples.
  double quantile_ms(double q) {
    if (values_.empty()) return 0;
    std::sort(values_.begin(), values_.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values_.size())));
    return values_[std::clamp<std::size_t>(rank, 1, values_.size()) - 1] / 1000.0;
  }

 private:
  std::vector<std::uint32_t> values_;
};

// What one kind of request saw.
struct Tally {
  Samples from_write;  // written -> answer read
  Samples from_due;    // due by the schedule -> answer read
  std::map<int, std::int64_t> statuses;
  std::int64_t transport_errors = 0;
  std::string first_error;

  std::int64_t count_5xx() const {
    std::int64_t n = 0;
    for (const auto& [status, count] : statuses) n += status >= 500 ? count : 0;
    return n;
  }
  std::string statuses_text() const {
    std::string text;
    for (const auto& [status, count] : statuses)
      text += " " + std::to_string(status) + "x" + std::to_string(count);
    return text;
  }
};

// State shared by every connection; all of them run on one thread.
struct LoadRun {
  tcp::endpoint endpoint;
  Clock::time_point end;
  std::string submit_body;
  std::vector<std::int64_t> job_ids;  // jobs that exist; pollers pick among them
  std::mt19937_64 random{20261121};
  Tally polls;
  Tally submits;
};

// One keep-alive connection sending requests of one kind on its schedule
// until the run's end.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(asio::io_context& io, LoadRun& run, bool submitter, Clock::time_point first_request)
      : stream_(io),
        timer_(io),
        run_(run),
        submitter_(submitter),
        interval_(submitter ? kSubmitInterval : kPollInterval),
        tally_(submitter ? run.submits : run.polls),
        due_(first_request) {}

  void connect() {
    stream_.expires_after(kRequestTimeout);
    stream_.async_connect(run_.endpoint, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->fail(ec, "connect");
      self->send_when_due();
    });
  }

 private:
  void send_when_due() {
    // The run ends on time: requests still due when it ends (a server that
    // fell behind) are not sent.
    if (due_ >= run_.end || Clock::now() >= run_.end) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      return;
    }
    if (Clock::now() >= due_) return send();
    timer_.expires_at(due_);
    timer_.async_wait([self = shared_from_this()](beast::error_code) { self->send(); });
  }

  void send() {
    request_ = {};
    request_.version(11);
    request_.set(bhttp::field::host, "127.0.0.1");
    if (submitter_) {
      request_.method(bhttp::verb::post);
      request_.target("/v1/jobs");
      request_.set(bhttp::field::content_type, "application/json");
      request_.body() = run_.submit_body;
    } else {
      std::uniform_int_distribution<std::size_t> pick(0, run_.job_ids.size() - 1);
      request_.method(bhttp::verb::get);
      request_.target("/v1/jobs/" + std::to_string(run_.job_ids[pick(run_.random)]));
    }
    request_.prepare_payload();
    written_ = Clock::now();
    stream_.expires_after(kRequestTimeout);
    bhttp::async_write(
        stream_, request_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (ec) return self->fail(ec, "write");
          self->response_ = {};
          bhttp::async_read(
              self->stream_, self->buffer_, self->response_,
              [self](beast::error_code read_ec, std::size_t) { self->on_response(read_ec); });
        });
  }

  void on_response(beast::error_code ec) {
    if (ec) return fail(ec, "read");
    const Clock::time_point now = Clock::now();
    tally_.from_write.add(now - written_);
    tally_.from_due.add(now - due_);
    const int status = response_.result_int();
    ++tally_.statuses[status];
    if (submitter_ && status == 201) {
      // Location: /v1/jobs/{id}; pollers read the new job from now on.
      const std::string location(response_[bhttp::field::location]);
      if (location.rfind("/v1/jobs/", 0) == 0)
        run_.job_ids.push_back(std::stoll(location.substr(9)));
    }
    due_ += interval_;
    if (!response_.keep_alive()) return reconnect();
    send_when_due();
  }

  // The failed request is counted and skipped; the next one goes out on a
  // new connection.
  void fail(beast::error_code ec, const char* what) {
    ++tally_.transport_errors;
    if (tally_.first_error.empty()) tally_.first_error = std::string(what) + ": " + ec.message();
    due_ = std::max(due_ + interval_, Clock::now());
    reconnect();
  }

  void reconnect() {
    beast::error_code ignored;
    stream_.socket().close(ignored);
    buffer_.clear();
    if (due_ < run_.end && Clock::now() < run_.end) connect();
  }

  beast::tcp_stream stream_;
  asio::steady_timer timer_;
  LoadRun& run_;
  const bool submitter_;
  const Clock::duration interval_;
  Tally& tally_;
  beast::flat_buffer buffer_;
  bhttp::request<bhttp::string_body> request_;
  bhttp::response<bhttp::string_body> response_;
  Clock::time_point due_;      // when the next request is meant to go out
  Clock::time_point written_;  // when the current one was written
};

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// tpujobs_jobs{state="QUEUED"} from /metrics: a COUNT in PostgreSQL.
std::int64_t stored_queued_jobs(const ServiceProcess& service) {
  const std::string metrics = service.get("/metrics").body;
  std::smatch match;
  if (!std::regex_search(metrics, match, std::regex(R"(tpujobs_jobs\{state="QUEUED"\} ([0-9]+))")))
    return -1;
  return std::stoll(match[1]);
}

void print_kind(const char* label, Tally& tally, double seconds) {
  const double answered = static_cast<double>(tally.from_write.size());
  std::printf(
      "  %-30s %7.0f answers %7.1f/s | p50 %6.2f  p90 %6.2f  p99 %7.2f  max %7.2f ms | "
      "from due: p99 %7.2f ms | status%s\n",
      label, answered, answered / seconds, tally.from_write.quantile_ms(0.50),
      tally.from_write.quantile_ms(0.90), tally.from_write.quantile_ms(0.99),
      tally.from_write.quantile_ms(1.0), tally.from_due.quantile_ms(0.99),
      tally.statuses_text().c_str());
}

TEST(Load, PollersAndSubmittersOn256Connections) {
  ServiceProcess service;
  ASSERT_EQ(service.start(), "");

  // Submitted jobs must not start: drain every host.
  const json pool = service.get("/v1/pool").json();
  ASSERT_TRUE(pool.contains("hosts") && !pool["hosts"].empty()) << pool.dump();
  for (const json& host : pool["hosts"]) {
    const HttpResponse drained =
        service.post("/v1/pool/hosts/" + host["name"].get<std::string>() + ":drain");
    ASSERT_EQ(drained.status, 200) << drained.body;
  }

  LoadRun run;
  run.endpoint = tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(service.port()));
  run.submit_body = tiny_spec(0).dump();
  // Jobs for the pollers to read from the first second on.
  for (int i = 1; i <= kConnections; ++i) {
    const HttpResponse created = service.post("/v1/jobs", tiny_spec(i).dump());
    ASSERT_EQ(created.status, 201) << created.body;
    EXPECT_EQ(created.json().value("state", ""), "QUEUED") << created.body;
    run.job_ids.push_back(created.json()["id"].get<std::int64_t>());
  }
  const std::size_t presubmitted = run.job_ids.size();

  const std::string load_before = load_average();
  const double service_cpu_before = cpu_seconds(service.pid());
  const double client_cpu_before = cpu_seconds(getpid());
  // The service's own processes: it and its embedded PostgreSQL (which
  // pg_ctl starts as a daemon, not as the service's child).
  const pid_t postmaster = service.embedded_postmaster_pid();
  ASSERT_GT(postmaster, 0) << "no embedded PostgreSQL in " << service.state_dir();
  auto service_tree_cpu = [&] {
    return tree_cpu_seconds(service.pid()) + tree_cpu_seconds(postmaster);
  };
  const double tree_cpu_before = service_tree_cpu();
  const double machine_busy_before = machine_busy_cpu_seconds();
  asio::io_context io;
  const Clock::time_point start = Clock::now();
  run.end = start + run_duration();
  std::uniform_int_distribution<int> phase_ms(0, static_cast<int>(kPollInterval.count()) - 1);
  for (int i = 0; i < kConnections; ++i) {
    const bool submitter = i % (kConnections / kSubmitters) == 0;
    std::make_shared<Connection>(io, run, submitter,
                                 start + std::chrono::milliseconds(phase_ms(run.random)))
        ->connect();
  }
  io.run();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double service_cpu = cpu_seconds(service.pid()) - service_cpu_before;
  const double client_cpu = cpu_seconds(getpid()) - client_cpu_before;
  const double tree_cpu = service_tree_cpu() - tree_cpu_before;
  const double others_cpu =
      std::max(0.0, machine_busy_cpu_seconds() - machine_busy_before - tree_cpu - client_cpu);
  const double capacity = seconds * std::max(1u, std::thread::hardware_concurrency());

  std::printf(
      "load test: %d connections (%d pollers every %lld ms, %d submitters every %lld ms) for %.1f "
      "s%s\n",
      kConnections, kConnections - kSubmitters, static_cast<long long>(kPollInterval.count()),
      kSubmitters, static_cast<long long>(kSubmitInterval.count()), seconds,
#ifdef TPUJOBS_SANITIZED
      " (sanitizer build: latencies not representative)"
#else
      ""
#endif
  );
  print_kind("status reads GET /v1/jobs/{id}", run.polls, seconds);
  print_kind("submits POST /v1/jobs", run.submits, seconds);
  const double answered =
      static_cast<double>(run.polls.from_write.size() + run.submits.from_write.size());
  std::printf(
      "  all: %.0f answers, %.1f/s, transport errors %lld; CPU: service %.1f s, with its "
      "PostgreSQL %.1f s, client %.1f s, other processes %.1f s of the machine's %.0f (%.0f%%); "
      "load average %s before, %s after\n",
      answered, answered / seconds,
      static_cast<long long>(run.polls.transport_errors + run.submits.transport_errors),
      service_cpu, tree_cpu, client_cpu, others_cpu, capacity, 100 * others_cpu / capacity,
      load_before.c_str(), load_average().c_str());
  std::fflush(stdout);

  EXPECT_EQ(run.polls.count_5xx(), 0) << run.polls.statuses_text();
  EXPECT_EQ(run.submits.count_5xx(), 0) << run.submits.statuses_text();
  EXPECT_EQ(run.polls.transport_errors, 0) << run.polls.first_error;
  EXPECT_EQ(run.submits.transport_errors, 0) << run.submits.first_error;
  const auto polled = static_cast<std::int64_t>(run.polls.from_write.size());
  const auto submitted = static_cast<std::int64_t>(run.submits.from_write.size());
  const auto created = static_cast<std::int64_t>(run.job_ids.size() - presubmitted);
  EXPECT_GT(polled, 0);
  EXPECT_GT(created, 0);
  EXPECT_EQ(run.polls.statuses[200], polled)
      << "every read of an existing job is a 200:" << run.polls.statuses_text();
  EXPECT_EQ(run.submits.statuses[201], submitted)
      << "every submit is a 201:" << run.submits.statuses_text();
  EXPECT_EQ(created, run.submits.statuses[201]) << "every 201 names its job in Location";

  // Every acknowledged job is stored, and nothing else.
  EXPECT_EQ(stored_queued_jobs(service), static_cast<std::int64_t>(run.job_ids.size()));
  EXPECT_EQ(service.get("/readyz").status, 200);

#ifdef TPUJOBS_SANITIZED
  std::printf("sanitizer build: the p99 < %.0f ms bound is not checked\n", kStatusP99LimitMs);
#else
  if (others_cpu > kOthersShareLimit * capacity) {
    std::printf(
        "other processes took %.0f%% of the machine's CPU during the run (over %.0f%%): the p99 < "
        "%.0f ms bound is not checked\n",
        100 * others_cpu / capacity, 100 * kOthersShareLimit, kStatusP99LimitMs);
  } else {
    EXPECT_LT(run.polls.from_write.quantile_ms(0.99), kStatusP99LimitMs)
        << "p99 of GET /v1/jobs/{id}";
  }
#endif
  EXPECT_EQ(service.stop(), 0) << service.log();
}

}  // namespace
}  // namespace tpujobs::testing
