#include "db/connection.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <optional>

namespace tpujobs::db {
namespace {

// SQLSTATE classes that mean "try again later" rather than "this is wrong".
// A server that takes no writes for now (25006: read-only, as a managed
// PostgreSQL turns when its disk fills, or a standby not yet promoted) is
// away for a writer, as one that cannot be reached.
base::ErrorCode code_for_sqlstate(std::string_view state) {
  if (state.empty()) return base::ErrorCode::kUnavailable;  // no answer from the server
  const std::string_view class_code = state.substr(0, 2);
  if (class_code == "08" || class_code == "57" || class_code == "53" || class_code == "40" ||
      state == "25006") {
    return base::ErrorCode::kUnavailable;
  }
  if (state == "23505") return base::ErrorCode::kConflict;
  if (class_code == "22" || class_code == "23") return base::ErrorCode::kInvalid;
  return base::ErrorCode::kInternal;
}

std::string trimmed(const char* message) {
  std::string text = message ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// "10 s", "1.5 s": a timeout as a user reads it.
std::string seconds_text(std::chrono::milliseconds timeout) {
  const long long ms = timeout.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buffer;
}

bool is_copy(ExecStatusType status) {
  return status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH;
}

}  // namespace

base::Result<std::unique_ptr<Connection>> Connection::open(const std::string& conninfo,
                                                           std::chrono::milliseconds answer_timeout,
                                                           base::Clock& clock) {
  // libpq's connect_timeout is whole seconds, and it takes 1 as 2.
  const long long connect_seconds =
      answer_timeout.count() > 0 ? std::max<long long>(2, (answer_timeout.count() + 999) / 1000)
                                 : 10;
  const std::string connect_timeout = std::to_string(connect_seconds);
  // Parameters listed before the expanded dbname act as defaults. TCP
  // keepalives (ignored on a Unix socket) find a peer that vanished without
  // a word while the connection is idle, a LISTEN's for one, in about 11 s;
  // tcp_user_timeout ends a send that the peer never acknowledges.
  const char* keywords[] = {"connect_timeout",
                            "application_name",
                            "keepalives",
                            "keepalives_idle",
                            "keepalives_interval",
                            "keepalives_count",
                            "tcp_user_timeout",
                            "dbname",
                            nullptr};
  const char* values[] = {connect_timeout.c_str(), "tpujobs", "1", "5", "2", "3", "10000",
                          conninfo.c_str(),        nullptr};
  const base::Clock::time_point started = clock.now();
  pg_conn* raw = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (raw == nullptr)
    return base::make_error(base::ErrorCode::kInternal, "libpq could not allocate");
  std::unique_ptr<Connection> connection(new Connection(raw, clock));
  if (PQstatus(raw) != CONNECTION_OK) {
    // A server that takes the connection and never answers (stopped) ends
    // in libpq's "timeout expired": said the way a statement's deadline is.
    const bool timed_out = clock.now() - started >= std::chrono::seconds(connect_seconds);
    return base::make_error(base::ErrorCode::kUnavailable,
                            "cannot connect to PostgreSQL: " +
                                (timed_out ? "the database did not answer within " +
                                                 std::to_string(connect_seconds) + " s: "
                                           : std::string()) +
                                trimmed(PQerrorMessage(raw)));
  }
  if (base::Status set_up = connection->set_up_session(answer_timeout); !set_up.ok()) {
    return set_up.error();
  }
  return connection;
}

base::Status Connection::set_up_session(std::chrono::milliseconds answer_timeout) {
  // Statements are sent without blocking and their answers awaited with a
  // deadline (answer()); only copy_in's rows are sent blocking.
  PQsetnonblocking(connection_, 1);
  answer_timeout_ = answer_timeout;
  // Server NOTICEs ("... does not exist, skipping") are not errors; libpq
  // would print them on stderr.
  PQsetNoticeProcessor(
      connection_, [](void*, const char*) {}, nullptr);
  // Timestamps are read and written as ISO text in UTC (see pg_text.h).
  // A process stopped or cut off inside a transaction (an agent under
  // SIGSTOP, a partition) would hold its row locks, and with them every
  // other process's writes to those rows (the leader's requeue of its jobs),
  // for as long as its session lives: the server ends such a session after
  // 5 s idle in a transaction, well inside the 10 s after which an agent is
  // declared lost. One wait is not idle: a COPY in, whose server reads the
  // rows from us. A client cut off in the middle of one (a partition: its
  // packets vanish, no reset ever comes) would leave the server reading,
  // with the rows it already took locked, for as long as the operating
  // system's keepalive waits (two hours by default): a job resumed
  // elsewhere would stall on its checkpoint at that step. So the server
  // probes this session's client as the client probes the server (about
  // 11 s), and gives up a send that is not acknowledged in 10 s. (Over a
  // Unix socket these settings do nothing.)
  // In the same round trip: this session's server process, named by its
  // pid and start, for a statement whose answer will not come.
  base::Result<QueryResult> session = answer(
      PQsendQuery(connection_,
                  "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; "
                  "SET IntervalStyle = 'postgres'; "
                  "SET idle_in_transaction_session_timeout = '5s'; SET tcp_keepalives_idle = 5; "
                  "SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3; "
                  "SET tcp_user_timeout = 10000; "
                  "SELECT pid, backend_start FROM pg_stat_activity "
                  "WHERE pid = pg_backend_pid()") == 1,
      "session setup failed", answer_deadline());
  if (!session.ok()) return session.error();
  if (PQresultStatus(session->result_) != PGRES_TUPLES_OK) {
    return error_from(session->result_, "session setup failed");
  }
  if (session->rows() == 1) {
    server_process_ = {static_cast<int>(session->int64(0, 0)), session->string(0, 1)};
  }
  return base::Status::Ok();
}

Connection::~Connection() {
  if (connection_ != nullptr) PQfinish(connection_);
}

base::Error Connection::error_from(pg_result* result, std::string_view what) const {
  if (connection_ == nullptr) {
    return base::make_error(base::ErrorCode::kUnavailable,
                            std::string(what) + ": connection to PostgreSQL lost");
  }
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = result ? trimmed(PQresultErrorMessage(result)) : std::string();
  if (message.empty()) message = trimmed(PQerrorMessage(connection_));
  base::ErrorCode code = code_for_sqlstate(state ? state : "");
  if (PQstatus(connection_) != CONNECTION_OK) code = base::ErrorCode::kUnavailable;
  return base::make_error(code, std::string(what) + ": " + message);
}

Connection::Deadline Connection::answer_deadline() const {
  if (answer_timeout_.count() <= 0) return std::nullopt;
  return clock_.now() + answer_timeout_;
}

bool Connection::wait_socket(short events, Deadline deadline) const {
  pollfd descriptor{PQsocket(connection_), events, 0};
  for (;;) {
    int wait_ms = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - clock_.now());
      if (left.count() <= 0) return false;
      wait_ms = static_cast<int>(std::min<long long>(left.count(), 60'000));
    }
    const int ready = poll(&descriptor, 1, wait_ms);
    // An error on the socket is libpq's to report, on its next read.
    if (ready > 0 || (ready < 0 && errno != EINTR)) return true;
  }
}

void Connection::drop() {
  if (connection_ == nullptr) return;
  // PQfinish sends a Terminate message; without blocking, it cannot wait on
  // a server that does not read. (A PQcancel would: it needs the stopped
  // postmaster to accept a connection.)
  PQsetnonblocking(connection_, 1);
  PQfinish(connection_);
  connection_ = nullptr;
  prepared_.clear();
}

base::Error Connection::timed_out(std::string_view what) {
  drop();
  // The server process, for its log: what it waited on (log_lock_waits).
  return base::make_error(base::ErrorCode::kUnavailable,
                          std::string(what) + ": the database did not answer within " +
                              seconds_text(answer_timeout_) + " (PostgreSQL process " +
                              std::to_string(server_process_.pid) + ")");
}

bool Connection::flush(Deadline deadline, bool& timed_out) {
  for (;;) {
    const int flushed = PQflush(connection_);
    if (flushed == 0) return true;
    if (flushed < 0) return false;
    if (!wait_socket(POLLIN | POLLOUT, deadline)) {
      timed_out = true;
      return false;
    }
    if (PQconsumeInput(connection_) == 0) return false;
  }
}

base::Result<pg_result*> Connection::next_result(std::string_view what, Deadline deadline) {
  while (PQisBusy(connection_)) {
    if (!wait_socket(POLLIN, deadline)) return timed_out(what);
    if (PQconsumeInput(connection_) == 0) return error_from(nullptr, what);
  }
  return PQgetResult(connection_);
}

base::Result<QueryResult> Connection::answer(bool sent, std::string_view what, Deadline deadline) {
  if (!sent) return error_from(nullptr, what);
  bool late = false;
  if (!flush(deadline, late)) return late ? timed_out(what) : error_from(nullptr, what);
  QueryResult kept(nullptr);
  for (;;) {
    base::Result<pg_result*> got = next_result(what, deadline);
    if (!got.ok()) return got.error();
    pg_result* next = *got;
    if (next == nullptr) break;
    const ExecStatusType status = PQresultStatus(next);
    const bool kept_error =
        kept.result_ != nullptr && PQresultStatus(kept.result_) == PGRES_FATAL_ERROR;
    if (kept_error) {
      PQclear(next);
    } else {
      kept = QueryResult(next);
    }
    // A COPY hands the connection to the caller: no more results come now.
    if (is_copy(status)) break;
  }
  if (kept.result_ == nullptr) return error_from(nullptr, what);
  return kept;
}

base::Error Connection::unanswered(base::Error error, bool sent) const {
  // answer() fails only without an answer: once sent, the statement may
  // have been carried out (a COMMIT, or one outside a transaction).
  error.maybe_applied = sent;
  return error;
}

base::Result<QueryResult> Connection::execute(std::string_view sql,
                                              std::initializer_list<Param> params) {
  return execute(sql, std::span<const Param>(params.begin(), params.size()));
}

base::Result<std::string> Connection::prepared_name(std::string_view sql, Deadline deadline) {
  std::string key(sql);
  auto found = prepared_.find(key);
  if (found != prepared_.end()) return found->second;
  const std::string name = "s" + std::to_string(prepared_.size() + 1);
  base::Result<QueryResult> prepared =
      answer(PQsendPrepare(connection_, name.c_str(), key.c_str(), 0, nullptr) == 1,
             "prepare failed", deadline);
  if (!prepared.ok()) return prepared.error();
  if (PQresultStatus(prepared->result_) != PGRES_COMMAND_OK) {
    return error_from(prepared->result_, "prepare failed");
  }
  prepared_.emplace(std::move(key), name);
  return name;
}

bool Connection::send(const std::string* name, std::string_view sql,
                      std::span<const Param> params) {
  std::vector<const char*> values(params.size());
  std::vector<int> lengths(params.size());
  std::vector<int> formats(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::optional<std::string>& value = params[i].value();
    values[i] = value ? value->data() : nullptr;
    lengths[i] = value ? static_cast<int>(value->size()) : 0;
    formats[i] = params[i].is_binary() ? 1 : 0;
  }
  const int count = static_cast<int>(params.size());
  if (name != nullptr) {
    return PQsendQueryPrepared(connection_, name->c_str(), count, values.data(), lengths.data(),
                               formats.data(), 0) == 1;
  }
  return PQsendQueryParams(connection_, std::string(sql).c_str(), count, nullptr, values.data(),
                           lengths.data(), formats.data(), 0) == 1;
}

base::Result<QueryResult> Connection::execute(std::string_view sql, std::span<const Param> params) {
  if (is_broken())
    return base::make_error(base::ErrorCode::kUnavailable, "connection to PostgreSQL lost");
  const Deadline deadline = answer_deadline();
  base::Result<std::string> name = prepared_name(sql, deadline);
  if (!name.ok()) return name.error();
  const bool sent = send(&*name, sql, params);
  base::Result<QueryResult> result = answer(sent, "statement failed", deadline);
  if (!result.ok()) return unanswered(result.error(), sent);
  const ExecStatusType status = PQresultStatus(result->result_);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return error_from(result->result_, "statement failed");
  }
  return result;
}

base::Result<QueryResult> Connection::execute_generic(std::string_view sql,
                                                      std::initializer_list<Param> params) {
  return execute_generic(sql, std::span<const Param>(params.begin(), params.size()));
}

base::Result<QueryResult> Connection::execute_generic(std::string_view sql,
                                                      std::span<const Param> params) {
  const Statement statement[] = {{sql, std::vector<Param>(params.begin(), params.end())}};
  base::Result<std::vector<QueryResult>> answers = execute_generic(statement);
  if (!answers.ok()) return answers.error();
  return std::move(answers->front());
}

base::Result<std::vector<QueryResult>> Connection::execute_generic(
    std::span<const Statement> statements) {
  // A generic plan is made once, for the tables as they are then, and these
  // statements find their rows by key: made while a table was nearly empty,
  // a scan of it stayed in the plan as the table grew (a delete of one
  // pending reason by its key, planned on the empty table, scanned 100,000
  // of them: 5.9 ms; bench/RESULTS.md, session 37). Without sequential
  // scans, its plan is by key whatever the table's size was.
  // Without bitmap scans too: a bitmap of a partial index used for its
  // predicate alone, ANDed with one by key, read every unfinished job (the
  // orphans' read, planned on a table not yet analyzed: 89,700 entries,
  // 6.6 ms a read; bench/RESULTS.md, sessions 62 and 63; the leader's test on
  // unanalyzed tables).
  static const PlannerSettings kByKey({{"plan_cache_mode", "force_generic_plan"},
                                       {"enable_seqscan", "off"},
                                       {"enable_bitmapscan", "off"}});
  return execute_with(kByKey, statements, /*unprepared=*/false);
}

base::Result<std::vector<QueryResult>> Connection::execute_custom(
    std::span<const Statement> statements) {
  // Unprepared, parsed and planned as they run: PostgreSQL keeps the one
  // plan of a prepared statement without parameters whatever
  // plan_cache_mode says (the leader's complete read, planned while the
  // jobs were few, scanned every job, finished ones too). And so every
  // statement a session keeps may be planned generically, as
  // tests/support/kept_plans.h checks.
  static const PlannerSettings kAsTheyRun({{"plan_cache_mode", "force_custom_plan"}});
  return execute_with(kAsTheyRun, statements, /*unprepared=*/true);
}

Connection::PlannerSettings::PlannerSettings(
    std::initializer_list<std::pair<std::string_view, std::string_view>> settings) {
  std::string select;
  for (const auto& [name, value] : settings) {
    select.append(select.empty() ? "SELECT " : ", ").append("set_config('").append(name);
    select.append("', '").append(value).append("', true)");
    set.push_back(std::string("SET ").append(name).append(" = ").append(value));
    reset.insert(reset.begin(), std::string("RESET ").append(name));
  }
  local.push_back(std::move(select));
}

base::Result<std::vector<QueryResult>> Connection::execute_with(
    const PlannerSettings& settings, std::span<const Statement> statements, bool unprepared) {
  // Out of a transaction, a read by key took 5-10 us more with the one
  // statement, 9-13 with a SET and a RESET of each (bench/RESULTS.md,
  // session 62).
  if (!in_transaction()) return execute_between(settings.local, {}, statements, unprepared);
  return execute_between(settings.set, settings.reset, statements, unprepared);
}

base::Result<std::vector<QueryResult>> Connection::execute_between(
    std::span<const std::string> before, std::span<const std::string> after,
    std::span<const Statement> statements, bool unprepared) {
  // SET is transactional: a statement that fails takes it back with it.
  std::vector<Statement> all;
  all.reserve(before.size() + statements.size() + after.size());
  for (const std::string& sql : before) all.push_back({sql});
  all.insert(all.end(), statements.begin(), statements.end());
  for (const std::string& sql : after) all.push_back({sql});
  base::Result<std::vector<QueryResult>> answers = run_pipeline(all, unprepared);
  if (!answers.ok()) return answers.error();
  answers->erase(answers->end() - static_cast<std::ptrdiff_t>(after.size()), answers->end());
  answers->erase(answers->begin(), answers->begin() + static_cast<std::ptrdiff_t>(before.size()));
  return answers;
}

base::Result<std::vector<QueryResult>> Connection::execute_pipeline(
    std::span<const Statement> statements) {
  return run_pipeline(statements, /*unprepared=*/false);
}

base::Result<std::vector<QueryResult>> Connection::run_pipeline(
    std::span<const Statement> statements, bool unprepared) {
  if (is_broken())
    return base::make_error(base::ErrorCode::kUnavailable, "connection to PostgreSQL lost");
  const Deadline deadline = answer_deadline();
  std::vector<std::optional<std::string>> names(statements.size());  // none: unprepared
  for (std::size_t i = 0; i < statements.size() && !unprepared; ++i) {
    // Once per connection: a round trip each.
    base::Result<std::string> name = prepared_name(statements[i].sql, deadline);
    if (!name.ok()) return name.error();
    names[i] = std::move(*name);
  }
  if (PQenterPipelineMode(connection_) != 1) return error_from(nullptr, "pipeline failed");
  bool sent = true;
  for (std::size_t i = 0; i < statements.size() && sent; ++i) {
    sent = send(names[i] ? &*names[i] : nullptr, statements[i].sql, statements[i].params);
  }
  sent = sent && PQpipelineSync(connection_) == 1;
  if (!sent) {
    // Some of it may be queued or gone: the connection is not reused.
    base::Error error = error_from(nullptr, "pipeline failed");
    drop();
    return unanswered(std::move(error), true);
  }
  base::Result<std::vector<QueryResult>> answers = pipeline_answers(statements.size(), deadline);
  if (connection_ != nullptr && PQexitPipelineMode(connection_) != 1) {
    drop();  // results left unread: never reused so
    if (answers.ok()) return base::make_error(base::ErrorCode::kUnavailable, "pipeline failed");
  }
  if (!answers.ok() && connection_ == nullptr) return unanswered(answers.error(), true);
  return answers;
}

base::Result<std::vector<QueryResult>> Connection::pipeline_answers(std::size_t statements,
                                                                    Deadline deadline) {
  constexpr std::string_view kWhat = "statement failed";
  bool late = false;
  if (!flush(deadline, late)) return late ? timed_out(kWhat) : error_from(nullptr, kWhat);
  // Every answer is read, up to the sync, so the connection can be used
  // again: after a failure the server skips the rest (PIPELINE_ABORTED).
  std::vector<QueryResult> results;
  std::optional<base::Error> failed;
  for (std::size_t i = 0; i < statements; ++i) {
    QueryResult kept(nullptr);
    for (;;) {  // a statement's results end with a null
      base::Result<pg_result*> got = next_result(kWhat, deadline);
      if (!got.ok()) return got.error();
      pg_result* result = *got;
      if (result == nullptr) break;
      const ExecStatusType status = PQresultStatus(result);
      if (!failed && status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
        failed = status == PGRES_PIPELINE_ABORTED
                     ? base::make_error(base::ErrorCode::kInternal, "statement skipped")
                     : error_from(result, kWhat);
      }
      kept = QueryResult(result);
    }
    results.push_back(std::move(kept));
  }
  base::Result<pg_result*> got = next_result(kWhat, deadline);
  if (!got.ok()) return got.error();
  pg_result* sync = *got;
  const bool synced = sync != nullptr && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
  if (sync != nullptr) PQclear(sync);
  if (failed) return *failed;
  if (!synced) return error_from(nullptr, kWhat);
  return results;
}

base::Result<std::int64_t> Connection::copy_in(std::string_view copy_sql,
                                               std::span<const CopyRow> rows) {
  if (is_broken())
    return base::make_error(base::ErrorCode::kUnavailable, "connection to PostgreSQL lost");
  base::Result<QueryResult> started =
      answer(PQsendQuery(connection_, std::string(copy_sql).c_str()) == 1, "COPY failed",
             answer_deadline());
  if (!started.ok()) return started.error();
  if (PQresultStatus(started->result_) != PGRES_COPY_IN) {
    return error_from(started->result_, "COPY failed");
  }
  // The rows go blocking (PQputCopyData queues them, and a flush waits for
  // the server to read); the final answer comes with a deadline again.
  PQsetnonblocking(connection_, 0);
  // The binary format (PostgreSQL's "COPY" page): a signature, flags and an
  // empty header extension; per row a 16-bit field count, per field a
  // 32-bit length and the bytes; a count of -1 at the end. Numbers are in
  // network order. Pieces up to kGathered bytes gather in `pending`, so that
  // rows of a few KiB (a checkpoint's chunks) go out in messages of about
  // kMessage bytes, not one message and one send() each; a larger value goes
  // out from where it lives, in messages of at most kMessage bytes (libpq
  // grows its buffer to the largest message).
  constexpr std::size_t kMessage = std::size_t{1} << 20;
  constexpr std::size_t kGathered = std::size_t{64} << 10;
  std::string pending("PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0", 19);
  bool sent = true;
  auto send = [&](std::string_view data) {
    for (std::size_t at = 0; sent && at < data.size(); at += kMessage) {
      const std::size_t size = std::min(kMessage, data.size() - at);
      sent = PQputCopyData(connection_, data.data() + at, static_cast<int>(size)) == 1;
    }
  };
  auto append_word = [&](std::uint32_t value, int size) {
    for (int shift = (size - 1) * 8; shift >= 0; shift -= 8) {
      pending.push_back(static_cast<char>((value >> shift) & 0xff));
    }
  };
  for (const CopyRow& row : rows) {
    append_word(static_cast<std::uint32_t>(row.size()), 2);
    for (const CopyField& field : row) {
      const std::string_view wire = field.wire();
      append_word(static_cast<std::uint32_t>(wire.size()), 4);
      if (wire.size() <= kGathered) {
        pending.append(wire);
        continue;
      }
      send(pending);
      pending.clear();
      send(wire);
    }
    if (pending.size() >= kMessage) {
      send(pending);
      pending.clear();
    }
  }
  append_word(0xffff, 2);
  send(pending);
  const bool ended =
      PQputCopyEnd(connection_, sent ? nullptr : "tpujobs could not send the rows") == 1;
  PQsetnonblocking(connection_, 1);
  if (!ended) {
    return base::make_error(base::ErrorCode::kUnavailable,
                            "COPY failed: " + trimmed(PQerrorMessage(connection_)));
  }
  base::Result<QueryResult> done = answer(true, "COPY failed", answer_deadline());
  if (!done.ok()) return done.error();
  if (PQresultStatus(done->result_) != PGRES_COMMAND_OK) {
    return error_from(done->result_, "COPY failed");
  }
  return done->affected_rows();
}

base::Status Connection::execute_script(std::string_view trusted_sql) {
  if (is_broken())
    return base::make_error(base::ErrorCode::kUnavailable, "connection to PostgreSQL lost");
  const bool sent = PQsendQuery(connection_, std::string(trusted_sql).c_str()) == 1;
  base::Result<QueryResult> result = answer(sent, "script failed", answer_deadline());
  if (!result.ok()) return unanswered(result.error(), sent);
  const ExecStatusType status = PQresultStatus(result->result_);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return error_from(result->result_, "script failed");
  }
  return base::Status::Ok();
}

bool Connection::is_broken() const {
  return connection_ == nullptr || PQstatus(connection_) != CONNECTION_OK;
}

base::Result<std::vector<Notification>> Connection::wait_notifications(
    std::chrono::milliseconds timeout) {
  std::vector<Notification> received;
  if (is_broken())
    return base::make_error(base::ErrorCode::kUnavailable, "the LISTEN connection is lost");
  auto take = [&] {
    while (PGnotify* notify = PQnotifies(connection_)) {
      received.push_back({notify->relname, notify->extra ? notify->extra : ""});
      PQfreemem(notify);
    }
  };
  take();  // some may have come with the answer to an earlier statement
  if (!received.empty()) return received;
  pollfd descriptor{PQsocket(connection_), POLLIN, 0};
  if (descriptor.fd < 0 || is_broken()) {
    return base::make_error(base::ErrorCode::kUnavailable, "the LISTEN connection is lost");
  }
  const int ready = poll(&descriptor, 1, static_cast<int>(timeout.count()));
  if (ready > 0 && PQconsumeInput(connection_) == 0) {
    return base::make_error(
        base::ErrorCode::kUnavailable,
        "the LISTEN connection is lost: " + trimmed(PQerrorMessage(connection_)));
  }
  take();
  return received;
}

bool Connection::lost_while_idle() {
  if (is_broken()) return true;
  pollfd descriptor{PQsocket(connection_), POLLIN, 0};
  if (descriptor.fd < 0) return true;
  if (poll(&descriptor, 1, 0) > 0) {
    // Something arrived while idle: a termination notice or EOF. Reading it
    // updates the status; a notice alone leaves the connection usable.
    if (PQconsumeInput(connection_) == 0) return true;
    while (PGnotify* notify = PQnotifies(connection_)) PQfreemem(notify);
  }
  return is_broken();
}

bool Connection::in_transaction() const {
  return connection_ != nullptr && PQtransactionStatus(connection_) != PQTRANS_IDLE;
}

bool Connection::transaction_failed() const {
  return connection_ != nullptr && PQtransactionStatus(connection_) == PQTRANS_INERROR;
}

base::Result<Transaction> Transaction::begin(Connection& connection) {
  base::Status status = connection.execute_script("BEGIN");
  if (!status.ok()) return status.error();
  return Transaction(connection);
}

base::Result<std::pair<Transaction, std::vector<QueryResult>>> Transaction::begin(
    Connection& connection, std::span<const Statement> first) {
  const std::string begin[] = {"BEGIN"};
  base::Result<std::vector<QueryResult>> answers = connection.execute_between(begin, {}, first);
  Transaction transaction(connection);
  if (!answers.ok()) {
    // The block the BEGIN opened outlives the pipeline's failure: the
    // transaction rolls it back as it goes.
    transaction.open_ = connection.in_transaction();
    return answers.error();
  }
  return std::pair{std::move(transaction), std::move(*answers)};
}

Transaction::Transaction(Transaction&& other) noexcept
    : connection_(other.connection_), open_(other.open_) {
  other.open_ = false;
}

Transaction::~Transaction() {
  if (open_ && !connection_->is_broken()) (void)connection_->execute_script("ROLLBACK");
}

base::Status Transaction::commit() {
  assert(open_);
  open_ = false;
  // The server answers COMMIT of a failed transaction with a rollback and no
  // error, so a caller that ignored a failed statement must hear it here.
  if (connection_->transaction_failed()) {
    (void)connection_->execute_script("ROLLBACK");
    return base::make_error(base::ErrorCode::kInvalid,
                            "transaction rolled back: a statement in it failed");
  }
  return connection_->execute_script("COMMIT");
}

}  // namespace tpujobs::db
