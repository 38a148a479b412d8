// Whether the database answers, known without waiting on it: a thread of
// its own asks `SELECT 1` on a connection of its own every `interval`,
// each answer bounded by `timeout`, and ready() reads the last outcome.
//
// Answering is not enough: a database that is read-only or whose disk is
// full answers every read and refuses every write. With `write_probe`, the
// thread also writes (an upsert of this process's row in readiness_probe,
// migration 034) every `write_interval`, and the service reports how its own
// writes end (note_write): ready() is false while the last write, the
// probe's or the service's, failed, until a probe write succeeds again.
// A full disk can still take a write that fits a page already allocated
// (the probe's row) while refusing those that need a new one; then
// readiness turns false again at the service's next failed write.
// /readyz answers from it, so a database that hangs (a stopped server, a
// partition with the socket open) turns a replica unready within about
// interval + timeout, while the probe never waits behind the API's
// requests for a pooled connection and never holds an HTTP thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/mutex.h"

namespace tpujobs::db {

class Connection;

class DatabaseProbe {
 public:
  struct Options {
    std::chrono::milliseconds interval{250};
    std::chrono::milliseconds timeout{2000};  // a SELECT 1 slower than this fails
    bool write_probe = false;                 // needs migration 034
    std::chrono::milliseconds write_interval{1000};
    // What the probe's times and waits read; null: the real clock.
    base::Clock* clock = nullptr;
  };

  DatabaseProbe(std::string conninfo, Options options);
  ~DatabaseProbe();  // stops
  DatabaseProbe(const DatabaseProbe&) = delete;
  DatabaseProbe& operator=(const DatabaseProbe&) = delete;

  // Probes once on the calling thread (so ready() means something at once),
  // then starts the thread. Idempotent.
  void start();
  // Stops and joins the thread (waits at most one probe). Idempotent.
  void stop();

  // True when the last probe was answered and it was recent enough: a probe
  // thread stuck past its own deadline (it should never be) reads as
  // unready, not as the last good answer. False before start().
  bool ready() const;

  // A write of the service's own ended: `ok` false when the database
  // refused it or did not answer (not for a constraint the request broke).
  // A failure makes ready() false until a probe write succeeds; thread-safe.
  void note_write(bool ok);
  // The last write (the probe's or a noted one) failed.
  bool writes_failing() const { return writes_failing_; }

 private:
  bool probe_once();
  void probe_write();
  void loop();

  const std::string conninfo_;
  const Options options_;
  base::Clock& clock_;
  // Used by start() and then by the thread only; opened again once lost (a
  // probe that timed out closes it).
  std::unique_ptr<Connection> connection_;
  std::atomic<bool> answered_{false};
  std::atomic<base::Clock::time_point::rep> answered_at_{0};
  std::atomic<bool> writes_failing_{false};
  base::Clock::time_point next_write_{};  // the probe thread's
  const std::string instance_;            // this process's row

  base::Mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace tpujobs::db
