// Gloo over loopback, its rendezvous in memory: what the slice's processes
// exchange, and how a peer that does not join or drops out ends every call
// within the deadline.
#include "service/gloo_collective.h"

#include <gtest/gtest.h>

#include <numeric>
#include <thread>

namespace tpujobs::service {
namespace {

using std::chrono::milliseconds;

GlooOptions loopback(milliseconds timeout) {
  GlooOptions options;
  options.host = "127.0.0.1";
  options.timeout = timeout;
  return options;
}

// Connects `size` ranks on threads; each then runs `body`.
template <class Body>
void run_ranks(int size, milliseconds timeout, Body body) {
  InProcessRendezvousKeys keys;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      auto connected = GlooCollective::connect(keys, rank, size, loopback(timeout));
      body(rank, connected);
    });
  }
  for (std::thread& t : threads) t.join();
}

using Connected = base::Result<std::unique_ptr<GlooCollective>>;

std::unique_ptr<GlooCollective>* collective_of(Connected& connected) {
  return connected.ok() ? &*connected : nullptr;
}

TEST(GlooCollectiveTest, AllGatherPutsEveryRanksFloatsInRankOrder) {
  for (int size : {2, 4}) {
    // Rank r contributes r + 1 rows of 3 floats: r*100 + i.
    std::vector<std::size_t> counts;
    for (int r = 0; r < size; ++r) counts.push_back(3 * (r + 1));
    std::vector<float> expected;
    for (int r = 0; r < size; ++r) {
      for (std::size_t i = 0; i < counts[r]; ++i)
        expected.push_back(static_cast<float>(r * 100 + i));
    }
    std::vector<std::vector<float>> results(size);
    run_ranks(size, milliseconds(20000), [&](int rank, Connected& connected) {
      auto* collective = collective_of(connected);
      ASSERT_NE(collective, nullptr) << connected.error().message;
      EXPECT_EQ((*collective)->rank(), rank);
      std::vector<float> mine(counts[rank]);
      std::iota(mine.begin(), mine.end(), static_cast<float>(rank * 100));
      for (int round = 0; round < 3; ++round) {
        std::vector<float> all(expected.size(), -1.0f);
        ASSERT_TRUE((*collective)->all_gather(mine.data(), all.data(), counts).ok());
        results[rank] = all;
      }
    });
    for (int rank = 0; rank < size; ++rank)
      EXPECT_EQ(results[rank], expected) << size << " ranks, rank " << rank;
  }
}

TEST(GlooCollectiveTest, APeerThatNeverJoinsFailsTheRendezvousWithinTheDeadline) {
  InProcessRendezvousKeys keys;
  const auto began = std::chrono::steady_clock::now();
  Connected connected = GlooCollective::connect(keys, 0, 2, loopback(milliseconds(1500)));
  const auto took = std::chrono::steady_clock::now() - began;
  const base::Error* error = connected.ok() ? nullptr : &connected.error();
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->type, "UNAVAILABLE");
  EXPECT_EQ(error->message, "failed to connect to all addresses");
  EXPECT_NE(error->hint.find("max_retries"), std::string::npos);
  EXPECT_GE(took, milliseconds(1500));
  EXPECT_LT(took, milliseconds(1500) + std::chrono::seconds(30));  // bounded, not a hang
}

TEST(GlooCollectiveTest, APeerThatDropsOutFailsTheNextGatherWithinTheDeadline) {
  const std::vector<std::size_t> counts{4, 4};
  std::optional<base::Error> survivor_error;
  std::chrono::steady_clock::duration survivor_took{};
  run_ranks(2, milliseconds(3000), [&](int rank, Connected& connected) {
    auto* collective = collective_of(connected);
    ASSERT_NE(collective, nullptr);
    std::vector<float> mine(4, static_cast<float>(rank)), all(8);
    ASSERT_TRUE((*collective)->all_gather(mine.data(), all.data(), counts).ok());
    if (rank == 1) {
      collective->reset();  // the process ends: its sockets close
      return;
    }
    const auto began = std::chrono::steady_clock::now();
    const base::Status gathered = (*collective)->all_gather(mine.data(), all.data(), counts);
    survivor_took = std::chrono::steady_clock::now() - began;
    if (!gathered.ok()) survivor_error = gathered.error();
    // Once failed, it stays failed.
    EXPECT_FALSE((*collective)->all_gather(mine.data(), all.data(), counts).ok());
  });
  ASSERT_TRUE(survivor_error.has_value());
  EXPECT_EQ(survivor_error->type, "UNAVAILABLE");
  EXPECT_EQ(survivor_error->message, "failed to connect to all addresses");
  EXPECT_LT(survivor_took, std::chrono::seconds(3) + std::chrono::seconds(30));
}

}  // namespace
}  // namespace tpujobs::service
