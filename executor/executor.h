// The training executor: runs one job's training on the emulated TPU cores
// the scheduler gave it, reporting through interfaces the service implements.
//
// Everything here is a pure library: no threads of its own (compute runs on
// the shared WorkerPool), time through Clock, randomness from the spec's seed,
// and I/O only through TrainingSink and DatasetSource.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "executor/hbm.h"
#include "executor/spec.h"

namespace tpujobs::executor {

class WorkerPool;  // executor/worker_pool.h
struct SlicePart;  // executor/slice_collective.h

struct MetricPoint {
  std::int64_t step = 0;  // optimizer steps taken so far
  int epoch = 0;
  // "loss", "samples_per_sec", "lr" every log_every_n_steps; "val_loss",
  // "val_accuracy" (classification) after each validation.
  std::map<std::string, double> values;
};

// Opaque, self-describing and versioned; only train() reads `bytes`.
struct Checkpoint {
  std::int64_t step = 0;
  int epoch = 0;
  std::string bytes;
};

struct Progress {
  std::int64_t step = 0;
  std::int64_t total_steps = 0;  // -1 when unbounded
  int epoch = 0;
  int max_epochs = 0;
  double samples_per_sec = 0;
};

// Implemented by the service. Called from the thread that runs train().
class TrainingSink {
 public:
  virtual ~TrainingSink() = default;
  virtual void log(std::string_view line) = 0;  // one line, no trailing newline
  virtual void metrics(const MetricPoint& point) = 0;
  // Every checkpoint_every_n_steps and at each epoch end. The sink may keep
  // the checkpoint as long as it needs (the service stores it on another
  // thread): the trainer encodes the next one into the same bytes only once
  // no sink holds them, and into new ones otherwise.
  virtual void checkpoint(std::shared_ptr<const Checkpoint> checkpoint) = 0;
  // False while the sink still has an earlier checkpoint to store. The
  // trainer then skips a checkpoint that the next one would replace before
  // it is stored (every checkpoint_every_n_steps, and an epoch end but the
  // last), rather than spend the step's time encoding megabytes for
  // nothing: epochs of milliseconds offer hundreds a second. The last
  // epoch's and one asked on cancel are emitted whatever this says.
  virtual bool ready_for_checkpoint() { return true; }
  virtual void progress(const Progress& progress) = 0;  // cheap; called every step
};

class ParsedTables;  // executor/parsed_tables.h

// Implemented by the service (uploads live in PostgreSQL).
class DatasetSource {
 public:
  virtual ~DatasetSource() = default;
  // The CSV text of upload `id`, or nullopt when there is no such upload.
  virtual std::optional<std::string> uploaded_csv(std::string_view id) = 0;
  // Where tables parsed for earlier jobs are kept, or nullptr: each job
  // parses its CSV.
  virtual ParsedTables* parsed_tables() { return nullptr; }
};

// Time comes from the project's one Clock (base/clock.h).
using base::Clock;

struct RunControl {
  const std::atomic<bool>* cancel = nullptr;  // set by the service; honoured within one step
  Clock* clock = nullptr;              // timeout and throughput; nullptr = base::real_clock()
  const Checkpoint* resume = nullptr;  // continue from here, bit-identically
  // When cancelled, first emit a checkpoint of where training stopped (the
  // service stopping: the job resumes there on the next start).
  const std::atomic<bool>* checkpoint_on_cancel = nullptr;
  // Why *cancel was set when it was not a user's cancel, in the log's words
  // ("its host failed", "preempted by job 12"); called once, on the training
  // thread, when the run sees *cancel. Unset or "": the user cancelled it.
  std::function<std::string()> stop_reason;
  // A multi-host slice that spans processes: the hosts this one runs and
  // the collective joining it to the others. nullptr: every host runs here.
  // Must outlive train().
  const SlicePart* slice = nullptr;
};

enum class Outcome { kSucceeded, kFailed, kCancelled };

// A failed job's error: base::Error with its user-facing `type`, a code
// that follows from it, the message, the hint and, when `field` names the
// spec field it is about, that field with the same message and hint as its
// one `fields` entry (none when the error is not the spec's: a checkpoint,
// the runtime). Types and
// codes: INVALID_ARGUMENT (bad dataset, model or checkpoint),
// RESOURCE_EXHAUSTED, NUMERICAL_ERROR, EXPECTATION_FAILED and
// DEADLINE_EXCEEDED are kInvalid (the spec cannot run as written);
// UNAVAILABLE is kUnavailable (a peer or the rendezvous is gone: running
// again may work); CANCELLED is kConflict (stopped by a cancel, a preemption
// or a stop); INTERNAL and any other type are kInternal.
base::Error job_error(std::string type, std::string message, std::string hint = {},
                      std::string field = {});

struct TrainingResult {
  Outcome outcome = Outcome::kFailed;
  std::optional<base::Error> error;  // made by job_error
  // "loss" (mean training loss of the last epoch), "val_loss",
  // "val_accuracy" (classification), "samples_per_sec", "epochs".
  std::map<std::string, double> final_metrics;
  std::int64_t steps = 0;
  std::string xla_report;             // torch_xla's metrics_report() layout
  std::vector<std::string> warnings;  // the advisor's, and Lightning's (e.g. weight tying)
  // A hash of the final parameters' exact bits ("hash64:0123abcd..."): equal
  // digests mean bit-identical parameters (e.g. a resumed and an
  // uninterrupted run). Empty if training did not get as far as building them.
  std::string parameters_digest;
};

// Runs the whole job on the calling thread, using `workers` for the replicas'
// compute. Never throws. Returns kCancelled (error type CANCELLED) when
// *control.cancel became true, kFailed with `error` set on any failure.
TrainingResult train(const TrainingSpec& spec, const DeviceFacts& device, WorkerPool& workers,
                     DatasetSource& datasets, TrainingSink& sink, const RunControl& control);

// What a job would do, without training: for POST /v1/jobs:validate and for
// rejecting at submit what certainly cannot fit.
struct Estimate {
  int input_features = 0;
  int classes = 0;  // 0 for regression
  std::int64_t train_samples = 0;
  std::int64_t steps_per_epoch = 0;  // optimizer steps
  std::int64_t total_steps = 0;      // -1 when unbounded
  HbmUsage hbm;
  std::vector<std::string> advice;    // the performance advisor's warnings
  double estimated_step_seconds = 0;  // on the real generation: always an estimate
  double mxu_utilization = 0;
};

// Returns an error (type INVALID_ARGUMENT) instead when the dataset or model
// cannot be built: unknown builtin, missing upload, bad CSV (naming the line),
// a bad tie, labels the model's outputs cannot represent.
base::Result<Estimate> estimate(const TrainingSpec& spec, const DeviceFacts& device,
                                DatasetSource& datasets);

// A parsed uploaded dataset.
struct CsvTable {
  std::vector<std::string> columns;  // as in the header, `label` included
  std::int64_t rows = 0;
  int classes = 0;            // 1 + the largest label (classification); 0 for regression
  int features = 0;           // columns other than `label`
  std::vector<float> values;  // rows x features, row-major, in file order
  std::vector<float> labels;  // one per row
};

// Parses a CSV with a header row; numeric feature columns and a `label` column
// (by convention the last). For classification (the default) the label must
// be an integer in [0, 65535]; for regression (Loss::kMse) any finite number.
// Blank lines are skipped. Returns an error message naming the line (1-based,
// the header is line 1) for ragged rows, non-numbers, empty input, a missing
// `label` column or a bad label (kInvalid). Never throws.
base::Result<CsvTable> parse_csv(std::string_view text, Loss loss = Loss::kCrossEntropy);

}  // namespace tpujobs::executor
