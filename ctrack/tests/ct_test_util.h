// Test helpers: packet builders and a tracker driven by a clock the test owns.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <memory>

#include "ctrack/tracker.h"

namespace ctrack::test {

inline Key make_key(const char* src, uint16_t sport, const char* dst, uint16_t dport, uint8_t proto,
                    uint16_t zone = 0) {
  Key k{};
  bool v6 = strchr(src, ':') != nullptr;
  inet_pton(v6 ? AF_INET6 : AF_INET, src, k.src);
  inet_pton(v6 ? AF_INET6 : AF_INET, dst, k.dst);
  k.sport = sport;
  k.dport = dport;
  k.proto = proto;
  k.zone = zone;
  k.family = v6 ? 6 : 4;
  return k;
}

// A tracker plus a clock: now() starts at 1000 s and only moves when told.
class Harness {
 public:
  explicit Harness(Config cfg = small_config()) {
    auto t = Tracker::create(cfg);
    EXPECT_TRUE(t.ok()) << t.message();
    tracker = std::move(t.value());
  }
  static Config small_config() {
    Config c;
    c.capacity = 1024;
    c.event_ring = 256;
    return c;
  }
  CtResult run(const Packet& p, bool commit = true) {
    const Packet* pp = &p;
    CtResult r;
    tracker->process(&pp, 1, now_ns, commit, &r);
    return r;
  }
  void advance_s(double s) { now_ns += static_cast<uint64_t>(s * 1e9); }
  std::unique_ptr<Tracker> tracker;
  uint64_t now_ns = 1000ull * 1000000000ull;
};

inline Packet tcp(const Key& k, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t win = 65535,
                  uint16_t len = 0) {
  Packet p;
  p.key = k;
  p.tcp_flags = flags;
  p.seq = seq;
  p.ack = ack;
  p.win = win;
  p.payload_len = len;
  p.l3_len = static_cast<uint16_t>(40 + len);
  return p;
}

inline Packet udp(const Key& k, uint16_t len = 100) {
  Packet p;
  p.key = k;
  p.payload_len = len;
  p.l3_len = static_cast<uint16_t>(28 + len);
  return p;
}

}  // namespace ctrack::test
