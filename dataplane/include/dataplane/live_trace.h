// A live trace (`dataplane-ctl trace --live N`, VPP's `trace add`): the
// next N packets each worker handles, recorded by the worker into a ring
// allocated up front and read by the control thread. The worker reads
// `want` once per burst; with no trace asked for that is all it costs.
//
// Hand-over: the control thread sets `used` to 0 and then `want` to N; the
// worker writes records below kCap, publishes `used` (release) and takes
// what it recorded off `want` with a compare-exchange, so a control thread
// that set `want` to 0 (time is up) is never overwritten. The control
// thread reads records below `used` (acquire), and resets `used` only after
// every worker has passed a quiescent state since `want` went to 0.
#pragma once

#include <atomic>
#include <cstdint>

#include "dataplane/pipeline.h"

namespace dp {

struct TraceRecord {
  static constexpr uint32_t kCapBytes = 128;  // Ethernet, two VLAN tags, IPv6 and a full TCP header fit
  enum Stage : uint8_t { kSoftware, kNicStage };
  uint64_t ns = 0;  // mono clock when its burst was received
  uint32_t pkt_len = 0;
  uint16_t port = 0;  // ingress, config index
  uint16_t cap = 0;   // bytes in frame
  int16_t out_port = -1;
  int8_t handoff = -1;  // handed to this worker
  uint8_t stage = kSoftware;
  uint8_t ct_state = 0;
  uint8_t worker = 0;
  uint32_t mark = 0;
  PacketNote note{};
  uint8_t frame[kCapBytes];
};

struct LiveTrace {
  static constexpr uint32_t kCap = 256;  // records per worker per trace
  std::atomic<uint32_t> want{0};
  std::atomic<uint32_t> used{0};
  TraceRecord rec[kCap];
};

}  // namespace dp
