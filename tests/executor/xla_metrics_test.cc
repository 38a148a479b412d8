#include "executor/xla_metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/clock.h"

namespace tpujobs::executor {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

using base::FakeClock;

TEST(XlaMetricsTest, CompileCacheCountsEachGraphAndShapeOnce) {
  XlaMetrics metrics;
  EXPECT_TRUE(metrics.compile("train_step f32[64,64]", milliseconds(5)));
  EXPECT_FALSE(metrics.compile("train_step f32[64,64]", milliseconds(5)));
  EXPECT_FALSE(metrics.compile("train_step f32[64,64]", milliseconds(5)));
  // The last partial batch has a new shape: a second graph.
  EXPECT_TRUE(metrics.compile("train_step f32[29,64]", milliseconds(3)));
  EXPECT_FALSE(metrics.compile("train_step f32[29,64]", milliseconds(3)));
  EXPECT_EQ(metrics.uncached_compiles(), 2);
  EXPECT_EQ(metrics.cached_compiles(), 3);
  EXPECT_EQ(metrics.local_scalar_dense_count(), 0);
  metrics.local_scalar_dense();
  metrics.local_scalar_dense(3);
  EXPECT_EQ(metrics.local_scalar_dense_count(), 4);
}

TEST(XlaMetricsTest, EmptyReportIsEmpty) {
  XlaMetrics metrics;
  EXPECT_EQ(metrics.report(), "");
}

TEST(XlaMetricsTest, ReportHasTorchXlaLayout) {
  FakeClock time;
  XlaMetrics metrics(time);
  metrics.compile("step a", nanoseconds(2'531'124'356));  // t = 0 s
  time.advance(seconds(1));
  metrics.compile("step a", nanoseconds(7));  // cached: no CompileTime sample
  time.advance(seconds(1));
  metrics.compile("step b", seconds(1));  // t = 2 s
  metrics.execute(milliseconds(3));
  time.advance(seconds(1));
  metrics.execute(milliseconds(5));  // t = 3 s
  metrics.transfer_to_device(1'572'864, microseconds(250));
  metrics.local_scalar_dense(2);

  const std::string one = "01s000ms000.000us";
  const std::string two = "02s531ms124.356us";
  EXPECT_EQ(metrics.report(),
            "Counter: CachedCompile\n"
            "  Value: 1\n"
            "Counter: UncachedCompile\n"
            "  Value: 2\n"
            "Metric: CompileTime\n"
            "  TotalSamples: 2\n"
            "  Accumulator: 03s531ms124.356us\n"
            "  ValueRate: 01s765ms562.178us / second\n"
            "  Rate: 1 / second\n"
            "  Percentiles: 1%=" +
                one + "; 5%=" + one + "; 10%=" + one + "; 20%=" + one + "; 50%=" + two +
                "; 80%=" + two + "; 90%=" + two + "; 95%=" + two + "; 99%=" + two +
                "\n"
                "Metric: ExecuteTime\n"
                "  TotalSamples: 2\n"
                "  Accumulator: 008ms000.000us\n"
                "  ValueRate: 008ms000.000us / second\n"
                "  Rate: 2 / second\n"
                "  Percentiles: 1%=003ms000.000us; 5%=003ms000.000us; 10%=003ms000.000us; "
                "20%=003ms000.000us; 50%=005ms000.000us; 80%=005ms000.000us; "
                "90%=005ms000.000us; 95%=005ms000.000us; 99%=005ms000.000us\n"
                "Metric: InboundData\n"
                "  TotalSamples: 1\n"
                "  Accumulator: 1.50MB\n"
                "  Percentiles: 1%=1.50MB; 5%=1.50MB; 10%=1.50MB; 20%=1.50MB; 50%=1.50MB; "
                "80%=1.50MB; 90%=1.50MB; 95%=1.50MB; 99%=1.50MB\n"
                "Metric: TransferToDeviceTime\n"
                "  TotalSamples: 1\n"
                "  Accumulator: 250.000us\n"
                "  Percentiles: 1%=250.000us; 5%=250.000us; 10%=250.000us; 20%=250.000us; "
                "50%=250.000us; 80%=250.000us; 90%=250.000us; 95%=250.000us; 99%=250.000us\n"
                "Counter: MarkStep\n"
                "  Value: 2\n"
                "Counter: aten::_local_scalar_dense\n"
                "  Value: 2\n");
}

TEST(XlaMetricsTest, FormatsLongAndShortTimesAndBytesLikeTorchXla) {
  FakeClock time;
  XlaMetrics metrics(time);
  metrics.execute(nanoseconds(4'100));
  metrics.transfer_from_device(512, nanoseconds(3'661'500'000'250));
  const std::string report = metrics.report();
  EXPECT_NE(report.find("Metric: ExecuteTime\n  TotalSamples: 1\n  Accumulator: 004.100us\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Metric: OutboundData\n  TotalSamples: 1\n  Accumulator: 512.00B\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Metric: TransferFromDeviceTime\n  TotalSamples: 1\n"
                        "  Accumulator: 01h01m01s500ms000.250us\n"),
            std::string::npos)
      << report;
}

TEST(XlaMetricsTest, PercentilesUseTheNewest1024Samples) {
  FakeClock time;
  XlaMetrics metrics(time);
  // 1500 samples of 1..1500 ms, one per second: the first 476 drop out of the
  // window, so the smallest retained is 477 ms.
  for (int i = 1; i <= 1500; ++i) {
    metrics.execute(milliseconds(i));
    time.advance(seconds(1));
  }
  const std::string report = metrics.report();
  EXPECT_NE(report.find("  TotalSamples: 1500\n"), std::string::npos) << report;
  // Sum of 1..1500 ms = 1125750 ms.
  EXPECT_NE(report.find("  Accumulator: 18m45s750ms000.000us\n"), std::string::npos) << report;
  // 1024 samples over 1023 s.
  EXPECT_NE(report.find("  Rate: 1.00098 / second\n"), std::string::npos) << report;
  // index = p * 1024 / 100 into 477..1500 ms.
  EXPECT_NE(report.find("Percentiles: 1%=487ms000.000us; 5%=528ms000.000us; "
                        "10%=579ms000.000us; 20%=681ms000.000us; 50%=989ms000.000us; "
                        "80%=01s296ms000.000us; 90%=01s398ms000.000us; 95%=01s449ms000.000us; "
                        "99%=01s490ms000.000us\n"),
            std::string::npos)
      << report;
}

// torch_xla/csrc/runtime/metrics_analysis.cc: MetricFrequency("CompileTime", 0.5f, 10).
TEST(XlaMetricsTest, CompilesAreTooFrequentAboveOnePerTwoStepsAfterTenSteps) {
  XlaMetrics metrics;
  EXPECT_EQ(metrics.frequent_compile_warning(0), std::nullopt);
  for (int i = 0; i < 8; ++i) metrics.compile("shape " + std::to_string(i), milliseconds(1));
  // Within the first 10 steps it never fires, however many compiles.
  EXPECT_EQ(metrics.frequent_compile_warning(10), std::nullopt);
  for (int i = 8; i < 11; ++i) metrics.compile("shape " + std::to_string(i), milliseconds(1));
  // 11 compiles: 11 / 21 steps is above 0.5, 11 / 22 is not.
  EXPECT_EQ(metrics.frequent_compile_warning(21),
            "pt-xla-profiler: CompileTime too frequent: 11 counts during 21 steps");
  EXPECT_EQ(metrics.frequent_compile_warning(22), std::nullopt);
  // Cached compiles are not CompileTime samples.
  for (int i = 0; i < 50; ++i) metrics.compile("shape 0", milliseconds(1));
  EXPECT_EQ(metrics.frequent_compile_warning(22), std::nullopt);
}

// The analyses PT_XLA_DEBUG prints after each step, counted in MarkSteps.
TEST(XlaMetricsTest, PerformanceReportHasEachAnalysisThatFires) {
  XlaMetrics metrics;
  EXPECT_TRUE(metrics.performance_report().empty());
  metrics.compile("graph", seconds(301));
  for (int i = 0; i < 12; ++i) {
    metrics.execute(i == 0 ? seconds(31) : milliseconds(1));
    metrics.transfer_from_device(4, microseconds(5));
  }
  metrics.cpu_fallback("nonzero");
  metrics.local_scalar_dense(3);
  EXPECT_EQ(metrics.mark_steps(), 12);
  const std::vector<std::string> lines = metrics.performance_report();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            "pt-xla-profiler: TransferFromDeviceTime too frequent: 12 counts during 12 steps");
  EXPECT_EQ(lines[1],
            "pt-xla-profiler: CompileTime too slow: longest instance took 05m01s000ms000.000us. "
            "Please open a GitHub issue with the graph dump for our team to optimize.");
  EXPECT_EQ(lines[2],
            "pt-xla-profiler: ExecuteTime too slow: longest instance took 31s000ms000.000us. "
            "Please open a GitHub issue with the graph dump for our team to optimize.");
  EXPECT_EQ(lines[3],
            "pt-xla-profiler: Op(s) not lowered: aten::nonzero,  Please open a GitHub issue with "
            "the above op lowering requests.");
}

// _xla_metrics_report: torch::lazy's report, then the runtime's.
TEST(XlaMetricsTest, ReportIsTheLazyBlockThenTheRuntimeBlock) {
  XlaMetrics metrics;
  metrics.compile("graph", milliseconds(2));
  metrics.compile("graph", milliseconds(2));
  metrics.execute(milliseconds(1));
  metrics.local_scalar_dense(1);
  const std::string report = metrics.report();
  const auto at = [&](std::string_view text) { return report.find(text); };
  ASSERT_NE(at("Counter: CachedCompile\n  Value: 1\nCounter: UncachedCompile\n  Value: 1\n"),
            std::string::npos)
      << report;
  EXPECT_EQ(at("Counter: CachedCompile"), 0u) << report;
  EXPECT_LT(at("Counter: UncachedCompile"), at("Metric: CompileTime"));
  EXPECT_LT(at("Metric: CompileTime"), at("Metric: ExecuteTime"));
  EXPECT_LT(at("Metric: ExecuteTime"), at("Counter: MarkStep\n  Value: 1\n"));
  EXPECT_LT(at("Counter: MarkStep"), at("Counter: aten::_local_scalar_dense\n  Value: 1\n"));
}

// torch_xla 1.13 (third_party/xla_client/metrics.cc CreateMetricReport):
// one block, every metric then every counter by name; the XRT-era names
// (computation_client.cc) up to 2.2, the lazy block from 2.0.
TEST(XlaMetricsTest, ReleasesBefore20HaveOneBlockAndServerNames) {
  XlaMetrics metrics(base::real_clock(), 113);
  metrics.compile("graph", milliseconds(2));
  metrics.compile("graph", milliseconds(2));
  metrics.execute(milliseconds(1));
  metrics.transfer_to_device(64, microseconds(3));
  metrics.transfer_from_device(4, microseconds(5));
  const std::string report = metrics.report();
  const auto at = [&](std::string_view text) { return report.find(text); };
  EXPECT_EQ(at("Metric: CompileTime"), 0u) << report;
  EXPECT_NE(at("Metric: TransferFromServerTime"), std::string::npos) << report;
  EXPECT_NE(at("Metric: TransferToServerTime"), std::string::npos) << report;
  EXPECT_EQ(at("TransferFromDeviceTime"), std::string::npos) << report;
  EXPECT_LT(at("Metric: TransferToServerTime"), at("Counter: CachedCompile\n  Value: 1\n"));
  EXPECT_LT(at("Counter: CachedCompile"), at("Counter: MarkStep"));
  EXPECT_LT(at("Counter: MarkStep"), at("Counter: UncachedCompile\n  Value: 1\n"));

  XlaMetrics v22(base::real_clock(), 202);
  v22.compile("graph", milliseconds(2));
  v22.transfer_from_device(4, microseconds(5));
  v22.execute(milliseconds(1));
  EXPECT_EQ(v22.report().find("Counter: UncachedCompile"), 0u) << v22.report();
  EXPECT_NE(v22.report().find("Metric: TransferFromServerTime"), std::string::npos);
  XlaMetrics v23(base::real_clock(), 203);
  v23.transfer_from_device(4, microseconds(5));
  EXPECT_NE(v23.report().find("Metric: TransferFromDeviceTime"), std::string::npos);
}

// metrics_analysis.cc up to v2.2.0: MetricFrequency("TransferFromServerTime", 0.5f).
TEST(XlaMetricsTest, TransferAnalysisUsesTheReleasesName) {
  XlaMetrics metrics(base::real_clock(), 201);
  for (int i = 0; i < 3; ++i) {
    metrics.execute(milliseconds(1));
    metrics.transfer_from_device(4, microseconds(5));
  }
  const std::vector<std::string> lines = metrics.performance_report();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "pt-xla-profiler: TransferFromServerTime too frequent: 3 counts during 3 steps");
}

// debug/metrics_saver.py save_metrics: '[MetricsData; step={}]\n{}\n'.
TEST(XlaMetricsTest, MetricsDataIsTheSaversFormat) {
  XlaMetrics metrics;
  metrics.execute(milliseconds(1));
  EXPECT_EQ(metrics.metrics_data(0), "[MetricsData; step=0]\n" + metrics.report() + "\n");
  EXPECT_EQ(metrics.metrics_data(7).rfind("[MetricsData; step=7]\nMetric: ExecuteTime\n", 0), 0u);
}

TEST(XlaMetricsTest, SerializeRoundTripKeepsCountersSamplesAndCache) {
  FakeClock time;
  XlaMetrics metrics(time);
  metrics.compile("step with\nnewline: f32[8,4]", milliseconds(12));
  time.advance(seconds(2));
  metrics.compile("step with\nnewline: f32[8,4]", milliseconds(12));
  metrics.execute(microseconds(1500));
  metrics.transfer_to_device(4096, microseconds(20));
  metrics.local_scalar_dense(5);

  const std::string bytes = metrics.serialize();
  FakeClock later;
  later.advance(std::chrono::hours(100));  // another process, another epoch
  std::optional<XlaMetrics> restored = XlaMetrics::deserialize(bytes, later);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->report(), metrics.report());
  EXPECT_EQ(restored->serialize(), bytes);
  EXPECT_EQ(restored->uncached_compiles(), 1);
  EXPECT_EQ(restored->cached_compiles(), 1);
  EXPECT_EQ(restored->local_scalar_dense_count(), 5);
  // The compile cache survives: the same graph is not compiled again.
  EXPECT_FALSE(restored->compile("step with\nnewline: f32[8,4]", milliseconds(1)));
  // Timestamps continue where the saved run stopped: one more second later
  // the two ExecuteTime samples are one second apart.
  later.advance(seconds(1));
  restored->execute(microseconds(500));
  EXPECT_NE(restored->report().find("Metric: ExecuteTime\n  TotalSamples: 2\n"
                                    "  Accumulator: 002ms000.000us\n"
                                    "  ValueRate: 002ms000.000us / second\n"
                                    "  Rate: 2 / second\n"),
            std::string::npos)
      << restored->report();
}

TEST(XlaMetricsTest, SerializeRoundTripKeepsAWrappedSampleWindow) {
  FakeClock time;
  XlaMetrics metrics(time);
  for (int i = 1; i <= 1500; ++i) {
    metrics.execute(milliseconds(i));
    time.advance(milliseconds(10));
  }
  std::optional<XlaMetrics> restored = XlaMetrics::deserialize(metrics.serialize(), time);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->report(), metrics.report());
  // The next sample replaces the oldest retained one (5 s for 477 ms) in both:
  // the 20th percentile, index 204 of [478, ..., 1500, 5000], moves from 681 to 682.
  metrics.execute(seconds(5));
  restored->execute(seconds(5));
  EXPECT_EQ(restored->report(), metrics.report());
  EXPECT_NE(metrics.report().find("  TotalSamples: 1501\n"), std::string::npos) << metrics.report();
  EXPECT_NE(metrics.report().find("; 20%=682ms000.000us;"), std::string::npos) << metrics.report();
}

TEST(XlaMetricsTest, DeserializeRejectsWhatSerializeDidNotProduce) {
  XlaMetrics metrics;
  metrics.compile("graph", milliseconds(1));
  metrics.execute(milliseconds(2));
  const std::string bytes = metrics.serialize();
  EXPECT_FALSE(XlaMetrics::deserialize("").has_value());
  EXPECT_FALSE(XlaMetrics::deserialize("not metrics").has_value());
  EXPECT_FALSE(XlaMetrics::deserialize(bytes.substr(0, bytes.size() / 2)).has_value());
  EXPECT_FALSE(XlaMetrics::deserialize(bytes + "7\n").has_value());
  std::string other_version = bytes;
  other_version.replace(other_version.find(" 1\n"), 3, " 9\n");
  EXPECT_FALSE(XlaMetrics::deserialize(other_version).has_value());
  // Cutting anywhere before the last number fails cleanly (cutting inside it
  // leaves a shorter, still well-formed number).
  const std::size_t last_number = bytes.find_last_of(' ');
  for (std::size_t size = 0; size <= last_number; ++size) {
    EXPECT_FALSE(XlaMetrics::deserialize(bytes.substr(0, size)).has_value()) << size;
  }
}

}  // namespace
}  // namespace tpujobs::executor
