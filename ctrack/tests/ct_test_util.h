// Test helpers: packet builders and a tracker driven by a clock the test owns.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <memory>
#include <optional>

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

// Three bytes of an address (at `at`) set from a search index.
inline void put3(uint8_t* at, uint32_t i) {
  at[0] = static_cast<uint8_t>(i >> 16);
  at[1] = static_cast<uint8_t>(i >> 8);
  at[2] = static_cast<uint8_t>(i);
}

// A key other than k, made by vary(key, i) from k for i = 1, 2, ... (under
// 2^24 tries), with k's canonical orientation, k's bucket in a table of two
// buckets (the hash's top bit: a tracker of capacity 4, or 4 with NAT) and
// k's 16-bit signature; nullopt if the search finds none.
template <typename Vary>
std::optional<Key> same_signature(const Key& k, Vary vary) {
  bool canon;
  const uint32_t hk = hash_canonical(k, &canon);
  for (uint32_t i = 1; i < (1u << 24); i++) {
    Key b = k;
    vary(b, i);
    bool cb;
    const uint32_t hb = hash_canonical(b, &cb);
    if (cb == canon && !(b == k) && (hb & 0x8000FFFFu) == (hk & 0x8000FFFFu)) return b;
  }
  return std::nullopt;
}

}  // namespace ctrack::test
