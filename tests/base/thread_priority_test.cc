#include "base/thread_priority.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
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

// A child that leads a session of its own, as a PostgreSQL backend does,
// until it is ended.
class SessionLeader {
 public:
  SessionLeader() {
    pid_ = fork();
    if (pid_ == 0) {
      setsid();
      for (;;) pause();
    }
  }
  ~SessionLeader() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
};

// The group's line in /proc/PID/autogroup ("/autogroup-N nice K"), or ""
// where the kernel has no autogroup.
std::string autogroup_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/autogroup");
  std::string line;
  std::getline(in, line);
  return line;
}

TEST(ProcessPriority, AProcessAndItsSessionsGroupTakeTheNiceGiven) {
  SessionLeader child;
  ASSERT_GT(child.pid(), 0);
  // setsid() is the child's first step: its group is its own once the
  // group's name differs from this process's.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (autogroup_of(child.pid()) == autogroup_of(getpid()) && !autogroup_of(getpid()).empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Else the renice below would reach this process's group.
  if (!autogroup_of(getpid()).empty()) {
    ASSERT_NE(autogroup_of(child.pid()), autogroup_of(getpid()))
        << "the child's session is a group of its own";
  }
  // Lowering is every process's right.
  ASSERT_TRUE(set_process_nice(child.pid(), 19).ok());
  EXPECT_EQ(19, getpriority(PRIO_PROCESS, static_cast<id_t>(child.pid())));
  const std::string group = autogroup_of(child.pid());
  if (!group.empty()) {
    EXPECT_NE(std::string::npos, group.find(" nice 19")) << group;
    EXPECT_EQ(std::string::npos, autogroup_of(getpid()).find(" nice 19"))
        << "this process's group is left as it was";
  }
}

TEST(ProcessPriority, ANiceOutOfRangeOrNoProcessIsRefused) {
  EXPECT_EQ(ErrorCode::kInvalid, set_process_nice(getpid(), 20).code());
  EXPECT_EQ(ErrorCode::kInvalid, set_process_nice(0, 5).code());
}

}  // namespace
}  // namespace tpujobs::base
