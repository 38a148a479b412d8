// Beast's parsed request as an api::Request: the one translation, used by
// the server's connections (http_session.cc) and by the HTTP fuzzer
// (fuzz/http_request_fuzzer.cc), so the fuzzer checks what the server does.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>

#include "api/http.h"
#include "base/clock.h"

namespace tpujobs::service {

// The most header bytes a request may send; more are refused with 431.
inline constexpr std::uint32_t kHttpHeaderLimit = 16 * 1024;

// The method, the target (and its path and query, split), the headers (names
// lower-cased) and the body of `message`, whose body it takes; received at
// `received_at`.
api::Request to_api_request(boost::beast::http::request<boost::beast::http::string_body>&& message,
                            base::Clock::time_point received_at);

}  // namespace tpujobs::service
