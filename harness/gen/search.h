// harness-gen's RFC 2544 search, apart from the ports so that the tests can
// run it against a simulated DUT (loss as a function of the offered rate).
#pragma once

#include <algorithm>
#include <cstdio>
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
  // The share of the trial each side's polling thread waited for a CPU
  // (schedstat's run_delay over run + run_delay); -1: not known. The DUT's
  // is its forwarding thread's, read by the harness around the trial.
  double dut_cpu_wait = -1;
  double gen_cpu_wait = -1;
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

// A DUT whose forwarding thread waited for a CPU more than this share of a
// trial (other programs on its core) was not at its own limit there: a
// rate it refused beyond is the machine's, not the DUT's.
inline constexpr double kCpuWaitLimit = 0.05;

inline std::string percent(double share) {
  char b[32];
  snprintf(b, sizeof b, "%.0f %%", share * 100);
  return b;
}

// What the trial says of the two threads' CPUs, for limited_by.
inline std::string cpu_note(const TrialResult& t) {
  std::string s;
  if (t.dut_cpu_wait >= 0) s += "; the DUT's forwarding thread waited for a CPU " + percent(t.dut_cpu_wait);
  if (t.gen_cpu_wait >= 0) s += "; the generator " + percent(t.gen_cpu_wait);
  return s;
}

// `full` is the trial at full rate, already run; trial(rate_mpps) runs one
// more (rate 0: the full rate again). A trial whose loss was the
// generator's runs again, up to kGeneratorRetries times, the full-rate one
// too. Nothing lost at full rate: that rate is the answer (the generator's
// ceiling, or the most the DUT took when its ports pushed back: the DUT's
// limit only when its forwarding thread had its CPU). Otherwise a
// binary search between 0 and min(max_mpps, full rate) down to 1 % of the
// upper bound (and at least 0.01 Mpps); the answer is the offered rate of the
// best passing trial.
template <class TrialFn>
SearchResult search(TrialResult full, double max_mpps, double loss_allowed, TrialFn&& trial) {
  SearchResult r;
  for (int k = 0; k < kGeneratorRetries && full.loss > loss_allowed && full.generator_dropped; k++) {
    full = trial(0.0);
    r.trials++;
    r.retried++;
  }
  if (full.loss <= loss_allowed) {
    r.zero_loss_mpps = full.offered_mpps;
    if (!full.backpressure)
      r.limited_by = "generator: nothing lost at the generator's full rate";
    else if (full.dut_cpu_wait > kCpuWaitLimit)
      r.limited_by = "cpu: the DUT's ports refused bursts while its forwarding thread waited for its CPU (other "
                     "programs on its core): not its own limit";
    else
      r.limited_by = "dut: its ports refused bursts (backpressure); it took this much";
    r.limited_by += cpu_note(full);
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
    r.lowest_tried_mpps = r.lowest_tried_mpps > 0 ? std::min(r.lowest_tried_mpps, mid) : mid;
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
  r.limited_by += cpu_note(bound);  // (of the trial that bounded it)
  return r;
}

}  // namespace gen
