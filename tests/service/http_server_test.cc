// The HTTP server's bounds on what one client, or many, may hold: the
// listener when descriptors run out, a connection that never speaks, a
// stream whose client does not read. Raw loopback sockets, port 0.
#include "service/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tpujobs::service {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Answers every request 200 "ok"; a request for /stream starts a stream and
// hands its writer to the test; /metrics answers the server's counters.
class TestHandler final : public api::Handler {
 public:
  void handle(api::Request request, api::ResponseWriterPtr writer) override {
    if (request.path == "/stream") {
      writer->start_stream(api::Response{});
      std::lock_guard lock(mutex_);
      stream_ = std::move(writer);
      return;
    }
    api::Response response;
    response.body = request.path == "/metrics" && server ? server->prometheus_metrics() : "ok";
    writer->respond(std::move(response));
  }
  void completed(std::string_view, std::string_view, int,
                 std::chrono::steady_clock::duration) override {}
  api::ResponseWriterPtr stream() {
    std::lock_guard lock(mutex_);
    return stream_;
  }
  const HttpServer* server = nullptr;

 private:
  std::mutex mutex_;
  api::ResponseWriterPtr stream_;
};

int connect_to(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// Waits for the peer to close `fd` (reading and dropping what comes);
// false when `deadline` passes first.
bool closed_by_peer_within(int fd, std::chrono::milliseconds deadline) {
  const auto until = Clock::now() + deadline;
  char buffer[4096];
  while (Clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (poll(&p, 1, static_cast<int>(std::max<std::int64_t>(1, left.count()))) <= 0) continue;
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return true;
  }
  return false;
}

// Sends GET `path` and reads the answer up to its end (Content-Length);
// "" when nothing arrives within `deadline`.
std::string get(int fd, const std::string& path, std::chrono::milliseconds deadline) {
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size()))
    return "";
  std::string answer;
  const auto until = Clock::now() + deadline;
  char buffer[4096];
  while (Clock::now() < until) {
    const std::size_t end = answer.find("\r\n\r\n");
    if (end != std::string::npos) {
      const std::size_t length_at = answer.find("Content-Length: ");
      if (length_at != std::string::npos &&
          answer.size() >= end + 4 + std::stoul(answer.substr(length_at + 16)))
        return answer;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  return answer;
}

// One request on a connection of its own; "" when none is answered in time.
std::string get_once(std::uint16_t port, const std::string& path,
                     std::chrono::milliseconds deadline = 5s) {
  const int fd = connect_to(port);
  if (fd < 0) return "";
  std::string answer = get(fd, path, deadline);
  close(fd);
  return answer;
}

TEST(HttpServer, AConnectionSilentBeforeItsFirstByteIsClosedInSecondsAndAKeptAliveOneIsNot) {
  TestHandler handler;
  HttpServerOptions options;
  options.port = 0;
  options.first_byte_timeout = 300ms;
  options.idle_timeout = 60s;
  HttpServer server(options, handler);
  handler.server = &server;
  ASSERT_TRUE(server.start().ok());

  const int silent = connect_to(server.port());
  ASSERT_GE(silent, 0);
  const int talking = connect_to(server.port());
  ASSERT_GE(talking, 0);
  EXPECT_NE(get(talking, "/first", 10s).find("200 OK"), std::string::npos);
  // Far below the 60 s an idle keep-alive connection is given.
  EXPECT_TRUE(closed_by_peer_within(silent, 20s));
  close(silent);
  // The connection that spoke is idle for longer than the first-byte bound,
  // and is still served: that bound is for connections that never speak.
  std::this_thread::sleep_for(600ms);
  EXPECT_NE(get(talking, "/second", 10s).find("200 OK"), std::string::npos);
  close(talking);
  EXPECT_EQ(server.counters().first_byte_timeouts, 1u);
  EXPECT_EQ(server.counters().idle_timeouts, 0u);
  EXPECT_NE(get_once(server.port(), "/metrics").find("tpujobs_http_first_byte_timeouts_total 1"),
            std::string::npos);
  server.shutdown(1s);
}

// Answers /block only once released (a handler waiting on a database that
// hangs); anything else at once.
class BlockingHandler final : public api::Handler {
 public:
  void handle(api::Request request, api::ResponseWriterPtr writer) override {
    if (request.path == "/block") {
      std::unique_lock lock(mutex_);
      blocked_ = true;
      changed_.notify_all();
      changed_.wait(lock, [this] { return released_; });
    }
    writer->respond(api::Response{});
  }
  void completed(std::string_view, std::string_view, int,
                 std::chrono::steady_clock::duration) override {}
  bool wait_blocked(std::chrono::milliseconds deadline) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, deadline, [this] { return blocked_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool blocked_ = false;
  bool released_ = false;
};

// A connection whose GET /block holds its I/O thread inside the handler;
// -1 when it could not be opened or the handler was not entered.
int connect_and_block(std::uint16_t port, BlockingHandler& handler) {
  const int fd = connect_to(port);
  const std::string request = "GET /block HTTP/1.1\r\nHost: t\r\n\r\n";
  if (fd < 0 ||
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(request.size()) ||
      !handler.wait_blocked(10s)) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

TEST(HttpServer, AConnectionOfAThreadStuckInAHandlerIsServedByASpareWhileTheOtherThreadIsFree) {
  BlockingHandler handler;
  HttpServerOptions options;
  options.port = 0;
  options.io_threads = 2;
  options.spare_io_threads = 2;
  options.stuck_after = 50ms;
  HttpServer server(options, handler);
  ASSERT_TRUE(server.start().ok());

  // Connections go to the I/O threads in turn: the first and the third
  // to the one that gets stuck, the second to the other.
  const int stuck = connect_and_block(server.port(), handler);
  ASSERT_GE(stuck, 0);
  EXPECT_NE(get_once(server.port(), "/free", 10s).find("200 OK"), std::string::npos);
  // The stuck thread's next connection: answered by a spare, not after the release.
  EXPECT_NE(get_once(server.port(), "/probe", 10s).find("200 OK"), std::string::npos);
  handler.release();
  EXPECT_NE(get(stuck, "/after", 10s).find("200 OK"), std::string::npos);
  close(stuck);
  server.shutdown(1s);
}

TEST(HttpServer, NewConnectionsAreTakenWhileAnIoThreadIsStuckInAHandler) {
  BlockingHandler handler;
  HttpServerOptions options;
  options.port = 0;
  options.io_threads = 2;
  options.spare_io_threads = 0;  // no stand-in: the listener alone must not wait
  HttpServer server(options, handler);
  ASSERT_TRUE(server.start().ok());
  const int stuck = connect_and_block(server.port(), handler);
  ASSERT_GE(stuck, 0);
  // The next connection goes to the other thread, once the listener takes it.
  EXPECT_NE(get_once(server.port(), "/free", 10s).find("200 OK"), std::string::npos);
  handler.release();
  EXPECT_NE(get(stuck, "/after", 10s).find("200 OK"), std::string::npos);
  close(stuck);
  server.shutdown(1s);
}

TEST(HttpServer, AStreamWhoseClientDoesNotReadIsCutOffOnceItsBufferPassesTheBound) {
  TestHandler handler;
  HttpServerOptions options;
  options.port = 0;
  options.stream_buffer_limit = 1 << 20;
  HttpServer server(options, handler);
  handler.server = &server;
  ASSERT_TRUE(server.start().ok());

  const int reader = connect_to(server.port());
  ASSERT_GE(reader, 0);
  const int small = 4096;
  setsockopt(reader, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  const std::string request = "GET /stream HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_EQ(send(reader, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  api::ResponseWriterPtr stream;
  for (const auto until = Clock::now() + 20s; !stream && Clock::now() < until;) {
    stream = handler.stream();
    if (!stream) std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(stream);
  // The client never reads. Without the bound the server queues all of it.
  const std::string chunk(64 << 10, 'x');
  std::size_t written = 0;
  const std::size_t give_up = std::size_t{256} << 20;
  while (written < give_up && stream->write(chunk)) {
    written += chunk.size();
    if (written % (4 << 20) == 0) std::this_thread::sleep_for(1ms);  // let the strand run
  }
  EXPECT_LT(written, give_up) << "the stream was never cut off";
  for (const auto until = Clock::now() + 20s; !stream->closed() && Clock::now() < until;)
    std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(stream->closed());
  EXPECT_EQ(server.counters().slow_streams_cut_off, 1u);
  stream->end();
  stream.reset();
  close(reader);
  server.shutdown(1s);
}

// The CPU time (user + system) the process has used, from /proc.
std::chrono::milliseconds cpu_time(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return std::chrono::milliseconds((utime + stime) * 1000 / sysconf(_SC_CLK_TCK));
}

int highest_open_descriptor() {
  int highest = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    highest = std::max(highest, std::stoi(entry.path().filename().string()));
  return highest;
}

// The server runs in a child whose open-file limit is a few descriptors
// above what it holds; the test fills them with idle connections and more.
TEST(HttpServer, WhenDescriptorsRunOutTheListenerBacksOffAndServesAgainOnceConnectionsClose) {
#if defined(__SANITIZE_ADDRESS__)
  // The server runs in a child forked from this multi-threaded test process;
  // under ASan+UBSan the child's first std::thread fails UBSan's vptr check
  // on the thread's state (seen in the sanitizer suite, not explained). The
  // default build runs this test.
  GTEST_SKIP() << "forks a multi-threaded process: not run under the sanitizers";
#endif
  int to_child[2];
  int from_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(from_child), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(to_child[1]);
    close(from_child[0]);
    TestHandler handler;
    HttpServerOptions options;
    options.port = 0;
    options.io_threads = 1;
    options.first_byte_timeout = 120s;  // the idle connections stay: only backing off helps
    HttpServer server(options, handler);
    handler.server = &server;
    if (!server.start().ok()) _exit(3);
    // Descriptors are handed out lowest first: fill the gaps below the
    // highest one, so that only the few above it are left.
    const int highest = highest_open_descriptor();
    for (int filler = dup(2); filler >= 0 && filler < highest; filler = dup(2)) {
    }
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = static_cast<rlim_t>(highest_open_descriptor() + 8);
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(4);
    const std::uint16_t port = server.port();
    if (write(from_child[1], &port, sizeof port) != sizeof port) _exit(5);
    // Tells the parent once the listener has backed off.
    std::atomic<bool> done{false};
    std::thread watch([&] {
      while (!done && server.counters().accept_backoffs == 0) std::this_thread::sleep_for(10ms);
      const char seen = 'b';
      if (!done && write(from_child[1], &seen, 1) != 1) _exit(6);
    });
    char ignored;
    while (read(to_child[0], &ignored, 1) > 0) {
    }
    done = true;
    watch.join();
    server.shutdown(1s);
    _exit(0);
  }
  close(to_child[0]);
  close(from_child[1]);
  std::uint16_t port = 0;
  ASSERT_EQ(read(from_child[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));

  EXPECT_NE(get_once(port, "/readyz").find("200 OK"), std::string::npos);
  std::vector<int> idle;
  for (int i = 0; i < 64; ++i) {
    const int fd = connect_to(port);  // completes in the backlog even when not accepted
    if (fd >= 0) idle.push_back(fd);
  }
  ASSERT_EQ(idle.size(), 64u);
  pollfd seen{from_child[0], POLLIN, 0};
  EXPECT_EQ(poll(&seen, 1, 20000), 1) << "the listener never backed off";
  // While descriptors are out, the listener waits rather than spins.
  const auto cpu_before = cpu_time(child);
  std::this_thread::sleep_for(2s);
  const auto cpu_used = cpu_time(child) - cpu_before;
  EXPECT_LT(cpu_used, 500ms) << "the server spun while out of descriptors";

  for (int fd : idle) close(fd);
  std::string answer;
  for (const auto until = Clock::now() + 60s;
       answer.find("200 OK") == std::string::npos && Clock::now() < until;) {
    answer = get_once(port, "/readyz", 2s);
  }
  EXPECT_NE(answer.find("200 OK"), std::string::npos) << "never served again";
  const std::string metrics = get_once(port, "/metrics");
  EXPECT_NE(metrics.find("tpujobs_http_accept_backoffs_total "), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("tpujobs_http_accept_backoffs_total 0\n"), std::string::npos) << metrics;

  close(to_child[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  close(from_child[0]);
}

}  // namespace
}  // namespace tpujobs::service
