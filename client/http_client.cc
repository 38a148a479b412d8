#include "client/http_client.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

namespace tpujobs::client {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::size_t kMaxBodyBytes = 64u << 20;

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

template <class Fields>
void copy_headers(const Fields& fields, HttpResponse* out) {
  for (const auto& field : fields)
    out->headers[lower(std::string(field.name_string()))] = std::string(field.value());
}

class BeastHttpClient final : public HttpClient {
 public:
  explicit BeastHttpClient(ServerUrl server) : server_(std::move(server)) {}

  HttpResponse send(const HttpRequest& request, std::chrono::milliseconds timeout) override {
    HttpResponse out;
    try {
      asio::io_context io;
      beast::tcp_stream stream(io);
      stream.expires_after(timeout);
      connect(io, stream);
      http::request<http::string_body> message = build(request);
      http::write(stream, message);
      beast::flat_buffer buffer;
      http::response_parser<http::string_body> parser;
      parser.body_limit(kMaxBodyBytes);
      http::read(stream, buffer, parser);
      out.status = parser.get().result_int();
      out.body = std::move(parser.get().body());
      copy_headers(parser.get(), &out);
      beast::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    } catch (const boost::system::system_error& e) {
      out = HttpResponse{};
      out.error = e.code().message();  // what() adds the Asio source location
    } catch (const std::exception& e) {
      out = HttpResponse{};
      out.error = e.what();
    }
    return out;
  }

  HttpResponse stream(const HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_body,
                      std::chrono::milliseconds idle_timeout,
                      std::chrono::steady_clock::time_point deadline) override {
    HttpResponse out;
    auto arm = [&](beast::tcp_stream& stream) {
      const auto now = std::chrono::steady_clock::now();
      stream.expires_after(
          std::max(std::chrono::steady_clock::duration::zero(),
                   std::min<std::chrono::steady_clock::duration>(idle_timeout, deadline - now)));
    };
    try {
      asio::io_context io;
      beast::tcp_stream stream(io);
      arm(stream);
      connect(io, stream);
      http::request<http::string_body> message = build(request);
      http::write(stream, message);
      beast::flat_buffer buffer;
      http::response_parser<http::buffer_body> parser;
      parser.body_limit(boost::none);
      arm(stream);
      http::read_header(stream, buffer, parser);
      out.status = parser.get().result_int();
      copy_headers(parser.get(), &out);
      const bool success = out.status >= 200 && out.status < 300;
      char chunk[8192];
      while (!parser.is_done()) {
        parser.get().body().data = chunk;
        parser.get().body().size = sizeof(chunk);
        arm(stream);
        beast::error_code ec;
        http::read(stream, buffer, parser, ec);
        if (ec && ec != http::error::need_buffer) {
          // The end of a Connection: close body is the normal end of a stream.
          if (ec != http::error::end_of_stream && ec != asio::error::eof) out.error = ec.message();
          break;
        }
        const std::size_t got = sizeof(chunk) - parser.get().body().size;
        if (got == 0) continue;
        if (success) {
          if (!on_body(std::string_view(chunk, got))) break;
        } else if (out.body.size() < kMaxBodyBytes) {
          out.body.append(chunk, got);
        }
      }
      beast::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    } catch (const boost::system::system_error& e) {
      if (out.status == 0) out = HttpResponse{};
      out.error = e.code().message();
    } catch (const std::exception& e) {
      if (out.status == 0) out = HttpResponse{};
      out.error = e.what();
    }
    return out;
  }

 private:
  void connect(asio::io_context& io, beast::tcp_stream& stream) {
    tcp::resolver resolver(io);
    stream.connect(resolver.resolve(server_.host, server_.port));
  }

  http::request<http::string_body> build(const HttpRequest& request) const {
    http::request<http::string_body> message(http::string_to_verb(request.method),
                                             server_.base_path + request.target, 11);
    message.set(http::field::host, server_.host);
    message.set(http::field::user_agent, "tpujobs-cli");
    if (!request.body.empty()) message.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : request.headers) message.set(name, value);
    message.body() = request.body;
    message.prepare_payload();
    return message;
  }

  ServerUrl server_;
};

}  // namespace

base::Result<ServerUrl> parse_server_url(std::string_view url) {
  auto fail = [](std::string message) -> base::Result<ServerUrl> {
    return base::make_error(base::ErrorCode::kInvalid, std::move(message));
  };
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return fail(url.substr(0, 8) == "https://"
                    ? "https is not supported; reach the service over http (TLS belongs in a proxy)"
                    : "the server URL must start with http://, got '" + std::string(url) + "'");
  }
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  ServerUrl server;
  if (slash != std::string_view::npos) {
    server.base_path = std::string(rest.substr(slash));
    while (!server.base_path.empty() && server.base_path.back() == '/') server.base_path.pop_back();
  }
  if (!authority.empty() && authority.front() == '[') {  // [::1]:8080
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return fail("unterminated IPv6 address in '" + std::string(url) + "'");
    }
    server.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() != ':') {
      return fail("unexpected text after the IPv6 address in '" + std::string(url) + "'");
    }
  } else {
    const std::size_t colon = authority.find(':');
    server.host = std::string(authority.substr(0, colon));
    authority.remove_prefix(colon == std::string_view::npos ? authority.size() : colon);
  }
  if (!authority.empty()) {  // ":port"
    std::string_view port = authority.substr(1);
    const bool numeric =
        !port.empty() && port.size() <= 5 &&
        std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!numeric || std::stoi(std::string(port)) > 65535) {
      return fail("bad port in '" + std::string(url) + "'");
    }
    server.port = std::string(port);
  }
  if (server.host.empty()) {
    return fail("the server URL has no host: '" + std::string(url) + "'");
  }
  return server;
}

HttpClientPtr make_http_client(ServerUrl server) {
  return std::make_unique<BeastHttpClient>(std::move(server));
}

}  // namespace tpujobs::client
