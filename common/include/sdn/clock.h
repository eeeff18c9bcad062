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

}  // namespace sdn
