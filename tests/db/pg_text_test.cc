// The text forms exchanged with PostgreSQL, and the Result type.
#include "db/pg_text.h"

#include <gtest/gtest.h>

#include "base/result.h"
#include "db/job_repository.h"

namespace tpujobs::db {
namespace {

using namespace std::chrono;

TEST(PgTextTest, TimestampsRoundTripAtMicrosecondPrecision) {
  const TimePoint time = sys_days{2026y / November / 21} + 12h + 17min + 1s + 123456us;
  EXPECT_EQ("2026-11-21 12:17:01.123456+00", format_timestamp(time));
  EXPECT_EQ(time, parse_timestamp("2026-11-21 12:17:01.123456+00"));
  EXPECT_EQ("1969-12-31 23:59:59.999999+00", format_timestamp(TimePoint{} - 1us));
  EXPECT_EQ(TimePoint{} - 1us, parse_timestamp("1969-12-31 23:59:59.999999+00"));
}

TEST(PgTextTest, ParsesTheFormsPostgresPrints) {
  EXPECT_EQ(sys_days{2026y / January / 2} + 3h + 4min + 5s,
            parse_timestamp("2026-01-02 03:04:05+00"));
  EXPECT_EQ(sys_days{2026y / January / 2} + 3h + 4min + 5s + 500ms,
            parse_timestamp("2026-01-02 03:04:05.5+00"));
  EXPECT_EQ(sys_days{2026y / January / 2} + 3h + 4min + 5s,
            parse_timestamp("2026-01-02T03:04:05Z"));
  EXPECT_FALSE(parse_timestamp("2026-01-02 03:04:05+02"));  // only UTC is expected
  EXPECT_FALSE(parse_timestamp("2026-02-30 03:04:05+00"));
  EXPECT_FALSE(parse_timestamp("2026-01-02 03:04:05."));
  EXPECT_FALSE(parse_timestamp("yesterday"));
  EXPECT_FALSE(parse_timestamp(""));
}

TEST(PgTextTest, ArrayLiteralQuotesEveryElement) {
  const std::vector<std::optional<std::string>> elements = {
      "plain", "a,b", "say \"hi\"", "back\\slash", std::nullopt, ""};
  EXPECT_EQ(R"({"plain","a,b","say \"hi\"","back\\slash",NULL,""})", array_literal(elements));
  EXPECT_EQ("{}", array_literal({}));
}

TEST(PgTextTest, HexAndBytea) {
  const std::string bytes("\x00\x7f\x80\xff", 4);
  EXPECT_EQ("007f80ff", to_hex(bytes));
  EXPECT_EQ(bytes, from_hex("007F80ff"));
  EXPECT_FALSE(from_hex("abc"));
  EXPECT_FALSE(from_hex("zz"));
  EXPECT_EQ(bytes, decode_bytea_hex("\\x007f80ff"));
  EXPECT_FALSE(decode_bytea_hex("007f80ff"));  // escape format is not used
}

TEST(PgTextTest, JobStatesHaveTheirDesignNames) {
  for (JobState state : {JobState::kQueued, JobState::kStarting, JobState::kRunning,
                         JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
    EXPECT_EQ(state, parse_job_state(to_string(state)));
  }
  EXPECT_EQ("CANCELLED", to_string(JobState::kCancelled));
  EXPECT_FALSE(parse_job_state("queued"));
  EXPECT_TRUE(is_terminal(JobState::kSucceeded));
  EXPECT_FALSE(is_terminal(JobState::kRunning));
}

TEST(ResultTest, HoldsAValueOrAnError) {
  base::Result<int> value = 7;
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(7, *value);
  base::Result<int> error = base::make_error(base::ErrorCode::kNotFound, "no job 7");
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(base::ErrorCode::kNotFound, error.code());
  EXPECT_EQ("no job 7", error.error().message);
  base::Status ok = base::Status::Ok();
  EXPECT_TRUE(ok.ok());
  base::Status failed = base::make_error(base::ErrorCode::kUnavailable, "down");
  EXPECT_EQ("UNAVAILABLE", to_string(failed.code()));
}

}  // namespace
}  // namespace tpujobs::db
