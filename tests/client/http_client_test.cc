// The HTTP client against a real server on loopback: what goes over the
// wire (Host with the port, the User-Agent, the request's own headers), and
// that a server which accepts and never answers costs the timeout, not a
// hang, with an error that names the step.
#include "client/http_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>

#include "loopback_server.h"

namespace tpujobs::client {
namespace {

using std::chrono::milliseconds;
using testing::LoopbackServer;

ServerUrl loopback(int port) { return {"127.0.0.1", std::to_string(port), ""}; }

std::string header(const LoopbackServer::Request& request, const char* name) {
  return std::string(request[name]);
}

TEST(HostHeader, NamesThePortUnlessItIs80) {
  EXPECT_EQ(host_header({"example.com", "80", ""}), "example.com");
  EXPECT_EQ(host_header({"example.com", "8080", ""}), "example.com:8080");
  EXPECT_EQ(host_header({"::1", "8080", ""}), "[::1]:8080");
  EXPECT_EQ(host_header({"::1", "80", ""}), "[::1]");
}

TEST(HttpClient, SendsHostWithThePortAndTheCliUserAgent) {
  LoopbackServer server(200);
  HttpResponse response = make_http_client(loopback(server.port()))
                              ->send({"GET", "/v1/pool", "", {}}, milliseconds(30000));
  ASSERT_EQ(response.status, 200) << response.error;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(header(requests[0], "Host"), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(header(requests[0], "User-Agent"), "tpujobs-cli");
  EXPECT_EQ(header(requests[0], "Connection"), "close");
  EXPECT_EQ(requests[0].target(), "/v1/pool");
}

TEST(HttpClient, SendsTheConfiguredUserAgentAndTheRequestsHeaders) {
  LoopbackServer server(202);
  HttpClientOptions options;
  options.user_agent = "tpujobs-notifier";
  HttpRequest request{"POST", "/hooks?x=1", R"({"id":7})", {{"X-Tpujobs-Event", "finished"}}};
  HttpResponse response =
      make_http_client(loopback(server.port()), options)->send(request, milliseconds(30000));
  ASSERT_EQ(response.status, 202) << response.error;
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(header(requests[0], "User-Agent"), "tpujobs-notifier");
  EXPECT_EQ(header(requests[0], "X-Tpujobs-Event"), "finished");
  EXPECT_EQ(header(requests[0], "Content-Type"), "application/json");
  EXPECT_EQ(requests[0].method_string(), "POST");
  EXPECT_EQ(requests[0].target(), "/hooks?x=1");
  EXPECT_EQ(requests[0].body(), R"({"id":7})");

  // A request's own header replaces the client's.
  request.headers.emplace_back("User-Agent", "curl/8");
  make_http_client(loopback(server.port()), options)->send(request, milliseconds(30000));
  ASSERT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(header(server.requests()[1], "User-Agent"), "curl/8");
}

// What `call` comes to against a server that accepts and never answers.
// It runs aside, so that a client that ignored its timeout fails the test
// instead of hanging it: destroying the server then closes the connection.
HttpResponse against_a_silent_server(const std::function<HttpResponse(const ServerUrl&)>& call) {
  auto server = std::make_unique<LoopbackServer>(200, LoopbackServer::Reply::kNever);
  const ServerUrl url = loopback(server->port());
  std::future<HttpResponse> answered = std::async(std::launch::async, [&] { return call(url); });
  const bool returned = answered.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  server.reset();
  EXPECT_TRUE(returned) << "the client did not return within 60 s";
  return answered.get();
}

TEST(HttpClient, AServerThatNeverAnswersCostsTheTimeout) {
  const HttpResponse response = against_a_silent_server([](const ServerUrl& url) {
    return make_http_client(url)->send({"GET", "/v1/pool", "", {}}, milliseconds(300));
  });
  EXPECT_EQ(response.status, 0);
  EXPECT_EQ(response.error, "read: timed out after 300 ms");
}

TEST(HttpClient, StreamGivesUpOnAServerThatNeverAnswers) {
  const HttpResponse response = against_a_silent_server([](const ServerUrl& url) {
    return make_http_client(url)->stream(
        {"GET", "/v1/jobs/1/logs", "", {}}, [](std::string_view) { return true; },
        milliseconds(300), std::chrono::steady_clock::now() + std::chrono::hours(1));
  });
  EXPECT_EQ(response.status, 0);
  EXPECT_EQ(response.error, "read: timed out after 300 ms");
}

TEST(HttpClient, NamesTheStepThatFailed) {
  // Port 1 on loopback: nothing listens there.
  HttpResponse refused =
      make_http_client(loopback(1))->send({"GET", "/", "", {}}, milliseconds(30000));
  EXPECT_EQ(refused.status, 0);
  EXPECT_EQ(refused.error, "connect: Connection refused");
  // A service name that is not in /etc/services: the lookup fails without
  // asking a DNS server (tests talk to loopback only).
  HttpResponse unknown = make_http_client({"127.0.0.1", "no-such-service", ""})
                             ->send({"GET", "/", "", {}}, milliseconds(30000));
  EXPECT_EQ(unknown.status, 0);
  EXPECT_EQ(unknown.error.rfind("resolve: ", 0), 0u) << unknown.error;
}

TEST(HttpClient, AnAnswerOverTheBodyLimitIsAnError) {
  LoopbackServer server(200);
  HttpClientOptions options;
  options.max_body_bytes = 1;  // the server answers "{}"
  HttpResponse response = make_http_client(loopback(server.port()), options)
                              ->send({"GET", "/", "", {}}, milliseconds(30000));
  EXPECT_EQ(response.status, 0);
  EXPECT_EQ(response.error.rfind("read: ", 0), 0u) << response.error;
}

// Deadlines are read on the injected clock: on one that moves an hour at
// every read, a 30 s deadline has passed before the first step, so the
// exchange ends timed out at once and the server is never asked (on the
// real clock the same call gets its answer).
TEST(HttpClient, DeadlinesAreReadOnTheInjectedClock) {
  LoopbackServer server(200);
  base::FakeClock clock(std::chrono::hours(1));
  HttpClientOptions options;
  options.clock = &clock;
  HttpResponse response = make_http_client(loopback(server.port()), options)
                              ->send({"GET", "/v1/pool", "", {}}, milliseconds(30000));
  EXPECT_EQ(response.status, 0);
  EXPECT_NE(response.error.find(": timed out after 30000 ms"), std::string::npos) << response.error;
  EXPECT_TRUE(server.requests().empty());
}

}  // namespace
}  // namespace tpujobs::client
