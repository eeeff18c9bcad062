// Translation of rules and connections into rte_flow rules (attr, pattern,
// actions), shared by the rte_flow provider, which hands them to the NIC, and
// the emulated NIC, which interprets them. Pure functions: the golden tests
// check them field by field without a device.
//
// Hardware layout (transfer mode, the BlueField / switchdev eSwitch):
//   group 0        the table-0 rules that can be expressed, in priority order;
//                  a rule whose action is ct() becomes JUMP group N
//   group N        one rule per connection direction: exact 5-tuple from its
//                  ingress port -> COUNT + AGE + (TCP) INDIRECT(conntrack)
//                  + JUMP to the verdict group of its (in, out) port pair;
//                  (UDP) output directly. Lowest priority: to software.
//   group V(i,o)   CONNTRACK item VALID -> COUNT + output to o;
//                  anything else (INVALID, CHANGED, BAD, DISABLED) -> software,
//                  so ctrack still sees SYN, FIN, RST and rejected segments.
// Without transfer (one NIC port, no eSwitch) "output" is MARK + RSS to the
// software queues: the NIC classifies and checks the connection, software
// forwards by mark without its own lookup (HwMarkTable).
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
  size_t nports() const { return port_ids.size(); }
  uint32_t verdict_group(size_t in, size_t out) const {
    return ct_group + 1 + static_cast<uint32_t>(in * nports() + out);
  }
};

// Marks without transfer: kTag | config port index to forward to.
inline constexpr uint32_t kMarkTag = HwMarkTable::kTag;

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

  // Lookups for tests and the emulated NIC.
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
};

// The conntrack context for ctrack's view of an established TCP connection,
// original direction. peer_port: the DPDK port of the reply direction.
rte_flow_action_conntrack ct_profile(const ctrack::Event& e, uint16_t peer_port);
// The update that turns the context to the reply direction.
rte_flow_modify_conntrack ct_reply_update(const rte_flow_action_conntrack& orig);

// The group-N rule for one direction. `ct` is the indirect conntrack handle
// (TCP; ignored for UDP); `age_ctx` comes back from the NIC's aged-flow list.
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
// kMarkTag | 0x40000000 | rule id.
std::vector<RuleFlows> translate_rules(const Layout& l, const std::vector<Rule>& rules);
inline constexpr uint32_t kRuleMarkTag = HwMarkTable::kTag | HwMarkTable::kRule;

// Group N's catch-all and the verdict groups (created once at start).
std::vector<Flow> base_flows(const Layout& l);

// The rule as dpdk-testpmd commands (`flow create ...`). `indirect_id` names
// the conntrack indirect action it uses, if any.
std::string testpmd_flow(const Flow& f, int indirect_id = -1);
// `set conntrack ...` + `flow indirect_action ... create` for a context.
std::string testpmd_ct(uint16_t port_id, int indirect_id, const rte_flow_action_conntrack& ct, bool transfer);

// Two patterns may match one packet (false only when provably disjoint).
bool may_overlap(const Match& a, const Match& b);

}  // namespace dp::hw
