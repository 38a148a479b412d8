#include "http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "client/event_stream.h"
#include "client/http_client.h"

namespace tpujobs::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// The contract router's HOST:PORT, or "" to talk to the service directly:
// TPUJOBS_E2E_CONTRACT_PROXY, or the file TPUJOBS_E2E_CONTRACT_PROXY_FILE
// names (the CTest fixture `contract_proxy` writes it). A named file that
// cannot be read is an error, never a silent fallback to unchecked answers.
std::string contract_proxy() {
  if (const char* at = std::getenv("TPUJOBS_E2E_CONTRACT_PROXY")) return at;
  const char* file = std::getenv("TPUJOBS_E2E_CONTRACT_PROXY_FILE");
  if (file == nullptr) return "";
  std::ifstream in(file);
  std::string address;
  if (!(in >> address) || address.find(':') == std::string::npos) {
    throw std::runtime_error(std::string("TPUJOBS_E2E_CONTRACT_PROXY_FILE: no HOST:PORT in ") +
                             file + " (is the contract_proxy_start fixture running?)");
  }
  return address;
}

// Requests go through the command-line client's HttpClient and its
// text/event-stream parser: the tests exercise the client users run.
// Contract check: with a contract router (above) they go to
// tests/python/contract_proxy.py instead, which checks each answer
// against api/openapi.json on its way from the service at `port`.
client::HttpClientPtr client_for(int port, client::HttpRequest& request) {
  client::ServerUrl server;
  server.host = "127.0.0.1";
  server.port = std::to_string(port);
  static const std::string proxy = contract_proxy();
  if (const std::string_view at = proxy; at.find(':') != std::string_view::npos) {
    server.host = std::string(at.substr(0, at.rfind(':')));
    server.port = std::string(at.substr(at.rfind(':') + 1));
    request.headers.emplace_back("X-Tpujobs-Upstream", std::to_string(port));
  }
  return client::make_http_client(std::move(server));
}

}  // namespace

HttpResponse http(int port, const std::string& method, const std::string& target,
                  const std::string& body, const std::map<std::string, std::string>& headers,
                  std::chrono::milliseconds timeout) {
  client::HttpRequest request;
  request.method = method;
  request.target = target;
  request.body = body;
  for (const auto& [name, value] : headers) request.headers.emplace_back(name, value);
  client::HttpResponse response = client_for(port, request)->send(request, timeout);
  HttpResponse out;
  out.status = response.status;
  out.body = std::move(response.body);
  out.headers = std::move(response.headers);
  return out;
}

int read_event_stream(
    int port, const std::string& target,
    const std::function<bool(const std::string& event, const std::string& data)>& on_event,
    std::chrono::milliseconds timeout) {
  client::HttpRequest request;
  request.target = target;
  request.headers = {{"Accept", "text/event-stream"}};
  client::EventStreamParser parser;
  const client::HttpResponse response =
      client_for(port, request)
          ->stream(
              request,
              [&](std::string_view bytes) {
                for (const client::EventStreamParser::Event& event : parser.feed(bytes)) {
                  if (!on_event(event.name, event.data)) return false;
                }
                return true;
              },
              timeout, std::chrono::steady_clock::now() + timeout);
  return response.status;
}

std::string raw_exchange(int port, const std::string& bytes, std::chrono::milliseconds timeout) {
  std::string data;
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    asio::write(stream, asio::buffer(bytes));
    char chunk[4096];
    for (;;) {
      beast::error_code ec;
      const std::size_t n = stream.read_some(asio::buffer(chunk), ec);
      if (ec) break;
      data.append(chunk, n);
    }
  } catch (const std::exception&) {
  }
  return data;
}

}  // namespace tpujobs::testing
