// The RFC 2544 search against simulated DUTs: loss as a function of the
// offered rate, with the generator's own limit on what it can offer.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../search.h"

namespace {

// A DUT that forwards up to `cap` Mpps and drops the excess; the generator
// offers at most `gen_max`.
struct SimDut {
  double cap, gen_max;
  double extra_loss = 0;  // a fraction lost at every rate (a lossy link)
  int trials = 0;
  gen::TrialResult run(double rate) {
    trials++;
    const double offered = rate > 0 ? std::min(rate, gen_max) : gen_max;
    const double lost = std::max(0.0, offered - cap) / offered + extra_loss;
    return {offered, lost, false};
  }
};

TEST(GenSearch, FindsTheCapacityWithinOnePercent) {
  for (double cap : {0.05, 0.9, 3.3, 9.1, 14.5}) {
    SimDut d{cap, 20.8};
    auto full = d.run(0);
    auto r = gen::search(full, 0, 0, [&](double x) { return d.run(x); });
    EXPECT_LE(r.zero_loss_mpps, cap) << cap;
    EXPECT_GE(r.zero_loss_mpps, cap - std::max(0.01, 0.01 * 20.8) - 1e-9) << cap;
    EXPECT_LE(r.trials, 12) << cap;
    EXPECT_STREQ(r.limited_by, "loss: the search found the rate");
  }
}

TEST(GenSearch, ALossThresholdLetsThatMuchThrough) {
  SimDut d{5.0, 20.0};
  auto full = d.run(0);
  // 10 % allowed: up to 5 / 0.9 = 5.56 Mpps offered.
  auto r = gen::search(full, 0, 0.10, [&](double x) { return d.run(x); });
  EXPECT_GT(r.zero_loss_mpps, 5.3);
  EXPECT_LE(r.zero_loss_mpps, 5.0 / 0.9 + 1e-9);
}

TEST(GenSearch, ADutThatLosesEverywhereHasNoRate) {
  SimDut d{100.0, 20.0, 0.02};  // 2 % lost at any rate
  auto full = d.run(0);
  auto r = gen::search(full, 0, 0, [&](double x) { return d.run(x); });
  EXPECT_EQ(r.zero_loss_mpps, 0);
  EXPECT_STREQ(r.limited_by, "loss: every rate tried lost packets");
  EXPECT_LT(r.lowest_tried_mpps, 0.5);
}

TEST(GenSearch, NothingLostAtFullRateIsTheGeneratorsOrTheBackpressuresLimit) {
  SimDut d{30.0, 20.0};
  auto full = d.run(0);
  auto r = gen::search(full, 0, 0, [&](double) -> gen::TrialResult {
    ADD_FAILURE() << "no search needed";
    return {};
  });
  EXPECT_DOUBLE_EQ(r.zero_loss_mpps, 20.0);
  EXPECT_NE(std::string(r.limited_by).find("generator"), std::string::npos);
  full.backpressure = true;
  r = gen::search(full, 0, 0, [&](double x) { return d.run(x); });
  EXPECT_NE(std::string(r.limited_by).find("backpressure"), std::string::npos);
}

TEST(GenSearch, MaxRateBoundsTheSearch) {
  SimDut d{9.0, 20.0};
  auto full = d.run(0);
  double highest = 0;
  auto r = gen::search(full, 4.0, 0, [&](double x) {
    highest = std::max(highest, x);
    return d.run(x);
  });
  EXPECT_LE(highest, 4.0);
  EXPECT_GE(r.zero_loss_mpps, 3.9);
}

// Noise near the knee (a DUT whose loss starts a little early or late from
// trial to trial) moves the answer by about the noise, not more.
TEST(GenSearch, NoisyKneeStaysNearTheCapacity) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> jitter(-0.2, 0.2);
  for (int run = 0; run < 50; run++) {
    SimDut d{8.0, 20.0};
    auto full = d.run(0);
    auto r = gen::search(full, 0, 0, [&](double x) {
      d.cap = 8.0 + jitter(rng);
      return d.run(x);
    });
    EXPECT_GT(r.zero_loss_mpps, 7.5) << run;
    EXPECT_LT(r.zero_loss_mpps, 8.2 + 1e-9) << run;
  }
}

}  // namespace
