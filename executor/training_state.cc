#include "executor/training_state.h"

#include <cstring>
#include <type_traits>

namespace tpujobs::executor {
namespace {

constexpr std::string_view kMagic = "TPUJOBS-CHECKPOINT";
// Version 2 appended train_elapsed_ms; version 1 is still read.
constexpr std::uint32_t kVersion = 2;

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <typename T>
  void scalar(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void bytes(std::string_view text) {
    scalar<std::uint64_t>(text.size());
    out_.append(text);
  }
  void floats(std::span<const float> values) {
    scalar<std::uint64_t>(values.size());
    out_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  }
  std::string& out() { return out_; }

 private:
  std::string& out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool scalar(T* value) {
    if (in_.size() < sizeof(T)) return false;
    std::memcpy(value, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool bytes(std::string* text) {
    std::uint64_t size = 0;
    if (!scalar(&size) || in_.size() < size) return false;
    text->assign(in_.substr(0, size));
    in_.remove_prefix(size);
    return true;
  }
  bool floats(std::vector<float>* values) {
    std::uint64_t size = 0;
    if (!scalar(&size) || in_.size() / sizeof(float) < size) return false;
    values->resize(size);
    std::memcpy(values->data(), in_.data(), size * sizeof(float));
    in_.remove_prefix(size * sizeof(float));
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

}  // namespace

std::uint64_t hash64(std::string_view bytes) {
  constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t hash = 0xcbf29ce484222325ULL ^ bytes.size();
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    hash = (hash ^ word) * kPrime;
  }
  for (; i < bytes.size(); ++i) hash = (hash ^ static_cast<unsigned char>(bytes[i])) * kPrime;
  hash ^= hash >> 33;  // spread the high bits of the last products down
  hash *= 0xff51afd7ed558ccdULL;
  return hash ^ (hash >> 33);
}

std::string encode_state(const TrainingState& state) {
  std::string out;
  encode_state(state, StateArrays{state.parameters, state.first_moment, state.second_moment}, out);
  return out;
}

void encode_state(const TrainingState& state, const StateArrays& arrays, std::string& out) {
  out.clear();
  Writer writer(out);
  // Hundreds of megabytes for large models: one allocation, no regrowth copies.
  std::size_t size = 256 + state.model_fingerprint.size() + state.xla_metrics.size() +
                     sizeof(float) * (arrays.parameters.size() + arrays.first_moment.size() +
                                      arrays.second_moment.size());
  for (const auto& [name, value] : state.last_metrics) size += 16 + name.size();
  // The small parts grow as the job runs (its XLA metrics keep up to 1,024
  // samples of each metric, about 40 bytes each): a buffer that must grow
  // gets 1 MiB more than this checkpoint needs, so that the later ones fit
  // it rather than each outgrowing it and faulting in a whole new buffer.
  // Room never written costs address space only.
  constexpr std::size_t kGrowthRoom = std::size_t{1} << 20;
  if (writer.out().capacity() < size) writer.out().reserve(size + kGrowthRoom);
  writer.out().append(kMagic);
  writer.scalar(kVersion);
  writer.bytes(state.model_fingerprint);
  writer.scalar(state.seed);
  writer.scalar<std::int32_t>(state.world_size);
  writer.scalar(state.step);
  writer.scalar<std::int32_t>(state.epoch);
  writer.scalar(state.batch);
  writer.floats(arrays.parameters);
  writer.scalar(state.optimizer_steps);
  writer.floats(arrays.first_moment);
  writer.floats(arrays.second_moment);
  writer.scalar(state.rng_stream);
  writer.scalar(state.epoch_loss_sum);
  writer.scalar(state.epoch_loss_count);
  writer.scalar<std::uint64_t>(state.last_metrics.size());
  for (const auto& [name, value] : state.last_metrics) {
    writer.bytes(name);
    writer.scalar(value);
  }
  writer.bytes(state.xla_metrics);
  writer.scalar(state.train_elapsed_ms);
  writer.scalar(hash64(writer.out()));
}

base::Result<TrainingState> decode_state(std::string_view bytes) {
  auto invalid = [](std::string message) {
    return base::make_error(base::ErrorCode::kInvalid, std::move(message));
  };
  constexpr std::size_t kChecksum = sizeof(std::uint64_t);
  if (bytes.size() < kMagic.size() + sizeof(kVersion) + kChecksum ||
      bytes.substr(0, kMagic.size()) != kMagic) {
    return invalid("not a tpujobs checkpoint");
  }
  std::uint64_t checksum = 0;
  std::memcpy(&checksum, bytes.data() + bytes.size() - kChecksum, kChecksum);
  const std::string_view body = bytes.substr(0, bytes.size() - kChecksum);
  if (hash64(body) != checksum) {
    return invalid("checkpoint is corrupted (checksum mismatch)");
  }
  Reader reader(body.substr(kMagic.size()));
  std::uint32_t version = 0;
  reader.scalar(&version);
  if (version != kVersion && version != 1) {
    return invalid("checkpoint version " + std::to_string(version) +
                   " is not supported (expected " + std::to_string(kVersion) + ")");
  }
  TrainingState state;
  std::int32_t world_size = 0, epoch = 0;
  std::uint64_t metric_count = 0;
  bool ok = reader.bytes(&state.model_fingerprint) && reader.scalar(&state.seed) &&
            reader.scalar(&world_size) && reader.scalar(&state.step) && reader.scalar(&epoch) &&
            reader.scalar(&state.batch) && reader.floats(&state.parameters) &&
            reader.scalar(&state.optimizer_steps) && reader.floats(&state.first_moment) &&
            reader.floats(&state.second_moment) && reader.scalar(&state.rng_stream) &&
            reader.scalar(&state.epoch_loss_sum) && reader.scalar(&state.epoch_loss_count) &&
            reader.scalar(&metric_count);
  for (std::uint64_t i = 0; ok && i < metric_count; ++i) {
    std::string name;
    double value = 0;
    ok = reader.bytes(&name) && reader.scalar(&value);
    state.last_metrics[name] = value;
  }
  ok = ok && reader.bytes(&state.xla_metrics);
  if (version >= 2) ok = ok && reader.scalar(&state.train_elapsed_ms);
  ok = ok && reader.done();
  if (!ok) {
    return invalid("checkpoint is truncated or malformed");
  }
  state.world_size = world_size;
  state.epoch = epoch;
  return state;
}

}  // namespace tpujobs::executor
