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

TEST(ThreadPriority, ANiceOutsideZeroToNineteenIsRefused) {
  const int before = this_thread_nice();
  for (int nice : {-1, 20}) {
    Status set = set_this_thread_nice(nice);
    ASSERT_FALSE(set.ok());
    EXPECT_EQ(set.code(), ErrorCode::kInvalid);
    EXPECT_EQ(set.error().message, "nice must be from 0 to 19, got " + std::to_string(nice));
  }
  EXPECT_EQ(this_thread_nice(), before);
}

}  // namespace
}  // namespace tpujobs::base
