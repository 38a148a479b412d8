#include "base/thread_priority.h"

#include <gtest/gtest.h>

#include <thread>

namespace tpujobs::base {
namespace {

TEST(ThreadPriority, LoweringOneThreadLeavesTheOthersAsTheyWere) {
  const int before = this_thread_nice();
  int inside = -100;
  std::thread lowered([&inside, before] {
    ASSERT_TRUE(set_this_thread_nice(before < 7 ? 7 : before).ok());
    inside = this_thread_nice();
  });
  lowered.join();
  EXPECT_EQ(inside, before < 7 ? 7 : before);
  EXPECT_EQ(this_thread_nice(), before) << "the nice value is the thread's, not the process's";
}

TEST(ThreadPriority, ANiceOutsideMinusTwentyToNineteenIsRefused) {
  const int before = this_thread_nice();
  for (int nice : {-21, 20}) {
    Status set = set_this_thread_nice(nice);
    ASSERT_FALSE(set.ok());
    EXPECT_EQ(set.code(), ErrorCode::kInvalid);
    EXPECT_EQ(set.error().message, "nice must be from -20 to 19, got " + std::to_string(nice));
  }
  EXPECT_EQ(this_thread_nice(), before);
}

// Raising a thread's priority is the system's to allow (CAP_SYS_NICE, or
// RLIMIT_NICE): it is done, or refused as kConflict, never ignored.
TEST(ThreadPriority, RaisingIsDoneOrRefusedNeverIgnored) {
  const int before = this_thread_nice();
  int after = 100;
  Status set = Status::Ok();
  std::thread raised([&] {
    set = set_this_thread_nice(before - 1);
    after = this_thread_nice();
  });
  raised.join();
  if (set.ok()) {
    EXPECT_EQ(after, before - 1);
  } else {
    EXPECT_EQ(set.code(), ErrorCode::kConflict);
    EXPECT_NE(set.error().message.find("setpriority(" + std::to_string(before - 1) + ")"),
              std::string::npos)
        << set.error().message;
    EXPECT_EQ(after, before);
  }
  EXPECT_EQ(this_thread_nice(), before);
}

}  // namespace
}  // namespace tpujobs::base
