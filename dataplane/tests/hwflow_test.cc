// Golden translation tests: the attr, pattern and action arrays the rte_flow
// provider hands the NIC, field by field (masks, byte order, groups,
// conntrack profile), and what must stay in software and why.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dataplane/config.h"
#include "dataplane/hwflow.h"
#include "dataplane/nic_model.h"
#include "dataplane/offload.h"

namespace dp::hw {
namespace {

ctrack::Key key4(const char* s, const char* d, uint16_t sp, uint16_t dpt, uint8_t proto) {
  ctrack::Key k{};
  inet_pton(AF_INET, s, k.src);
  inet_pton(AF_INET, d, k.dst);
  k.sport = sp;
  k.dport = dpt;
  k.proto = proto;
  k.family = 4;
  return k;
}

Layout layout(bool transfer) {
  Layout l;
  l.transfer = transfer;
  l.port_ids = {3, 7};  // DPDK ids differ from config indices on purpose
  l.proxy_port = 3;
  l.nb_queues = 2;
  l.ct_group = 1;
  l.age_s = 30;
  return l;
}


std::vector<rte_flow_item_type> item_types(const Flow& f) {
  std::vector<rte_flow_item_type> v;
  for (auto& i : f.pattern) v.push_back(i.type);
  return v;
}
std::vector<rte_flow_action_type> action_types(const Flow& f) {
  std::vector<rte_flow_action_type> v;
  for (auto& a : f.actions) v.push_back(a.type);
  return v;
}

ctrack::Event established_event() {
  ctrack::Event e{};
  e.type = ctrack::EventType::kEstablished;
  e.orig = key4("10.0.0.1", "10.0.0.2", 40000, 80, IPPROTO_TCP);
  e.in_port[0] = 0;
  e.in_port[1] = 1;
  e.last_dir = 0;
  e.tcp[0] = ctrack::TcpDirState{1001, 1001 + 64240, 64240, 7,
                                 ctrack::kTcpWindowScale | ctrack::kTcpSackPerm, 4901};
  e.tcp[1] = ctrack::TcpDirState{5001, 5001 + 65160, 65160, 9,
                                 ctrack::kTcpWindowScale | ctrack::kTcpSackPerm | ctrack::kTcpDataUnacked, 1001};
  e.last_index = 3;  // ACK
  e.last_seq = 1001;
  e.last_ack = 5001;
  e.last_end = 1001;
  e.last_win = 502;
  return e;
}

TEST(CtProfile, FromCtrackState) {
  rte_flow_action_conntrack ct = ct_profile(established_event(), 7);
  EXPECT_EQ(ct.peer_port, 7);
  EXPECT_EQ(ct.is_original_dir, 1u);
  EXPECT_EQ(ct.enable, 1u);
  EXPECT_EQ(ct.live_connection, 1u);
  EXPECT_EQ(ct.selective_ack, 1u);
  EXPECT_EQ(ct.last_direction, 1u);  // last packet from the original side
  EXPECT_EQ(ct.liberal_mode, 0u);
  EXPECT_EQ(ct.state, RTE_FLOW_CONNTRACK_STATE_ESTABLISHED);
  EXPECT_EQ(ct.max_ack_window, 7);
  EXPECT_EQ(ct.retransmission_limit, 3);  // Linux nf_conntrack_tcp_max_retrans
  EXPECT_EQ(ct.original_dir.scale, 7u);
  EXPECT_EQ(ct.original_dir.sent_end, 1001u);
  EXPECT_EQ(ct.original_dir.reply_end, 1001u + 65160);  // a whole window of the peer beyond what it sent
  EXPECT_EQ(ct.original_dir.max_win, 64240u);
  EXPECT_EQ(ct.original_dir.max_ack, 4901u);  // the largest ACK the original side sent (ctrack's)
  EXPECT_EQ(ct.original_dir.data_unacked, 0u);
  EXPECT_EQ(ct.original_dir.last_ack_seen, 1u);
  EXPECT_EQ(ct.reply_dir.scale, 9u);
  EXPECT_EQ(ct.reply_dir.sent_end, 5001u);
  EXPECT_EQ(ct.reply_dir.reply_end, 5001u + 65160);
  EXPECT_EQ(ct.reply_dir.max_win, 65160u);
  EXPECT_EQ(ct.reply_dir.max_ack, 1001u);
  EXPECT_EQ(ct.reply_dir.data_unacked, 1u);
  EXPECT_EQ(ct.last_window, 502);
  EXPECT_EQ(ct.last_index, RTE_FLOW_CONNTRACK_FLAG_ACK);
  EXPECT_EQ(ct.last_seq, 1001u);
  EXPECT_EQ(ct.last_ack, 5001u);
  EXPECT_EQ(ct.last_end, 1001u);
}

TEST(CtProfile, NoWindowScaleMeansFifteen) {
  ctrack::Event e = established_event();
  e.tcp[0].flags = 0;
  e.tcp[1].flags = ctrack::kTcpBeLiberal;
  rte_flow_action_conntrack ct = ct_profile(e, 7);
  EXPECT_EQ(ct.original_dir.scale, 0xFu);
  EXPECT_EQ(ct.reply_dir.scale, 0xFu);
  EXPECT_EQ(ct.selective_ack, 0u);
  EXPECT_EQ(ct.liberal_mode, 1u);
}

TEST(CtProfile, ReplyUpdateFlipsOnlyTheDirection) {
  rte_flow_action_conntrack ct = ct_profile(established_event(), 7);
  rte_flow_modify_conntrack m = ct_reply_update(ct);
  EXPECT_EQ(m.direction, 1u);
  EXPECT_EQ(m.state, 0u);
  EXPECT_EQ(m.new_ct.is_original_dir, 0u);
  EXPECT_EQ(m.new_ct.original_dir.sent_end, ct.original_dir.sent_end);
}

TEST(ConnFlow, TcpTransferOriginalDirection) {
  Layout l = layout(true);
  Conn c{key4("10.0.0.1", "10.0.0.2", 40000, 80, IPPROTO_TCP), {0, 1}, {1, 0}};
  auto* handle = reinterpret_cast<rte_flow_action_handle*>(0x1234);
  int ctx = 0;
  Flow f = conn_flow(l, c, 0, handle, &ctx);
  EXPECT_EQ(f.port_id, 3);  // the transfer proxy
  EXPECT_EQ(f.attr.group, 1u);
  EXPECT_EQ(f.attr.priority, 0u);
  EXPECT_EQ(f.attr.transfer, 1u);
  EXPECT_EQ(f.attr.ingress, 0u);
  ASSERT_EQ(item_types(f), (std::vector<rte_flow_item_type>{RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT, RTE_FLOW_ITEM_TYPE_ETH,
                                                            RTE_FLOW_ITEM_TYPE_IPV4, RTE_FLOW_ITEM_TYPE_TCP,
                                                            RTE_FLOW_ITEM_TYPE_END}));
  EXPECT_EQ(spec_of<rte_flow_item_ethdev>(f.pattern[0]).port_id, 3);
  EXPECT_EQ(mask_of<rte_flow_item_ethdev>(f.pattern[0]).port_id, 0xFFFF);
  EXPECT_EQ(f.pattern[1].spec, nullptr);
  const auto& ip = spec_of<rte_flow_item_ipv4>(f.pattern[2]).hdr;
  const auto& ipm = mask_of<rte_flow_item_ipv4>(f.pattern[2]).hdr;
  EXPECT_EQ(ip.src_addr, inet_addr("10.0.0.1"));  // network byte order
  EXPECT_EQ(ip.dst_addr, inet_addr("10.0.0.2"));
  EXPECT_EQ(ip.next_proto_id, IPPROTO_TCP);
  EXPECT_EQ(ipm.src_addr, 0xFFFFFFFFu);
  EXPECT_EQ(ipm.dst_addr, 0xFFFFFFFFu);
  EXPECT_EQ(ipm.next_proto_id, 0xFF);
  EXPECT_EQ(ipm.type_of_service, 0);
  EXPECT_EQ(ipm.time_to_live, 0);
  const auto& tcp = spec_of<rte_flow_item_tcp>(f.pattern[3]).hdr;
  const auto& tcpm = mask_of<rte_flow_item_tcp>(f.pattern[3]).hdr;
  EXPECT_EQ(tcp.src_port, htons(40000));
  EXPECT_EQ(tcp.dst_port, htons(80));
  EXPECT_EQ(tcpm.src_port, 0xFFFF);
  EXPECT_EQ(tcpm.dst_port, 0xFFFF);
  EXPECT_EQ(tcpm.tcp_flags, 0);
  ASSERT_EQ(action_types(f),
            (std::vector<rte_flow_action_type>{RTE_FLOW_ACTION_TYPE_COUNT, RTE_FLOW_ACTION_TYPE_AGE,
                                               RTE_FLOW_ACTION_TYPE_INDIRECT, RTE_FLOW_ACTION_TYPE_JUMP,
                                               RTE_FLOW_ACTION_TYPE_END}));
  EXPECT_EQ(conf_of<rte_flow_action_age>(f.actions[1]).timeout, 30u);
  EXPECT_EQ(conf_of<rte_flow_action_age>(f.actions[1]).context, &ctx);
  EXPECT_EQ(f.actions[2].conf, handle);
  // Verdict group of (in 0, out 1) with two ports: N + 1 + 0*2 + 1.
  EXPECT_EQ(conf_of<rte_flow_action_jump>(f.actions[3]).group, 3u);
}

TEST(ConnFlow, TcpReplyDirectionIsReversedFromItsOwnPort) {
  Layout l = layout(true);
  Conn c{key4("10.0.0.1", "10.0.0.2", 40000, 80, IPPROTO_TCP), {0, 1}, {1, 0}};
  Flow f = conn_flow(l, c, 1, nullptr, nullptr);
  EXPECT_EQ(spec_of<rte_flow_item_ethdev>(f.pattern[0]).port_id, 7);
  EXPECT_EQ(spec_of<rte_flow_item_ipv4>(f.pattern[2]).hdr.src_addr, inet_addr("10.0.0.2"));
  EXPECT_EQ(spec_of<rte_flow_item_tcp>(f.pattern[3]).hdr.src_port, htons(80));
  EXPECT_EQ(spec_of<rte_flow_item_tcp>(f.pattern[3]).hdr.dst_port, htons(40000));
  EXPECT_EQ(conf_of<rte_flow_action_jump>(f.actions[3]).group, 1u + 1 + 1 * 2 + 0);
}

TEST(ConnFlow, UdpOutputsDirectlyWithoutConntrack) {
  Layout l = layout(true);
  ctrack::Key k = key4("10.0.0.1", "10.0.0.2", 5353, 53, IPPROTO_UDP);
  Flow f = conn_flow(l, Conn{k, {0, 1}, {1, 0}}, 0, nullptr, nullptr);
  EXPECT_EQ(f.pattern[3].type, RTE_FLOW_ITEM_TYPE_UDP);
  EXPECT_EQ(spec_of<rte_flow_item_udp>(f.pattern[3]).hdr.dst_port, htons(53));
  ASSERT_EQ(action_types(f), (std::vector<rte_flow_action_type>{
                                 RTE_FLOW_ACTION_TYPE_COUNT, RTE_FLOW_ACTION_TYPE_AGE,
                                 RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT, RTE_FLOW_ACTION_TYPE_END}));
  EXPECT_EQ(conf_of<rte_flow_action_ethdev>(f.actions[2]).port_id, 7);
  EXPECT_EQ(f.find_action(RTE_FLOW_ACTION_TYPE_INDIRECT), nullptr);
}

// Geneve under DV: the connection's reply arrives in Geneve VNI 100 to
// the layout's VTEP: matched by the GENEVE item (VNI, protocol 0x6558,
// Opt Len and O zero under mask 0x3f80) after the outer headers to UDP
// 6081, and decapsulated by RAW_DECAP (DV's VXLAN_DECAP wants a VXLAN item).
TEST(ConnFlow, GeneveDecapIsTheGeneveItemAndRawDecap) {
  Layout l = layout(true);
  l.age_action = false;
  l.geneve = true;
  l.geneve_underlay = 1;
  memcpy(l.geneve_vtep, "\xc0\x00\x02\x01", 4);
  ctrack::Key k = key4("10.0.0.1", "10.0.0.2", 5353, 53, IPPROTO_UDP);
  Conn c{k, {0, 1}, {1, 0}};
  c.dir[1].vni = 100;
  c.dir[1].geneve = true;
  Flow f = conn_flow(l, c, 1, nullptr, nullptr);
  ASSERT_EQ(item_types(f),
            (std::vector<rte_flow_item_type>{RTE_FLOW_ITEM_TYPE_REPRESENTED_PORT, RTE_FLOW_ITEM_TYPE_ETH,
                                             RTE_FLOW_ITEM_TYPE_IPV4, RTE_FLOW_ITEM_TYPE_UDP,
                                             RTE_FLOW_ITEM_TYPE_GENEVE, RTE_FLOW_ITEM_TYPE_ETH,
                                             RTE_FLOW_ITEM_TYPE_IPV4, RTE_FLOW_ITEM_TYPE_UDP, RTE_FLOW_ITEM_TYPE_END}));
  EXPECT_EQ(spec_of<rte_flow_item_ipv4>(f.pattern[2]).hdr.dst_addr, inet_addr("192.0.2.1"));
  EXPECT_EQ(spec_of<rte_flow_item_udp>(f.pattern[3]).hdr.dst_port, htons(6081));
  const auto& g = spec_of<rte_flow_item_geneve>(f.pattern[4]);
  const auto& gm = mask_of<rte_flow_item_geneve>(f.pattern[4]);
  EXPECT_EQ(g.vni[2], 100);
  EXPECT_EQ(gm.vni[0] & gm.vni[1] & gm.vni[2], 0xFF);
  EXPECT_EQ(g.protocol, htons(0x6558));
  EXPECT_EQ(gm.protocol, 0xFFFF);
  EXPECT_EQ(g.ver_opt_len_o_c_rsvd0, 0);
  EXPECT_EQ(gm.ver_opt_len_o_c_rsvd0, htons(0x3F80));
  EXPECT_NE(f.find_action(RTE_FLOW_ACTION_TYPE_RAW_DECAP), nullptr);
  EXPECT_EQ(f.find_action(RTE_FLOW_ACTION_TYPE_VXLAN_DECAP), nullptr);
  const std::string t = testpmd_create(f, 0);
  EXPECT_NE(t.find("# the rule's GENEVE item also matches O = 0"), std::string::npos) << t;
  EXPECT_NE(t.find(" geneve vni spec 100 protocol spec 0x6558 optlen spec 0 /"), std::string::npos) << t;
  EXPECT_NE(t.find(" raw_decap /"), std::string::npos) << t;
  c.dir[1].geneve = false;  // VXLAN: as before
  Flow v = conn_flow(l, c, 1, nullptr, nullptr);
  EXPECT_NE(v.find_item(RTE_FLOW_ITEM_TYPE_VXLAN), nullptr);
  EXPECT_NE(v.find_action(RTE_FLOW_ACTION_TYPE_VXLAN_DECAP), nullptr);
}

TEST(ConnFlow, Ipv6MasksAllSixteenBytes) {
  Layout l = layout(true);
  ctrack::Key k{};
  inet_pton(AF_INET6, "2001:db8::1", k.src);
  inet_pton(AF_INET6, "2001:db8::2", k.dst);
  k.sport = 1;
  k.dport = 2;
  k.proto = IPPROTO_TCP;
  k.family = 6;
  Flow f = conn_flow(l, Conn{k, {0, 1}, {1, 0}}, 0, nullptr, nullptr);
  ASSERT_EQ(f.pattern[2].type, RTE_FLOW_ITEM_TYPE_IPV6);
  const auto& s = spec_of<rte_flow_item_ipv6>(f.pattern[2]).hdr;
  const auto& m = mask_of<rte_flow_item_ipv6>(f.pattern[2]).hdr;
  EXPECT_EQ(memcmp(s.src_addr, k.src, 16), 0);
  for (int i = 0; i < 16; i++) EXPECT_EQ(m.src_addr[i], 0xFF);
  EXPECT_EQ(m.proto, 0xFF);
  EXPECT_EQ(m.vtc_flow, 0u);
}

TEST(ConnFlow, WithoutTransferOutputIsMarkPlusRss) {
  Layout l = layout(false);
  ctrack::Key k = key4("10.0.0.1", "10.0.0.2", 5353, 53, IPPROTO_UDP);
  Flow f = conn_flow(l, Conn{k, {0, 1}, {1, 0}}, 0, nullptr, nullptr);
  EXPECT_EQ(f.port_id, 3);  // made on the ingress port itself
  EXPECT_EQ(f.attr.ingress, 1u);
  EXPECT_EQ(f.attr.transfer, 0u);
  EXPECT_EQ(f.pattern[0].type, RTE_FLOW_ITEM_TYPE_ETH);
  const auto* mk = f.find_action(RTE_FLOW_ACTION_TYPE_MARK);
  ASSERT_NE(mk, nullptr);
  EXPECT_EQ(conf_of<rte_flow_action_mark>(*mk).id, kMarkTag | 1u);
  const auto* rss = f.find_action(RTE_FLOW_ACTION_TYPE_RSS);
  ASSERT_NE(rss, nullptr);
  const auto& r = conf_of<rte_flow_action_rss>(*rss);
  // What the port's 128-entry redirection table picks (i % 2): two queues do.
  ASSERT_EQ(r.queue_num, 2u);
  EXPECT_EQ(r.queue[1], 1);
  Layout three = layout(false);
  three.nb_queues = 3;  // 128 % 3 != 0: the table itself
  Flow f3 = conn_flow(three, Conn{k, {0, 1}, {1, 0}}, 0, nullptr, nullptr);
  const auto& r3 = conf_of<rte_flow_action_rss>(*f3.find_action(RTE_FLOW_ACTION_TYPE_RSS));
  ASSERT_EQ(r3.queue_num, 128u);
  EXPECT_EQ(r3.queue[127], 127 % 3);
  EXPECT_EQ(r.types, RTE_ETH_RSS_NONFRAG_IPV4_UDP);
  EXPECT_EQ(r.key_len, 40u);
  EXPECT_EQ(r.key[0], 0x6d);
  EXPECT_EQ(r.key[1], 0x5a);  // symmetric: both directions to one queue
}

TEST(BaseFlows, TransferVerdictGroupsOnlyMissesGoToSoftwareByThemselves) {
  Layout l = layout(true);
  std::vector<Flow> v = base_flows(l);
  // PORT_REPRESENTOR is not in the 22.11 template API: no miss rules; an FDB
  // miss reaches software on its own.
  ASSERT_EQ(v.size(), 4u);
  for (const Flow& f : v)
    for (const auto& a : f.actions) EXPECT_NE(a.type, RTE_FLOW_ACTION_TYPE_PORT_REPRESENTOR);
  const Flow& ok = v[1];  // in 0 -> out 1: group 3
  EXPECT_EQ(ok.attr.group, 3u);
  const rte_flow_item* ct = ok.find_item(RTE_FLOW_ITEM_TYPE_CONNTRACK);
  ASSERT_NE(ct, nullptr);
  EXPECT_EQ(spec_of<rte_flow_item_conntrack>(*ct).flags, static_cast<uint32_t>(RTE_FLOW_CONNTRACK_PKT_STATE_VALID));
  // Every state bit is in the mask, so VALID|CHANGED (a FIN) does not match.
  EXPECT_EQ(mask_of<rte_flow_item_conntrack>(*ct).flags, 0x1Fu);
  EXPECT_EQ(action_types(ok), (std::vector<rte_flow_action_type>{RTE_FLOW_ACTION_TYPE_COUNT,
                                                                 RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT,
                                                                 RTE_FLOW_ACTION_TYPE_END}));
  EXPECT_EQ(conf_of<rte_flow_action_ethdev>(ok.actions[1]).port_id, 7);
}

TEST(BaseFlows, NicRxMissRulesAndMarkFirst) {
  Layout l = layout(false);
  std::vector<Flow> v = base_flows(l);
  // Per port: the RSS split group's 7 rules, then group N's catch-all; then
  // the verdict groups. A non-root NIC Rx table drops what it misses: each
  // group ends in a catch-all to software, which goes through the split.
  ASSERT_EQ(v.size(), 2u * 7 + 2 + 2 * 4);
  const Flow& miss = v[2 * 7];
  EXPECT_EQ(miss.attr.group, 1u);
  EXPECT_EQ(miss.attr.priority, 1u);
  ASSERT_EQ(miss.actions[0].type, RTE_FLOW_ACTION_TYPE_JUMP);
  EXPECT_EQ(static_cast<const rte_flow_action_jump*>(miss.actions[0].conf)->group, l.split_group());
  const Flow& ok = v[2 * 7 + 2 + 2 * 1];
  const Flow& sw = v[2 * 7 + 2 + 2 * 1 + 1];
  // The NIC Rx order wants the tag first (hws/mlx5dr_action.c:18-37).
  EXPECT_EQ(action_types(ok),
            (std::vector<rte_flow_action_type>{RTE_FLOW_ACTION_TYPE_MARK, RTE_FLOW_ACTION_TYPE_COUNT,
                                               RTE_FLOW_ACTION_TYPE_JUMP, RTE_FLOW_ACTION_TYPE_END}));
  EXPECT_EQ(sw.attr.priority, 1u);
  EXPECT_EQ(sw.actions[0].type, RTE_FLOW_ACTION_TYPE_JUMP);
}

// Finding 5 (issue 29): HWS makes one TIR of an RSS action's types, IPv4
// over IPv6 and UDP over TCP (mlx5_flow_hw.c:183-225): every RSS the
// provider writes names one L3 and at most one L4, the one its pattern has.
TEST(BaseFlows, EveryNicRxRssHashesOnlyWhatItsPatternHolds) {
  Layout l = layout(false);
  std::vector<Flow> v = base_flows(l);
  int splits = 0;
  for (const Flow& f : v) {
    for (const rte_flow_action* a = f.actions.data(); a->type != RTE_FLOW_ACTION_TYPE_END; a++) {
      if (a->type != RTE_FLOW_ACTION_TYPE_RSS) continue;
      const auto* r = static_cast<const rte_flow_action_rss*>(a->conf);
      ASSERT_EQ(f.attr.group, l.split_group()) << f.what;
      splits++;
      const bool v4 = f.find_item(RTE_FLOW_ITEM_TYPE_IPV4), v6 = f.find_item(RTE_FLOW_ITEM_TYPE_IPV6);
      const bool tcp = f.find_item(RTE_FLOW_ITEM_TYPE_TCP), udp = f.find_item(RTE_FLOW_ITEM_TYPE_UDP);
      uint64_t want = RTE_ETH_RSS_IP;
      if (v4) want = tcp ? RTE_ETH_RSS_NONFRAG_IPV4_TCP : udp ? RTE_ETH_RSS_NONFRAG_IPV4_UDP : RTE_ETH_RSS_IPV4;
      if (v6) want = tcp ? RTE_ETH_RSS_NONFRAG_IPV6_TCP : udp ? RTE_ETH_RSS_NONFRAG_IPV6_UDP : RTE_ETH_RSS_IPV6;
      EXPECT_EQ(r->types, want) << f.what;
      EXPECT_EQ(r->key_len, 40u);
      EXPECT_EQ(0, memcmp(r->key, kSymmetricRssKey, 40));
    }
  }
  EXPECT_EQ(splits, 2 * 7);
  // A connection rule carries the RSS of its own tuple.
  ctrack::Key k{};
  k.family = 6;
  k.proto = IPPROTO_TCP;
  k.src[15] = 1;
  k.dst[15] = 2;
  k.sport = 1000;
  k.dport = 80;
  Conn c{k, {0, 1}, {1, 0}};
  c.aso = false;
  Flow f = conn_flow(l, c, 0, nullptr, nullptr);
  const rte_flow_action* r = f.find_action(RTE_FLOW_ACTION_TYPE_RSS);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(static_cast<const rte_flow_action_rss*>(r->conf)->types, RTE_ETH_RSS_NONFRAG_IPV6_TCP);
}

std::vector<Rule> rules_of(const std::string& tables) {
  std::string y = "ports:\n  - {name: inside, devargs: net_null0}\n  - {name: outside, devargs: net_null1}\ntables:\n" +
                  tables;
  auto c = parse_config(y, "t.yaml");
  EXPECT_TRUE(c.ok()) << c.message();
  return c.ok() ? c->rules : std::vector<Rule>{};
}

TEST(TranslateRules, ShippedFirewall) {
  std::ifstream in(std::string(SOURCE_ROOT) + "/configs/dataplane/firewall.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = parse_config(ss.str(), "firewall.yaml");
  ASSERT_TRUE(c.ok()) << c.message();
  std::vector<RuleFlows> rf = translate_rules(layout(true), c->rules);
  ASSERT_EQ(rf.size(), 7u);  // table 0 only
  // ARP: full offload, one flow (in_port given), ETH type 0x0806, out port 7.
  EXPECT_EQ(rf[0].tier, Tier::kFull);
  ASSERT_EQ(rf[0].flows.size(), 1u);
  const Flow& arp = rf[0].flows[0];
  EXPECT_EQ(arp.attr.group, 0u);
  EXPECT_EQ(arp.attr.priority, 0u);
  EXPECT_EQ(spec_of<rte_flow_item_ethdev>(arp.pattern[0]).port_id, 3);
  EXPECT_EQ(spec_of<rte_flow_item_eth>(arp.pattern[1]).hdr.ether_type, htons(0x0806));
  EXPECT_EQ(mask_of<rte_flow_item_eth>(arp.pattern[1]).hdr.ether_type, 0xFFFF);
  EXPECT_EQ(action_types(arp), (std::vector<rte_flow_action_type>{RTE_FLOW_ACTION_TYPE_COUNT,
                                                                  RTE_FLOW_ACTION_TYPE_REPRESENTED_PORT,
                                                                  RTE_FLOW_ACTION_TYPE_END}));
  EXPECT_EQ(conf_of<rte_flow_action_ethdev>(arp.actions[1]).port_id, 7);
  EXPECT_EQ(rf[1].tier, Tier::kFull);
  // ND is five ICMPv6 types: software.
  EXPECT_EQ(rf[2].tier, Tier::kSoftware);
  EXPECT_NE(rf[2].why.find("eth_type=nd"), std::string::npos) << rf[2].why;
  EXPECT_TRUE(rf[2].flows.empty());
  // IPv4 -> ct(table=1): the NIC matches and jumps to the connection group,
  // once per ingress port.
  EXPECT_EQ(rf[4].tier, Tier::kJumpCt);
  ASSERT_EQ(rf[4].flows.size(), 2u);
  EXPECT_EQ(conf_of<rte_flow_action_jump>(*rf[4].flows[1].find_action(RTE_FLOW_ACTION_TYPE_JUMP)).group, 1u);
  EXPECT_EQ(rf[4].flows[0].attr.priority, 2u);  // ranked among the NIC's rules (the ND ones stay in software)
  // IPv6 could catch ND packets, which stay in software: it must too.
  EXPECT_EQ(rf[5].tier, Tier::kSoftware);
  EXPECT_NE(rf[5].why.find("which stays in software"), std::string::npos) << rf[5].why;
  // The catch-all drop likewise.
  EXPECT_EQ(rf[6].tier, Tier::kSoftware);
}

// Issue 29 finding 7: in NIC Rx, table 0 is the root table, whose
// priorities 13-15 hold the PMD's own Rx control rules; NIC rules are ranked
// among themselves (software ones need no priority) and the 14th stays in
// software. The FDB's group 0 is not root: no such limit.
TEST(TranslateRules, RootPrioritiesStayAboveThePmdsControlRules) {
  std::string y = "  0:\n";
  for (int i = 0; i < 16; i++)
    y += "    - {priority: " + std::to_string(400 - i) + ", match: \"ip_proto=udp,tp_dst=" + std::to_string(1000 + i) +
         "\", actions: \"drop\"}\n";
  auto rf = translate_rules(layout(false), rules_of(y));
  ASSERT_EQ(rf.size(), 16u);
  for (int i = 0; i < 13; i++) {
    ASSERT_EQ(rf[i].tier, Tier::kFull) << i << ": " << rf[i].why;
    EXPECT_EQ(rf[i].flows[0].attr.priority, static_cast<uint32_t>(i));
  }
  for (int i = 13; i < 16; i++) {
    EXPECT_EQ(rf[i].tier, Tier::kSoftware) << i;
    EXPECT_NE(rf[i].why.find("Rx control rules hold root priorities 13-15"), std::string::npos) << rf[i].why;
  }
  auto fdb = translate_rules(layout(true), rules_of(y));
  EXPECT_EQ(fdb[15].tier, Tier::kFull) << fdb[15].why;
  EXPECT_EQ(fdb[15].flows[0].attr.priority, 15u);
}

// Finding 8 (issue 29): a tun_id rule that decides (drop, output, mark) goes
// to the NIC only where its table matches the I flag: HWS's non-root
// tables (transfer group 0 is table 1). The NIC Rx root and DV match the VNI
// alone; a jump to the connection group (which decides nothing) may go.
TEST(TranslateRules, TunIdRulesThatDecideOnlyWhereTheFlagsAreMatched) {
  const std::string y = R"Y(  0:
    - {priority: 90, match: "in_port=outside,tun_id=100,eth_type=ipv4,ip_proto=udp,tp_dst=53", actions: "drop"}
    - {priority: 80, match: "in_port=outside,tun_id=100,eth_type=ipv4", actions: "ct(table=1)"}
  1:
    - {priority: 0, match: "", actions: "drop"}
)Y";
  for (int mode = 0; mode < 3; mode++) {  // NIC Rx HWS, FDB HWS, FDB DV
    SCOPED_TRACE(mode);
    Layout l = layout(mode != 0);
    l.vxlan = true;
    l.underlay = 1;
    l.vtep[0] = 192;
    l.vxlan_flags = mode != 2;
    auto rf = translate_rules(l, rules_of(y));
    ASSERT_EQ(rf.size(), 2u);
    if (mode == 1) {
      EXPECT_EQ(rf[0].tier, Tier::kFull) << rf[0].why;
    } else {
      EXPECT_EQ(rf[0].tier, Tier::kSoftware);
      EXPECT_NE(rf[0].why.find("not the VXLAN flags"), std::string::npos) << rf[0].why;
    }
    // Below a rule in software it stays there too; alone it jumps in the NIC.
    EXPECT_EQ(rf[1].tier, mode == 1 ? Tier::kJumpCt : Tier::kSoftware) << rf[1].why;
    auto jump = translate_rules(l, rules_of("  0:\n" + y.substr(y.find("    - {priority: 80"))));
    ASSERT_EQ(jump.size(), 1u);
    EXPECT_EQ(jump[0].tier, Tier::kJumpCt) << jump[0].why;
  }
}

// Geneve's tun_id rules: under DV a flow per tunnel the NIC decapsulates
// on the port (the GENEVE item), only as a jump to the connection group
// (DV cannot match Geneve's version); another rule that may see the
// underlay stays in software; a Geneve port other than 6081, and HWS
// (Geneve in soft_decap), keep them there by name.
TEST(TranslateRules, GeneveTunIdRules) {
  const std::string y = R"Y(  0:
    - {priority: 90, match: "in_port=outside,tun_id=100,eth_type=ipv4,ip_proto=udp,tp_dst=53", actions: "drop"}
    - {priority: 80, match: "in_port=outside,tun_id=100,eth_type=ipv4", actions: "ct(table=1)"}
    - {priority: 70, match: "in_port=outside,eth_type=ipv4", actions: "ct(table=1)"}
  1:
    - {priority: 0, match: "", actions: "drop"}
)Y";
  Layout l = layout(true);
  l.vxlan_flags = false;  // DV
  l.geneve = true;
  l.geneve_underlay = 1;
  auto rf = translate_rules(l, rules_of(y));
  ASSERT_EQ(rf.size(), 3u);
  EXPECT_EQ(rf[0].tier, Tier::kSoftware);
  EXPECT_NE(rf[0].why.find("cannot match Geneve's version"), std::string::npos) << rf[0].why;
  EXPECT_EQ(rf[2].tier, Tier::kSoftware);
  EXPECT_NE(rf[2].why.find("may match Geneve frames"), std::string::npos) << rf[2].why;
  auto jump = translate_rules(l, rules_of("  0:\n" + y.substr(y.find("    - {priority: 80"))));
  ASSERT_EQ(jump.size(), 2u);
  ASSERT_EQ(jump[0].tier, Tier::kJumpCt) << jump[0].why;
  ASSERT_EQ(jump[0].flows.size(), 1u);
  EXPECT_NE(jump[0].flows[0].find_item(RTE_FLOW_ITEM_TYPE_GENEVE), nullptr);
  EXPECT_EQ(jump[0].flows[0].find_item(RTE_FLOW_ITEM_TYPE_VXLAN), nullptr);
  l.vxlan = true;  // both tunnels on the one underlay: a flow each
  l.underlay = 1;
  jump = translate_rules(l, rules_of("  0:\n" + y.substr(y.find("    - {priority: 80"))));
  ASSERT_EQ(jump[0].flows.size(), 2u) << jump[0].why;
  EXPECT_NE(jump[0].flows[0].find_item(RTE_FLOW_ITEM_TYPE_VXLAN), nullptr);
  EXPECT_NE(jump[0].flows[1].find_item(RTE_FLOW_ITEM_TYPE_GENEVE), nullptr);
  l.vxlan = false;
  l.geneve_port = 6082;
  jump = translate_rules(l, rules_of("  0:\n" + y.substr(y.find("    - {priority: 80"))));
  EXPECT_NE(jump[0].why.find("Geneve on UDP port 6082"), std::string::npos) << jump[0].why;
  // HWS: no GENEVE item; software decapsulates.
  Layout h = layout(true);
  h.soft_decap.push_back({1, "Geneve decap: no GENEVE item in 22.11 hardware steering"});
  rf = translate_rules(h, rules_of(y));
  EXPECT_EQ(rf[1].tier, Tier::kSoftware);
  EXPECT_EQ(rf[1].why, "tun_id: Geneve decap: no GENEVE item in 22.11 hardware steering");
  EXPECT_NE(rf[2].why.find("which software decapsulates first"), std::string::npos) << rf[2].why;
}

TEST(TranslateRules, RefusalsNameTheField) {
  auto rf = translate_rules(layout(true), rules_of(R"(  0:
    - {priority: 90, match: "ct_state=+trk+est", actions: "output:outside"}
    - {priority: 80, match: "ip_proto=tcp,tp_dst=1000-2000", actions: "drop"}
    - {priority: 70, match: "ct_zone=5", actions: "drop"}
)"));
  ASSERT_EQ(rf.size(), 3u);
  EXPECT_EQ(rf[0].tier, Tier::kSoftware);
  EXPECT_NE(rf[0].why.find("ct_state"), std::string::npos) << rf[0].why;
  EXPECT_NE(rf[1].why.find("tp_dst range"), std::string::npos) << rf[1].why;
  EXPECT_NE(rf[2].why.find("ct_zone"), std::string::npos) << rf[2].why;
}

const char* kTierRules = R"(  0:
    - {priority: 90, match: "in_port=inside,ip_src=10.1.0.0/16,ip_proto=tcp,tp_dst=22,tcp_flags=+syn-ack", actions: "drop"}
    - {priority: 80, match: "ipv6_dst=2001:db8::/32,ip_proto=udp", actions: "count,set_mark:7,output:outside"}
    - {priority: 70, match: "vlan=10,eth_type=ipv4", actions: "goto_table:1"}
    - {priority: 60, match: "ip_proto=udp,tp_src=53", actions: "output:inside"}
  1:
    - {priority: 0, match: "", actions: "drop"}
)";

// In the FDB (transfer) there is no TAG action, so rules that need a mark
// for software stay there, and with them what they may shadow.
TEST(TranslateRules, TransferHasNoMarkTier) {
  auto rf = translate_rules(layout(true), rules_of(kTierRules));
  ASSERT_EQ(rf.size(), 4u);
  EXPECT_EQ(rf[0].tier, Tier::kFull);
  EXPECT_EQ(rf[1].tier, Tier::kSoftware);
  EXPECT_NE(rf[1].why.find("no TAG action"), std::string::npos) << rf[1].why;
  EXPECT_EQ(rf[2].tier, Tier::kSoftware);
  EXPECT_EQ(rf[3].tier, Tier::kSoftware);  // may match packets of rule 2
  // transfer group 0 is HWS table 1: COUNT is allowed there.
  EXPECT_NE(rf[0].flows[0].find_action(RTE_FLOW_ACTION_TYPE_COUNT), nullptr);
}

TEST(TranslateRules, ExpressibleMatchesAndTiers) {
  // Without transfer: the NIC Rx root table, where marks exist and COUNT does not.
  auto rf = translate_rules(layout(false), rules_of(R"(  0:
    - {priority: 90, match: "in_port=inside,ip_src=10.1.0.0/16,ip_proto=tcp,tp_dst=22,tcp_flags=+syn-ack", actions: "drop"}
    - {priority: 80, match: "ipv6_dst=2001:db8::/32,ip_proto=udp", actions: "count,set_mark:7,output:outside"}
    - {priority: 70, match: "vlan=10,eth_type=ipv4", actions: "goto_table:1"}
    - {priority: 60, match: "ip_proto=udp,tp_src=53", actions: "output:inside"}
  1:
    - {priority: 0, match: "", actions: "drop"}
)"));
  ASSERT_EQ(rf.size(), 4u);
  // 1: full drop, one flow (in_port), prefix mask, exact port, flags with mask.
  EXPECT_EQ(rf[0].tier, Tier::kFull);
  ASSERT_EQ(rf[0].flows.size(), 1u);
  const Flow& d = rf[0].flows[0];
  const auto* ip = d.find_item(RTE_FLOW_ITEM_TYPE_IPV4);
  ASSERT_NE(ip, nullptr);
  EXPECT_EQ(spec_of<rte_flow_item_ipv4>(*ip).hdr.src_addr, inet_addr("10.1.0.0"));
  EXPECT_EQ(mask_of<rte_flow_item_ipv4>(*ip).hdr.src_addr, inet_addr("255.255.0.0"));
  EXPECT_EQ(mask_of<rte_flow_item_ipv4>(*ip).hdr.dst_addr, 0u);
  const auto* tcp = d.find_item(RTE_FLOW_ITEM_TYPE_TCP);
  ASSERT_NE(tcp, nullptr);
  EXPECT_EQ(spec_of<rte_flow_item_tcp>(*tcp).hdr.dst_port, htons(22));
  EXPECT_EQ(mask_of<rte_flow_item_tcp>(*tcp).hdr.src_port, 0);
  EXPECT_EQ(spec_of<rte_flow_item_tcp>(*tcp).hdr.tcp_flags, 0x02);
  EXPECT_EQ(mask_of<rte_flow_item_tcp>(*tcp).hdr.tcp_flags, 0x12);
  EXPECT_NE(d.find_action(RTE_FLOW_ACTION_TYPE_DROP), nullptr);
  EXPECT_EQ(d.find_action(RTE_FLOW_ACTION_TYPE_COUNT), nullptr);  // root table (mlx5_flow_hw.c:1606-1617)
  // 2: set_mark is for software: mark tier, IPv6 /32 mask, per port.
  EXPECT_EQ(rf[1].tier, Tier::kMark);
  ASSERT_EQ(rf[1].flows.size(), 2u);
  const auto* ip6 = rf[1].flows[0].find_item(RTE_FLOW_ITEM_TYPE_IPV6);
  ASSERT_NE(ip6, nullptr);
  const auto& m6 = mask_of<rte_flow_item_ipv6>(*ip6).hdr;
  EXPECT_EQ(m6.dst_addr[3], 0xFF);
  EXPECT_EQ(m6.dst_addr[4], 0x00);
  EXPECT_EQ(conf_of<rte_flow_action_mark>(*rf[1].flows[0].find_action(RTE_FLOW_ACTION_TYPE_MARK)).id,
            kRuleMarkTag | rf[1].rule_id);
  // 3: VLAN with the ethertype in the VLAN item.
  EXPECT_EQ(rf[2].tier, Tier::kMark);
  const auto* vl = rf[2].flows[0].find_item(RTE_FLOW_ITEM_TYPE_VLAN);
  ASSERT_NE(vl, nullptr);
  EXPECT_EQ(spec_of<rte_flow_item_vlan>(*vl).hdr.vlan_tci, htons(10));
  EXPECT_EQ(mask_of<rte_flow_item_vlan>(*vl).hdr.vlan_tci, htons(0x0FFF));
  EXPECT_EQ(spec_of<rte_flow_item_vlan>(*vl).hdr.eth_proto, htons(0x0800));
  // 4: no family given: IPv4 and IPv6 flows on both ports; output needs a
  // mark without transfer.
  EXPECT_EQ(rf[3].tier, Tier::kMark);
  EXPECT_EQ(rf[3].flows.size(), 4u);
}

TEST(TranslateRules, ShadowedByHigherSoftwareRuleOnlyWhenOverlapping) {
  auto rf = translate_rules(layout(true), rules_of(R"(  0:
    - {priority: 90, match: "ip_proto=tcp,tp_dst=1000-2000", actions: "drop"}
    - {priority: 80, match: "ip_proto=udp", actions: "output:outside"}
    - {priority: 70, match: "ip_proto=tcp,tp_dst=3000", actions: "output:outside"}
    - {priority: 60, match: "ip_proto=tcp,tp_dst=1500", actions: "output:outside"}
)"));
  EXPECT_EQ(rf[0].tier, Tier::kSoftware);
  EXPECT_EQ(rf[1].tier, Tier::kFull);      // UDP cannot hit the TCP range rule
  EXPECT_EQ(rf[2].tier, Tier::kFull);      // port 3000 is outside 1000-2000
  EXPECT_EQ(rf[3].tier, Tier::kSoftware);  // port 1500 is inside it
}

// Issue 29 finding 2: the firmware read before EAL (sysfs, as ethtool -i
// shows it) decides the engine an mlx5 port is probed with.
TEST(Engine, FirmwareDecidesTheDevargs) {
  EXPECT_TRUE(firmware_has_hws("22.35.1012"));
  EXPECT_TRUE(firmware_has_hws("24.36.1010"));
  EXPECT_FALSE(firmware_has_hws("22.35.1011"));
  EXPECT_FALSE(firmware_has_hws("22.31.1014"));
  EXPECT_FALSE(firmware_has_hws("22.40"));
  EXPECT_FALSE(firmware_has_hws(""));
  EXPECT_FALSE(firmware_has_hws("22.36.1010 (MT_0000000359)x"));
  const std::string root = "/tmp/dp-sysfs-" + std::to_string(getpid());
  const std::string dev = root + "/bus/pci/devices/0000:03:00.0/infiniband/mlx5_0";
  std::filesystem::create_directories(dev);
  std::ofstream(dev + "/fw_ver") << "24.32.1010\n";
  EXPECT_EQ(pci_firmware("0000:03:00.0,representor=pf0vf65535", root), "24.32.1010");
  EXPECT_EQ(pci_firmware("0000:04:00.0", root), "");
  EXPECT_EQ(pci_firmware("../../etc", root), "");
  std::filesystem::remove_all(root);
  std::string why;
  EXPECT_EQ(engine_devargs("0000:03:00.0", "auto", "24.32.1010", &why), "0000:03:00.0");
  EXPECT_NE(why.find("has no hardware steering"), std::string::npos) << why;
  EXPECT_EQ(engine_devargs("0000:03:00.0", "auto", "24.36.1010", &why), "0000:03:00.0,dv_flow_en=2");
  EXPECT_EQ(engine_devargs("0000:03:00.0", "auto", "", &why), "0000:03:00.0");
  EXPECT_EQ(engine_devargs("0000:03:00.0", "sws", "24.36.1010", &why), "0000:03:00.0,dv_flow_en=1");
  EXPECT_EQ(engine_devargs("0000:03:00.0", "hws", "", &why), "0000:03:00.0,dv_flow_en=2");
  EXPECT_EQ(engine_devargs("0000:03:00.0,dv_flow_en=1", "auto", "24.36.1010", &why), "0000:03:00.0,dv_flow_en=1");
  EXPECT_NE(why.find("as its devargs set it"), std::string::npos);
}

// Issue 29, bring-up facts: what hw-check reads from the host before EAL
// (devlink, tc, ovs-vsctl through argv vectors; their JSON as iproute2
// prints it), each missing one with the command that fixes it.
TEST(Engine, BringupFactsNameWhatIsMissingAndTheFix) {
  const std::string root = "/tmp/dp-sysfs-bu-" + std::to_string(getpid());
  std::filesystem::create_directories(root + "/bus/pci/devices/0000:03:00.0/net/p0");
  const std::string dev = "pci/0000:03:00.0";
  std::string mode = "switchdev", meta = "false";
  bool devlink = true, tc_rules = true, ovs = true;
  std::vector<std::vector<std::string>> calls;
  RunArgv run = [&](const std::vector<std::string>& argv, std::string* out) {
    calls.push_back(argv);
    const std::string cmd = argv[0];
    if (cmd == "devlink" && !devlink) return 127;
    if (cmd == "devlink" && argv[3] == "eswitch") {
      *out = R"({"dev":{")" + dev + R"(":{"mode":")" + mode + R"(","inline-mode":"none","encap-mode":"basic"}}})";
      return 0;
    }
    if (cmd == "devlink" && argv[3] == "param") {
      *out = R"({"param":{")" + dev + R"(":[{"name":"esw_port_metadata","type":"driver-specific","values":[{"cmode":"runtime","value":)" +
             meta + "}]}]}}";
      return 0;
    }
    if (cmd == "tc") {
      *out = tc_rules ? R"([{"protocol":"all","pref":49152,"kind":"flower","chain":0}])" : "[]";
      return 0;
    }
    if (cmd == "ovs-vsctl") {
      *out = ovs ? "ovsbr1\novsbr2\n" : "";
      return ovs ? 0 : 1;
    }
    return 1;
  };
  auto text = [](const std::vector<BringupFact>& v, bool ok) {
    std::string t;
    for (const auto& f : v)
      if (f.ok == ok) t += f.line + "\n";
    return t;
  };
  auto v = bringup_facts("0000:03:00.0,dv_flow_en=2,dv_xmeta_en=1", root, run);
  std::string missing = text(v, false), fine = text(v, true);
  EXPECT_NE(fine.find("e-switch mode switchdev"), std::string::npos) << fine;
  EXPECT_NE(missing.find("esw_port_metadata false: HWS on an e-switch refuses to probe without it"), std::string::npos)
      << missing;
  EXPECT_NE(missing.find("devlink dev param set pci/0000:03:00.0 name esw_port_metadata value true cmode runtime"),
            std::string::npos);
  EXPECT_NE(missing.find("dv_xmeta_en=1"), std::string::npos) << missing;
  EXPECT_NE(missing.find("netdev p0 has 1 TC ingress filter"), std::string::npos) << missing;
  EXPECT_NE(missing.find("kernel Open vSwitch bridges: ovsbr1 ovsbr2"), std::string::npos) << missing;
  EXPECT_NE(fine.find("the transfer proxy first"), std::string::npos) << fine;
  for (const auto& c : calls) EXPECT_NE(c[0], "sh");  // argv vectors, never a shell
  // All well: nothing missing.
  meta = "true";
  tc_rules = ovs = false;
  v = bringup_facts("0000:03:00.0,dv_flow_en=2", root, run);
  EXPECT_EQ(text(v, false), "");
  // Legacy: no e-switch facts; no devlink at all: said, not guessed.
  mode = "legacy";
  v = bringup_facts("0000:03:00.0", root, run);
  EXPECT_NE(text(v, true).find("e-switch mode legacy"), std::string::npos);
  EXPECT_EQ(text(v, true).find("esw_port_metadata"), std::string::npos);
  devlink = false;
  v = bringup_facts("0000:03:00.0", root, run);
  EXPECT_NE(text(v, false).find("e-switch mode unknown"), std::string::npos);
  std::filesystem::remove_all(root);
}

TEST(Overlap, Basics) {
  PortNames pn{{"a", "b"}};
  auto m = [&](const char* t) { return parse_match(t, pn).value(); };
  EXPECT_FALSE(may_overlap(m("in_port=a"), m("in_port=b")));
  EXPECT_FALSE(may_overlap(m("eth_type=arp"), m("ip_proto=tcp")));
  EXPECT_FALSE(may_overlap(m("ip_dst=10.0.0.0/8"), m("ip_dst=192.168.0.0/16")));
  EXPECT_TRUE(may_overlap(m("ip_dst=10.0.0.0/8"), m("ip_dst=10.1.0.0/16")));
  EXPECT_TRUE(may_overlap(m("eth_type=nd"), m("eth_type=ipv6")));
  EXPECT_FALSE(may_overlap(m("eth_type=nd"), m("eth_type=ipv4")));
  EXPECT_TRUE(may_overlap(m(""), m("eth_type=arp")));
}

TEST(Testpmd, ConnectionCommandsAreExact) {
  Layout l = layout(true);
  Conn c{key4("10.0.0.1", "10.0.0.2", 40000, 80, IPPROTO_TCP), {0, 1}, {1, 0}};
  Flow f = conn_flow(l, c, 0, nullptr, nullptr);
  EXPECT_EQ(testpmd_templates(f, 2, 1024, 5),
            "flow pattern_template 3 create pattern_template_id 2 relaxed no transfer template represented_port "
            "ethdev_port_id mask 65535 / eth / ipv4 src mask 255.255.255.255 dst mask 255.255.255.255 proto mask 0xff "
            "/ tcp src mask 0xffff dst mask 0xffff / end\n"
            "flow actions_template 3 create transfer actions_template_id 2 template count / age timeout 30 / "
            "indirect 5 / jump group 3 / end mask count / age timeout 0 / conntrack / jump group 0 / end\n"
            "flow template_table 3 create table_id 2 group 1 priority 0 transfer rules_number 1024 "
            "pattern_template 2 actions_template 2\n");
  EXPECT_EQ(testpmd_queue_create(f, 2, 5),
            "flow queue 3 create 0 template_table 2 pattern_template 0 actions_template 0 postpone no pattern "
            "represented_port ethdev_port_id spec 3 / eth / ipv4 src spec 10.0.0.1 dst spec 10.0.0.2 proto spec 6 / "
            "tcp src spec 40000 dst spec 80 / end actions count / age timeout 30 / indirect 5 / jump group 3 / end");
  EXPECT_EQ(testpmd_ct(ct_profile(established_event(), 7)),
            "set conntrack com peer 7 is_orig 1 enable 1 live 1 sack 1 cack 0 last_dir 1 liberal 0 state 1 "
            "max_ack_win 7 r_lim 3 last_win 502 last_seq 1001 last_ack 5001 last_end 1001 last_index 0x8\n"
            "set conntrack orig scale 7 fin 0 acked 1 unack_data 0 sent_end 1001 reply_end 66161 max_win 64240 "
            "max_ack 4901\n"
            "set conntrack rply scale 9 fin 0 acked 1 unack_data 1 sent_end 5001 reply_end 70161 max_win 65160 "
            "max_ack 1001\n");
}

}  // namespace
}  // namespace dp::hw
