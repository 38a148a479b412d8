// The scheduling priority of the calling thread. Training threads run below
// the threads that answer users (HTTP, the scheduler leader, the database's
// clients): on a machine whose cores training fills, a request still gets a
// core within a time slice.
#pragma once

#include "base/result.h"

namespace tpujobs::base {

// Sets the calling thread's nice value (Linux: per thread) to `nice`, from 0
// (the default) to 19 (the lowest priority). An unprivileged process may
// lower a thread's priority but not raise it again: kInvalid for a value out
// of range, kConflict when the system refuses.
Status set_this_thread_nice(int nice);
// The calling thread's nice value.
int this_thread_nice();

}  // namespace tpujobs::base
