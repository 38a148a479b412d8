// The parts of the job spec's parser (api/job_spec.h): a reader of one JSON
// object that collects a base::FieldError per problem (and per unknown field, with
// a "did you mean" hint), and the parsers of the spec's sections, each in the
// file of its part: the trainer and its environment (api/trainer_spec.cc),
// the model, data, optimizer and expectations (api/training_spec.cc).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/job_spec.h"
#include "api/problem.h"

namespace tpujobs::api::spec_parsing {

using nlohmann::json;

// The fields each object of the spec accepts, by schema path ("", "trainer",
// "model.layers[]", ...).
const std::map<std::string, std::vector<std::string>, std::less<>>& field_table();
std::size_t edit_distance(std::string_view a, std::string_view b);
// "U+000A": how an error names a control character.
std::string code_point(unsigned char c);
// "an integer", "a string", ...: a JSON value's type as errors name it.
std::string type_name(const json& value);
// "parent.key" ("key" at the top).
std::string join_path(std::string_view parent, std::string_view key);

// Reads the fields of one JSON object, collecting a base::FieldError for each
// problem, and when done one for each field nobody asked for. The top-level
// reader owns the list (take_errors()); a reader of a nested object adds its
// errors to its parent's, so the list keeps the order they were found in.
class ObjectReader {
 public:
  // `schema` names the entry of field_table() used for "did you mean" hints.
  ObjectReader(const json& object, std::string path, std::string schema)
      : object_(object), path_(std::move(path)), schema_(std::move(schema)) {}
  // A reader of an object inside `parent`'s; it reports its unknown fields
  // when it goes out of scope.
  ObjectReader(ObjectReader& parent, const json& object, std::string path, std::string schema)
      : object_(object), path_(std::move(path)), schema_(std::move(schema)), parent_(&parent) {}
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  ~ObjectReader() { finish(); }

  // Reports the unknown fields, then returns every error found (the
  // top-level reader's; a nested reader's are its parent's).
  std::vector<base::FieldError> take_errors() {
    finish();
    return std::move(errors_);
  }

  const std::string& path() const { return path_; }
  std::string field(std::string_view key) const { return join_path(path_, key); }

  // The raw value, or nullptr when absent (or explicitly null if allow_null).
  const json* raw(std::string_view key, bool allow_null = false) {
    seen_.emplace_back(key);
    auto it = object_.find(std::string(key));
    if (it == object_.end()) return nullptr;
    if (it->is_null() && !allow_null) return nullptr;
    return &*it;
  }

  std::optional<std::string> string(std::string_view key, std::size_t max_length = 256) {
    const json* value = raw(key);
    if (!value) return std::nullopt;
    if (!value->is_string()) {
      error(key, "must be a string, got " + type_name(*value));
      return std::nullopt;
    }
    std::string text = value->get<std::string>();
    if (text.size() > max_length) {
      error(key, "is longer than " + std::to_string(max_length) + " characters");
      return std::nullopt;
    }
    return text;
  }

  std::optional<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max) {
    const json* value = raw(key);
    if (!value) return std::nullopt;
    return integer_value(*value, field(key), min, max);
  }

  std::optional<double> number(std::string_view key, double min, double max) {
    const json* value = raw(key);
    if (!value) return std::nullopt;
    if (!value->is_number()) {
      error(key, "must be a number, got " + type_name(*value));
      return std::nullopt;
    }
    const double number = value->get<double>();
    if (!std::isfinite(number) || number < min || number > max) {
      error(key,
            "must be between " + format(min) + " and " + format(max) + ", got " + value->dump());
      return std::nullopt;
    }
    return number;
  }

  std::optional<bool> boolean(std::string_view key) {
    const json* value = raw(key);
    if (!value) return std::nullopt;
    if (!value->is_boolean()) {
      error(key, "must be true or false, got " + type_name(*value));
      return std::nullopt;
    }
    return value->get<bool>();
  }

  // Accepts one of `choices`; otherwise an error listing them.
  std::optional<std::string> choice(std::string_view key, const std::vector<std::string>& choices) {
    std::optional<std::string> text = string(key);
    if (!text) return std::nullopt;
    if (std::find(choices.begin(), choices.end(), *text) == choices.end()) {
      std::string list;
      for (const std::string& c : choices) list += (list.empty() ? "'" : ", '") + c + "'";
      error(key, "must be one of " + list + ", got '" + *text + "'");
      return std::nullopt;
    }
    return text;
  }

  // An error about `key` of this object.
  void error(std::string_view key, std::string message, std::string hint = {}) {
    add({field(key), std::move(message), std::move(hint)});
  }
  // An error naming its field's whole path.
  void add(base::FieldError error) {
    if (parent_)
      parent_->add(std::move(error));
    else
      errors_.push_back(std::move(error));
  }
  void add_all(const std::vector<base::FieldError>& errors) {
    for (const base::FieldError& e : errors) add(e);
  }

  // Requires `value` to be an object; an error at `path` otherwise. False
  // when absent too.
  bool expect_object(const json* value, const std::string& path) {
    if (!value) return false;
    if (!value->is_object()) {
      add({path, "must be an object, got " + type_name(*value), ""});
      return false;
    }
    return true;
  }

  // `value` (at `path`) as an integer in [min, max]; an error otherwise.
  std::optional<std::int64_t> integer_value(const json& value, const std::string& path,
                                            std::int64_t min, std::int64_t max) {
    std::optional<std::int64_t> number;
    if (value.is_number_integer()) {
      number = value.get<std::int64_t>();
    } else if (value.is_number_unsigned()) {
      const auto u = value.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        number = static_cast<std::int64_t>(u);
    } else if (value.is_number_float()) {
      const double d = value.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15)
        number = static_cast<std::int64_t>(d);
    }
    if (!value.is_number()) {
      add({path, "must be an integer, got " + type_name(value), ""});
      return std::nullopt;
    }
    if (!number || *number < min || *number > max) {
      add({path,
           "must be an integer between " + std::to_string(min) + " and " + std::to_string(max) +
               ", got " + value.dump(),
           ""});
      return std::nullopt;
    }
    return number;
  }

 private:
  static std::string format(double value) {
    json j = value;
    return j.dump();
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    report_unknown();
  }

  // The work is bounded whatever the body holds: "did you mean" (an edit
  // distance against every known field) only for the first few unknown
  // keys and only short ones, the list of known fields once, and at most
  // kMaxUnknownReported errors, then one that counts the rest.
  void report_unknown() {
    if (!object_.is_object()) return;
    constexpr std::size_t kMaxSuggestions = 8;
    constexpr std::size_t kMaxSuggestedKeyLength = 32;
    constexpr std::size_t kMaxUnknownReported = 20;
    std::size_t unknown = 0;
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      if (std::find(seen_.begin(), seen_.end(), it.key()) != seen_.end()) continue;
      if (++unknown > kMaxUnknownReported) continue;
      std::string hint;
      const auto& known = known_fields(schema_);
      std::size_t best = 3;
      const bool suggest = unknown <= kMaxSuggestions && it.key().size() <= kMaxSuggestedKeyLength;
      for (std::size_t k = 0; suggest && k < known.size(); ++k) {
        const std::string& candidate = known[k];
        const std::size_t d = edit_distance(it.key(), candidate);
        if (d < best) {
          best = d;
          hint = "did you mean '" + candidate + "'?";
        }
      }
      if (hint.empty() && !known.empty()) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        hint = "known fields here: " + list;
      }
      add({join_path(path_, it.key().substr(0, 128)), "unknown field", hint});
    }
    if (unknown > kMaxUnknownReported) {
      add({path_,
           std::to_string(unknown - kMaxUnknownReported) + " more unknown fields (the first " +
               std::to_string(kMaxUnknownReported) + " are listed)",
           "remove the fields this version does not know"});
    }
  }

  const json& object_;
  std::string path_;
  std::string schema_;
  ObjectReader* parent_ = nullptr;
  std::vector<base::FieldError> errors_;
  std::vector<std::string> seen_;
  bool finished_ = false;
};

// Python's name for the type of a JSON value, as Lightning's messages print it.
std::string python_type(const json& value);
// Python's repr() of a scalar JSON value (8.0, True); "{...}" for objects.
std::string python_repr(const json& value);

// The top-level "environment", "runtime", "env" and "resources": what the
// job runs on, as the rules of lightning/ read it (api/trainer_spec.cc).
// Each section parser reads through the top-level reader `top`, whose list
// collects its errors.
void parse_environment_fields(ObjectReader& top, JobSpec* spec);
// "trainer": the Trainer's arguments (api/trainer_spec.cc).
void parse_trainer_section(ObjectReader& top, JobSpec* spec);
// "model", "data", "optimizer" and "expect" into spec->training
// (api/training_spec.cc); `body` is the whole spec.
void parse_training_sections(ObjectReader& top, const json& body, JobSpec* spec);

}  // namespace tpujobs::api::spec_parsing
