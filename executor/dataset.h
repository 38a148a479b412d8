// A job's data in memory: the built-in datasets, the synthetic generators and
// uploaded CSVs, split into train and validation and standardized with the
// training split's statistics.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "executor/executor.h"
#include "executor/spec.h"

namespace tpujobs::executor {

struct Dataset {
  int features = 0;
  std::int64_t rows = 0;
  std::vector<float> values;  // rows x features, row-major
  std::vector<float> labels;  // one per row: a class index, or the regression target
};

struct DatasetSplit {
  Dataset train;
  Dataset validation;       // empty when val_fraction is 0
  int classes = 0;          // 0 for regression
  std::string description;  // "digits (1797 samples, 64 features, 10 classes)"
};

// Loads `data.source`, holds out round(rows * val_fraction) samples chosen by
// `seed` (at least one stays for training) and standardizes every feature
// with the training split's mean and standard deviation. Returns an error
// message on an unknown builtin, a missing upload, a bad CSV or bad generator
// parameters (kInvalid).
base::Result<DatasetSplit> load_dataset(const DataSpec& data, Loss loss, std::uint64_t seed,
                                        DatasetSource& datasets);

// Synthetic data (before splitting): blobs (Gaussian clusters, std `noise`,
// centres uniform in [-1, 1]^features), spirals (one arm per class in the
// first two features), xor (the sign of x0*x1; always 2 classes), regression
// (a fixed random linear function plus Gaussian noise).
base::Result<Dataset> generate_synthetic(const SyntheticData& spec, std::uint64_t seed,
                                         int* classes);

}  // namespace tpujobs::executor
