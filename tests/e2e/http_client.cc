#include "http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace tpujobs::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http_ns = beast::http;
using tcp = asio::ip::tcp;

}  // namespace

HttpResponse http(int port, const std::string& method, const std::string& target, const std::string& body,
                  const std::map<std::string, std::string>& headers, std::chrono::milliseconds timeout) {
  HttpResponse out;
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    http_ns::request<http_ns::string_body> request(http_ns::string_to_verb(method), target, 11);
    request.set(http_ns::field::host, "127.0.0.1");
    for (const auto& [name, value] : headers) request.set(name, value);
    if (!body.empty() && headers.find("Content-Type") == headers.end()) {
      request.set(http_ns::field::content_type, "application/json");
    }
    request.body() = body;
    request.prepare_payload();
    http_ns::write(stream, request);
    beast::flat_buffer buffer;
    http_ns::response_parser<http_ns::string_body> parser;
    parser.body_limit(64 << 20);
    http_ns::read(stream, buffer, parser);
    const auto& response = parser.get();
    out.status = response.result_int();
    out.body = response.body();
    for (const auto& field : response) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(field.value());
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  } catch (const std::exception&) {
    out.status = 0;
  }
  return out;
}

int read_event_stream(int port, const std::string& target,
                      const std::function<bool(const std::string& event, const std::string& data)>& on_event,
                      std::chrono::milliseconds timeout) {
  int status = 0;
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    const std::string request = "GET " + target +
                                " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
    asio::write(stream, asio::buffer(request));
    std::string data;
    char chunk[4096];
    bool header_done = false;
    for (;;) {
      beast::error_code ec;
      const std::size_t n = stream.read_some(asio::buffer(chunk), ec);
      if (ec) break;
      data.append(chunk, n);
      if (!header_done) {
        const std::size_t end = data.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        status = std::stoi(data.substr(9, 3));
        data.erase(0, end + 4);
        header_done = true;
        if (status != 200) return status;
      }
      std::size_t block_end;
      while ((block_end = data.find("\n\n")) != std::string::npos) {
        const std::string block = data.substr(0, block_end);
        data.erase(0, block_end + 2);
        std::string event = "message";
        std::string payload;
        std::size_t start = 0;
        while (start < block.size()) {
          std::size_t line_end = block.find('\n', start);
          if (line_end == std::string::npos) line_end = block.size();
          const std::string line = block.substr(start, line_end - start);
          if (line.rfind("event: ", 0) == 0) event = line.substr(7);
          if (line.rfind("data: ", 0) == 0) payload += line.substr(6);
          start = line_end + 1;
        }
        if (payload.empty() && event == "message") continue;  // comments, retry hints
        if (!on_event(event, payload)) return status;
      }
    }
  } catch (const std::exception&) {
  }
  return status;
}

std::string raw_exchange(int port, const std::string& bytes, std::chrono::milliseconds timeout) {
  std::string data;
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
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
