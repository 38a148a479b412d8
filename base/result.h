// Errors as values at every module boundary: a call that can fail returns a
// Result<T> (or a Status) instead of throwing, so a caller sees each way it
// can go wrong. The one error idiom of the project (DESIGN §1).
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace tpujobs::base {

enum class ErrorCode {
  kNotFound,
  kConflict,
  // The server is down or the connection was lost: retrying later may work.
  kUnavailable,
  // The caller passed something that is refused as written: a request or
  // job spec that does not parse, a value the database refuses (bad JSON, a
  // CHECK), a job that cannot run as specified.
  kInvalid,
  kInternal,
};

std::string_view to_string(ErrorCode code);

// One problem with one field of what a user sent (a job spec, a query):
// where, what is wrong, and what to write instead.
struct FieldError {
  std::string field;  // JSON path: "trainer.devices", "model.layers[2].out", "" for the whole body
  std::string message;
  std::string hint;
  // Where `message` comes from when it quotes another project's text:
  // "2.1.4:src/lightning/fabric/accelerators/xla.py" (a tag of
  // Lightning-AI/pytorch-lightning and a path), or another cited source;
  // empty when the text is tpujobs' own. Not part of an API answer.
  std::string source = {};
};

struct Error {
  ErrorCode code;
  std::string message;
  // kUnavailable only: the request reached the server and its answer was
  // lost (a deadline passed, the connection dropped), so it may have been
  // carried out. False when it was never sent (no connection could be
  // opened or borrowed) or the server answered that it failed. Which
  // server process was left with it is db/'s to know
  // (db::JobRepository::take_unanswered_inserts).
  bool maybe_applied = false;
  // What the user can do about it, where the error is theirs to fix.
  std::string hint = {};
  // The fields of what the user sent that the error is about, each with its
  // problem: a parser's or a validation's every problem (kInvalid,
  // invalid_fields), or the one job-spec field a failed job's error is
  // about ("model.layers", "resources.workers"; executor::job_error). Empty
  // when the error is not about the user's fields.
  std::vector<FieldError> fields = {};
  // kInvalid from a validation: what it warned of on the way (Lightning's
  // deprecation warnings), which the user sees beside the field errors.
  std::vector<std::string> warnings = {};
  // A failed job's error type as users see it, stored and answered as is
  // ("RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "INVALID_ARGUMENT", ...;
  // executor::job_error sets it with its code). Empty for other errors.
  std::string type = {};
};

// Holds either a T or an error. E is Error at every module boundary; another
// type only inside a module. Reading value() of an error result (or error()
// of an ok one) is a programming error and asserts.
template <class T, class E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Result(E error) : state_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const {
    assert(!ok());
    return std::get<1>(state_);
  }
  ErrorCode code() const requires std::is_same_v<E, Error> { return error().code; }

 private:
  std::variant<T, E> state_;
};

// The result of a call that returns nothing but can fail.
class [[nodiscard]] Status : public Result<std::monostate> {
 public:
  using Result<std::monostate>::Result;
  static Status Ok() { return Status(std::monostate{}); }
};

inline Error make_error(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

// The field errors of `result`: none when it holds a value.
template <class T>
const std::vector<FieldError>& field_errors(const Result<T>& result) {
  static const std::vector<FieldError> kNone;
  return result.ok() ? kNone : result.error().fields;
}

// kInvalid listing every problem of a request; its message is the first
// one's ("field: message"), for a log line.
inline Error invalid_fields(std::vector<FieldError> fields) {
  Error error{ErrorCode::kInvalid, "invalid"};
  if (!fields.empty()) {
    const FieldError& first = fields.front();
    error.message = first.field.empty() ? first.message : first.field + ": " + first.message;
    error.hint = first.hint;
  }
  error.fields = std::move(fields);
  return error;
}

}  // namespace tpujobs::base
