// Internal: the running daemon. Ports, workers, the control socket, the
// telemetry commands, rule swaps.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dataplane/config.h"
#include "dataplane/offload.h"
#include "dataplane/pipeline.h"

struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_tel_data;

namespace dp {

// EAL arguments for a config (main lcore, workers, ports as --vdev / -a).
std::vector<std::string> eal_args(const Config& cfg, bool force_no_huge);

class Daemon {
 public:
  explicit Daemon(Config cfg);
  ~Daemon();
  Status start();  // after rte_eal_init
  int run();       // control loop until SIGINT/SIGTERM; returns the exit code

  // Control requests (socket and telemetry share these).
  std::string handle(const std::string& request);
  void telemetry_stats(rte_tel_data* d);
  void telemetry_ct_list(const char* params, rte_tel_data* d);
  void telemetry_rules(rte_tel_data* d);

  struct Worker;

 private:
  static int lcore_entry(void* worker);
  void worker_loop(Worker* w);
  Status setup_port(size_t i);
  Status install(std::vector<Rule> rules);
  Status reload();
  void shutdown();
  std::string rules_text();
  RuleCounters rule_counters(const Pipeline& pl, size_t i) const;  // with counters from before swaps; hold mu_

  Config cfg_;
  rte_mempool* pool_ = nullptr;
  std::vector<uint16_t> port_ids_;
  size_t started_ports_ = 0;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<ctrack::Tracker>> shards_;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::atomic<Pipeline*> pipeline_{nullptr};
  std::atomic<const HwMarkTable*> marks_{nullptr};
  std::atomic<bool> stop_{false};
  std::unique_ptr<OffloadProvider> offload_;
  OffloadHost host_;

  std::mutex mu_;  // rules_, retired_, pipeline swaps (control and telemetry threads)
  std::vector<Rule> rules_;
  std::map<uint32_t, RuleCounters> retired_;  // counters of rules from swapped-out pipelines
  std::mutex off_mu_;  // off_snap_: the control loop writes, telemetry reads
  OffloadStats off_snap_;
  int ctl_fd_ = -1;
  bool started_ = false;
};

}  // namespace dp
