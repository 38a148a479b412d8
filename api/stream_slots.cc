#include "api/stream_slots.h"

#include <atomic>

#include "api/problem.h"

namespace tpujobs::api {

// Passes everything through to the connection's writer; gives its slot
// back once, at the answer, at the stream's end or at destruction.
class SlotWriter final : public ResponseWriter {
 public:
  SlotWriter(std::shared_ptr<StreamSlots> slots, std::string tenant, ResponseWriterPtr inner)
      : slots_(std::move(slots)), tenant_(std::move(tenant)), inner_(std::move(inner)) {}
  ~SlotWriter() override { release(); }
  void respond(Response response) override {
    inner_->respond(std::move(response));
    release();
  }
  void start_stream(Response head) override { inner_->start_stream(std::move(head)); }
  bool write(std::string data) override {
    if (inner_->write(std::move(data))) return true;
    release();  // the peer has gone
    return false;
  }
  void end() override {
    inner_->end();
    release();
  }
  bool closed() const override { return inner_->closed(); }

 private:
  void release() {
    if (!released_.exchange(true)) slots_->release(tenant_);
  }
  std::shared_ptr<StreamSlots> slots_;
  const std::string tenant_;
  ResponseWriterPtr inner_;
  std::atomic<bool> released_{false};
};

StreamSlots::StreamSlots(std::string kind, std::string metric, StreamLimits limits,
                         std::string hint)
    : kind_(std::move(kind)), metric_(std::move(metric)), limits_(limits), hint_(std::move(hint)) {}

std::shared_ptr<StreamSlots> StreamSlots::create(std::string kind, std::string metric,
                                                 StreamLimits limits, std::string hint) {
  return std::shared_ptr<StreamSlots>(
      new StreamSlots(std::move(kind), std::move(metric), limits, std::move(hint)));
}

std::optional<ResponseWriterPtr> StreamSlots::admit(const std::string& tenant,
                                                    ResponseWriterPtr writer) {
  int status = 0;
  std::string limit;
  int value = 0;
  int count = 0;
  {
    base::MutexLock lock(mutex_);
    int& mine = held_[tenant];
    if (limits_.per_tenant > 0 && mine >= limits_.per_tenant) {
      ++refused_tenant_;
      status = 429;
      limit = "per_tenant";
      value = limits_.per_tenant;
      count = mine;
    } else if (limits_.total > 0 && total_ >= limits_.total) {
      ++refused_total_;
      status = 503;
      limit = "total";
      value = limits_.total;
      count = total_;
    } else {
      ++mine;
      ++total_;
      return std::make_shared<SlotWriter>(shared_from_this(), tenant, std::move(writer));
    }
    if (mine == 0) held_.erase(tenant);
  }
  const std::string detail = status == 429 ? "tenant '" + tenant + "' already holds " +
                                                 std::to_string(count) + " " + kind_ + ", its limit"
                                           : "the service already holds " + std::to_string(count) +
                                                 " " + kind_ + ", its limit";
  writer->respond(
      problem(
          status, detail,
          {{"limit", kind_ + " " + limit}, {"value", value}, {"current", count}, {"hint", hint_}})
          .header("Retry-After", "1"));
  return std::nullopt;
}

void StreamSlots::release(const std::string& tenant) {
  base::MutexLock lock(mutex_);
  auto it = held_.find(tenant);
  if (it != held_.end() && --it->second <= 0) held_.erase(it);
  --total_;
}

int StreamSlots::held(const std::string& tenant) const {
  base::MutexLock lock(mutex_);
  auto it = held_.find(tenant);
  return it == held_.end() ? 0 : it->second;
}

int StreamSlots::held_total() const {
  base::MutexLock lock(mutex_);
  return total_;
}

std::string StreamSlots::prometheus() const {
  base::MutexLock lock(mutex_);
  std::string out = "# HELP " + metric_ + " Open " + kind_ + ".\n# TYPE " + metric_ + " gauge\n" +
                    metric_ + " " + std::to_string(total_) + "\n";
  const std::string refused = metric_ + "_refused_total";
  out += "# HELP " + refused + " " + kind_ + " refused: over the tenant's or the total limit.\n" +
         "# TYPE " + refused + " counter\n" + refused + "{limit=\"per_tenant\"} " +
         std::to_string(refused_tenant_) + "\n" + refused + "{limit=\"total\"} " +
         std::to_string(refused_total_) + "\n";
  return out;
}

}  // namespace tpujobs::api
