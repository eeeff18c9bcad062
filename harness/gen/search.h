// harness-gen's RFC 2544 search, apart from the ports so that the tests can
// run it against a simulated DUT (loss as a function of the offered rate).
#pragma once

#include <algorithm>
#include <string>

namespace gen {

struct TrialResult {
  double offered_mpps = 0;    // what the generator got onto the wire, both directions
  double loss = 0;            // fraction of it that did not come back
  bool backpressure = false;  // the DUT's ports refused bursts (memif: a full ring)
  // The loss was the generator's: the DUT's transmits into the generator's
  // receive rings failed for at least every frame lost, and the DUT dropped
  // none itself (the generator, sharing a CPU, did not drain in time).
  bool generator_dropped = false;
};

struct SearchResult {
  double zero_loss_mpps = 0;  // 0: no rate tried was within the loss allowed
  std::string limited_by;
  int trials = 0;             // beyond the full-rate one, retries included
  int retried = 0;            // trials run again because the generator dropped
  double lowest_tried_mpps = 0;
};

// A paced trial (latency at 10/50/90 %) counts as run at its load when the
// generator offered at least this share of it.
inline constexpr double kPacedReached = 0.97;

// A trial whose loss was the generator's says nothing about the DUT: it is
// run again, up to this many times; if the generator drops every time, the
// rate fails and the result names the generator as the limit.
inline constexpr int kGeneratorRetries = 3;

// `full` is the trial at full rate, already run; trial(rate_mpps) runs one
// more. Nothing lost at full rate: that rate is the answer (the generator's
// ceiling, or the most the DUT took when its ports pushed back). Otherwise a
// binary search between 0 and min(max_mpps, full rate) down to 1 % of the
// upper bound (and at least 0.01 Mpps); the answer is the offered rate of the
// best passing trial.
template <class TrialFn>
SearchResult search(const TrialResult& full, double max_mpps, double loss_allowed, TrialFn&& trial) {
  SearchResult r;
  if (full.loss <= loss_allowed) {
    r.zero_loss_mpps = full.offered_mpps;
    r.limited_by = full.backpressure ? "dut: its ports refused bursts (backpressure); it took this much"
                                     : "generator: nothing lost at the generator's full rate";
    return r;
  }
  double hi = max_mpps > 0 ? std::min(max_mpps, full.offered_mpps) : full.offered_mpps, lo = 0;
  TrialResult bound = full;  // the failing trial that set `hi`
  double bound_rate = full.offered_mpps;
  while (hi - lo > std::max(0.01, 0.01 * hi)) {
    const double mid = (lo + hi) / 2;
    TrialResult t = trial(mid);
    r.trials++;
    for (int k = 0; k < kGeneratorRetries && t.loss > loss_allowed && t.generator_dropped; k++) {
      t = trial(mid);
      r.trials++;
      r.retried++;
    }
    r.lowest_tried_mpps = r.trials == 1 ? mid : std::min(r.lowest_tried_mpps, mid);
    if (t.loss <= loss_allowed) {
      lo = mid;
      r.zero_loss_mpps = std::max(r.zero_loss_mpps, t.offered_mpps);
    } else {
      hi = mid;
      bound = t;
      bound_rate = mid;
    }
  }
  char at[32];
  snprintf(at, sizeof at, "%.3f", bound_rate);
  if (bound.generator_dropped)
    r.limited_by = std::string("generator: at ") + at +
                   " Mpps its receive rings overflowed (the DUT's transmits to it failed; the DUT dropped nothing "
                   "itself)";
  else
    r.limited_by = r.zero_loss_mpps > 0 ? "loss: the search found the rate" : "loss: every rate tried lost packets";
  return r;
}

}  // namespace gen
