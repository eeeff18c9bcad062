// A model of a ConnectX-6 Dx / BlueField-2 under the DPDK 22.11 mlx5 PMD
// with hardware steering (dv_flow_en=2), behind the rte_flow call seam
// (flow_api.h). It is what `offload.provider: emulated` runs on, on machines
// without the NIC: the same rte_flow provider, the same calls.
//
// Control side: the driver's rules, call by call. Each rule is a named check
// that cites the driver file and line it comes from (the sources are in
// ../shared/reference/dpdk-v22.11.11/); what the model does not know to be
// accepted is refused, with the errno and message the driver gives where it
// gives one. The rule names and their citations are listed by rules().
//
// Data side: the steering the accepted rules describe, run as the first
// stage of each worker's rx path (a replica of the tables per rx queue,
// updated by that worker from a ring, so the worker never takes a lock):
// groups and priorities, exact-match connection tables, COUNT and AGE, the
// conntrack ASO context checking TCP windows with Linux's tcp_in_window
// rules (SYN/FIN/RST are CHANGED, out-of-window INVALID), misses to software
// the way the hardware misses (FDB: to the eSwitch manager, which hands the
// packet to the representor it came from; NIC Rx root: the port's queues;
// NIC Rx non-root: dropped).
//
// Not modelled (refused if asked for): items and actions other than those
// the provider uses, meters, encapsulations other than VXLAN and Geneve
// over IPv4, hash collisions, hardware insertion failures. A connection's context state lives in the replica of
// the rx queue that sees its packets: the daemon requires both directions
// to reach one queue (symmetric RSS) anyway.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/flow_api.h"
#include "dataplane/nic_stage.h"
#include "dataplane/pipeline.h"

namespace dp {


// A NIC as the 22.11 driver finds it. The profiles differ in what the
// driver and firmware do with the same calls:
// - cx6dx-legacy: a ConnectX-6 Dx as shipped (e-switch in legacy mode): no
//   E-Switch for DPDK (dv_esw_en only with switchdev, linux/mlx5_os.c:186-187),
//   so no transfer proxy (mlx5_flow.c:11530-11543); each PF its own NIC Rx
//   domain, conntrack objects per port.
// - cx6dx-switchdev, bf2-switchdev: switchdev mode (on a BlueField-2 the Arm
//   side's default): the first port is the E-Switch manager (uplink / PF),
//   the rest its representors; the HWS conntrack pool of the manager port
//   asks for the FDB too (mlx5_flow_hw.c:6602-6606), which the 22.11 guide
//   lists as not supported ("Connection tracking ... with E-Switch: N/A",
//   mlx5.rst:1548-1551): rte_flow_configure with conntrack objects fails there.
// - cx6dx-switchdev-ct-fdb: the same with a firmware that takes conntrack in
//   the FDB (a model option, so that both paths stay tested).
// - cx6dx-legacy-fw22.31, bf2-switchdev-fw24.32: firmware older than
//   xx.35.1012, which has no hardware steering (hws/mlx5dr_context.c:103-141
//   leaves HWS off): dv_flow_en=2 cannot configure a port; these cards run
//   DV software steering (dv_flow_en=1), synchronous rte_flow.
// - cx6dx-legacy-hws-off: a firmware whose version has HWS (so auto probes
//   with dv_flow_en=2) but whose capabilities do not start it
//   (mlx5dr_context.c:103-141 checks more than the version): configure
//   fails; auto then starts again with dv_flow_en=1.
// What a card, its firmware and the 22.11 driver grant: every limit the
// model enforces, one row per NIC profile (rules.cc), copied into the
// model's config by apply_profile. Where no card's value has been read the
// field says so; a profile that differs from another differs here.
struct NicLimits {
  uint32_t max_qp_wr = 1u << 15;  // the largest work queue it grants (ibv_devinfo max_qp_wr)
  // The largest conntrack object bulk its firmware allocates in one DevX
  // create, log2 (HCA capabilities 2, log_conn_track_max_alloc). 22.11 does
  // not read it; no card's value has been read here: every profile has 22
  // (4M objects), which the configs shipped stay below; tests set less.
  uint8_t log_ct_max_alloc = 22;
  // Jumbo definers with nine full dword selectors (HCA capabilities 2,
  // format_select_dw_8_6_ext, read by hws/mlx5dr_cmd.c): without it a jumbo
  // definer has six full and three limited ones, which only reach the first
  // 64 dwords of the header layout, so no more than six of the dwords past
  // them (IPv4 and IPv6 addresses, the VNI, registers) fit one template.
  // No card's value has been read here; false on every profile (the guide's
  // "IPv6 5-tuple matching is not supported", mlx5.rst:163, is what false gives).
  bool full_dw_jumbo = false;
  // Modify-header and reformat arguments the firmware allocates, log2 of
  // 64-byte chunks (HCA caps log_header_modify_argument_granularity and
  // _max_alloc, mlx5dr_cmd.c): 0 and 24 in a published HWS dump of a
  // ConnectX-6 Dx on firmware 22.34.0366 (Mellanox/mlx_steering_dump).
  uint8_t log_arg_granularity = 0;
  uint8_t log_arg_max_alloc = 24;
  uint32_t max_counters = 1u << 22;  // what the device reports (hws_max_nb_counters)
  // The ASO conntrack work queue of each flow queue: 2^MLX5_ASO_QUEUE_LOG_DESC
  // = 1024 WQEs (mlx5.h:592 of 22.11.11; the SQ made in mlx5_flow_aso.c:1137-1141).
  // A create, a context update or a query holds one until its completion is
  // pulled; when none is free the call fails at once (mlx5_flow_aso.c:1190-1196,
  // mlx5_flow_hw.c:7805-7810).
  uint32_t ct_queue_depth = 1024;
  // Counters a rule frees wait for the counter service's next cycle before
  // they can be taken again (mlx5_hws_cnt.h:436-452, mlx5_hws_cnt.c:63-92;
  // svc_cycle_time default 500 ms, mlx5_defs.h:188).
  uint32_t counter_cycle_ms = 500;
  // Geneve, which 22.11 matches under DV software steering only (its HWS
  // has no GENEVE item, rule hws-geneve): the HCA capabilities DV's
  // validator reads. tunnel_stateless_geneve_rx: without it a GENEVE item
  // is refused (mlx5_flow.c:3334-3338). geneve_max_opt_len: the largest
  // Opt Len a GENEVE item may ask for, 63 words with it, 14 without
  // (3326-3327, 3372-3377). geneve_tlv_opt: GENEVE_OPT items (3497-3501).
  // No card's value has been read here: every profile has stateless
  // Geneve Rx (ConnectX-5 and later advertise it; a profile without it
  // refuses every GENEVE item), the short Opt Len and no TLV options
  // (the narrower, until a card is read).
  bool geneve_rx = true;
  bool geneve_max_opt_len = false;
  bool geneve_tlv_opt = false;
};

struct NicProfile {
  const char* name;
  bool esw;        // switchdev: ports[0] is the E-Switch manager, the rest its representors
  bool ct_in_fdb;  // the firmware takes a conntrack pool on the E-Switch manager
  const char* fw;  // the firmware version it runs (ethtool -i, sysfs fw_ver)
  bool hws;        // the firmware has HWS (xx.35.1012 or newer)
  NicLimits limits;
  const char* what;
};
// "22.31.1014" -> true when it is xx.35.1012 or newer (the HWS minimum);
// false for anything it cannot read.
bool firmware_has_hws(const std::string& fw);
const std::vector<NicProfile>& nic_profiles();
const NicProfile* find_nic_profile(const std::string& name);  // nullptr: no such profile

struct Mlx5ModelConfig {
  // dv_esw_en=1, switchdev: the first port is the eSwitch manager (transfer
  // proxy). Set with the profile (apply_profile).
  bool esw = true;
  // The config index of the E-Switch manager: a config may list a
  // representor first (the port order is the operator's).
  size_t proxy_index = 0;
  bool ct_in_fdb = false;     // see NicProfile
  std::string profile = "cx6dx-switchdev";
  std::string fw = "22.36.1010";  // see NicProfile
  bool hws_fw = true;             // the firmware has HWS
  NicLimits limits;               // the profile's (apply_profile)
  // The steering engine the ports were probed with (devarg dv_flow_en): 2,
  // hardware steering (templates and queues); 1, DV software steering
  // (synchronous rte_flow_validate/create).
  uint8_t dv_flow_en = 2;
  bool repr_matching = true;  // devarg repr_matching_en (default 1)
  bool fdb_def_rule = true;   // devarg fdb_def_rule_en (default 1)
  unsigned rx_queues = 1;     // software rx queues: one table replica each
  uint32_t max_flows = 1u << 18;     // rule slots the model preallocates, over all template tables
  uint32_t max_masked = 8192;        // rules that are not exact 5-tuple matches, per replica
  uint32_t latency_us = 50;          // completion latency of every operation
  uint32_t insert_rate = 1000000;    // operations per second the NIC takes
  uint32_t ring = 16384;             // operations in flight per replica (power of two >= all flow queue sizes)
  bool self_service = false;         // no workers: pull() applies queued operations itself
  // Takes the profile's fields (esw, ct_in_fdb, fw, hws_fw and its limits);
  // false for an unknown name.
  bool apply_profile(const std::string& name);
};

struct NicStats {
  uint64_t rx = 0, forwarded = 0, dropped = 0, to_software = 0, ct_invalid = 0, ct_changed = 0, no_rx_flows = 0,
           miss_dropped = 0, rewritten = 0;  // rewritten: decapsulated, modified or encapsulated
  // Sent to the software queues by an RSS action that hashes the packet on
  // other fields than the port's own RSS (addresses, and ports for TCP and
  // UDP): it may land on a queue other than its owner's (steer.h).
  uint64_t rss_off_port = 0;
  NicStats& operator+=(const NicStats& o);
};

class Mlx5Model final : public NicStage {
 public:
  // ports: DPDK port ids in config order. With esw, ports[cfg.proxy_index]
  // is the transfer proxy and the rest its representors; without,
  // independent NIC ports.
  Mlx5Model(const Mlx5ModelConfig& cfg, std::vector<uint16_t> ports);
  ~Mlx5Model() override;
  Mlx5Model(const Mlx5Model&) = delete;
  Mlx5Model& operator=(const Mlx5Model&) = delete;

  // The seam table bound to this model.
  const FlowApi& api() const { return api_; }
  void set_clock(uint64_t (*fn)(void*), void* ctx) {
    clock_ = fn;
    clock_ctx_ = ctx;
  }

  // --- the worker of rx queue q
  // Applies the queued operations that are due. Returns how many.
  uint32_t service(unsigned q, uint64_t now_ns) override;
  // Steers one packet that arrived on config port p.port. Returns the config
  // port to send it to, -1 (dropped) or kNicMiss; MARK sets p.has_mark/p.mark.
  // `parsed`/`drop` (optional) receive the parse the steering did, for
  // the software pipeline to reuse on a kNicMiss (one parse per packet).
  int16_t rx(unsigned q, PacketIn& p, uint64_t now_ns, ctrack::Parsed* parsed = nullptr,
             ctrack::Drop* drop = nullptr);
  // NicStage: rx() for each packet of a burst.
  void rx_burst(unsigned q, PacketIn* in, uint16_t n, uint64_t now_ns, int16_t* out, ctrack::Parsed* parsed,
                ctrack::Drop* drop) override {
    for (uint16_t i = 0; i < n; i++) out[i] = rx(q, in[i], now_ns, &parsed[i], &drop[i]);
  }

  // With the workers stopped: every queued operation is applied and
  // completes at the next pull, whatever the clock says.
  void drain();

  // --- introspection (tests, stats, leak checks)
  NicStats stats(unsigned q) const;
  uint64_t flows_in_use() const;     // rules the control side holds (created, not yet destroyed)
  uint64_t ct_in_use() const;        // conntrack objects allocated
  uint64_t templates_in_use() const;  // pattern + actions templates + tables
  uint64_t counters_in_use() const;   // taken by rules, or freed and waiting for the service cycle
  // Conntrack WQEs taken and not yet completed, the most at once on any queue.
  uint32_t ct_wqes_max() const;
  // Rules submitted with a conntrack object whose create had not completed
  // (the driver takes them; they may go live before the context is written).
  uint64_t ct_unready_refs() const;
  // Conntrack objects asked for past the pool: 22.11 hands them out outside
  // its DevX object (rule ct-pool-bound); the provider must never.
  uint64_t ct_overruns() const;
  uint64_t refusals() const { return refusals_; }
  const std::string& last_error() const { return last_error_; }  // "rule-name: message [driver file:line]"
  // The model's rules: name and the driver source they encode.
  static const std::vector<std::pair<const char*, const char*>>& rules();

  struct Impl;

 private:
  uint64_t now() const;
  uint32_t service_replica(void* replica, uint64_t now_ns);
  Mlx5ModelConfig cfg_;
  FlowApi api_;
  std::unique_ptr<Impl> impl_;
  uint64_t (*clock_)(void*) = nullptr;
  void* clock_ctx_ = nullptr;
  uint64_t refusals_ = 0;
  std::string last_error_;
  friend struct ModelCalls;
};

}  // namespace dp
