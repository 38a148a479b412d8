#include "base/thread_priority.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tpujobs::base {

namespace {

// On Linux, PRIO_PROCESS with a thread id names that thread alone.
id_t this_thread_id() { return static_cast<id_t>(gettid()); }

}  // namespace

Status set_this_thread_nice(int nice) {
  if (nice < -20 || nice > 19)
    return make_error(ErrorCode::kInvalid,
                      "nice must be from -20 to 19, got " + std::to_string(nice));
  if (setpriority(PRIO_PROCESS, this_thread_id(), nice) != 0)
    return make_error(ErrorCode::kConflict, std::string("setpriority(") + std::to_string(nice) +
                                                "): " + std::strerror(errno));
  return Status::Ok();
}

int this_thread_nice() { return getpriority(PRIO_PROCESS, this_thread_id()); }

}  // namespace tpujobs::base
