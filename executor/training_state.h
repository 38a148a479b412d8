// Everything a job needs to continue exactly where it stopped, and its
// encoding as Checkpoint::bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tpujobs::executor {

struct TrainingState {
  // Identity of the run the state belongs to: resuming another model, seed or
  // world size is refused (the result would not be that run's).
  std::string model_fingerprint;
  std::uint64_t seed = 0;
  int world_size = 1;

  // Data position: the next micro-batch to run is `batch` of `epoch`.
  std::int64_t step = 0;  // optimizer steps taken
  int epoch = 0;
  std::int64_t batch = 0;

  std::vector<float> parameters;
  std::int64_t optimizer_steps = 0;
  std::vector<float> first_moment, second_moment;

  // Every random stream (shuffling, dropout) is derived from the seed and the
  // data position above, so this is the whole RNG state.
  std::uint64_t rng_stream = 0;

  // Running statistics that the logs and final metrics continue from.
  double epoch_loss_sum = 0;
  std::int64_t epoch_loss_count = 0;
  std::map<std::string, double> last_metrics;

  std::string xla_metrics;  // XlaMetrics::serialize()

  // Training time so far, across resumes (Lightning's Timer keeps it in its
  // state_dict as time_elapsed): what `max_time` is checked against. 0 in a
  // version-1 checkpoint, which did not keep it.
  std::int64_t train_elapsed_ms = 0;
};

// A 64-bit hash of `bytes` (FNV-1a over little-endian 8-byte words, then a
// final mix): checkpoint checksums and parameter digests. Not cryptographic.
std::uint64_t hash64(std::string_view bytes);

// A versioned binary encoding with a trailing checksum.
std::string encode_state(const TrainingState& state);

// The three large arrays of a state (hundreds of megabytes for large models),
// borrowed from where they live rather than copied into a TrainingState.
struct StateArrays {
  std::span<const float> parameters, first_moment, second_moment;
};
// encode_state(state) with `arrays` in place of the state's own three arrays
// (which are not read), written over `out`: its capacity is reused, so a
// caller that keeps `out` between checkpoints neither allocates nor
// page-faults in fresh memory for each. When `out` must grow, it gets room
// for the state's small parts (the XLA metrics) to grow as the job runs.
void encode_state(const TrainingState& state, const StateArrays& arrays, std::string& out);
// kInvalid, saying which, when `bytes` is truncated, corrupted, or of another
// version.
base::Result<TrainingState> decode_state(std::string_view bytes);

}  // namespace tpujobs::executor
