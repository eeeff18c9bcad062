// Internal: a worker's loop and everything it may touch.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "ctrack/tracker.h"
#include "dataplane/live_trace.h"
#include "dataplane/pipeline.h"

struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_ring;

namespace dp {

// The workers expire by time, busy or not: a slice every kExpireEveryNs
// that sweeps the whole shard once a second (entries go within timeout + 1 s).
inline constexpr uint64_t kExpireEveryNs = 1'000'000;
inline uint32_t expire_slice(uint32_t capacity) { return std::max<uint32_t>(64, capacity / 1000 + 1); }

class NicStage;

struct WorkerEnv {
  unsigned id = 0;         // also its rx/tx queue on every port
  unsigned workers = 1;
  uint16_t burst = 32;
  uint32_t expire_slice = 64;  // conntrack entries checked for expiry each millisecond
  std::vector<uint16_t> port_ids;     // config order
  const uint16_t* port_index = nullptr;  // DPDK port id -> config index
  const std::atomic<Pipeline*>* pipeline = nullptr;  // the published rules
  const std::atomic<bool>* stop = nullptr;
  rte_rcu_qsbr* qsbr = nullptr;       // reports quiescent states (pipelines are freed after them)
  ctrack::Tracker* shard = nullptr;   // its own
  NicStage* nic = nullptr;            // emulated offload: the NIC model's stage; else null
  Datapath* dp = nullptr;
  WorkerStats* stats = nullptr;
  rte_ring* const* handoff = nullptr;  // [from * workers + to]
  LiveTrace* trace = nullptr;          // its own
  rte_mempool* pool = nullptr;         // where egress IPv4 fragments come from
  int frag_note_off = -1;              // the mbuf dynfield a handed-over fragment's FragNote rides in
  bool carry = false;                  // the pool's mbufs have room for a Carried in their private area
};

// The mbuf dynfield for FragNote (once, before the workers start); its
// offset, or -1 with rte_errno.
int register_frag_note_field();

void run_worker(const WorkerEnv& env);
int worker_lcore_entry(void* env);  // for rte_eal_remote_launch

}  // namespace dp
