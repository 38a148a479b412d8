#include "client/event_stream.h"

namespace tpujobs::client {

std::vector<EventStreamParser::Event> EventStreamParser::feed(std::string_view bytes) {
  buffer_.append(bytes);
  std::vector<Event> events;
  std::size_t line_start = 0;
  for (;;) {
    const std::size_t newline = buffer_.find('\n', line_start);
    if (newline == std::string::npos) break;
    std::string line = buffer_.substr(line_start, newline - line_start);
    line_start = newline + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (has_fields_) events.push_back(std::move(current_));
      current_ = Event{};
      has_fields_ = false;
      continue;
    }
    if (line.front() == ':') continue;  // a comment: keep-alive
    const std::size_t colon = line.find(':');
    const std::string field = line.substr(0, colon);
    std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (field == "event") {
      current_.name = value;
      has_fields_ = true;
    } else if (field == "data") {
      if (!current_.data.empty()) current_.data += '\n';
      current_.data += value;
      has_fields_ = true;
    } else if (field == "id") {
      current_.id = value;
    }
  }
  buffer_.erase(0, line_start);
  return events;
}

}  // namespace tpujobs::client
