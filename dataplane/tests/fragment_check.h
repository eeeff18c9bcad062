// What a receiver does with the fragments a test got back: checks each
// IPv4 header's checksum, puts the datagram together, sums its UDP
// checksum with the pseudo-header. Frames are untagged Ethernet.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fragcheck {

inline uint32_t add(const uint8_t* p, size_t n, uint32_t s = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) s += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n & 1) s += static_cast<uint32_t>(p[n - 1]) << 8;
  return s;
}
inline uint16_t fold(uint32_t s) {
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  return static_cast<uint16_t>(s);
}

inline bool v6(const std::vector<uint8_t>& f) { return f[12] == 0x86; }
inline std::string src_of(const std::vector<uint8_t>& f) {
  char b[64];
  inet_ntop(v6(f) ? AF_INET6 : AF_INET, f.data() + (v6(f) ? 22 : 26), b, sizeof b);
  return b;
}
inline std::string dst_of(const std::vector<uint8_t>& f) {
  char b[64];
  inet_ntop(v6(f) ? AF_INET6 : AF_INET, f.data() + (v6(f) ? 38 : 30), b, sizeof b);
  return b;
}

// The datagram a receiver puts together from `frags` (any order): its
// L4 bytes, after checking each IPv4 header's checksum; {} if a piece is
// missing or twice.
inline std::vector<uint8_t> reassemble(const std::vector<std::vector<uint8_t>>& frags) {
  std::vector<uint8_t> data(65536);
  std::vector<bool> have(65536);
  size_t total = 0;
  for (const auto& f : frags) {
    size_t off, n, at;
    bool more;
    if (v6(f)) {
      EXPECT_EQ(f[20], 44) << "a fragment header";
      off = static_cast<size_t>((f[56] << 8 | f[57]) & 0xFFF8);
      more = f[57] & 1;
      n = static_cast<size_t>((f[18] << 8 | f[19]) - 8);
      at = 62;
    } else {
      EXPECT_EQ(fold(add(f.data() + 14, 20)), 0xFFFF) << "the IPv4 header checksum";
      off = static_cast<size_t>((f[20] << 8 | f[21]) & 0x1FFF) * 8;
      more = f[20] & 0x20;
      n = static_cast<size_t>((f[16] << 8 | f[17]) - 20);
      at = 34;
    }
    for (size_t k = 0; k < n; k++) {
      if (have[off + k]) return {};
      have[off + k] = true;
      data[off + k] = f[at + k];
    }
    if (!more) total = off + n;
  }
  for (size_t k = 0; k < total; k++)
    if (!have[k]) return {};
  data.resize(total);
  return data;
}
// The UDP checksum of the datagram `l4` between the fragments' addresses: a receiver's sum.
inline uint16_t udp_sum(const std::vector<uint8_t>& first, const std::vector<uint8_t>& l4) {
  const bool six = v6(first);
  uint32_t s = add(first.data() + (six ? 22 : 26), six ? 32 : 8);
  s += IPPROTO_UDP + static_cast<uint32_t>(l4.size());
  return fold(add(l4.data(), l4.size(), s));
}
inline uint16_t udp_sport(const std::vector<uint8_t>& l4) { return static_cast<uint16_t>(l4[0] << 8 | l4[1]); }
inline uint16_t udp_dport(const std::vector<uint8_t>& l4) { return static_cast<uint16_t>(l4[2] << 8 | l4[3]); }

}  // namespace fragcheck
