#include "base/thread_priority.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
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

Status set_process_nice(int pid, int nice) {
  if (nice < -20 || nice > 19)
    return make_error(ErrorCode::kInvalid,
                      "nice must be from -20 to 19, got " + std::to_string(nice));
  if (pid <= 0) return make_error(ErrorCode::kInvalid, "no process " + std::to_string(pid));
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(pid), nice) != 0)
    return make_error(ErrorCode::kConflict, "setpriority(" + std::to_string(nice) +
                                                ") of process " + std::to_string(pid) + ": " +
                                                std::strerror(errno));
  // Absent on a kernel built without autogroup; set whether autogroup is
  // on or not (it then applies once it is).
  const std::string group = "/proc/" + std::to_string(pid) + "/autogroup";
  if (access(group.c_str(), F_OK) != 0) return Status::Ok();
  std::ofstream out(group);
  out << nice << std::flush;
  if (!out)
    return make_error(ErrorCode::kConflict, "the nice of process " + std::to_string(pid) +
                                                "'s autogroup (" + group + ") was refused");
  return Status::Ok();
}

}  // namespace tpujobs::base
