// Flow rules in the style of OpenFlow tables: priority, match, actions.
//
// Match grammar (comma separated, every field optional):
//   in_port=NAME  eth_type=arp|ipv4|ipv6|nd|0xNNNN  vlan=N
//   ip_src=A.B.C.D/N  ip_dst=...  ipv6_src=X::/N  ipv6_dst=...
//   ip_proto=tcp|udp|icmp|icmpv6|N  tp_src=N|N-M  tp_dst=N|N-M
//   tcp_flags=+syn-ack...   ct_state=+trk+new-est... (trk new est rel rpl inv)
//   ct_zone=N  tun_id=N (the VNI a packet was decapsulated with; 0: none)
// `eth_type=nd` names IPv6 neighbour discovery/MLD, which passes through the
// tables like ARP and never reaches the tracker.
//
// Actions (comma separated, run in order; exactly one terminal action last):
//   ct(commit,zone=N,table=T)  ct(table=T)  ct(commit)   -- table=T is terminal
//   ct(commit,nat(src=A[-B][:P[-Q]]),...)  ct(commit,nat(dst=...),...)
//     (IPv6: nat(src=[X::1]-[X::2]:P-Q)); `nat` alone is accepted and does
//     nothing more: every ct() in a translated connection's zone applies
//     its translation (see README, NAT)
//   output:PORT  drop  goto_table:T                      -- terminal
//   count  set_mark:N  encap(vxlan,vni=N,remote=A.B.C.D)   -- before an output:
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/match.h"
#include "sdn/status.h"

namespace dp {

using sdn::Result;
using sdn::Status;

inline constexpr uint32_t kMaxRuleId = 0x7FFFFFFF;

struct Rule {
  uint32_t id = 0;
  uint16_t table = 0;
  int32_t priority = 0;
  Match match;
  std::vector<Action> actions;
  std::string match_text, actions_text;  // as written, for listings
  bool offload = true;                   // `offload: false` keeps its connections in software
  int line = 0;                          // in the config file; 0 when added at runtime
};

// Resolves port names to indices (the order of `ports:` in the config).
struct PortNames {
  std::vector<std::string> names;
  int find(std::string_view n) const;
};

Result<Match> parse_match(std::string_view text, const PortNames& ports);
Result<std::vector<Action>> parse_actions(std::string_view text, const PortNames& ports);
// Checks one rule in its table: terminal action last, forward-only tables.
Status check_rule(const Rule& r);

// Checks a whole rule set: every goto_table / ct(table=N) reaches a table
// that has rules; NAT ranges of one kind are the same range or apart (two
// pools sharing addresses would hand out the same tuples). On error *bad is
// the offending rule's index.
Status check_rule_set(const std::vector<Rule>& rules, size_t* bad = nullptr);

// What makes a rule the same rule across swaps (its counters carry over
// only to an identical rule with the same id): table, priority, match,
// actions, offload, as written.
std::string rule_fingerprint(const Rule& r);

// Rewrites port indices (in_port, output) through map[old] = new.
void remap_ports(std::vector<Rule>& rules, const std::vector<int>& map);

std::string ct_state_str(uint8_t bits);  // "+trk+est+rpl"
std::string nat_str(const ctrack::NatRange& r);  // "src=203.0.113.1-203.0.113.4:1024-65535"
bool uses_nat(const std::vector<Rule>& rules);

}  // namespace dp
