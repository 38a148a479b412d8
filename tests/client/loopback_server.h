// An HTTP server on 127.0.0.1 (an ephemeral port) for tests of what goes
// over the wire: it records every request and answers each with `status`,
// or, made with Reply::kNever, accepts connections and holds them without
// a byte in reply until it is destroyed (an unresponsive receiver).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace tpujobs::testing {

class LoopbackServer {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  enum class Reply { kAnswer, kNever };

  explicit LoopbackServer(int status = 200, Reply reply = Reply::kAnswer)
      : status_(status),
        reply_(reply),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackServer() {
    {
      base::MutexLock lock(mutex_);
      stopping_ = true;
    }
    boost::system::error_code ignored;
    tcp::socket wake(io_);
    wake.connect(acceptor_.local_endpoint(), ignored);  // unblocks accept()
    thread_.join();
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  int port() const { return acceptor_.local_endpoint().port(); }

  std::vector<Request> requests() {
    base::MutexLock lock(mutex_);
    return requests_;
  }

 private:
  using tcp = boost::asio::ip::tcp;

  void serve() {
    std::vector<std::unique_ptr<tcp::socket>> held;  // closed when serve() ends
    for (;;) {
      auto socket = std::make_unique<tcp::socket>(io_);
      boost::system::error_code ec;
      acceptor_.accept(*socket, ec);
      {
        base::MutexLock lock(mutex_);
        if (stopping_) return;
      }
      if (ec) continue;
      if (reply_ == Reply::kNever) {
        held.push_back(std::move(socket));
        continue;
      }
      boost::beast::flat_buffer buffer;
      Request request;
      boost::beast::http::read(*socket, buffer, request, ec);
      if (ec) continue;
      {
        base::MutexLock lock(mutex_);
        requests_.push_back(request);
      }
      boost::beast::http::response<boost::beast::http::string_body> response(
          static_cast<boost::beast::http::status>(status_), 11);
      if (status_ != 204 && status_ != 304) response.body() = "{}";  // those have none
      response.prepare_payload();
      boost::beast::http::write(*socket, response, ec);
      socket->shutdown(tcp::socket::shutdown_both, ec);
    }
  }

  const int status_;
  const Reply reply_;
  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  base::Mutex mutex_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<Request> requests_ GUARDED_BY(mutex_);
  std::thread thread_;
};

}  // namespace tpujobs::testing
