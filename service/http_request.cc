#include "service/http_request.h"

#include <boost/algorithm/string/case_conv.hpp>
#include <string>

#include "api/url.h"

namespace tpujobs::service {

api::Request to_api_request(boost::beast::http::request<boost::beast::http::string_body>&& message,
                            base::Clock::time_point received_at) {
  api::Request request;
  request.received_at = received_at;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  api::RequestTarget split = api::split_target(request.target);
  request.path = std::move(split.path);
  request.query = std::move(split.query);
  for (const auto& field : message)
    request.headers[boost::algorithm::to_lower_copy(std::string(field.name_string()))] =
        std::string(field.value());
  request.body = std::move(message.body());
  return request;
}

}  // namespace tpujobs::service
