// The scheduling priority of the calling thread. Training threads run below
// the threads that answer users (HTTP, the scheduler leader, the database's
// clients): on a machine whose cores training fills, a request still gets a
// core within a time slice. The scheduler leader's thread may run above
// them: a burst of requests then does not hold up the pass that decides for
// every job.
#pragma once

#include "base/result.h"

namespace tpujobs::base {

// Sets the calling thread's nice value (Linux: per thread) to `nice`, from
// -20 (the highest priority) through 0 (the default) to 19 (the lowest). A
// process may lower a thread's priority; it may raise it (a value below the
// thread's) only with CAP_SYS_NICE or down to its RLIMIT_NICE (systemd's
// LimitNICE=). kInvalid for a value out of range, kConflict when the system
// refuses.
Status set_this_thread_nice(int nice);
// The calling thread's nice value.
int this_thread_nice();

}  // namespace tpujobs::base
