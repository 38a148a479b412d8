// What a client is told when the database fails: what happened, in this
// service's own words. PostgreSQL's error text, its socket path or host and
// its SQL never reach a client (they help an attacker and mean nothing to a
// user); the whole internal message goes to the service's log instead.
#pragma once

#include <string>
#include <string_view>

namespace tpujobs::api {

// For a 503: "the database is unavailable", or "the database did not answer
// within N s" when that is what happened; the submit path's own sentences
// (the job was not stored / may or may not have been stored) are kept with
// the database's text taken out. Logs `internal` to stderr.
std::string public_database_detail(std::string_view internal);

// For a 500: a fixed sentence; logs `internal` to stderr.
std::string public_internal_detail(std::string_view internal);

}  // namespace tpujobs::api
