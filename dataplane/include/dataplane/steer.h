// Which worker owns a connection. With several workers each has its own
// conntrack shard, so both directions of a connection must be judged by the
// same one. The owner is a function of the connection's tuple alone: the
// Toeplitz hash a NIC's RSS computes with the daemon's symmetric key (the
// 0x6d5a pattern gives (a,b) and (b,a) the same hash) over source,
// destination and ports, through a redirection table of queue i % workers.
// Where the NIC's RSS steers (same key, same table), a packet arrives at its
// owner; where something else steers (af_packet's kernel fanout, RSS over
// other fields for fragments and ICMP, a rollover under load), the packet is
// handed to its owner over a ring. Table-driven: one lookup per input byte.
#pragma once

#include <cstdint>
#include <vector>

#include "ctrack/key.h"

namespace dp {

// Symmetric Toeplitz key: the 0x6d5a pattern hashes (a,b) and (b,a) alike,
// so both directions of a connection reach the same worker and shard.
inline constexpr uint8_t kSymmetricRssKey[52] = {
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a};
// The key length mlx5 takes (MLX5_RSS_HASH_KEY_LEN): rte_flow RSS actions use its first 40 bytes.
inline constexpr uint32_t kRssKeyLen = 40;

class Steering {
 public:
  static constexpr uint32_t kRetaSize = 128;  // the smallest common RSS redirection table

  // `key`: the RSS key (at least 40 bytes: 36 of IPv6 tuple + 4).
  Steering(const uint8_t* key, uint32_t key_len, unsigned workers);

  unsigned workers() const { return workers_; }
  // The Toeplitz hash of the tuple, as RSS over (src, dst, sport, dport).
  uint32_t hash(const ctrack::Key& k) const;
  unsigned owner(const ctrack::Key& k) const { return workers_ < 2 ? 0 : (hash(k) % kRetaSize) % workers_; }

 private:
  unsigned workers_;
  std::vector<uint32_t> table_;  // [byte position * 256 + value]
};

}  // namespace dp
