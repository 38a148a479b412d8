#include "service/gloo_collective.h"

#include <gloo/allgatherv.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <iostream>

namespace tpujobs::service {
namespace {

// gloo::rendezvous::Store over RendezvousKeys. Gloo expects a store that
// times out to throw; get() of an absent key waits like wait().
class KeyStore final : public gloo::rendezvous::Store {
 public:
  KeyStore(RendezvousKeys& keys, const GlooOptions& options) : keys_(keys), options_(options) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    if (base::Status stored = keys_.set(key, std::string(data.begin(), data.end())); !stored.ok()) {
      throw gloo::IoException("the rendezvous store could not be reached to publish " + key + ": " +
                              stored.error().message);
    }
  }

  std::vector<char> get(const std::string& key) override {
    wait({key}, options_.timeout);
    base::Result<std::optional<std::string>> value = keys_.get(key);
    if (!value.ok() || !*value) throw gloo::IoException("the rendezvous key " + key + " vanished");
    return std::vector<char>((*value)->begin(), (*value)->end());
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, options_.timeout); }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    base::Clock& clock = *options_.clock;
    const auto bound =
        (timeout == gloo::kNoTimeout || timeout > options_.timeout) ? options_.timeout : timeout;
    const auto deadline = clock.now() + bound;
    for (const std::string& key : keys) {
      // An unreachable store is waited out like an absent key, until the
      // deadline.
      for (base::Result<std::optional<std::string>> value = keys_.get(key); !value.ok() || !*value;
           value = keys_.get(key)) {
        if (clock.now() >= deadline) {
          throw gloo::IoException("a peer did not publish " + key + " within " +
                                  std::to_string(bound.count()) + " ms");
        }
        clock.sleep_for(options_.poll_interval);
      }
    }
  }

 private:
  RendezvousKeys& keys_;
  const GlooOptions& options_;
};

}  // namespace

base::Status InProcessRendezvousKeys::set(const std::string& key, const std::string& value) {
  base::MutexLock lock(mutex_);
  values_[key] = value;
  return base::Status::Ok();
}

base::Result<std::optional<std::string>> InProcessRendezvousKeys::get(const std::string& key) {
  base::MutexLock lock(mutex_);
  auto it = values_.find(key);
  if (it == values_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

base::Error unreachable_peer_error(std::chrono::milliseconds timeout) {
  return executor::job_error(
      "UNAVAILABLE", "failed to connect to all addresses",
      "a host of the job's slice, on another agent, could not be reached within " +
          std::to_string(timeout.count() / 1000.0).substr(0, 4) +
          " s; check the slice's agents and hosts (GET /v1/pool), or set max_retries so the job "
          "resumes "
          "from its last checkpoint on healthy hosts");
}

GlooCollective::GlooCollective(std::shared_ptr<gloo::Context> context, int rank, int size,
                               std::chrono::milliseconds timeout)
    : context_(std::move(context)), rank_(rank), size_(size), timeout_(timeout) {}

GlooCollective::~GlooCollective() = default;

base::Result<std::unique_ptr<GlooCollective>> GlooCollective::connect(RendezvousKeys& keys,
                                                                      int rank, int size,
                                                                      const GlooOptions& options) {
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.host;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(options.timeout);
    KeyStore store(keys, options);
    context->connectFullMesh(store, device);
    return std::unique_ptr<GlooCollective>(
        new GlooCollective(std::move(context), rank, size, options.timeout));
  } catch (const std::exception& e) {
    std::cerr << "tpujobs: slice rendezvous (rank " << rank << " of " << size << "): " << e.what()
              << std::endl;
    return unreachable_peer_error(options.timeout);
  }
}

base::Status GlooCollective::all_gather(const float* mine, float* all,
                                        const std::vector<std::size_t>& counts) {
  if (broken_ || static_cast<int>(counts.size()) != size_) return unreachable_peer_error(timeout_);
  try {
    gloo::AllgathervOptions options(context_);
    // Gloo reads the input only; its API takes a mutable pointer.
    options.setInput(const_cast<float*>(mine), counts[rank_]);
    options.setOutput(all, counts);
    options.setTag(next_tag_++);
    options.setTimeout(timeout_);
    gloo::allgatherv(options);
    return base::Status::Ok();
  } catch (const std::exception& e) {
    // A pair that failed stays failed: the slice must be placed again.
    broken_ = true;
    last_failure_ = e.what();
    std::cerr << "tpujobs: slice all-gather (rank " << rank_ << " of " << size_ << "): " << e.what()
              << std::endl;
    return unreachable_peer_error(timeout_);
  }
}

}  // namespace tpujobs::service
