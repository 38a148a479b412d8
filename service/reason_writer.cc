#include "service/reason_writer.h"

#include <algorithm>

namespace tpujobs::service {

ReasonWriter::ReasonWriter(Hooks hooks, base::Clock& clock, std::size_t max_batch)
    : hooks_(std::move(hooks)), clock_(clock), max_batch_(std::max<std::size_t>(1, max_batch)) {}

ReasonWriter::~ReasonWriter() { stop(); }

void ReasonWriter::start() {
  base::MutexLock lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { loop(); });
}

void ReasonWriter::stop() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  drop();
  handed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReasonWriter::hand(Batch reasons, Term term) {
  {
    base::MutexLock lock(mutex_);
    if (term != term_) queued_.clear();
    term_ = term;
    if (reasons.empty()) return;
    for (auto& [job, text] : reasons) queued_[job] = std::move(text);
  }
  handed_.notify_one();
}

void ReasonWriter::drop() {
  base::MutexLock lock(mutex_);
  queued_.clear();
}

void ReasonWriter::flush() {
  if (thread_.joinable()) return;  // the thread writes them
  for (;;) {
    Batch batch;
    Term term;
    {
      base::MutexLock lock(mutex_);
      batch = take();
      term = term_;
    }
    if (batch.empty()) return;
    write(batch, term);
  }
}

ReasonWriter::Batch ReasonWriter::take() {
  Batch batch;
  auto it = queued_.begin();
  while (it != queued_.end() && batch.size() < max_batch_) {
    batch.emplace_back(it->first, std::move(it->second));
    it = queued_.erase(it);
  }
  return batch;
}

void ReasonWriter::loop() {
  for (;;) {
    Batch batch;
    Term term;
    {
      base::MutexLock lock(mutex_);
      lock.wait(handed_, [this]() REQUIRES(mutex_) { return stopping_ || !queued_.empty(); });
      if (stopping_) return;
      batch = take();
      term = term_;
    }
    write(batch, term);
  }
}

void ReasonWriter::write(const Batch& batch, Term term) {
  const auto began = clock_.now();
  const base::Status stored = hooks_.store(batch, term);
  const std::int64_t nanos = std::chrono::nanoseconds(clock_.now() - began).count();
  ++writes_;
  write_nanos_ += nanos;
  if (nanos > max_write_nanos_.load()) max_write_nanos_ = nanos;  // one thread writes
  if (stored.ok()) {
    reasons_ += static_cast<std::int64_t>(batch.size());
    if (hooks_.stored) hooks_.stored(batch);
    return;
  }
  failed_ = true;
  if (hooks_.unknown) hooks_.unknown(batch);
}

}  // namespace tpujobs::service
