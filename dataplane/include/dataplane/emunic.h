// The emulated NIC: a software model of ConnectX eSwitch steering, for the
// machines without one (this sandbox, CI). It is a model, not a driver.
//
// It interprets the same hw::Flow rules the rte_flow provider gives the NIC
// (groups, priorities, REPRESENTED_PORT/ETH/VLAN/IPv4/IPv6/TCP/UDP/CONNTRACK
// items; COUNT, AGE, INDIRECT(conntrack), JUMP, REPRESENTED_PORT,
// PORT_REPRESENTOR, RSS, MARK, DROP actions) and runs as the first stage of
// each worker's rx path. What it models:
//   - exact-match tables (fully masked 5-tuples) with a capacity limit, and
//     masked rules scanned in priority order;
//   - asynchronous operations: each completes after `latency_us`, and the
//     NIC accepts at most `insert_rate` operations per second;
//   - COUNT (packets, bytes, last hit) and AGE (flows idle for the timeout);
//   - the conntrack context: TCP only, never in group 0, created from the
//     state software gives it; it checks and advances SEQ, ACK and window
//     itself (Linux tcp_in_window rules); SYN, FIN and RST are CHANGED and
//     out-of-window segments INVALID, so the rules send them to software.
// What it does not model: the NIC's hash collisions and rule-insertion
// failures other than a full table, meters, encapsulation.
//
// Threads: one control thread submits operations; queue q's table is only
// touched by the worker that polls rx queue q (service() and rx()). A
// connection's flows go to the queue of the worker whose ctrack shard owns
// it (symmetric RSS brings both directions there); shared rules go to all.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "dataplane/hwflow.h"
#include "dataplane/pipeline.h"

namespace dp {

// Single producer, single consumer.
template <typename T>
class SpscRing {
 public:
  explicit SpscRing(uint32_t pow2) : v_(pow2), mask_(pow2 - 1) {}
  bool push(T x) {
    uint32_t h = head_.load(std::memory_order_relaxed);
    if (h - tail_.load(std::memory_order_acquire) == v_.size()) return false;
    v_[h & mask_] = std::move(x);
    head_.store(h + 1, std::memory_order_release);
    return true;
  }
  T* front() {
    uint32_t t = tail_.load(std::memory_order_relaxed);
    if (t == head_.load(std::memory_order_acquire)) return nullptr;
    return &v_[t & mask_];
  }
  uint32_t space() const {
    return static_cast<uint32_t>(v_.size()) -
           (head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire));
  }
  bool full() const {
    return head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire) == v_.size();
  }
  void pop() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

 private:
  std::vector<T> v_;
  uint32_t mask_;
  alignas(64) std::atomic<uint32_t> head_{0};
  alignas(64) std::atomic<uint32_t> tail_{0};
};

inline constexpr int16_t kNicMiss = -2;  // the packet goes to software

struct EmuNicConfig {
  unsigned queues = 1;
  uint32_t table_size = 65536;     // exact-match entries (connection directions)
  uint32_t rule_size = 4096;       // masked rules (shared rules count once per queue)
  uint32_t ct_contexts = 65536;
  uint32_t insert_rate = 1000000;  // operations per second the NIC accepts
  uint32_t latency_us = 50;        // completion latency
  uint32_t ring = 16384;           // operations queued per rx queue (power of two)
  uint32_t flow_ids = 0;           // flow ids (counters); 0 = table_size + rule_size
};

class EmuNic {
 public:
  struct Counter {
    std::atomic<uint64_t> packets{0}, bytes{0}, last_hit_ns{0};
  };
  struct Completion {
    uint64_t cookie;
    int err;  // 0, or an errno: ENOSPC table full, EINVAL rule the model cannot run
  };
  struct QueueStats {
    uint64_t rx = 0, forwarded = 0, dropped = 0, to_software = 0, ct_invalid = 0, ct_changed = 0;
    QueueStats& operator+=(const QueueStats& o) {
      rx += o.rx;
      forwarded += o.forwarded;
      dropped += o.dropped;
      to_software += o.to_software;
      ct_invalid += o.ct_invalid;
      ct_changed += o.ct_changed;
      return *this;
    }
  };

  EmuNic(const EmuNicConfig& cfg, hw::Layout layout);
  ~EmuNic();

  // --- control thread. Flow and context ids are the caller's, below
  // max_flows() / ct_contexts. False when the queue's ring is full.
  bool flow_create(unsigned q, uint32_t id, hw::Flow f, uint64_t cookie, uint64_t now_ns);
  bool flow_destroy(unsigned q, uint32_t id, uint64_t cookie, uint64_t now_ns);
  bool ct_create(unsigned q, uint32_t ct, const rte_flow_action_conntrack& prof, uint64_t cookie, uint64_t now_ns);
  bool ct_update(unsigned q, uint32_t ct, const rte_flow_modify_conntrack& m, uint64_t cookie, uint64_t now_ns);
  bool ct_destroy(unsigned q, uint32_t ct, uint64_t cookie, uint64_t now_ns);
  // Room for n more operations on queue q.
  bool can_submit(unsigned q, uint32_t n) const;
  // Completions of queue q, in submission order.
  uint32_t poll(unsigned q, Completion* out, uint32_t max);
  const Counter& counter(uint32_t id) const { return counters_[id]; }
  void reset_counter(uint32_t id);
  uint32_t max_flows() const { return static_cast<uint32_t>(counters_.size()); }
  // The handle an INDIRECT action carries for context `ct`.
  static rte_flow_action_handle* ct_handle(uint32_t ct) {
    return reinterpret_cast<rte_flow_action_handle*>(static_cast<uintptr_t>(ct) + 1);
  }

  // Objects alive in the model (for leak checks); read when quiescent.
  uint64_t exact_in_use() const { return exact_used_.load(); }
  uint64_t rules_in_use() const;
  uint64_t ct_in_use() const;
  QueueStats stats(unsigned q) const;

  // --- worker of queue q
  // Applies the operations that are due. Returns how many.
  uint32_t service(unsigned q, uint64_t now_ns);
  // Steers one packet arriving on config port p.in.port. Returns the port to
  // forward to, -1 (dropped by a rule) or kNicMiss; a MARK action sets
  // p.has_mark/p.mark.
  int16_t rx(unsigned q, PacketIn& p, uint64_t now_ns);

  struct Queue;
  struct Rule;

 private:
  bool submit(unsigned q, struct Op&& op, uint64_t now_ns);
  EmuNicConfig cfg_;
  hw::Layout layout_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<Counter> counters_;
  std::atomic<uint64_t> exact_used_{0};
  uint64_t next_slot_ns_ = 0;
};

}  // namespace dp
