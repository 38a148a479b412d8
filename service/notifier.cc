#include "service/notifier.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "api/usage.h"
#include "base/bytes.h"
#include "base/prometheus.h"
#include "db/connection.h"
#include "db/listener.h"
#include "service/tokens.h"

namespace tpujobs::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;

std::string random_tag() {
  unsigned char bytes[4];
  base::fill_random(bytes);
  return base::lower_hex(bytes);
}

// A receiver's answer that retrying cannot change: a 4xx other than 408
// (timeout) and 429 (too many requests), or a redirect (never followed).
bool permanent(int status) {
  return (status >= 300 && status < 500) && status != 408 && status != 429;
}

std::string host_header(const api::HttpUrl& url) {
  const std::string host =
      url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  return url.port == 80 ? host : host + ":" + std::to_string(url.port);
}

}  // namespace

std::string sign_notification(std::string_view secret, std::string_view body) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), digest, &length);
  return "sha256=" + base::lower_hex({digest, length});
}

std::chrono::milliseconds retry_delay(int failed_attempts, const NotifierOptions& options) {
  std::chrono::milliseconds delay = options.first_retry;
  for (int i = 1; i < failed_attempts && delay < options.max_retry; ++i) delay *= 2;
  return std::min(delay, options.max_retry);
}

base::Result<int> post_json(const api::HttpUrl& url,
                            const std::vector<std::pair<std::string, std::string>>& headers,
                            const std::string& body, std::chrono::milliseconds timeout) {
  try {
    asio::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    http::request<http::string_body> request(http::verb::post, url.target, 11);
    request.set(http::field::host, host_header(url));
    request.set(http::field::user_agent, "tpujobs-notifier");
    request.set(http::field::content_type, "application/json");
    request.set(http::field::connection, "close");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = body;
    request.prepare_payload();
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1 << 20);  // the receiver's answer is read and dropped
    beast::error_code failure;
    const char* step = "resolve";
    // Async steps on a private io_context: the stream's deadline bounds
    // each, and the resolver's wait is cancelled by the same timer below.
    asio::steady_timer deadline(io, timeout);
    deadline.async_wait([&](const beast::error_code& ec) {
      if (!ec) {
        resolver.cancel();
        stream.cancel();
      }
    });
    resolver.async_resolve(
        url.host, std::to_string(url.port),
        [&](const beast::error_code& ec, const tcp::resolver::results_type& results) {
          if (ec) {
            failure = ec;
            deadline.cancel();
            return;
          }
          step = "connect";
          stream.expires_after(timeout);
          stream.async_connect(results, [&](const beast::error_code& ec, const tcp::endpoint&) {
            if (ec) {
              failure = ec;
              deadline.cancel();
              return;
            }
            step = "send";
            http::async_write(stream, request, [&](const beast::error_code& ec, std::size_t) {
              if (ec) {
                failure = ec;
                deadline.cancel();
                return;
              }
              step = "read the answer";
              http::async_read(stream, buffer, parser,
                               [&](const beast::error_code& ec, std::size_t) {
                                 failure = ec;
                                 deadline.cancel();
                               });
            });
          });
        });
    io.run();
    if (failure) {
      const bool timed_out =
          failure == beast::error::timeout || failure == asio::error::operation_aborted;
      return base::make_error(
          base::ErrorCode::kUnavailable,
          std::string(step) + ": " +
              (timed_out ? "timed out after " + std::to_string(timeout.count()) + " ms"
                         : failure.message()));
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return parser.get().result_int();
  } catch (const std::exception& e) {
    return base::make_error(base::ErrorCode::kUnavailable, e.what());
  }
}

Notifier::Notifier(db::ConnectionPool& pool, JobViewSource views, NotifierOptions options)
    : pool_(pool),
      repo_(pool),
      views_(std::move(views)),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : base::real_clock()),
      sender_(options_.instance + "/" + std::to_string(getpid()) + "-" + random_tag()) {}

Notifier::~Notifier() { stop(); }

void Notifier::start() {
  thread_ = std::thread([this] { loop(); });
}

void Notifier::stop() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Notifier::loop() {
  db::Listener listener(pool_.conninfo(), db::kNotificationChannel);
  for (;;) {
    {
      base::MutexLock lock(mutex_);
      if (stopping_) return;
    }
    // Send until a batch comes back short: a backlog drains without waits.
    for (;;) {
      base::Result<int> sent = deliver_due();
      if (!sent.ok() || *sent < options_.batch) break;
      base::MutexLock lock(mutex_);
      if (stopping_) return;
    }
    // A NOTIFY ends the wait at once; otherwise the poll passes.
    if (!listener.wait(options_.poll).ok()) {
      base::MutexLock lock(mutex_);
      clock_.wait_for(lock, wake_, options_.poll, [this]() REQUIRES(mutex_) { return stopping_; });
    }
  }
}

base::Result<int> Notifier::deliver_due() {
  // The claim outlasts the batch even when every POST times out, so no
  // other replica takes a delivery this one is still to send.
  const std::chrono::seconds claim_for =
      std::max(options_.claim_for,
               std::chrono::duration_cast<std::chrono::seconds>(options_.timeout * options_.batch) +
                   std::chrono::seconds(30));
  base::Result<std::vector<db::NotificationRow>> due =
      repo_.claim_due(sender_, options_.batch, claim_for);
  if (!due.ok()) return due.error();
  if (due->empty()) return 0;
  base::Result<std::vector<std::string>> allowlist = repo_.allowlist();
  if (!allowlist.ok()) return allowlist.error();
  int sent = 0;
  for (const db::NotificationRow& row : *due) {
    db::NotificationAttempt outcome = attempt(row, *allowlist);
    std::atomic<std::int64_t>& counter = outcome.status == "delivered" ? delivered_
                                         : outcome.status == "failed"  ? given_up_
                                                                       : retried_;
    ++counter;
    // Lost claims (another replica took over after ours expired) record
    // nothing; database errors leave the claim to expire and retry.
    (void)repo_.record_attempt(row.id, sender_, outcome);
    ++sent;
  }
  return sent;
}

db::NotificationAttempt Notifier::attempt(const db::NotificationRow& row,
                                          const std::vector<std::string>& allowlist) {
  db::NotificationAttempt out;
  out.at = clock_.wall_now();
  const auto started = clock_.now();
  const int number = row.attempts + 1;
  auto give_up = [&](std::string error) {
    out.status = "failed";
    out.error = std::move(error);
    return out;
  };
  auto retry_or_give_up = [&](std::string error) {
    out.error = std::move(error);
    if (number >= options_.max_attempts) {
      out.status = "failed";
    } else {
      out.status = "pending";
      out.retry_after = retry_delay(number, options_);
    }
    return out;
  };
  // Checked again at each attempt: the admin may have taken it off since.
  base::Result<api::HttpUrl> parsed = api::parse_notify_url(row.url);
  if (!parsed.ok()) return give_up("notify.url " + parsed.error().message);
  if (!api::notify_url_allowed(*parsed, allowlist))
    return give_up("http://" + parsed->host + ":" + std::to_string(parsed->port) +
                   " is no longer on the notification allow-list");
  if (row.body) {
    out.body = *row.body;
  } else {
    base::Result<std::string> view = views_(row.job_id, row.tenant);
    if (!view.ok()) {
      if (view.code() == base::ErrorCode::kNotFound) return give_up("the job no longer exists");
      return retry_or_give_up("cannot render the job's view: " + view.error().message);
    }
    out.body = std::move(*view);
  }
  base::Result<std::optional<std::string>> secret = repo_.find_secret(row.tenant);
  if (!secret.ok()) return retry_or_give_up("cannot read the secret: " + secret.error().message);
  if (!*secret) return give_up("tenant '" + row.tenant + "' has no notification secret");
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"X-Tpujobs-Event", row.event},
      {"X-Tpujobs-Delivery", std::to_string(row.id)},
      {"X-Tpujobs-Attempt", std::to_string(number)},
      {"X-Tpujobs-Timestamp",
       std::to_string(
           std::chrono::duration_cast<std::chrono::seconds>(out.at.time_since_epoch()).count())},
      {"X-Tpujobs-Signature", sign_notification(**secret, out.body)},
  };
  const base::Result<int> posted = post_json(*parsed, headers, out.body, options_.timeout);
  out.duration_ms = std::chrono::duration<double, std::milli>(clock_.now() - started).count();
  if (!posted.ok()) return retry_or_give_up(posted.error().message);
  const int status = *posted;
  out.status_code = status;
  if (status >= 200 && status < 300) {
    out.status = "delivered";
    return out;
  }
  const std::string error = "the receiver answered " + std::to_string(status);
  if (permanent(status)) return give_up(error + " (not retried)");
  return retry_or_give_up(error);
}

base::Result<std::vector<std::string>> Notifier::allowlist() { return repo_.allowlist(); }

base::Status Notifier::set_allowlist(const std::vector<std::string>& entries) {
  return repo_.replace_allowlist(entries);
}

base::Result<bool> Notifier::has_secret(const std::string& tenant) {
  base::Result<std::optional<db::TimePoint>> created = repo_.secret_created_at(tenant);
  if (!created.ok()) return created.error();
  return created->has_value();
}

base::Result<json> Notifier::rotate_secret(const std::string& tenant) {
  const std::string secret = generate_token("tpjn_");
  base::Result<db::TimePoint> created = repo_.store_secret(tenant, secret);
  if (!created.ok()) return created.error();
  return json{{"tenant", tenant},
              {"secret", secret},
              {"created_at", api::rfc3339(*created)},
              {"signature_header", "X-Tpujobs-Signature"},
              {"note", "shown once; a new one replaces it at once for every later delivery"}};
}

base::Result<json> Notifier::secret_info(const std::string& tenant) {
  base::Result<std::optional<db::TimePoint>> created = repo_.secret_created_at(tenant);
  if (!created.ok()) return created.error();
  json out = {{"tenant", tenant}, {"exists", created->has_value()}};
  if (*created) out["created_at"] = api::rfc3339(**created);
  return out;
}

base::Result<json> Notifier::job_notifications(std::int64_t id, const std::string& tenant) {
  base::Result<std::optional<std::vector<db::NotificationRow>>> rows =
      repo_.list_for_job(id, tenant);
  if (!rows.ok()) return rows.error();
  if (!*rows) return base::make_error(base::ErrorCode::kNotFound, "no job " + std::to_string(id));
  json list = json::array();
  for (const db::NotificationRow& row : **rows) {
    json attempts = json::array();
    for (const db::NotificationAttemptRow& a : row.attempt_log) {
      json attempt = {{"attempt", a.attempt},
                      {"at", api::rfc3339(a.at)},
                      {"duration_ms", a.duration_ms},
                      {"status_code", a.status_code ? json(*a.status_code) : json(nullptr)},
                      {"sender", a.sender}};
      if (a.error) attempt["error"] = *a.error;
      attempts.push_back(std::move(attempt));
    }
    json n = {{"id", row.id},
              {"event", row.event},
              {"state", row.state},
              {"url", row.url},
              {"status", row.status},
              {"created_at", api::rfc3339(row.created_at)},
              {"attempts", std::move(attempts)}};
    if (row.status == "pending") n["next_attempt_at"] = api::rfc3339(row.next_attempt_at);
    if (row.finished_at) n["finished_at"] = api::rfc3339(*row.finished_at);
    list.push_back(std::move(n));
  }
  return json{{"job_id", id}, {"notifications", std::move(list)}};
}

std::string Notifier::prometheus_metrics() {
  return base::counter_family(
      "tpujobs_notification_attempts_total",
      "Notification POSTs this process made, by what the delivery became: delivered, retry "
      "(tried again later) or failed (given up).",
      "outcome",
      {{"delivered", delivered_.load()}, {"retry", retried_.load()}, {"failed", given_up_.load()}});
}

}  // namespace tpujobs::service
