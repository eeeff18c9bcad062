// Translation of rules and connections into rte_flow rules (attr, pattern,
// actions) for the rte_flow provider, which hands them to the NIC (or to the
// mlx5 model behind the same seam). Pure functions: the golden tests check
// them field by field without a device.
//
// Hardware layout (transfer, the BlueField / switchdev eSwitch; user group N
// is HWS table N+1, so group 0 is not the root table):
//   group 0        the table-0 rules that can be expressed, in priority order:
//                  COUNT + output or DROP (full), COUNT + JUMP group N for a
//                  ct() rule; rules that would need a mark for software stay
//                  in software (the FDB has no TAG action)
//   group N        one rule per connection direction: exact 5-tuple from its
//                  ingress port -> COUNT + AGE + (TCP) INDIRECT(conntrack)
//                  + JUMP to the verdict group of its (in, out) port pair;
//                  (UDP) output directly
//   group V(i,o)   CONNTRACK item VALID -> COUNT + output to o
// A miss anywhere in the FDB goes to software on the port the packet came
// in on (the E-Switch manager's default miss); that is how INVALID, CHANGED
// (SYN, FIN, RST), BAD and DISABLED packets reach ctrack.
// Without transfer (NIC Rx on each port; group 0 is the root table, no
// COUNT/AGE/indirect there) "output" is MARK(port) + RSS to the software
// queues, the tag first; non-root groups end in a catch-all to software
// (a NIC Rx miss drops); TCP is offloaded only when both directions use one
// port, since a CONNTRACK object serves only its own port's rules.
#pragma once

#include <rte_flow.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ctrack/tracker.h"
#include "dataplane/pipeline.h"
#include "dataplane/rules.h"

namespace dp::hw {

struct Layout {
  bool transfer = true;
  std::vector<uint16_t> port_ids;  // DPDK port id of each config port (index = config order)
  uint16_t proxy_port = 0;         // transfer mode: the port that owns eSwitch rules (rte_flow_pick_transfer_proxy)
  uint16_t nb_queues = 1;          // software rx queues per port (RSS target without transfer)
  uint32_t ct_group = 1;           // N
  uint32_t age_s = 10;
  bool aso = true;                 // conntrack objects (the verdict groups exist); false: the flows strategy
  // Connection rules carry AGE (HWS's aged-flow ring). DV software steering:
  // none (a CONNTRACK rule cannot have it, mlx5_flow_dv.c:3724-3728, and DV
  // ages with the provider's counter folds instead).
  bool age_action = true;
  // overlay.vxlan: VXLAN frames to this host's VTEP arrive on `underlay`.
  bool vxlan = false;
  size_t underlay = 0;
  uint8_t vtep[4] = {};
  uint16_t vxlan_port = 4789;
  // A VXLAN item's flags (the I flag) are matched in HWS's non-root tables
  // only; the root table and DV software steering match the VNI alone
  // (mlx5_flow_dv.c:9391-9414). False: DV.
  bool vxlan_flags = true;
  // overlay.geneve where the NIC matches and decapsulates Geneve (DV
  // software steering: 22.11's HWS has no GENEVE item, and Geneve is then
  // in soft_decap): frames to `geneve_vtep` on `geneve_underlay`.
  bool geneve = false;
  size_t geneve_underlay = 0;
  uint8_t geneve_vtep[4] = {};
  uint16_t geneve_port = 6081;
  // Tunnels only software decapsulates (a module's kConnDecapRefuse): their
  // underlay port and why. A rule that may see that port, a tun_id rule and
  // a connection arriving there stay in software.
  struct SoftDecap {
    size_t port;
    const char* why;
  };
  std::vector<SoftDecap> soft_decap;
  size_t nports() const { return port_ids.size(); }
  uint32_t verdict_group(size_t in, size_t out) const {
    return ct_group + 1 + static_cast<uint32_t>(in * nports() + out);
  }
  // NIC Rx: the group that sends each packet type to the software queues
  // with its own RSS types (after the verdict groups).
  uint32_t split_group() const { return verdict_group(nports(), 0); }
};

// Marks without transfer: kTag | config port index to forward to.
inline constexpr uint32_t kMarkTag = HwMarkTable::kTag;
// The largest MARK id mlx5 takes (MLX5_FLOW_MARK_MAX): the CQE's flow tag.
inline constexpr uint32_t kMarkMax = 0xfffff0;
// Rule ids a mark can carry: kRuleMarkTag | id stays below kMarkMax.
inline constexpr uint32_t kMaxMarkedRule = kMarkMax - (HwMarkTable::kTag | HwMarkTable::kRule);

// One rte_flow rule. Owns everything its arrays point at; move-only so the
// pointers stay valid.
class Flow {
 public:
  Flow() = default;
  Flow(Flow&&) = default;
  Flow& operator=(Flow&&) = default;
  Flow(const Flow&) = delete;
  Flow& operator=(const Flow&) = delete;

  uint16_t port_id = 0;  // the port the rule is created on (the transfer proxy in transfer mode)
  rte_flow_attr attr{};
  std::vector<rte_flow_item> pattern;    // END-terminated once finish() ran
  std::vector<rte_flow_action> actions;  // END-terminated once finish() ran
  std::string what;                      // for logs and listings

  template <typename T>
  void item(rte_flow_item_type t, const T& spec, const T& mask) {
    pattern.push_back(rte_flow_item{t, keep(spec), nullptr, keep(mask)});
  }
  void item(rte_flow_item_type t) { pattern.push_back(rte_flow_item{t, nullptr, nullptr, nullptr}); }
  template <typename T>
  void action(rte_flow_action_type t, const T& conf) {
    actions.push_back(rte_flow_action{t, keep(conf)});
  }
  void action(rte_flow_action_type t) { actions.push_back(rte_flow_action{t, nullptr}); }
  void finish() {
    item(RTE_FLOW_ITEM_TYPE_END);
    action(RTE_FLOW_ACTION_TYPE_END);
  }
  // Copies v into storage that lives (at a stable address) as long as the flow.
  template <typename T>
  const T* keep(const T& v) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kBlock);
    size_t at = (used_ + alignof(T) - 1) & ~(alignof(T) - 1);
    if (store_.empty() || at + sizeof(T) > kBlock) {
      store_.push_back(std::unique_ptr<std::byte[]>(new std::byte[kBlock]));  // not zeroed
      at = 0;
    }
    used_ = at + sizeof(T);
    return new (store_.back().get() + at) T(v);
  }

  // Lookups for tests.
  const rte_flow_item* find_item(rte_flow_item_type t) const;
  const rte_flow_action* find_action(rte_flow_action_type t) const;

 private:
  static constexpr size_t kBlock = 512;  // one allocation holds a typical flow's specs, masks and confs
  std::vector<std::unique_ptr<std::byte[]>> store_;
  size_t used_ = 0;
};

// Typed views of an item's spec/mask and an action's conf.
template <typename T>
const T& spec_of(const rte_flow_item& i) {
  return *static_cast<const T*>(i.spec);
}
template <typename T>
const T& mask_of(const rte_flow_item& i) {
  return *static_cast<const T*>(i.mask);
}
template <typename T>
const T& conf_of(const rte_flow_action& a) {
  return *static_cast<const T*>(a.conf);
}

// A connection as the provider offloads it.
struct Conn {
  ctrack::Key orig;      // original-direction tuple
  uint8_t in_port[2];    // config port each direction arrives on
  int16_t out_port[2];   // config port each direction leaves by
  // TCP tracked by a conntrack object (aso); else (the flows strategy) each
  // direction's exact rule matches only segments without SYN, FIN and RST,
  // which miss to software so the tracker sees every state change.
  bool aso = true;
  // What the NIC does to each direction's headers, in its order: decap (it
  // arrives in VNI `vni` of VXLAN, or of Geneve without options where
  // `geneve`, to the layout's VTEP), the
  // translation (it arrives as `wire` and leaves as `out`), encap (`hdr`:
  // the outer headers, lengths and IPv4 checksum left to the NIC).
  struct Dir {
    uint32_t vni = 0;  // 0: arrives untunnelled
    bool geneve = false;  // the tunnel it arrives in is Geneve (else VXLAN)
    TunnelKind tunnel() const { return geneve ? TunnelKind::kGeneve : TunnelKind::kVxlan; }
    bool nat = false;
    ctrack::Key wire{}, out{};
    bool encap = false;
    uint8_t hdr[kOuterMax] = {};
    uint16_t hdr_len = 0;
  };
  Dir dir[2];
  bool rewrites() const {
    return dir[0].vni || dir[1].vni || dir[0].nat || dir[1].nat || dir[0].encap || dir[1].encap;
  }
};


// The conntrack context for ctrack's view of an established TCP connection,
// original direction. peer_port: the DPDK port the reply direction's rule is
// made on (the transfer proxy on an E-Switch).
rte_flow_action_conntrack ct_profile(const ctrack::Event& e, uint16_t peer_port);
// The update that turns the context to the reply direction.
rte_flow_modify_conntrack ct_reply_update(const rte_flow_action_conntrack& orig);
// A context that accepts whatever either side accepts: the NIC's (queried)
// and software's windows, each field at its furthest; the rest from software.
rte_flow_action_conntrack ct_merge(const rte_flow_action_conntrack& nic, const rte_flow_action_conntrack& sw);

// The group-N rule for one direction. `ct` is the indirect conntrack handle
// (TCP with c.aso; ignored otherwise); `age_ctx` comes back from the NIC's
// aged-flow list.
Flow conn_flow(const Layout& l, const Conn& c, int dir, rte_flow_action_handle* ct, void* age_ctx);

// How far a table-0 rule goes into hardware.
enum class Tier : uint8_t {
  kFull,      // matched and executed by the NIC (output / drop)
  kJumpCt,    // matched by the NIC, continues in the connection group
  kMark,      // matched by the NIC, marked, executed by software without its lookup
  kSoftware,  // not in hardware
};
const char* tier_name(Tier t);

struct RuleFlows {
  uint32_t rule_id = 0;
  Tier tier = Tier::kSoftware;
  std::string why;          // kSoftware: the field or action hardware cannot do
  std::vector<Flow> flows;  // one per ingress port
};

// Table-0 rules in priority order. A rule is only offloaded when no
// higher-priority rule that stays in software could match the same packets
// (otherwise the NIC would take packets software must see first). Marks:
// kMarkTag | kRule | rule id.
std::vector<RuleFlows> translate_rules(const Layout& l, const std::vector<Rule>& rules);
inline constexpr uint32_t kRuleMarkTag = HwMarkTable::kTag | HwMarkTable::kRule;
static_assert(kRuleMarkTag < kMarkMax && kMaxMarkedRule < HwMarkTable::kRule);

// Group N's catch-all and the verdict groups (created once at start).
std::vector<Flow> base_flows(const Layout& l);

// dpdk-testpmd commands for hardware steering (dv_flow_en=2): the template
// and queue forms the provider's calls correspond to. A rule's items with
// their values (`spec`) or, in a pattern template, their masks.
std::string testpmd_pattern(const Flow& f, bool tmpl);
// Actions with their values; `mask`: the actions template's mask list (the
// indirect action by its real type, every value left to the rule).
std::string testpmd_actions(const Flow& f, int indirect_id, bool mask);
// Pattern template, actions template and template table `id` for f's shape.
std::string testpmd_templates(const Flow& f, int id, uint32_t rules, int indirect_id);
// `set raw_encap 0 ...` with f's RAW_ENCAP headers (empty without one):
// testpmd's raw_encap action takes its data from that slot.
std::string testpmd_raw_encap(const Flow& f);
// '#' lines for what f does that testpmd 22.11's syntax cannot say (a
// GENEVE item's O bit, a Geneve header's C bit); empty when nothing.
std::string testpmd_notes(const Flow& f);
// `flow queue ... create` of f in table `table_id`.
std::string testpmd_queue_create(const Flow& f, int table_id, int indirect_id);
// `set conntrack com|orig|rply ...` for a context.
// The same rule for DV software steering (dv_flow_en=1): synchronous
// `flow create` (testpmd validates nothing itself: the driver does).
std::string testpmd_create(const Flow& f, int indirect_id);
std::string testpmd_ct(const rte_flow_action_conntrack& ct);

// Two patterns may match one packet (false only when provably disjoint).
bool may_overlap(const Match& a, const Match& b);

}  // namespace dp::hw
