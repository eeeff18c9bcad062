// Internal: the running daemon. Ports, workers, the control socket, the
// telemetry commands, rule swaps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "commands.h"
#include "metrics.h"
#include "notify.h"
#include "port_service.h"
#include "rule_service.h"
#include "rule_builder.h"
#include "stats_snapshot.h"
#include "socket.h"
#include "dataplane/config.h"
#include "dataplane/offload.h"
#include "dataplane/pipeline.h"

struct rte_mempool;
struct rte_ring;
struct rte_rcu_qsbr;
struct rte_tel_data;

namespace dp {

struct TraceRecord;

// EAL arguments for a config (main lcore, workers, ports as --vdev / -a).
std::vector<std::string> eal_args(const Config& cfg, bool force_no_huge);

// SIGINT/SIGTERM ask for a stop, SIGHUP for a reload; the handlers only set
// flags. main installs them before the control socket and EAL, so a stop
// asked for during start-up is a clean stop: start() and main look at
// stop_requested() between the steps of the start.
void install_signal_handlers();
bool stop_requested();

class Daemon {
 public:
  Daemon(Config cfg, std::unique_ptr<ControlServer> ctl, std::unique_ptr<MetricsServer> metrics = nullptr);
  ~Daemon();
  Status start();  // after rte_eal_init; an error, and interrupted(), when a stop was asked for meanwhile
  int run();       // control loop until SIGINT/SIGTERM; returns the exit code
  bool interrupted() const { return interrupted_; }  // start() gave up for a stop (a clean one: exit 0)
  // After a failed start: the reason hardware steering did not start (see
  // OffloadProvider::hws_did_not_start), or "".
  std::string hws_did_not_start() const { return offload_ ? offload_->hws_did_not_start() : ""; }

  // A control request (the socket's; telemetry has its own below).
  ControlServer::Reply handle(const std::string& request);
  void telemetry_stats(rte_tel_data* d);
  void telemetry_ct_list(const char* params, rte_tel_data* d);
  void telemetry_rules(rte_tel_data* d) { rules_.telemetry(d); }

  struct Worker;

 private:
  // Services: each file registers its commands (rule_service.cc, ct_service.cc,
  // trace_service.cc, stats_service.cc).
  Status register_commands();
  Status register_ct_commands(CommandTable& t);
  Status register_trace_commands(CommandTable& t);
  Status register_stats_commands(CommandTable& t);
  ControlServer::Reply ct_list(int zone, Format f);
  StatsSnapshot snapshot(bool control_thread);
  // What a snapshot needs DPDK calls for, made on the control thread only:
  // other threads ask the loop (serve_dpdk_reads) and wait a turn.
  struct DpdkReads {
    std::vector<std::pair<std::string, uint64_t>> ports;  // PortService::counters()
    std::vector<StatsSnapshot::Mempool> mempools;
  };
  DpdkReads dpdk_reads();            // control thread
  DpdkReads dpdk_reads_from_loop();  // any other thread
  void serve_dpdk_reads();           // the control loop, each turn
  std::mutex reads_mu_;
  std::condition_variable reads_cv_;
  std::atomic<bool> reads_wanted_{false};
  uint64_t reads_gen_ = 0;
  DpdkReads reads_;
  std::string trace(const std::string& packet_desc, Format f);
  ControlServer::Reply live_trace(uint32_t n, uint32_t seconds, Format f);
  std::string live_trace_json(const std::vector<const TraceRecord*>& recs, uint32_t n, uint32_t seconds);
  void end_live_trace();
  void shutdown();

  Config cfg_;
  PortService ports_{cfg_.ports};
  std::unique_ptr<Steering> steer_;    // with several workers: who owns a connection
  struct NatOwner {
    const Steering* steer;
    unsigned self;
  };
  std::vector<NatOwner> nat_owners_;   // each shard's NAT tuple filter (set_nat_filter), sized once
  std::vector<rte_ring*> handoff_;     // [from * workers + to], single producer / single consumer
  bool launched_ = false;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<ctrack::Tracker>> shards_;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::atomic<Pipeline*> pipeline_{nullptr};
  std::atomic<const HwMarkTable*> marks_{nullptr};
  std::atomic<bool> stop_{false};
  std::unique_ptr<OffloadProvider> offload_;
  ServiceNotifier notify_;  // systemd's Type=notify, when started by it
  bool workers_polling();
  std::vector<uint64_t> polls_seen_;
  OffloadHost host_;

  RuleService rules_{{cfg_, pipeline_, qsbr_, shards_, offload_, notify_}};
  std::mutex off_mu_;  // off_snap_: the control loop writes, telemetry reads
  OffloadStats off_snap_;
  std::unique_ptr<ControlServer> ctl_;
  std::unique_ptr<MetricsServer> metrics_;  // Prometheus /metrics, when configured
  CommandTable commands_;
  bool started_ = false, shut_ = false, interrupted_ = false;
  bool live_ = false;  // a live trace is running (one at a time)
};

}  // namespace dp
