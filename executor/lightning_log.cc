#include "executor/lightning_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tpujobs::executor {
namespace {

const char* layer_type_name(LayerType type) {
  switch (type) {
    case LayerType::kLinear:
      return "Linear";
    case LayerType::kRelu:
      return "ReLU";
    case LayerType::kGelu:
      return "GELU";
    case LayerType::kTanh:
      return "Tanh";
    case LayerType::kSigmoid:
      return "Sigmoid";
    case LayerType::kDropout:
      return "Dropout";
    case LayerType::kLayerNorm:
      return "LayerNorm";
  }
  return "?";
}

std::string pad(std::string text, std::size_t width) {
  // Width in characters; the table is ASCII.
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string format_compact(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", value);
  return text;
}

std::string clock_time(double seconds) {
  const auto total = static_cast<std::int64_t>(std::max(0.0, seconds));
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  } else {
    std::snprintf(text, sizeof(text), "%02lld:%02lld", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  }
  return text;
}

}  // namespace

std::string human_readable_count(std::int64_t number) {
  static const char* kLabels[] = {" ", "K", "M", "B", "T"};
  const int digits =
      number > 0 ? static_cast<int>(std::floor(std::log10(static_cast<double>(number)))) + 1 : 1;
  const int groups = std::min(5, (digits + 2) / 3);
  const double scaled = static_cast<double>(number) * std::pow(10.0, -3.0 * (groups - 1));
  char text[48];
  const int index = groups - 1;
  if (index < 1 || scaled >= 100) {
    std::snprintf(text, sizeof(text), "%lld %s", static_cast<long long>(scaled), kLabels[index]);
  } else {
    std::snprintf(text, sizeof(text), "%.1f %s", scaled, kLabels[index]);
  }
  std::string out = text;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::string> model_summary(const ModelSpec& model, const ModelShape& shape) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < shape.layers.size(); ++i) {
    std::string type = layer_type_name(shape.layers[i].type);
    if (model.layers[i].tie)
      type += " (tied to layers." + std::to_string(*model.layers[i].tie) + ")";
    rows.push_back({std::to_string(i), "layers." + std::to_string(i), type,
                    human_readable_count(shape.layers[i].parameters)});
  }
  std::size_t widths[4] = {1, 4, 4, 6};  // "", "Name", "Type", "Params"
  for (const auto& row : rows) {
    for (int c = 0; c < 4; ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  auto render = [&](const std::vector<std::string>& row) {
    return pad(row[0], widths[0]) + " | " + pad(row[1], widths[1]) + " | " +
           pad(row[2], widths[2]) + " | " + row[3];
  };
  std::vector<std::string> lines;
  const std::string header = render({"", "Name", "Type", "Params"});
  lines.push_back(header);
  const std::string rule(header.size() + 2, '-');
  lines.push_back(rule);
  for (const auto& row : rows) lines.push_back(render(row));
  lines.push_back(rule);
  const std::string total = human_readable_count(shape.parameters);
  lines.push_back(pad(total, 10) + "Trainable params");
  lines.push_back(pad("0", 10) + "Non-trainable params");
  lines.push_back(pad(total, 10) + "Total params");
  char size[32];
  std::snprintf(size, sizeof(size), "%.3f", static_cast<double>(shape.parameters) * 4 / 1e6);
  lines.push_back(pad(size, 10) + "Total estimated model params size (MB)");
  return lines;
}

std::string epoch_line(int epoch, std::int64_t batches, double elapsed_seconds,
                       const std::vector<std::pair<std::string, double>>& values) {
  std::string line = "Epoch " + std::to_string(epoch) + ": 100%|██████████| " +
                     std::to_string(batches) + "/" + std::to_string(batches) + " [" +
                     clock_time(elapsed_seconds) + "<00:00, ";
  if (elapsed_seconds > 0) {
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%.2fit/s", static_cast<double>(batches) / elapsed_seconds);
    line += rate;
  } else {
    line += "?it/s";
  }
  for (const auto& [name, value] : values) line += ", " + name + "=" + format_compact(value);
  return line + "]";
}

std::string format_duration_ms(std::int64_t milliseconds) {
  if (milliseconds < 1000) return std::to_string(milliseconds) + "ms";
  std::int64_t seconds = milliseconds / 1000;
  std::string out;
  if (seconds >= 3600) out += std::to_string(seconds / 3600) + "h";
  if (seconds >= 60 && seconds % 3600 / 60 != 0) out += std::to_string(seconds % 3600 / 60) + "m";
  if (seconds % 60 != 0) out += std::to_string(seconds % 60) + "s";
  return out;
}

std::string time_limit_line(double elapsed_seconds) {
  // timedelta(seconds=int(x)) truncates toward zero; elapsed time is never negative.
  const std::int64_t total = elapsed_seconds > 0 ? static_cast<std::int64_t>(elapsed_seconds) : 0;
  const std::int64_t days = total / 86400;
  const std::int64_t rest = total % 86400;
  char clock[32];
  std::snprintf(clock, sizeof clock, "%lld:%02lld:%02lld", static_cast<long long>(rest / 3600),
                static_cast<long long>(rest / 60 % 60), static_cast<long long>(rest % 60));
  std::string elapsed = clock;
  if (days > 0) elapsed = std::to_string(days) + (days == 1 ? " day, " : " days, ") + elapsed;
  return "Time limit reached. Elapsed time is " + elapsed + ". Signaling Trainer to stop.";
}

}  // namespace tpujobs::executor
