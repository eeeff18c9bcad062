// The `offload:` section of the config: what the offload provider is
// built from (offload.h), parsed by the control path (config.h).
#pragma once

#include <cstdint>
#include <string>

namespace dp {

struct OffloadConfig {
  std::string provider = "none";  // none | emulated | rte_flow | auto
  uint32_t max_in_flight = 1024;
  uint32_t table_size = 65536;     // emulated: NIC table capacity
  uint32_t insert_rate = 1000000;  // emulated: insertions per second
  uint32_t latency_us = 50;        // emulated: completion latency
  uint32_t age_s = 10;             // hardware aging timeout for offloaded flows
  // Where the rules go: auto (the e-switch when the ports have a transfer
  // proxy, else each port's NIC Rx domain), transfer, or ingress.
  std::string domain = "auto";
  // How the NIC tracks a connection: aso (mlx5 CONNTRACK objects), flows
  // (exact 5-tuple rules; SYN, FIN and RST to software), auto (aso where the
  // port takes a conntrack pool, else flows).
  std::string conntrack = "auto";
  // The steering engine: hws (hardware steering, dv_flow_en=2: templates
  // and queues), sws (DV software steering, dv_flow_en=1: synchronous
  // rte_flow_validate/create per rule), auto (the one the ports were probed
  // with; before EAL an mlx5 PCI port without dv_flow_en gets 2 when its
  // firmware has HWS, xx.35.1012 or newer, else 1).
  std::string engine = "auto";
  std::string nic = "cx6dx-switchdev";  // emulated: the model's NIC profile (nic_model.h)
  // emulated, not in YAML: no worker thread services the model's queues
  // (hw-check's one thread is both): a synchronous call that waits for
  // them (DV's conntrack query) services them itself.
  bool model_self_service = false;
  // Every field needs a restart (queues, tables and templates are sized at
  // start); a reload compares them all, a new one too.
  bool operator==(const OffloadConfig&) const = default;
};

}  // namespace dp
