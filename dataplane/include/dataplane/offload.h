// The hardware-offload seam. Providers run on the control path only: they
// get the rule set and the tracker's events and program the NIC; never
// called per packet.
//
// Providers: `none`; `rte_flow` (mlx5 with hardware steering, DPDK 22.11
// template/async API); `emulated`: the same rte_flow provider, with its
// rte_flow calls going to the mlx5 22.11 model (nic_model.h) instead of
// DPDK. `auto` probes the ports and takes rte_flow when they can do it, else
// none. There is one code path to a NIC: RteFlowProvider.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ctrack/tracker.h"
#include "dataplane/offload_config.h"
#include "dataplane/flow_api.h"
#include "dataplane/pipeline.h"

namespace dp {

class Mlx5Model;
class NicStage;

// What the daemon lets a provider touch.
struct OffloadHost {
  std::vector<uint16_t> port_ids;  // DPDK port id of each configured port
  std::vector<ctrack::Tracker*> shards;  // one per worker = rx queue
  std::atomic<const HwMarkTable*>* marks = nullptr;  // publish here (the host frees old tables)
};

struct OffloadStats {
  std::vector<std::pair<std::string, uint64_t>> counters;  // name, value
  std::vector<std::pair<std::string, std::string>> notes;   // name, words (the domain and strategy, and why)
  std::set<std::string> gauges;  // which counters are levels (in flight, installed), not counts
  uint64_t get(const std::string& name) const {
    for (const auto& [k, v] : counters)
      if (k == name) return v;
    return 0;
  }
};

class OffloadProvider {
 public:
  virtual ~OffloadProvider() = default;
  virtual const char* name() const = 0;
  // The ports, in config order (the transfer proxy may be any of them),
  // before any of them is configured.
  virtual Status prepare(const std::vector<uint16_t>& /*port_ids*/) { return {}; }
  // After prepare: the order to start the ports in (config indexes). On an
  // E-Switch the transfer proxy first (mlx5_trigger.c:1117-1122), whatever
  // the config order; they stop in the reverse order.
  virtual std::vector<size_t> start_order(size_t nports) const {
    std::vector<size_t> v(nports);
    for (size_t i = 0; i < nports; i++) v[i] = i;
    return v;
  }
  // Port start/stop go through here: the NIC orders them.
  virtual const FlowApi& api() const { return FlowApi::dpdk(); }
  // Between rte_eth_dev_configure and rte_eth_dev_start of each port.
  virtual Status configure_port(uint16_t /*port_id*/) { return {}; }
  // Under offload.engine auto: the driver's reason when a port probed with
  // hardware steering (its firmware's version has it) could not configure
  // it; "" otherwise. The daemon then starts again with DV software steering
  // (kHwsDidNotStartEnv), the engine being fixed at probe.
  virtual std::string hws_did_not_start() const { return ""; }
  // After all ports started.
  virtual Status start(OffloadHost& /*host*/) { return {}; }
  // A new pipeline is live in software (it stays alive until the next call).
  virtual void on_pipeline(const Pipeline& /*pl*/) {}
  // Tracker events from one worker's shard.
  virtual void on_ct_events(unsigned /*worker*/, const ctrack::Event* /*ev*/, uint32_t /*n*/, uint64_t /*now_ns*/) {}
  // Completions, aging, counter folding. Called from the control loop.
  virtual void poll(uint64_t /*now_ns*/) {}
  // Operations are out or queued: the control loop should come back soon.
  virtual bool busy() const { return false; }
  // Removes every hardware rule; called on shutdown after the workers stop.
  virtual Status flush() { return {}; }
  // The ports stopped (stop_ports): what the NIC held went with them.
  virtual void on_ports_stopped() {}
  virtual OffloadStats stats() const { return {}; }
  // The hardware rules as testpmd commands (for reproducing by hand).
  virtual std::string testpmd_commands() const { return ""; }
  // The stage the workers run first: what the NIC did to each packet
  // before software sees it (`emulated` only; null for a real NIC).
  NicStage* nic();
  // The emulated NIC itself, for what only a model can say (refusals, rules
  // and objects in use): tests, `--hw-check model`, the fuzzer.
  virtual Mlx5Model* model() { return nullptr; }
};

// `none`, or the provider the config names. `workers` = rx queues per port.
// `api`/`nic`: an rte_flow seam and the model behind it, made by the caller
// (tests that put something between the provider and the model); the
// provider then runs on them instead of DPDK or a model of its own.
Result<std::unique_ptr<OffloadProvider>> make_offload_provider(const OffloadConfig& cfg, unsigned workers,
                                                               const FlowApi* api = nullptr,
                                                               Mlx5Model* nic = nullptr);

// What a port's rte_flow can do, from rte_flow_info_get (needs a started
// EAL and a configured port). Empty `missing` = everything the provider
// needs. mlx5 in 22.11 reports no conntrack objects (max_nb_conn_tracks
// stays 0, mlx5_flow_hw.c:5024-5046) yet has them: they are not required.
struct HwCaps {
  bool info_ok = false;
  uint32_t max_nb_counters = 0, max_nb_aging_objects = 0, max_nb_conn_tracks = 0, max_nb_queues = 0;
  bool transfer_proxy = false;
  std::vector<std::string> missing;
  std::string str() const;
};
HwCaps probe_rte_flow(const FlowApi& api, uint16_t port_id, bool transfer);

// The firmware an mlx5 PCI function runs (what `ethtool -i` shows), from
// sysfs: ROOT/bus/pci/devices/ADDR/infiniband/*/fw_ver. "" when there is
// none (not an mlx5 function, not PCI).
std::string pci_firmware(const std::string& devargs, const std::string& root = "/sys");

// The devargs an mlx5 PCI port is probed with for offload.engine (before
// EAL: the engine is fixed at probe by dv_flow_en). Devargs that set
// dv_flow_en are kept (the provider then checks that the engine matches);
// hws adds dv_flow_en=2, sws dv_flow_en=1; auto adds dv_flow_en=2 where the
// firmware `fw` has HWS (xx.35.1012 or newer) and leaves the driver's
// default (1, DV software steering) otherwise. *why says which and why.
// Under auto, a start after hardware steering did not start (this variable
// set, to the driver's reason, by the daemon that re-executes itself) probes
// with dv_flow_en=1.
std::string engine_devargs(const std::string& devargs, const std::string& engine, const std::string& fw,
                           std::string* why);
// The environment variable a daemon sets, to the reason, before it starts
// itself again with DV software steering; hws_did_not_start_before() reads it.
inline constexpr const char* kHwsDidNotStartEnv = "DATAPLANE_HWS_DID_NOT_START";
std::string hws_did_not_start_before();

// What an mlx5 PCI port (`devargs`, as engine_devargs gave them) needs for
// the offload, read from the host before EAL (hw-check prints them first):
// the e-switch mode, esw_port_metadata and dv_xmeta_en (HWS on an e-switch
// refuses to probe without the one and with other values of the other),
// TC filters on the function's netdevs and kernel OVS bridges (both put
// rules in the same FDB), the start order, the conntrack register. Each
// fact not `ok` names the command that fixes it. `run` runs an argv (never
// a shell string) and returns its exit status with its output in *out.
struct BringupFact {
  std::string line;
  bool ok;
};
using RunArgv = std::function<int(const std::vector<std::string>& argv, std::string* out)>;
std::vector<BringupFact> bringup_facts(const std::string& devargs, const std::string& sysfs_root, const RunArgv& run);

}  // namespace dp

struct rte_mempool;

namespace dp {

// For tools and tests that need ports with the offload but not the daemon
// (hw-check, offload-bench, the offload tests, the fuzzer): configures each
// port with one rx/tx queue on `pool`, runs the provider's configure_port
// (between configure and start), and starts them in order through the
// provider's seam (the first is the transfer proxy). stop_ports undoes it in
// the reverse order.
Status start_ports(OffloadProvider& off, const std::vector<uint16_t>& ports, rte_mempool* pool);
void stop_ports(OffloadProvider& off, const std::vector<uint16_t>& ports);

}  // namespace dp
