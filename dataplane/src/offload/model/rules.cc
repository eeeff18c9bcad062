// The model's rules (each with the driver line it encodes) and NIC profiles.
#include "internal.h"

namespace dp {

// ------------------------------------------------------------------ rules

namespace {
// A ConnectX-6 Dx on the 22.11 driver: what the model enforces and where
// each figure comes from (nic_model.h, NicLimits). No BlueField-2 value has
// been read: its profiles take the same until one is.
constexpr NicLimits kCx6Dx{.max_qp_wr = 1u << 15,
                           .log_ct_max_alloc = 22,
                           .full_dw_jumbo = false,
                           .log_arg_granularity = 0,
                           .log_arg_max_alloc = 24,
                           .max_counters = 1u << 22,
                           .ct_queue_depth = 1024,
                           .counter_cycle_ms = 500,
                           .geneve_rx = true,
                           .geneve_max_opt_len = false,
                           .geneve_tlv_opt = false};
constexpr NicLimits kBf2 = kCx6Dx;
}  // namespace

const std::vector<NicProfile>& nic_profiles() {
  static const std::vector<NicProfile> p = {
      {"cx6dx-legacy", false, false, "22.36.1010", true, kCx6Dx,
       "ConnectX-6 Dx as shipped: e-switch in legacy mode, each PF its own NIC Rx domain, conntrack per port"},
      {"cx6dx-switchdev", true, false, "22.36.1010", true, kCx6Dx,
       "ConnectX-6 Dx in switchdev mode: PF (E-Switch manager) and representors; no conntrack in the FDB"},
      {"bf2-switchdev", true, false, "24.36.1010", true, kBf2,
       "BlueField-2 Arm side (switchdev): uplink p0 (E-Switch manager) and representors; no conntrack in the FDB"},
      {"cx6dx-switchdev-ct-fdb", true, true, "22.36.1010", true, kCx6Dx,
       "switchdev with a firmware that takes conntrack in the FDB (model option: keeps that path tested)"},
      {"cx6dx-legacy-fw22.31", false, false, "22.31.1014", false, kCx6Dx,
       "ConnectX-6 Dx in legacy mode on firmware without HWS: DV software steering, conntrack per port"},
      {"cx6dx-legacy-hws-off", false, false, "22.36.1010", false, kCx6Dx,
       "ConnectX-6 Dx in legacy mode whose firmware version has HWS but whose capabilities do not start it "
       "(hws/mlx5dr_context.c:103-141): rte_flow_configure fails; auto starts again with DV software steering"},
      {"bf2-switchdev-fw24.32", true, false, "24.32.1010", false, kBf2,
       "BlueField-2 Arm side (switchdev) on firmware without HWS: DV software steering in the FDB, no conntrack "
       "there"},
  };
  return p;
}

const NicProfile* find_nic_profile(const std::string& name) {
  for (const auto& p : nic_profiles())
    if (name == p.name) return &p;
  return nullptr;
}

bool Mlx5ModelConfig::apply_profile(const std::string& name) {
  const NicProfile* p = find_nic_profile(name);
  if (!p) return false;
  profile = name;
  esw = p->esw;
  ct_in_fdb = p->ct_in_fdb;
  fw = p->fw;
  hws_fw = p->hws;
  limits = p->limits;
  return true;
}

bool firmware_has_hws(const std::string& fw) {
  unsigned major = 0, minor = 0, sub = 0;
  char tail = 0;
  if (sscanf(fw.c_str(), "%u.%u.%u%c", &major, &minor, &sub, &tail) != 3) return false;
  return minor > 35 || (minor == 35 && sub >= 1012);
}

const std::vector<std::pair<const char*, const char*>>& Mlx5Model::rules() {
  static const std::vector<std::pair<const char*, const char*>> r = {
      {"no-validate", "mlx5_flow.c:3890-3902 calls fops->validate; the HWS ops table mlx5_flow_hw.c:8692-8719 has none"},
      {"info-get", "mlx5_flow_hw.c:5024-5046: queues and counters reported, max_nb_conn_tracks left 0"},
      {"configure-port-state", "lib/ethdev/rte_flow.c:1488-1499: configured and not started"},
      {"configure-queues", "mlx5_flow_hw.c:7055-7073: at least one queue, all the same size"},
      {"configure-busy", "mlx5_flow_hw.c:7127-7136: reconfigure with operations in flight is EBUSY"},
      {"configure-age-counters", "mlx5_flow_hw.c:7316-7326: aging objects need counters"},
      {"configure-ct-pool", "mlx5_flow_hw.c:7293-7306: a conntrack pool only when nb_conn_tracks > 0"},
      {"steering-mode",
       "mlx5_flow.c:8465-8470, 8501-8506 and 8535-8950: the template, queue and info calls need dv_flow_en=2 "
       "(ENOTSUP '... with incorrect steering mode'); mlx5_flow.c:7405-7411: rte_flow_create needs dv_flow_en!=2 "
       "('Flow non-Q creation not supported')"},
      {"hws-firmware",
       "hws/mlx5dr_context.c:103-141 turns HWS off with an INFO line on firmware without its caps (xx.35.1012+, "
       "mlx5 guide 'HWS requirements'); mlx5_flow_hw.c:7251-7257 then fails creating hw_drop and 7403-7405 "
       "returns 'fail to configure port'"},
      {"sws-started", "mlx5_flow.c:7413-7421: rte_flow_create on a port not started is ENODEV 'port not started'"},
      {"dv-attr",
       "mlx5_flow_dv.c:6801-6817 (flow_dv_validate_attributes): exactly one of ingress, egress, transfer; transfer "
       "needs the E-Switch (dv_esw_en, switchdev)"},
      {"dv-fate", "mlx5_flow_dv.c:8225-8247 (flow_dv_validate): an ingress or transfer rule needs a fate action; a transfer rule's is an E-Switch one (no QUEUE or RSS)"},
      {"dv-ct-action",
       "mlx5_flow_dv.c:3707-3738 (flow_dv_validate_action_aso_ct): CONNTRACK only in a non-root table, not after a "
       "fate, not with AGE or a meter (one ASO action per rule; mlx5.rst:579-583), not after an encap, only on an "
       "outer TCP pattern"},
      {"dv-ct-esw",
       "mlx5.rst:1548-1551: connection tracking with E-Switch is N/A in 22.11; linux/mlx5_os.c:1420-1432: DV's "
       "conntrack (ct_aso_en) needs the firmware's ct_offload and the meter color register REG_C_3; "
       "mlx5_flow_dv.c:13210-13213 'Connection is not supported' without it"},
      {"queue-wqes",
       "hws/mlx5dr_send.c:535-536 and mlx5dr_send.h:13 (22.11.11): each flow queue's send queue is its size "
       "(rounded up to a power of two) x MAX_WQES_PER_RULE 32 WQEBBs, which the firmware refuses beyond "
       "max_qp_wr (2^15 on a ConnectX-6 Dx / BlueField-2); mlx5_flow_hw.c:7227-7232: configure fails"},
      {"proxy-needs-esw",
       "linux/mlx5_os.c:186-187 (dv_esw_en only in switchdev mode) and mlx5_flow.c:11530-11543: no transfer proxy "
       "without an E-Switch, nor for a port that is neither its manager nor a representor"},
      {"ct-fdb",
       "mlx5_flow_hw.c:6602-6606 and 7302-7304: the E-Switch manager's conntrack pool takes the FDB flag; "
       "mlx5.rst:1548-1551 lists conntrack with E-Switch as N/A in 22.11 (profile option ct_in_fdb)"},
      {"ct-port-limit", "mlx5_flow_hw.c:7786-7792, mlx5_flow.h:76-92: conntrack objects only on port ids below 16"},
      {"ct-queue-depth",
       "mlx5.h:592 (22.11.11: MLX5_ASO_QUEUE_LOG_DESC 10), mlx5_flow_aso.c:1137-1141 and 1190-1196, "
       "mlx5_flow_hw.c:7805-7810 (create: EBUSY), 7748-7753 and 7704-7708 (update, query: EIO): 1024 conntrack "
       "WQEs per queue; a full queue fails the call at once"},
      {"counter-reuse",
       "mlx5_hws_cnt.h:384-388 and 436-452, mlx5_hws_cnt.c:63-92, mlx5_defs.h:188 (22.11.11): a freed counter "
       "waits for the counter service's next cycle (500 ms); none free but waiting is EAGAIN, none at all ENOENT"},
      {"hws-configured", "mlx5_flow_hw.c:56-66 (mlx5_hw_ctx_validate): template calls need rte_flow_configure"},
      {"pt-direction", "mlx5_flow_hw.c:4704-4736: direction attributes per port role"},
      {"pt-represented-port", "mlx5_flow_hw.c:4786-4795: no REPRESENTED_PORT item with ingress (repr_matching)"},
      {"pt-item-type", "mlx5_flow_hw.c:4738-4853: supported pattern items"},
      {"pt-item-mask", "hws/mlx5dr_definer.c:420,497,549-553,766,1015-1020: reserved/length/checksum masks are ENOTSUP"},
      {"at-transfer-proxy", "mlx5_flow_hw.c:3956-3962: transfer actions only on the proxy port"},
      {"at-mask-type", "mlx5_flow_hw.c:3968-3973: mask type must equal action type (INDIRECT excepted)"},
      {"at-indirect-mask", "mlx5_flow_hw.c:3675-3741: the INDIRECT mask carries the real action type"},
      {"at-action-type", "mlx5_flow_hw.c:3975-4108: actions supported in the template API"},
      {"at-count-pool", "mlx5_flow_hw.c:3593-3616: COUNT needs the counter pool, once per rule"},
      {"at-age-pool", "mlx5_flow_hw.c:3547-3571: AGE needs the aging pool, once per rule"},
      {"table-templates", "mlx5_flow_hw.c:3097-3113: the root table takes one pattern template"},
      {"table-attr", "mlx5_flow_hw.c:3136-3142: pattern template direction must match the table's"},
      {"table-group", "mlx5_flow_hw.c:3271-3297: transfer group N is table N+1 (fdb_def_rule)"},
      {"root-indirect", "mlx5_flow_hw.c:1389-1393: no indirect action in the root table"},
      {"root-count-age", "mlx5_flow_hw.c:1590-1622: no COUNT or AGE in the root table"},
      {"action-order", "hws/mlx5dr_action.c:11-73 checked by hws/mlx5dr_matcher.c:359-366 for non-root tables"},
      {"pt-vxlan-inner", "hws/mlx5dr_definer.c:1022-1026: a VXLAN item below another tunnel is ENOTSUP"},
      {"at-reformat", "mlx5_flow_hw.c:4236-4253 (one reformat offset per template; MLX5_ASSERT) and 1508-1535"},
      {"at-raw-encap", "mlx5_flow_hw.c:3758-3770: RAW_ENCAP needs its data and size"},
      {"at-modify-field",
       "mlx5_flow_hw.c:3419-3483: operation, fields and width as the mask fixes them; no immediate or pointer "
       "destination, no START, VLAN type or Geneve VNI; the driver reads both confs unchecked (3423-3426)"},
      {"at-arg-size", "mlx5_flow_hw.c:1703-1713 (bulk: log2 of the table's rules unless shared), 1720-1729 "
                      "(reformats shared), hws/mlx5dr_action.c:1174-1203, 1553-1558 (one command inline); "
                      "mlx5dr_pat_arg.c v22.11.4:7-21, 400-408, 422-435 (not in the reference tree)"},
      {"match-definer", "hws/mlx5dr_definer.c:1709-1843 (the selectors: 6 full dwords and 8 bytes, or a jumbo "
                        "definer), fields 408-1069 and 1366-1393, at table create (mlx5dr_matcher.c:450-452); "
                        "layout mlx5dr_definer.h v22.11.4:9-12, 432-475 (not in the reference tree)"},
      {"rule-port", "mlx5_flow_hw.c:2517-2600: a rule goes to the port whose HWS context owns the table"},
      {"rule-queue", "mlx5_flow_hw.c:2542-2545, 7938-7944: queue id and free job slot (ENOMEM when full)"},
      {"rule-table-full", "mlx5_flow_hw.c:2546-2548 with 3094/3102: nb_flows (power of two) rules per table"},
      {"rule-shape", "mlx5_flow_hw.c:2566-2583: a rule's items and actions follow its templates"},
      {"mark-range",
       "mlx5_flow.c:1896-1901 (the DV validator): MARK id below MLX5_FLOW_MARK_MAX (0xfffff0; the CQE flow tag). HWS "
       "does not validate MARK (mlx5_flow_hw.c:3986-3989): the model keeps the DV bound for both engines, as the tag "
       "the CQE carries has no more bits either way"},
      {"vport-domain", "mlx5_flow_hw.c:3484-3530: REPRESENTED_PORT only to ports of the same E-Switch"},
      {"ct-pool", "mlx5_flow_hw.c:7779-7785: conntrack objects need a CT pool (CT is not enabled)"},
      {"ct-profile", "mlx5_flow.c:2311-2326: state <= TIME_WAIT, last_index <= RST"},
      {"ct-pool-size",
       "mlx5_flow_hw.c:6570-6598 (DV: mlx5_flow_dv.c:13069-13075): the pool is one DevX object of "
       "align32pow2(nb_conn_tracks) contexts; a bulk the firmware does not allocate (HCA caps 2 "
       "log_conn_track_max_alloc, not read by 22.11) fails the create: ENODATA, and rte_flow_configure fails"},
      {"ct-pool-bound",
       "mlx5_flow_hw.c:6569-6578 and 7795-7800: the pool's DevX object holds align32pow2(nb_conn_tracks) contexts, "
       "but its indexed pool has no bound: 22.11 hands out objects past it (outside the object); the model refuses "
       "and counts them (ct_overruns)"},
      {"ct-owner", "mlx5_flow_hw.c:7727-7731: update only on the owning port"},
      {"ct-in-use", "mlx5_flow_hw.c:7653-7676: destroy frees the slot at once; rules still using it would share it"},
      {"ct-freed", "mlx5_flow_hw.c:416-418 and mlx5_flow_aso.c:1750-1752: a rule on a freed object is refused"},
      {"template-in-use", "mlx5_flow_hw.c:3377-3395, 4635-4648, 4990-5000: EBUSY while referenced"},
      {"start-order", "mlx5_trigger.c:1089-1131, 1160-1175: representors start after the proxy, HWS-configured"},
      {"stop-order", "mlx5_trigger.c:1391-1420, 1440-1456: the proxy stops after its representors"},
      {"no-rx-flows", "mlx5_flow_hw.c:9820-9825, mlx5_trigger.c:1112-1118: no rte_flow_configure, no Rx flows"},
      {"fdb-miss", "hws/mlx5dr_table.c:17-52,100-120: an FDB miss goes to the E-Switch manager"},
      {"nic-miss", "hws/mlx5dr_table.c:100-120: NIC Rx tables get no miss table: a non-root miss drops"},
      {"vxlan-flags", "mlx5_flow_dv.c:9391-9414 (flow_dv_translate_item_vxlan, which the HWS root matcher "
                      "uses, hws/mlx5dr_matcher.c:759 and mlx5_flow_dv.c:13390, and every DV table): the VNI is matched, the flags are not; HWS "
                      "non-root tables match them (hws/mlx5dr_definer.c:1050-1057)"},
      {"hws-geneve",
       "mlx5_flow_hw.c:4818-4851 (flow_hw_pattern_validate: GENEVE and GENEVE_OPT are not among the items it takes, "
       "'Unsupported item type') and hws/mlx5dr_definer.c:1603-1606 (no conversion for them): 22.11's template API "
       "matches no Geneve"},
      {"dv-geneve-caps",
       "mlx5_flow.c:3334-3338: a GENEVE item needs the firmware's tunnel_stateless_geneve_rx ('L3 Geneve is not "
       "enabled by device parameter and/or not configured in firmware')"},
      {"dv-geneve-item",
       "mlx5_flow.c:3339-3349 (one tunnel layer, after an outer UDP item), 3328-3332 with 1445-1451 (masks within "
       "Opt Len, O, VNI and protocol: 'mask enables non supported bits'), 3362-3371 (no version, C or reserved bits "
       "in the spec), 3326-3327 and 3372-3377 (Opt Len up to 14 words, 63 with geneve_max_opt_len); DV matches what "
       "the mask names (mlx5_flow_dv.c:9548-9567: the protocol forced from the inner items where left open)"},
      {"dv-geneve-opt",
       "mlx5_flow.c:3497-3501 (GENEVE_OPT needs the firmware's geneve_tlv_opt: 'Geneve TLV opt not supported') and "
       "mlx5_flow_dv.c:9600-9618 (one TLV option object per device, its class, type and length fixed by the first "
       "rule)"},
      {"dv-decap",
       "mlx5_flow_dv.c:7801-7819 and 3618-3665 (a RAW_DECAP not followed by a RAW_ENCAP is an L2 decap, made as "
       "L2_TUNNEL_TO_L2 at 14229-14240 and 4603-4620), 3559-3570 (one decap, not after an encap or a modify), "
       "3582-3586 (VXLAN_DECAP only with a VXLAN item)"},
      {"dv-raw-encap",
       "mlx5_flow_dv.c:3629-3632 (data and size), 3666-3676 ('small raw encap size': 34 bytes or fewer; one encap), "
       "4562-4565 (the data copied unchecked into MLX5_ENCAP_MAX_LEN = 132 bytes, mlx5_flow.h:537 and 546: the "
       "model refuses longer ones)"},
      {"query", "mlx5_flow_hw.c:8292-8405: COUNT and AGE queries only"},
      {"aged-flows", "mlx5_flow_hw.c:8613-8658: the aged-flow ring, each aged rule's AGE context once"},
      {"not-modelled", "model: accepted by the driver but not interpreted by this model"},
  };
  return r;
}

NicStats& NicStats::operator+=(const NicStats& o) {
  rx += o.rx;
  forwarded += o.forwarded;
  dropped += o.dropped;
  to_software += o.to_software;
  ct_invalid += o.ct_invalid;
  ct_changed += o.ct_changed;
  no_rx_flows += o.no_rx_flows;
  miss_dropped += o.miss_dropped;
  rewritten += o.rewritten;
  rss_off_port += o.rss_off_port;
  return *this;
}

}  // namespace dp
