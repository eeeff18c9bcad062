// harness-gen's RFC 2544 search, apart from the ports so that the tests can
// run it against a simulated DUT (loss as a function of the offered rate).
#pragma once

#include <algorithm>

namespace gen {

struct TrialResult {
  double offered_mpps = 0;    // what the generator got onto the wire, both directions
  double loss = 0;            // fraction of it that did not come back
  bool backpressure = false;  // the DUT's ports refused bursts (memif: a full ring)
};

struct SearchResult {
  double zero_loss_mpps = 0;  // 0: no rate tried was within the loss allowed
  const char* limited_by = "";
  int trials = 0;             // beyond the full-rate one
  double lowest_tried_mpps = 0;
};

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
  while (hi - lo > std::max(0.01, 0.01 * hi)) {
    const double mid = (lo + hi) / 2;
    const TrialResult t = trial(mid);
    r.trials++;
    r.lowest_tried_mpps = r.trials == 1 ? mid : std::min(r.lowest_tried_mpps, mid);
    if (t.loss <= loss_allowed) {
      lo = mid;
      r.zero_loss_mpps = std::max(r.zero_loss_mpps, t.offered_mpps);
    } else {
      hi = mid;
    }
  }
  r.limited_by = r.zero_loss_mpps > 0 ? "loss: the search found the rate" : "loss: every rate tried lost packets";
  return r;
}

}  // namespace gen
