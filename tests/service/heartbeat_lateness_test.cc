#include "service/heartbeat_lateness.h"

#include <gtest/gtest.h>

namespace tpujobs::service {
namespace {

using std::chrono::milliseconds;

TEST(HeartbeatLateness, SaysOnceWhenHeartbeatsTurnLateWhyAndOnceWhenTheyAreOnTimeAgain) {
  const HeartbeatLateness::TimePoint start{};
  HeartbeatLateness lateness(milliseconds(1000), start);
  // On time: nothing said.
  EXPECT_FALSE(lateness.note(milliseconds(1001), milliseconds(3), "", start + milliseconds(1004)));
  // Answered after 2.5 s (the database held it up): said once.
  EXPECT_EQ(lateness.note(milliseconds(1001), milliseconds(2500), "", start + milliseconds(4505)),
            "late: sent 1001 ms after the one before, answered in 2500 ms");
  EXPECT_FALSE(lateness.note(milliseconds(3500), milliseconds(2), "", start + milliseconds(8007)));
  EXPECT_FALSE(lateness.note(milliseconds(1001), milliseconds(2), "statement timed out",
                             start + milliseconds(9010)));
  // On time again: how long since the last heartbeat on time.
  EXPECT_EQ(lateness.note(milliseconds(1001), milliseconds(4), "", start + milliseconds(10015)),
            "on time again, 9011 ms after the last one on time");
  EXPECT_FALSE(lateness.note(milliseconds(1001), milliseconds(4), "", start + milliseconds(11020)));
}

TEST(HeartbeatLateness, AFailureOrAHeartbeatSentLateIsLateToo) {
  const HeartbeatLateness::TimePoint start{};
  HeartbeatLateness failed(milliseconds(1000), start);
  EXPECT_EQ(failed.note(milliseconds(1001), milliseconds(10), "connection refused",
                        start + milliseconds(1011)),
            "late: sent 1001 ms after the one before, failed: connection refused");
  HeartbeatLateness held_up(milliseconds(1000), start);
  EXPECT_EQ(held_up.note(milliseconds(2001), milliseconds(1), "", start + milliseconds(2002)),
            "late: sent 2001 ms after the one before, answered in 1 ms");
  // Exactly two intervals is not late yet.
  HeartbeatLateness edge(milliseconds(1000), start);
  EXPECT_FALSE(edge.note(milliseconds(2000), milliseconds(2000), "", start + milliseconds(4000)));
}

}  // namespace
}  // namespace tpujobs::service
