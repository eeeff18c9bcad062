// Internal: the running daemon. It starts and stops what the services
// share (workers, conntrack shards, RCU, handoff rings, the offload
// provider), runs the control loop and composes the services, which own
// the rest: ports, rules and swaps, conntrack queries, traces, stats.
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
#include "services.h"
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
  void telemetry_stats(rte_tel_data* d) { stats_.telemetry(d); }
  void telemetry_ct_list(const char* params, rte_tel_data* d) { ct_.telemetry(params, d); }
  void telemetry_rules(rte_tel_data* d) { rules_.telemetry(d); }


 private:
  // Each service registers its commands.
  Status register_commands();
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
  std::vector<std::unique_ptr<WorkerSlot>> workers_;
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
  Running running_{cfg_, workers_, shards_, offload_, launched_, shut_, qsbr_, steer_};
  CtService ct_{running_};
  TraceService trace_{running_, rules_};
  StatsService stats_{running_, rules_, ports_};
  std::unique_ptr<ControlServer> ctl_;
  std::unique_ptr<MetricsServer> metrics_;  // Prometheus /metrics, when configured
  CommandTable commands_;
  bool started_ = false, shut_ = false, interrupted_ = false;
};

}  // namespace dp
