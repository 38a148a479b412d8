// An incremental parser of text/event-stream (server-sent events), as the
// WHATWG HTML standard defines the format: feed it bytes as they arrive, get
// the events they complete. The client's `logs --follow` and the end-to-end
// tests read the service's live log streams with it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tpujobs::client {

class EventStreamParser {
 public:
  struct Event {
    std::string name = "message";  // the `event:` field; "message" when absent
    std::string id;                // the `id:` field; "" when absent
    std::string data;              // `data:` lines joined by '\n'
  };

  // Appends bytes (any split: mid-line, mid-CRLF) and returns the events
  // they complete, in order. Comments (": keep-alive") are skipped; a block
  // with no event or data field dispatches nothing.
  std::vector<Event> feed(std::string_view bytes);

 private:
  std::string buffer_;
  Event current_;
  bool has_fields_ = false;
};

}  // namespace tpujobs::client
