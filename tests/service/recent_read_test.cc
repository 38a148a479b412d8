#include "service/recent_read.h"

#include <gtest/gtest.h>

namespace tpujobs::service {
namespace {

using namespace std::chrono_literals;

// A count in the database, and how often it was read.
class RecentReadTest : public ::testing::Test {
 protected:
  base::Result<int> read() {
    ++reads_;
    if (down_) return base::make_error(base::ErrorCode::kUnavailable, "the database is away");
    return stored_;
  }
  // The value answered (the copy is shared: its pointer).
  base::Result<int> get(bool now = false) {
    return value_of(copy_.get([this] { return read(); }, now));
  }
  static base::Result<int> value_of(const base::Result<RecentRead<int>::Copy>& copy) {
    if (!copy.ok()) return copy.error();
    return **copy;
  }

  base::FakeClock clock_;
  RecentRead<int> copy_{clock_, 1s};
  int stored_ = 7;
  bool down_ = false;
  int reads_ = 0;
};

TEST_F(RecentReadTest, CallsWithinTheAgeShareOneRead) {
  EXPECT_EQ(7, *get());
  stored_ = 8;
  clock_.advance(999ms);
  EXPECT_EQ(7, *get()) << "a copy younger than its age";
  EXPECT_EQ(1, reads_);
  clock_.advance(1ms);
  EXPECT_EQ(8, *get()) << "a second after the read";
  EXPECT_EQ(2, reads_);
}

TEST_F(RecentReadTest, ACallForNowReadsWhateverTheCopysAge) {
  EXPECT_EQ(7, *get());
  stored_ = 8;
  EXPECT_EQ(8, *get(/*now=*/true));
  EXPECT_EQ(8, *get()) << "its read is the copy now";
  EXPECT_EQ(2, reads_);
}

TEST_F(RecentReadTest, AFailedReadAnswersTheLastCopyAndTheNextCallTriesAgain) {
  down_ = true;
  EXPECT_FALSE(get().ok()) << "no copy yet: the error";
  down_ = false;
  EXPECT_EQ(7, *get());
  clock_.advance(2s);
  down_ = true;
  stored_ = 8;
  base::Result<int> away = get();
  ASSERT_TRUE(away.ok()) << "the last copy, not the error";
  EXPECT_EQ(7, *away);
  down_ = false;
  EXPECT_EQ(8, *get()) << "the copy kept its age: the next call reads";
  EXPECT_EQ(4, reads_);
}

TEST_F(RecentReadTest, WhileOneCallReadsTheOthersAnswerTheCopy) {
  EXPECT_EQ(7, *get());
  clock_.advance(2s);
  stored_ = 8;
  base::Result<int> meanwhile = base::make_error(base::ErrorCode::kInternal, "not called");
  base::Result<int> fresh = value_of(copy_.get([&]() -> base::Result<int> {
    meanwhile = get();  // another request, while this one waits for the database
    return read();
  }));
  EXPECT_EQ(8, *fresh);
  ASSERT_TRUE(meanwhile.ok());
  EXPECT_EQ(7, *meanwhile) << "the old copy, not a second read";
  EXPECT_EQ(2, reads_);
  EXPECT_EQ(8, *get()) << "the new read is the copy";
}

TEST_F(RecentReadTest, AfterForgetTheNextCallReadsAndAReadBegunBeforeIsNotKept) {
  EXPECT_EQ(7, *get());
  stored_ = 8;
  copy_.forget();  // this process wrote 8
  EXPECT_EQ(8, *get());
  EXPECT_EQ(2, reads_);

  // A read that began before this process's write answers its caller,
  // but the next call reads again.
  clock_.advance(2s);
  base::Result<int> raced = value_of(copy_.get([&]() -> base::Result<int> {
    base::Result<int> before = read();  // 8, then the write lands
    stored_ = 9;
    clock_.advance(1ms);
    copy_.forget();
    return before;
  }));
  EXPECT_EQ(8, *raced);
  EXPECT_EQ(9, *get());
  EXPECT_EQ(4, reads_);
}

}  // namespace
}  // namespace tpujobs::service
