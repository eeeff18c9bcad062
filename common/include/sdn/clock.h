// The monotonic clock in nanoseconds, the time base of ctrack, the
// dataplane's workers and its control loop.
#pragma once

#include <cstdint>
#include <ctime>

namespace sdn {

inline uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Seconds for benchmarks: the monotonic clock, or with `cpu` this thread's
// CPU time (on a shared, loaded machine the time the bench was not
// scheduled is left out: the benches' --cpu-time).
inline double bench_seconds(bool cpu) {
  timespec ts;
  clock_gettime(cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace sdn
