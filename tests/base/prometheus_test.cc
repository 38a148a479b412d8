#include "base/prometheus.h"

#include <gtest/gtest.h>

namespace tpujobs::base {
namespace {

TEST(Prometheus, ACounterFamilyHasItsHelpTypeAndOneSampleALabelValueInOrder) {
  EXPECT_EQ(counter_family("tpujobs_x_total", "Things done.", "kind", {{"b", 2}, {"a", 10}}),
            "# HELP tpujobs_x_total Things done.\n"
            "# TYPE tpujobs_x_total counter\n"
            "tpujobs_x_total{kind=\"b\"} 2\n"
            "tpujobs_x_total{kind=\"a\"} 10\n");
}

}  // namespace
}  // namespace tpujobs::base
