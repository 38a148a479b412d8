// One libpq connection, the values passed to its statements, the rows that
// come back, and transactions. Obtain connections from ConnectionPool.
//
// @warning Do NOT build a query string by embedding values in it! Write the
// SQL with placeholders ($1, $2, ...) and pass the values as Params: they
// travel separately from the SQL text, so no value can change what the
// statement does.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "db/pg_text.h"

struct pg_conn;
struct pg_result;

namespace tpujobs::db {

// A value bound to a statement placeholder: NULL, text, or raw bytes (bytea).
class Param {
 public:
  Param(std::nullopt_t) {}
  Param(std::string_view text) : value_(std::string(text)) {}
  Param(const char* text) : value_(std::string(text)) {}
  Param(const std::string& text) : value_(text) {}
  Param(std::string&& text) : value_(std::move(text)) {}
  template <std::integral T>
  Param(T number)
      : value_(std::same_as<T, bool> ? std::string(number ? "true" : "false")
                                     : std::to_string(number)) {}
  Param(double number);
  Param(TimePoint time) : value_(format_timestamp(time)) {}
  template <class T>
  Param(const std::optional<T>& value) {
    if (value) *this = Param(*value);
  }

  // Raw bytes for a bytea placeholder, sent in binary so nothing is escaped.
  static Param bytes(std::string_view data);
  // An array placeholder ($1::text[], $1::jsonb[], $1::bigint[], ...).
  static Param array(std::span<const std::optional<std::string>> elements);
  // A bigint array placeholder ($1::bigint[]): ids.
  static Param bigints(std::span<const std::int64_t> values);

  bool is_null() const { return !value_.has_value(); }
  bool is_binary() const { return binary_; }
  const std::optional<std::string>& value() const { return value_; }

 private:
  std::optional<std::string> value_;
  bool binary_ = false;
};

// One field of a row that Connection::copy_in sends in PostgreSQL's binary
// COPY format: a bigint, an integer or a bytea column's value. Bytes are not
// copied: they must outlive the copy_in call.
class CopyField {
 public:
  static CopyField int64(std::int64_t value);
  static CopyField int32(std::int32_t value);
  static CopyField bytes(std::string_view data);

  // The field's bytes on the wire (after its length word): network-order
  // digits, or the bytes themselves.
  std::string_view wire() const;

 private:
  // The low `size` bytes of `bits`, most significant first.
  static CopyField number(std::uint64_t bits, int size);

  char number_[8] = {};
  std::string_view bytes_;
  bool is_number_ = false;
  int number_size_ = 0;
};
using CopyRow = std::vector<CopyField>;

// The rows of a finished statement, in text format. Accessors take a row and
// a column index; reading a NULL gives "" / 0 / false (check is_null first
// when NULL is meaningful).
class QueryResult {
 public:
  explicit QueryResult(pg_result* result);
  QueryResult(QueryResult&&) noexcept;
  QueryResult& operator=(QueryResult&&) noexcept;
  ~QueryResult();

  int rows() const;
  int columns() const;
  // Rows inserted, updated or deleted by the statement.
  std::int64_t affected_rows() const;

  bool is_null(int row, int column) const;
  std::string_view text(int row, int column) const;
  std::string string(int row, int column) const { return std::string(text(row, column)); }
  std::optional<std::string> optional_string(int row, int column) const;
  std::int64_t int64(int row, int column) const;
  bool boolean(int row, int column) const;
  double float64(int row, int column) const;
  TimePoint timestamp(int row, int column) const;
  std::optional<TimePoint> optional_timestamp(int row, int column) const;
  // A bytea column, decoded to raw bytes.
  std::string bytes(int row, int column) const;

 private:
  friend class Connection;
  pg_result* result_;
};

// One statement of Connection::execute_pipeline: SQL with $n placeholders
// and the values bound to them.
struct Statement {
  std::string_view sql;
  std::vector<Param> params{};
};

// A NOTIFY received on a LISTENing connection.
struct Notification {
  std::string channel{};
  std::string payload{};
};

// The PostgreSQL server process of a connection. Once it is gone, a
// statement it was left with (its answer lost: an Error marked
// maybe_applied) has been carried out or never will be
// (db::JobRepository::end_server_process).
struct ServerProcess {
  int pid = 0;  // 0: unknown
  // Its pg_stat_activity.backend_start, as the session printed it (ISO,
  // UTC): with the pid, it names this process and no later one.
  std::string started{};
};

// A live connection. Not thread-safe: one thread uses it at a time (the pool
// guarantees that). Every statement is prepared once per connection, keyed by
// its SQL text, and then executed with its parameters.
//
// The answer deadline: a server that is stopped (SIGSTOP) or cut off with
// its socket open never answers, and neither its statement_timeout nor TCP
// keepalives end the wait (the kernel still acknowledges; the embedded
// server is on a Unix socket). With an answer timeout set, every statement
// waits at most that long for its answer; then the connection is closed
// (is_broken() turns true, the pool replaces it) and the statement fails
// kUnavailable "... did not answer within N s". A statement whose answer
// did not come may still have been carried out (a COMMIT, an autocommit
// INSERT): the caller cannot tell. Zero (the default) waits forever, for
// what may rightly run long: migrations, a LISTEN connection's statements.
class Connection {
 public:
  // Connects with a libpq conninfo ("host=... dbname=..." or a postgresql://
  // URL); connect_timeout defaults to 10 s (with an answer timeout: that
  // timeout, at least 2 s) and TCP keepalives are on, unless the conninfo
  // sets them. kUnavailable when the server cannot be reached. The answer
  // deadlines are read off `clock`, which must outlive the connection.
  static base::Result<std::unique_ptr<Connection>> open(
      const std::string& conninfo,
      std::chrono::milliseconds answer_timeout = std::chrono::milliseconds(0),
      base::Clock& clock = base::real_clock());
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one statement with $n placeholders bound to params.
  base::Result<QueryResult> execute(std::string_view sql, std::initializer_list<Param> params = {});
  base::Result<QueryResult> execute(std::string_view sql, std::span<const Param> params);

  // execute(), with the plan made once for any values of the parameters (a
  // generic plan) rather than for each. For a statement whose plan does
  // not depend on its values and which costs more to plan than to run: a
  // job's transition took 0.36 ms to plan and 0.5 ms to run, each time
  // (PostgreSQL's plan cache kept choosing custom plans for it;
  // bench/RESULTS.md, session 26). Planned without sequential or bitmap
  // scans: for statements that find their rows by key, so that a plan made
  // while a table was nearly empty does not scan it once it is not, nor
  // AND a whole partial index into a bitmap (session 62). Still one round
  // trip: the settings are made for it and end with it, in one pipeline.
  base::Result<QueryResult> execute_generic(std::string_view sql, std::span<const Param> params);
  base::Result<QueryResult> execute_generic(std::string_view sql,
                                            std::initializer_list<Param> params);
  // execute_pipeline(), each statement planned so.
  base::Result<std::vector<QueryResult>> execute_generic(std::span<const Statement> statements);
  // execute_pipeline(), each statement planned anew at each run, for its
  // parameters and the tables' present sizes: for statements whose best
  // plan changes as a table grows. A generic plan is made once, for the
  // table as it was then: the scheduler leader's read of the rows changed
  // since its last pass, kept from when 200 jobs were queued, took 37-79 ms
  // a pass at 100,000, for no row, until autovacuum ran and had the plan
  // made again (bench/RESULTS.md, session 37). The statements are sent
  // unprepared (parsed at each run too): a prepared statement without
  // parameters keeps its one plan whatever plan_cache_mode says.
  base::Result<std::vector<QueryResult>> execute_custom(std::span<const Statement> statements);

  // Runs `statements` in order, sent together and answered together: one
  // round trip instead of one each (libpq's pipeline mode). They run in one
  // implicit transaction, each with its own snapshot (READ COMMITTED): for
  // reads that go together, or writes that commit together. The first
  // statement that fails fails the call, and none after it runs.
  base::Result<std::vector<QueryResult>> execute_pipeline(std::span<const Statement> statements);

  // Runs `copy_sql`, a `COPY table (columns) FROM STDIN (FORMAT binary)`,
  // over `rows` (fields in the columns' order) and returns the rows copied.
  // The rows travel in CopyData messages of at most 1 MiB, large values
  // straight from where they live: neither side holds the whole input, as
  // a statement with one large bytea parameter makes both do. The answer
  // deadline bounds the COPY's start and its final answer, not the sending
  // of the rows: a large checkpoint goes at the pace the server reads it.
  base::Result<std::int64_t> copy_in(std::string_view copy_sql, std::span<const CopyRow> rows);

  // Runs several ';'-separated statements without parameters.
  // @warning Only for SQL text that is part of the program (migrations);
  // never for text that contains a value.
  base::Status execute_script(std::string_view trusted_sql);

  // LISTEN/NOTIFY (DESIGN §9): after `LISTEN channel` on this connection,
  // waits up to timeout for notifications and returns them (empty when none
  // came). kUnavailable when the connection is lost. Use a connection of its
  // own, not one lent by a pool, so the LISTEN lasts.
  base::Result<std::vector<Notification>> wait_notifications(std::chrono::milliseconds timeout);

  // How long each statement waits for its answer (see the class comment);
  // zero: forever.
  void set_answer_timeout(std::chrono::milliseconds timeout) { answer_timeout_ = timeout; }
  std::chrono::milliseconds answer_timeout() const { return answer_timeout_; }

  // True once the connection to the server is lost or closed after a
  // statement's answer did not come in time; it is then never used again
  // (the pool replaces it).
  bool is_broken() const;
  // True when the server closed the connection while it sat idle (a restart).
  // Reads what is pending on the socket without blocking.
  bool lost_while_idle();
  // True when a transaction is open (or failed and not rolled back).
  bool in_transaction() const;
  // True when a statement failed inside the open transaction.
  bool transaction_failed() const;
  // The server process this connection talks to, read when it was opened
  // (pid 0 if unknown); still known after a lost answer closed it.
  const ServerProcess& server_process() const { return server_process_; }

 private:
  friend class Transaction;  // its BEGIN goes with its first statements
  using Deadline = std::optional<base::Clock::time_point>;

  Connection(pg_conn* connection, base::Clock& clock) : connection_(connection), clock_(clock) {}
  // open()'s second half, on a connection made: non-blocking sends, the
  // answer timeout, and the session's settings, read back with its server
  // process in the same round trip.
  base::Status set_up_session(std::chrono::milliseconds answer_timeout);
  base::Error error_from(pg_result* result, std::string_view what) const;
  Deadline answer_deadline() const;
  // execute_pipeline() of `statements` between the statements `before`
  // and `after` (SETs of the planner's settings and their RESETs; a BEGIN),
  // in the same round trip; only the answers of `statements`.
  base::Result<std::vector<QueryResult>> execute_between(std::span<const std::string> before,
                                                         std::span<const std::string> after,
                                                         std::span<const Statement> statements,
                                                         bool unprepared = false);
  // The statements that make planner settings (name, value) for a
  // pipeline's statements alone, written once: out of a transaction, one
  // set_config(..., true) local to the pipeline's own (none to undo it);
  // in a caller's transaction, which goes on after them, SETs and RESETs.
  struct PlannerSettings {
    explicit PlannerSettings(
        std::initializer_list<std::pair<std::string_view, std::string_view>> settings);
    std::vector<std::string> local, set, reset;
  };
  // execute_between() of `statements` with `settings`.
  base::Result<std::vector<QueryResult>> execute_with(const PlannerSettings& settings,
                                                      std::span<const Statement> statements,
                                                      bool unprepared);
  // execute_pipeline(), or with `unprepared` each statement sent as an
  // unnamed one, parsed and planned as it runs.
  base::Result<std::vector<QueryResult>> run_pipeline(std::span<const Statement> statements,
                                                      bool unprepared);
  // After a PQsend* call that returned `sent`: flushes the request and
  // collects its results by `deadline`. The result is the first error, or
  // else the last result (as PQexec gives). On timeout, closes the connection.
  base::Result<QueryResult> answer(bool sent, std::string_view what, Deadline deadline);
  // The next result of what was sent, by `deadline` (null: the current
  // statement's results have all come). On timeout, closes the connection.
  base::Result<pg_result*> next_result(std::string_view what, Deadline deadline);
  // Sends what libpq still holds of a request, reading meanwhile so that a
  // server answering while we send never waits on us. False on a failure
  // (kept in libpq) or when the deadline passed (`timed_out`).
  bool flush(Deadline deadline, bool& timed_out);
  // The name `sql` is prepared under on this connection, prepared now if
  // it was not.
  base::Result<std::string> prepared_name(std::string_view sql, Deadline deadline);
  // Sends `sql` with `params`: as the statement prepared under `name`, or
  // unprepared when `name` is null. False when not sent.
  bool send(const std::string* name, std::string_view sql, std::span<const Param> params);
  // execute_pipeline's answers, once its statements and sync are sent.
  base::Result<std::vector<QueryResult>> pipeline_answers(std::size_t statements,
                                                          Deadline deadline);
  // The error of a statement whose answer did not come in time; the
  // connection is dropped.
  base::Error timed_out(std::string_view what);
  // answer()'s failure, marked maybe_applied when the request was `sent`.
  base::Error unanswered(base::Error error, bool sent) const;
  // Waits for the socket to be ready for `events`; false when the deadline passed.
  bool wait_socket(short events, Deadline deadline) const;
  // Closes the connection without waiting on the server (a stopped server
  // never reads a cancel or a goodbye).
  void drop();

  pg_conn* connection_;  // null once dropped
  base::Clock& clock_;
  ServerProcess server_process_;  // read when opened, kept past drop()
  std::chrono::milliseconds answer_timeout_{0};
  std::unordered_map<std::string, std::string> prepared_;  // SQL text -> statement name
};

// A transaction on one connection: BEGIN when made, ROLLBACK when destroyed
// without commit(). The connection must outlive it.
class Transaction {
 public:
  static base::Result<Transaction> begin(Connection& connection);
  // begin(), with `first` run in the transaction in the same round trip as
  // its BEGIN (one pipeline: Connection::execute_pipeline), and their
  // answers in order. When one fails, the call fails and the transaction
  // is rolled back.
  static base::Result<std::pair<Transaction, std::vector<QueryResult>>> begin(
      Connection& connection, std::span<const Statement> first);
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  base::Result<QueryResult> execute(std::string_view sql,
                                    std::initializer_list<Param> params = {}) {
    return connection_->execute(sql, params);
  }
  base::Result<QueryResult> execute(std::string_view sql, std::span<const Param> params) {
    return connection_->execute(sql, params);
  }
  base::Status execute_script(std::string_view trusted_sql) {
    return connection_->execute_script(trusted_sql);
  }
  base::Result<std::int64_t> copy_in(std::string_view copy_sql, std::span<const CopyRow> rows) {
    return connection_->copy_in(copy_sql, rows);
  }

  // Commits. When a statement in the transaction failed, nothing is
  // committed and the result is kInvalid. kUnavailable when the connection
  // dropped (the outcome is then unknown).
  base::Status commit();

 private:
  explicit Transaction(Connection& connection) : connection_(&connection) {}
  Connection* connection_;
  bool open_ = true;
};

}  // namespace tpujobs::db
