#include "api/public_error.h"

#include <iostream>

namespace tpujobs::api {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// "did not answer within 2 s" from anywhere in the message; "" if absent.
std::string deadline_phrase(std::string_view message) {
  constexpr std::string_view kPhrase = "did not answer within ";
  const std::size_t at = message.find(kPhrase);
  if (at == std::string_view::npos) return "";
  const std::size_t number = at + kPhrase.size();
  std::size_t end = number;
  while (end < message.size() &&
         (std::isdigit(static_cast<unsigned char>(message[end])) || message[end] == '.'))
    ++end;
  if (end == number || message.substr(end, 2) != " s") return "";
  return std::string(message.substr(at, end + 2 - at));
}

}  // namespace

std::string public_database_detail(std::string_view internal) {
  std::cerr << "tpujobs: database error answered 503: " << internal << "\n";
  if (internal == "the service is shutting down" || internal == "the service is stopping")
    return std::string(internal);
  const std::string deadline = deadline_phrase(internal);
  const std::string why = deadline.empty() ? "" : " (the database " + deadline + ")";
  if (starts_with(internal, "the database did not confirm the job")) {
    return "the database did not confirm the job, which may or may not have been stored" + why +
           ": submit it again with the same Idempotency-Key, which answers with the stored job "
           "rather than storing it twice";
  }
  if (starts_with(internal, "the job was not stored")) {
    return "the job was not stored: the database could not be reached" + why +
           "; submit it again later";
  }
  if (!deadline.empty()) return "the database " + deadline;
  return "the database is unavailable";
}

std::string public_internal_detail(std::string_view internal) {
  std::cerr << "tpujobs: internal error answered 500: " << internal << "\n";
  return "internal error (the service's log has the details)";
}

}  // namespace tpujobs::api
