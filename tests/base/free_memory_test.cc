#include "base/free_memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace tpujobs::base {
namespace {

TEST(FreeMemory, TheTestsRunOnTheSystemsAllocator) {
  // The service binary alone links jemalloc (service/CMakeLists.txt; its
  // /metrics says which: tests/e2e/service_e2etest.cc).
  EXPECT_STREQ("system", allocator_name());
  EXPECT_FALSE(purge_in_background()) << "jemalloc's alone";
}

#if !defined(__SANITIZE_ADDRESS__)  // the sanitizer's allocator keeps its pages
long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

TEST(FreeMemory, PagesFreedBetweenLiveBlocksGoBackToTheSystem) {
  constexpr std::size_t kBlocks = 16 * 1024;  // 64 MiB in 4 KiB blocks
  std::vector<std::unique_ptr<char[]>> blocks(kBlocks);
  for (std::unique_ptr<char[]>& block : blocks) {
    block.reset(new char[4096]);
    std::memset(block.get(), 1, 4096);
  }
  // One block in 64 stays: the freed ones lie between live ones, not at the
  // heap's top (which free() gives back itself).
  for (std::size_t i = 0; i < kBlocks; ++i) {
    if (i % 64 != 63) blocks[i].reset();
  }
  const long freed = resident_kib();
  return_free_memory();
  const long returned = resident_kib();
  EXPECT_LT(returned, freed - 32 * 1024)
      << freed << " KiB resident before, " << returned << " after";
}
#endif

}  // namespace
}  // namespace tpujobs::base
