#include "base/free_memory.h"

#include <malloc.h>

#include <cstddef>

// jemalloc's control interface, when the process runs on jemalloc: a weak
// reference, null under glibc's malloc.
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp,
                       std::size_t newlen) __attribute__((weak));

namespace tpujobs::base {

void return_free_memory() {
  if (mallctl != nullptr) {
    // MALLCTL_ARENAS_ALL: every arena.
    (void)mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
    return;
  }
  malloc_trim(0);
}

bool purge_in_background() {
  if (mallctl == nullptr) return false;
  bool on = true;
  return mallctl("background_thread", nullptr, nullptr, &on, sizeof(on)) == 0;
}

const char* allocator_name() { return mallctl != nullptr ? "jemalloc" : "system"; }

}  // namespace tpujobs::base
