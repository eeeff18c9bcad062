// The provider's rte_flow rules as dpdk-testpmd 22.11 commands (hardware
// steering: templates, queues, conntrack objects), for `dataplane-ctl
// offload testpmd`.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rte_ethdev.h>

#include <cstring>
#include <utility>
#include <sstream>

#include "dataplane/hwflow.h"

namespace dp::hw {

namespace {

std::string ip4(uint32_t be) {
  char b[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &be, b, sizeof b);
  return b;
}
std::string ip6(const uint8_t* a) {
  char b[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, a, b, sizeof b);
  return b;
}
std::string hex(uint32_t v) {
  char b[16];
  snprintf(b, sizeof b, "0x%x", v);
  return b;
}

// A field: in a pattern template its mask, in a rule its value.
void field(std::ostringstream& o, bool tmpl, const char* name, const std::string& spec, const std::string& mask) {
  o << " " << name << (tmpl ? " mask " : " spec ") << (tmpl ? mask : spec);
}

}  // namespace

std::string testpmd_pattern(const Flow& f, bool tmpl) {
  std::ostringstream o;
  for (const auto& it : f.pattern) {
    switch (it.type) {
      case RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT:
        o << " represented_port";
        field(o, tmpl, "ethdev_port_id", std::to_string(spec_of<rte_flow_item_ethdev>(it).port_id),
              std::to_string(mask_of<rte_flow_item_ethdev>(it).port_id));
        o << " /";
        break;
      case RTE_FLOW_ITEM_TYPE_ETH:
        o << " eth";
        if (it.mask && mask_of<rte_flow_item_eth>(it).hdr.ether_type)
          field(o, tmpl, "type", hex(ntohs(spec_of<rte_flow_item_eth>(it).hdr.ether_type)),
                hex(ntohs(mask_of<rte_flow_item_eth>(it).hdr.ether_type)));
        if (it.mask && mask_of<rte_flow_item_eth>(it).has_vlan)
          field(o, tmpl, "has_vlan", std::to_string(spec_of<rte_flow_item_eth>(it).has_vlan), "1");
        o << " /";
        break;
      case RTE_FLOW_ITEM_TYPE_VLAN: {
        const auto& sp = spec_of<rte_flow_item_vlan>(it).hdr;
        const auto& mk = mask_of<rte_flow_item_vlan>(it).hdr;
        o << " vlan";
        if (mk.vlan_tci) field(o, tmpl, "vid", std::to_string(ntohs(sp.vlan_tci) & 0xFFF), hex(ntohs(mk.vlan_tci)));
        if (mk.eth_proto) field(o, tmpl, "inner_type", hex(ntohs(sp.eth_proto)), hex(ntohs(mk.eth_proto)));
        o << " /";
        break;
      }
      case RTE_FLOW_ITEM_TYPE_IPV4: {
        const auto& sp = spec_of<rte_flow_item_ipv4>(it).hdr;
        const auto& mk = mask_of<rte_flow_item_ipv4>(it).hdr;
        o << " ipv4";
        if (mk.src_addr) field(o, tmpl, "src", ip4(sp.src_addr), ip4(mk.src_addr));
        if (mk.dst_addr) field(o, tmpl, "dst", ip4(sp.dst_addr), ip4(mk.dst_addr));
        if (mk.next_proto_id) field(o, tmpl, "proto", std::to_string(sp.next_proto_id), hex(mk.next_proto_id));
        o << " /";
        break;
      }
      case RTE_FLOW_ITEM_TYPE_IPV6: {
        const auto& sp = spec_of<rte_flow_item_ipv6>(it).hdr;
        const auto& mk = mask_of<rte_flow_item_ipv6>(it).hdr;
        static const uint8_t zero[16] = {};
        o << " ipv6";
        if (memcmp(mk.src_addr, zero, 16)) field(o, tmpl, "src", ip6(sp.src_addr), ip6(mk.src_addr));
        if (memcmp(mk.dst_addr, zero, 16)) field(o, tmpl, "dst", ip6(sp.dst_addr), ip6(mk.dst_addr));
        if (mk.proto) field(o, tmpl, "proto", std::to_string(sp.proto), hex(mk.proto));
        o << " /";
        break;
      }
      case RTE_FLOW_ITEM_TYPE_TCP: {
        const auto& sp = spec_of<rte_flow_item_tcp>(it).hdr;
        const auto& mk = mask_of<rte_flow_item_tcp>(it).hdr;
        o << " tcp";
        if (mk.src_port) field(o, tmpl, "src", std::to_string(ntohs(sp.src_port)), hex(ntohs(mk.src_port)));
        if (mk.dst_port) field(o, tmpl, "dst", std::to_string(ntohs(sp.dst_port)), hex(ntohs(mk.dst_port)));
        if (mk.tcp_flags) field(o, tmpl, "flags", hex(sp.tcp_flags), hex(mk.tcp_flags));
        o << " /";
        break;
      }
      case RTE_FLOW_ITEM_TYPE_UDP: {
        const auto& sp = spec_of<rte_flow_item_udp>(it).hdr;
        const auto& mk = mask_of<rte_flow_item_udp>(it).hdr;
        o << " udp";
        if (mk.src_port) field(o, tmpl, "src", std::to_string(ntohs(sp.src_port)), hex(ntohs(mk.src_port)));
        if (mk.dst_port) field(o, tmpl, "dst", std::to_string(ntohs(sp.dst_port)), hex(ntohs(mk.dst_port)));
        o << " /";
        break;
      }
      case RTE_FLOW_ITEM_TYPE_VXLAN: {
        const auto& sp = spec_of<rte_flow_item_vxlan>(it);
        const auto& mk = mask_of<rte_flow_item_vxlan>(it);
        o << " vxlan";
        auto vni = [](const uint8_t* v) { return static_cast<uint32_t>(v[0] << 16 | v[1] << 8 | v[2]); };
        if (vni(mk.vni)) field(o, tmpl, "vni", std::to_string(vni(sp.vni)), hex(vni(mk.vni)));
        o << " /";
        break;
      }
      case RTE_FLOW_ITEM_TYPE_GENEVE: {
        // cmdline_flow.c:4158-4187: vni, protocol and optlen (Opt Len's bits
        // alone: the O bit has no token; testpmd_notes says so).
        const auto& sp = spec_of<rte_flow_item_geneve>(it);
        const auto& mk = mask_of<rte_flow_item_geneve>(it);
        o << " geneve";
        auto vni = [](const uint8_t* v) { return static_cast<uint32_t>(v[0] << 16 | v[1] << 8 | v[2]); };
        if (vni(mk.vni)) field(o, tmpl, "vni", std::to_string(vni(sp.vni)), hex(vni(mk.vni)));
        if (mk.protocol) field(o, tmpl, "protocol", hex(ntohs(sp.protocol)), hex(ntohs(mk.protocol)));
        if (const uint16_t ol = ntohs(mk.ver_opt_len_o_c_rsvd0) >> 8 & 0x3F)
          field(o, tmpl, "optlen", std::to_string(ntohs(sp.ver_opt_len_o_c_rsvd0) >> 8 & 0x3F), hex(ol));
        o << " /";
        break;
      }
      case RTE_FLOW_ITEM_TYPE_CONNTRACK:
        o << " conntrack" << (tmpl ? " mask " : " spec ")
          << (tmpl ? mask_of<rte_flow_item_conntrack>(it).flags : spec_of<rte_flow_item_conntrack>(it).flags) << " /";
        break;
      case RTE_FLOW_ITEM_TYPE_END:
        o << " end";
        break;
      default:
        o << " ?item" << it.type << " /";
    }
  }
  return o.str();
}

namespace {
const char* modify_field_name(rte_flow_field_id f) {
  switch (f) {  // app/test-pmd/cmdline_flow.c:799-810
    case RTE_FLOW_FIELD_IPV4_SRC: return "ipv4_src";
    case RTE_FLOW_FIELD_IPV4_DST: return "ipv4_dst";
    case RTE_FLOW_FIELD_TCP_PORT_SRC: return "tcp_port_src";
    case RTE_FLOW_FIELD_TCP_PORT_DST: return "tcp_port_dst";
    case RTE_FLOW_FIELD_UDP_PORT_SRC: return "udp_port_src";
    case RTE_FLOW_FIELD_UDP_PORT_DST: return "udp_port_dst";
    default: return "?";
  }
}
std::string hex_bytes(const uint8_t* v, uint32_t n) {
  std::string s = "0x";
  for (uint32_t i = 0; i < n; i++) {
    char h[3];
    snprintf(h, sizeof h, "%02x", v[i]);
    s += h;
  }
  return s;
}
}  // namespace

namespace {
// `set raw_encap`'s items for the tunnel header at h (the outer UDP's
// destination port says which): VXLAN, or Geneve with each option as a
// geneve-opt item (cmdline_flow.c:11186-11199 writes their headers and
// data in order). testpmd has no token for Geneve's C bit.
std::string raw_encap_tunnel(const uint8_t* h, size_t size) {
  std::ostringstream o;
  if ((h[36] << 8 | h[37]) != 6081) {
    o << " / vxlan vni is " << (h[46] << 16 | h[47] << 8 | h[48]);
    return o.str();
  }
  const uint8_t* g = h + 42;
  o << " / geneve vni is " << (g[4] << 16 | g[5] << 8 | g[6]) << " protocol is " << hex(g[2] << 8 | g[3])
    << " optlen is " << (g[0] & 0x3F);
  for (size_t at = 50; at + 4 <= size;) {
    const uint32_t len = h[at + 3] & 0x1F;
    o << " / geneve-opt class is " << (h[at] << 8 | h[at + 1]) << " type is " << int(h[at + 2]) << " length is "
      << len;
    if (len) o << " data is " << hex_bytes(h + at + 4, 4 * len);
    at += 4 + 4 * len;
  }
  return o.str();
}
}  // namespace

std::string testpmd_notes(const Flow& f) {
  std::string n;
  if (f.find_item(RTE_FLOW_ITEM_TYPE_GENEVE))
    n += "# the rule's GENEVE item also matches O = 0 (its mask 0x3f80), which testpmd 22.11 has no token for\n";
  if (const rte_flow_action* a = f.find_action(RTE_FLOW_ACTION_TYPE_RAW_ENCAP)) {
    const auto& c = conf_of<rte_flow_action_raw_encap>(*a);
    if (c.size > 43 && (c.data[36] << 8 | c.data[37]) == 6081 && (c.data[43] & 0x40))
      n += "# the rule's Geneve header has the C bit set, which testpmd 22.11's set raw_encap cannot write\n";
  }
  return n;
}

std::string testpmd_raw_encap(const Flow& f) {
  const rte_flow_action* a = f.find_action(RTE_FLOW_ACTION_TYPE_RAW_ENCAP);
  if (!a) return "";
  const uint8_t* h = conf_of<rte_flow_action_raw_encap>(*a).data;
  const size_t size = conf_of<rte_flow_action_raw_encap>(*a).size;
  auto mac = [](const uint8_t* m) {
    char b[18];
    snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return std::string(b);
  };
  auto ip = [](const uint8_t* p) {
    return std::to_string(p[0]) + "." + std::to_string(p[1]) + "." + std::to_string(p[2]) + "." + std::to_string(p[3]);
  };
  std::ostringstream o;
  o << "set raw_encap 0 eth src is " << mac(h + 6) << " dst is " << mac(h) << " type is 0x0800 / ipv4 src is "
    << ip(h + 26) << " dst is " << ip(h + 30) << " ttl is " << int(h[22]) << " fragment_offset is "
    << ((h[20] << 8 | h[21]) & 0xFFFF) << " proto is 17 / udp src is " << (h[34] << 8 | h[35]) << " dst is "
    << (h[36] << 8 | h[37]) << raw_encap_tunnel(h, size) << " / end_set\n";
  return o.str();
}

std::string testpmd_actions(const Flow& f, int indirect_id, bool mask) {
  std::ostringstream o;
  for (const auto& a : f.actions) {
    switch (a.type) {
      case RTE_FLOW_ACTION_TYPE_COUNT: o << " count /"; break;
      case RTE_FLOW_ACTION_TYPE_DROP: o << " drop /"; break;
      case RTE_FLOW_ACTION_TYPE_AGE:
        o << " age timeout " << (mask ? 0u : static_cast<unsigned>(conf_of<rte_flow_action_age>(a).timeout)) << " /";
        break;
      case RTE_FLOW_ACTION_TYPE_INDIRECT:
        // In an actions template's mask the indirect action names its real type.
        if (mask) o << " conntrack /";
        else o << " indirect " << indirect_id << " /";
        break;
      case RTE_FLOW_ACTION_TYPE_JUMP:
        o << " jump group " << (mask ? 0u : conf_of<rte_flow_action_jump>(a).group) << " /";
        break;
      case RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT:
        o << " represented_port ethdev_port_id " << (mask ? 0u : conf_of<rte_flow_action_ethdev>(a).port_id) << " /";
        break;
      case RTE_FLOW_ACTION_TYPE_MARK:
        o << " mark id " << (mask ? 0u : conf_of<rte_flow_action_mark>(a).id) << " /";
        break;
      case RTE_FLOW_ACTION_TYPE_RSS: {
        const auto& r = conf_of<rte_flow_action_rss>(a);
        o << " rss queues";
        for (uint32_t q = 0; q < r.queue_num; q++) o << " " << r.queue[q];
        o << " end types";
        // testpmd's names (app/test-pmd/config.c rss_type_table), one per bit hwflow uses.
        static constexpr std::pair<uint64_t, const char*> kNames[] = {
            {RTE_ETH_RSS_IP, "ip"},
            {RTE_ETH_RSS_TCP, "tcp"},
            {RTE_ETH_RSS_UDP, "udp"},
            {RTE_ETH_RSS_IPV4, "ipv4"},
            {RTE_ETH_RSS_IPV6, "ipv6"},
            {RTE_ETH_RSS_NONFRAG_IPV4_TCP, "ipv4-tcp"},
            {RTE_ETH_RSS_NONFRAG_IPV4_UDP, "ipv4-udp"},
            {RTE_ETH_RSS_NONFRAG_IPV6_TCP, "ipv6-tcp"},
            {RTE_ETH_RSS_NONFRAG_IPV6_UDP, "ipv6-udp"}};
        uint64_t left = r.types;
        for (const auto& [bits, name] : kNames) {
          if ((left & bits) != bits) continue;
          o << " " << name;
          left &= ~bits;
        }
        if (left) o << " ?0x" << std::hex << left << std::dec;
        o << " end key ";
        for (uint32_t k = 0; k < r.key_len; k++) {
          char h[3];
          snprintf(h, sizeof h, "%02x", r.key[k]);
          o << h;
        }
        o << " /";
        break;
      }
      case RTE_FLOW_ACTION_TYPE_VXLAN_DECAP: o << " vxlan_decap /"; break;
      case RTE_FLOW_ACTION_TYPE_RAW_DECAP: o << " raw_decap /"; break;  // no data: raw_decap_confs[0] is empty
      case RTE_FLOW_ACTION_TYPE_RAW_ENCAP: o << " raw_encap index 0 /"; break;  // after `set raw_encap 0` (testpmd_raw_encap)
      case RTE_FLOW_ACTION_TYPE_MODIFY_FIELD: {
        const auto& x = conf_of<rte_flow_action_modify_field>(a);
        o << " modify_field op set dst_type " << modify_field_name(x.dst.field);
        if (mask) o << " dst_level 0xffffffff dst_offset 0xffffffff src_type value width 0xffffffff /";
        else o << " src_type value src_value " << hex_bytes(x.src.value, x.width / 8) << " width " << x.width << " /";
        break;
      }
      case RTE_FLOW_ACTION_TYPE_END: o << " end"; break;
      default: o << " ?action" << a.type << " /";
    }
  }
  return o.str();
}

std::string testpmd_templates(const Flow& f, int id, uint32_t rules, int indirect_id) {
  std::ostringstream o;
  o << testpmd_notes(f) << testpmd_raw_encap(f);  // testpmd's template takes the data it names (shared by its rules)
  const char* dir = f.attr.transfer ? " transfer" : " ingress";
  o << "flow pattern_template " << f.port_id << " create pattern_template_id " << id << " relaxed no" << dir
    << " template" << testpmd_pattern(f, true) << "\n";
  // testpmd 22.11 takes the direction only before actions_template_id.
  o << "flow actions_template " << f.port_id << " create" << dir << " actions_template_id " << id << " template"
    << testpmd_actions(f, indirect_id, false) << " mask" << testpmd_actions(f, indirect_id, true) << "\n";
  o << "flow template_table " << f.port_id << " create table_id " << id << " group " << f.attr.group << " priority "
    << f.attr.priority << dir << " rules_number " << rules << " pattern_template " << id << " actions_template " << id
    << "\n";
  return o.str();
}

std::string testpmd_queue_create(const Flow& f, int table_id, int indirect_id) {
  std::ostringstream o;
  o << testpmd_notes(f) << testpmd_raw_encap(f) << "flow queue " << f.port_id << " create 0 template_table " << table_id
    << " pattern_template 0 actions_template 0 postpone no pattern" << testpmd_pattern(f, false) << " actions"
    << testpmd_actions(f, indirect_id, false);
  return o.str();
}

std::string testpmd_create(const Flow& f, int indirect_id) {
  std::ostringstream o;
  o << testpmd_notes(f) << testpmd_raw_encap(f) << "flow create " << f.port_id << " group " << f.attr.group << " priority "
    << f.attr.priority << (f.attr.transfer ? " transfer" : " ingress") << " pattern" << testpmd_pattern(f, false)
    << " actions" << testpmd_actions(f, indirect_id, false);
  return o.str();
}

std::string testpmd_ct(const rte_flow_action_conntrack& ct) {
  std::ostringstream o;
  o << "set conntrack com peer " << ct.peer_port << " is_orig " << ct.is_original_dir << " enable " << ct.enable
    << " live " << ct.live_connection << " sack " << ct.selective_ack << " cack " << ct.challenge_ack_passed
    << " last_dir " << ct.last_direction << " liberal " << ct.liberal_mode << " state " << int(ct.state)
    << " max_ack_win " << int(ct.max_ack_window) << " r_lim " << int(ct.retransmission_limit) << " last_win "
    << ct.last_window << " last_seq " << ct.last_seq << " last_ack " << ct.last_ack << " last_end " << ct.last_end
    << " last_index 0x" << std::hex << int(ct.last_index) << std::dec << "\n";
  for (int d = 0; d < 2; d++) {
    const rte_flow_tcp_dir_param& p = d ? ct.reply_dir : ct.original_dir;
    o << "set conntrack " << (d ? "rply" : "orig") << " scale " << p.scale << " fin " << p.close_initiated
      << " acked " << p.last_ack_seen << " unack_data " << p.data_unacked << " sent_end " << p.sent_end
      << " reply_end " << p.reply_end << " max_win " << p.max_win << " max_ack " << p.max_ack << "\n";
  }
  return o.str();
}

}  // namespace dp::hw
