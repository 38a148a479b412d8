// Job notifications end to end (issue 17): a loopback HTTP receiver in this
// process, the real `tpujobs serve` (and in cluster mode two replicas and an
// agent on one PostgreSQL). What a receiver's owner would check: the body
// is the job's view, the signature verifies with the tenant's secret
// (computed here with the openssl command line, not the service's code), a
// failing receiver is retried and every attempt is recorded, a delivery
// survives a restart, a URL off the allow-list is refused at submit, and
// with several replicas each event is delivered once. Every wait is on a
// state, with a generous deadline.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "../service/openssl_hmac.h"
#include "jobs_api.h"
#include "own_postgres.h"
#include "service_process.h"
#include "training_jobs.h"

namespace tpujobs::testing {
namespace {

using nlohmann::json;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A webhook receiver on 127.0.0.1: records every POST and answers with the
// status `answer` gives for the n-th request (1-based).
class Receiver {
 public:
  struct Delivery {
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string body;
    int answered = 0;
  };

  explicit Receiver(std::function<int(int)> answer)
      : answer_(std::move(answer)), acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~Receiver() {
    stopping_ = true;
    beast::error_code ignored;
    tcp::socket wake(io_);
    wake.connect(acceptor_.local_endpoint(), ignored);  // unblocks accept()
    thread_.join();
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  std::vector<Delivery> deliveries() const {
    std::lock_guard lock(mutex_);
    return deliveries_;
  }

 private:
  void serve() {
    while (!stopping_) {
      tcp::socket socket(io_);
      beast::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stopping_) continue;
      beast::flat_buffer buffer;
      http::request<http::string_body> request;
      http::read(socket, buffer, request, ec);
      if (ec) continue;
      Delivery delivery;
      for (const auto& field : request) {
        std::string name(field.name_string());
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        delivery.headers[name] = std::string(field.value());
      }
      delivery.body = request.body();
      int n = 0;
      {
        std::lock_guard lock(mutex_);
        n = static_cast<int>(deliveries_.size()) + 1;
      }
      delivery.answered = answer_(n);
      {
        std::lock_guard lock(mutex_);
        deliveries_.push_back(delivery);
      }
      http::response<http::string_body> response(static_cast<http::status>(delivery.answered), 11);
      response.body() = "ok";
      response.prepare_payload();
      http::write(socket, response, ec);
      socket.shutdown(tcp::socket::shutdown_both, ec);
    }
  }

  std::function<int(int)> answer_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<Delivery> deliveries_;
  std::thread thread_;
};

json notifying(json spec, int port, json events = json::array({"finished"})) {
  spec["notify"] = {{"url", "http://127.0.0.1:" + std::to_string(port) + "/hooks/tpujobs"},
                    {"events", std::move(events)}};
  return spec;
}

json notifications(const ServiceProcess& service, std::int64_t id) {
  return service.get("/v1/jobs/" + std::to_string(id) + "/notifications").json();
}

// Polls the job's deliveries until `done` holds (or the deadline passes).
json wait_notifications(const ServiceProcess& service, std::int64_t id,
                        const std::function<bool(const json&)>& done) {
  return poll_until([&] { return notifications(service, id); },
                    [&](const json& view) {
                      return view.contains("notifications") && done(view["notifications"]);
                    });
}

bool all_settled(const json& list, std::size_t count) {
  if (list.size() != count) return false;
  for (const json& n : list)
    if (n["status"] == "pending") return false;
  return true;
}

std::string rotate_secret(const ServiceProcess& service) {
  HttpResponse r = service.post("/v1/notifications/secret");
  EXPECT_EQ(r.status, 201) << r.body;
  return r.json().value("secret", "");
}

TEST(NotificationsSingleProcess, SignedRetriedRecordedAndRefusedOffTheAllowList) {
  std::atomic<bool> failing{true};
  // The first request fails with 500; the rest succeed.
  Receiver receiver([](int n) { return n == 1 ? 500 : 200; });
  // A second receiver answers 503 until told otherwise (the restart case).
  Receiver flaky([&](int) { return failing ? 503 : 200; });
  ServiceProcess::Options options;
  options.pool = "v3-8";
  options.extra_args = {"--notify-allow", "127.0.0.1:" + std::to_string(receiver.port()),
                        "--notify-allow", "http://127.0.0.1:" + std::to_string(flaky.port()) + "/"};
  ServiceProcess service(options);
  ASSERT_EQ(service.start(), "");

  // Without a secret the tenant cannot ask for notifications.
  HttpResponse no_secret =
      service.post("/v1/jobs", notifying(short_job_spec("x"), receiver.port()).dump());
  ASSERT_EQ(no_secret.status, 422) << no_secret.body;
  EXPECT_EQ(no_secret.json()["errors"][0]["field"], "notify") << no_secret.body;
  const std::string secret = rotate_secret(service);
  ASSERT_EQ(secret.rfind("tpjn_", 0), 0u) << secret;

  // A URL off the allow-list is refused at submit, naming the field.
  HttpResponse refused = service.post("/v1/jobs", notifying(short_job_spec("x"), 9).dump());
  ASSERT_EQ(refused.status, 422) << refused.body;
  EXPECT_EQ(refused.json()["errors"][0]["field"], "notify.url") << refused.body;
  EXPECT_NE(refused.json()["errors"][0]["hint"].get<std::string>().find("--notify-allow"),
            std::string::npos);

  const std::int64_t id = submit(service, notifying(short_job_spec("hooked"), receiver.port()));
  ASSERT_EQ(service.wait_terminal(id)["state"], "SUCCEEDED");
  const json list =
      wait_notifications(service, id, [](const json& l) { return all_settled(l, 1); });
  ASSERT_EQ(list["notifications"].size(), 1u) << list.dump();
  const json& delivery = list["notifications"][0];
  EXPECT_EQ(delivery["event"], "finished");
  EXPECT_EQ(delivery["state"], "SUCCEEDED");
  EXPECT_EQ(delivery["status"], "delivered") << delivery.dump();
  ASSERT_EQ(delivery["attempts"].size(), 2u) << delivery.dump();
  EXPECT_EQ(delivery["attempts"][0]["status_code"], 500);
  EXPECT_EQ(delivery["attempts"][0]["error"], "the receiver answered 500");
  EXPECT_EQ(delivery["attempts"][1]["status_code"], 200);

  // What the receiver saw: the same signed body twice, the job's view.
  const std::vector<Receiver::Delivery> got = receiver.deliveries();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, got[1].body);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].headers.at("x-tpujobs-event"), "finished");
    EXPECT_EQ(got[i].headers.at("x-tpujobs-delivery"), delivery["id"].dump());
    EXPECT_EQ(got[i].headers.at("x-tpujobs-attempt"), std::to_string(i + 1));
    EXPECT_EQ(got[i].headers.at("content-type"), "application/json");
    const std::string expected = openssl_hmac(secret, got[i].body);
    ASSERT_EQ(expected.size(), 64u) << "the openssl command line computes the HMAC";
    EXPECT_EQ(got[i].headers.at("x-tpujobs-signature"), "sha256=" + expected);
  }
  const json body = json::parse(got[0].body, nullptr, false);
  const json view = job_view(service, id);
  ASSERT_TRUE(body.is_object()) << got[0].body;
  for (const char* key : {"id", "name", "state", "tenant", "created_at", "started_at",
                          "finished_at", "result", "spec"}) {
    EXPECT_EQ(body[key], view[key]) << key;
  }
  const std::string metrics = service.get("/metrics").body;
  EXPECT_NE(metrics.find("tpujobs_notification_attempts_total{outcome=\"delivered\"} 1\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("tpujobs_notification_attempts_total{outcome=\"retry\"} 1\n"),
            std::string::npos);
  // A rotated secret signs later deliveries; the old one no longer verifies.
  EXPECT_NE(rotate_secret(service), secret);

  // A delivery pending when the service stops is sent by the next start.
  const std::int64_t later = submit(service, notifying(short_job_spec("later"), flaky.port()));
  const json first_try = wait_notifications(
      service, later, [](const json& l) { return l.size() == 1 && !l[0]["attempts"].empty(); });
  ASSERT_EQ(first_try["notifications"][0]["attempts"][0]["status_code"], 503) << first_try.dump();
  ASSERT_EQ(service.stop(), 0);
  failing = false;
  ASSERT_EQ(service.start(), "");
  const json settled =
      wait_notifications(service, later, [](const json& l) { return all_settled(l, 1); });
  const json& after = settled["notifications"][0];
  EXPECT_EQ(after["status"], "delivered") << settled.dump();
  const json& attempts = after["attempts"];
  ASSERT_GE(attempts.size(), 2u);
  EXPECT_EQ(attempts.back()["status_code"], 200);
  EXPECT_NE(attempts.front()["sender"], attempts.back()["sender"])
      << "the restarted process (another pid) sent it: " << settled.dump();
}

TEST(NotificationsCluster, TwoReplicasDeliverEachEventOnce) {
  OwnPostgres database{"tpujobs-notify-"};
  ASSERT_EQ(database.error(), "");
  Receiver receiver([](int) { return 200; });
  ServiceProcess replica_a(replica_options(
      database, "replica-a", {"--notify-allow", "127.0.0.1:" + std::to_string(receiver.port())}));
  ASSERT_EQ(replica_a.start(), "");
  ServiceProcess replica_b(replica_options(database, "replica-b"));
  ASSERT_EQ(replica_b.start(), "");
  ServiceProcess agent(agent_options(database, "agent-1"));
  ASSERT_EQ(agent.start(), "");

  // The allow-list replica a stored, and the secret made through b, are
  // every replica's.
  EXPECT_EQ(replica_b.get("/v1/notifications/allowlist").json()["entries"][0],
            "127.0.0.1:" + std::to_string(receiver.port()));
  const std::string secret = rotate_secret(replica_b);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 4; ++i) {
    const ServiceProcess& via = i % 2 ? replica_b : replica_a;
    ids.push_back(submit(via, notifying(short_job_spec("hooked-" + std::to_string(i)),
                                        receiver.port(), json::array({"started", "finished"}))));
  }
  for (std::int64_t id : ids) {
    ASSERT_EQ(replica_a.wait_terminal(id)["state"], "SUCCEEDED");
    const json list =
        wait_notifications(replica_b, id, [](const json& l) { return all_settled(l, 2); });
    ASSERT_EQ(list["notifications"].size(), 2u) << list.dump();
    for (const json& n : list["notifications"]) {
      EXPECT_EQ(n["status"], "delivered") << n.dump();
      EXPECT_EQ(n["attempts"].size(), 1u) << n.dump();
    }
  }
  // Exactly one POST per job and event, each signed with the secret.
  const std::vector<Receiver::Delivery> got = receiver.deliveries();
  EXPECT_EQ(got.size(), 8u);
  std::set<std::pair<std::int64_t, std::string>> events;
  for (const Receiver::Delivery& d : got) {
    const json body = json::parse(d.body, nullptr, false);
    ASSERT_TRUE(body.is_object());
    events.emplace(body["id"].get<std::int64_t>(), d.headers.at("x-tpujobs-event"));
    EXPECT_EQ(d.headers.at("x-tpujobs-signature"), "sha256=" + openssl_hmac(secret, d.body));
  }
  EXPECT_EQ(events.size(), 8u) << "no job and event twice";
}

}  // namespace
}  // namespace tpujobs::testing
