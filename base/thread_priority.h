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

// Sets the nice value of the single-threaded process `pid` (another
// program's, such as a PostgreSQL backend) and, where the kernel groups
// processes by session (Linux's autogroup, /proc/PID/autogroup), of its
// session's group: with autogroup on, a process's own nice ranks it only
// within its group, and the groups share the cores as equals. Meant for a
// process that leads a session of its own (PostgreSQL's backends call
// setsid()): its group is then its alone. The same rights as for a thread
// (above), and Linux lets a process without CAP_SYS_ADMIN change an
// autogroup's nice at most once every 100 ms; kInvalid for a value out of
// range, kConflict when the system refuses either (the process's nice may
// then be set already).
Status set_process_nice(int pid, int nice);

}  // namespace tpujobs::base
