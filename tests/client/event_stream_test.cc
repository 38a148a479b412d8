#include "client/event_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tpujobs::client {
namespace {

// "name#id:data" per event, joined by " | ".
std::string Describe(const std::vector<EventStreamParser::Event>& events) {
  std::string out;
  for (const EventStreamParser::Event& event : events) {
    if (!out.empty()) out += " | ";
    out += event.name + "#" + event.id + ":" + event.data;
  }
  return out;
}

TEST(EventStream, EventsCompleteAtTheBlankLineWhereverTheBytesSplit) {
  const std::string stream =
      "id: 1\nevent: log\ndata: {\"seq\":1}\n\n: keep-alive\n\nid: 2\r\nevent: log\r\ndata: "
      "{\"seq\":2}\r\n\r\n"
      "event: end\ndata: SUCCEEDED\n\n";
  const std::string expected = "log#1:{\"seq\":1} | log#2:{\"seq\":2} | end#:SUCCEEDED";
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) {
    EventStreamParser parser;
    std::vector<EventStreamParser::Event> events;
    for (std::size_t at = 0; at < stream.size(); at += piece) {
      for (auto& event : parser.feed(std::string_view(stream).substr(at, piece)))
        events.push_back(event);
    }
    ASSERT_EQ(expected, Describe(events)) << "fed in pieces of " << piece << " bytes";
  }
}

TEST(EventStream, DataLinesJoinWithNewlinesAndNameDefaultsToMessage) {
  EventStreamParser parser;
  EXPECT_EQ("message#:first\nsecond", Describe(parser.feed("data: first\ndata:second\n\n")));
}

TEST(EventStream, AnIncompleteEventIsHeldUntilItsBlankLine) {
  EventStreamParser parser;
  EXPECT_EQ("", Describe(parser.feed("event: log\ndata: x\n")));
  EXPECT_EQ("log#:x", Describe(parser.feed("\n")));
}

TEST(EventStream, ABlockWithOnlyAnIdOrCommentsDispatchesNothing) {
  EventStreamParser parser;
  EXPECT_EQ("", Describe(parser.feed("id: 7\n\n: ping\n\nretry: 1000\n\n")));
}

}  // namespace
}  // namespace tpujobs::client
