// The `conntrack:` section (features/conntrack/config.h).
#include "features/conntrack/config.h"

#include "control/config_yaml.h"
#include "dataplane/config.h"
#include "dataplane/pipeline.h"

namespace dp {

using namespace conf;

ctrack::Config conntrack_defaults() {
  ctrack::Config ct;
  // The workers expire entries by time (every millisecond, busy or not);
  // conntrack's sweep inside each lookup call would only add work, and make
  // the flow cache's ct calls change when entries go.
  ct.sweep_per_call = 0;
  ct.event_ring = 16384;
  return ct;
}

namespace {

Status parse_timeouts(const Ctx& c, const YAML::Node& t, ctrack::Timeouts* out) {
  const std::string P = "conntrack.timeouts";
  SDN_TRY(check_keys(c, t, P,
                     {"tcp_syn_sent", "tcp_syn_recv", "tcp_established", "tcp_fin_wait", "tcp_close_wait",
                      "tcp_last_ack", "tcp_time_wait", "tcp_close", "tcp_unacked", "udp_unreplied", "udp_replied",
                      "udp_assured", "icmp", "other"}));
  ctrack::Timeouts& T = *out;
  const uint32_t kMax = 30u * 86400;
  SDN_TRY(get_uint(c, t, "tcp_syn_sent", P, &T.tcp[ctrack::kTcpSynSent], 1, kMax));
  T.tcp[ctrack::kTcpSynSent2] = T.tcp[ctrack::kTcpSynSent];
  SDN_TRY(get_uint(c, t, "tcp_syn_recv", P, &T.tcp[ctrack::kTcpSynRecv], 1, kMax));
  SDN_TRY(get_uint(c, t, "tcp_established", P, &T.tcp[ctrack::kTcpEstablished], 1, kMax));
  SDN_TRY(get_uint(c, t, "tcp_fin_wait", P, &T.tcp[ctrack::kTcpFinWait], 1, kMax));
  SDN_TRY(get_uint(c, t, "tcp_close_wait", P, &T.tcp[ctrack::kTcpCloseWait], 1, kMax));
  SDN_TRY(get_uint(c, t, "tcp_last_ack", P, &T.tcp[ctrack::kTcpLastAck], 1, kMax));
  SDN_TRY(get_uint(c, t, "tcp_time_wait", P, &T.tcp[ctrack::kTcpTimeWait], 1, kMax));
  SDN_TRY(get_uint(c, t, "tcp_close", P, &T.tcp[ctrack::kTcpClose], 1, kMax));
  SDN_TRY(get_uint(c, t, "tcp_unacked", P, &T.tcp_unacked, 1, kMax));
  SDN_TRY(get_uint(c, t, "udp_unreplied", P, &T.udp[ctrack::kUdpUnreplied], 1, kMax));
  SDN_TRY(get_uint(c, t, "udp_replied", P, &T.udp[ctrack::kUdpReplied], 1, kMax));
  SDN_TRY(get_uint(c, t, "udp_assured", P, &T.udp[ctrack::kUdpAssured], 1, kMax));
  SDN_TRY(get_uint(c, t, "icmp", P, &T.icmp, 1, kMax));
  SDN_TRY(get_uint(c, t, "other", P, &T.other, 1, kMax));
  return {};
}

Status parse_zones(const Ctx& c, const YAML::Node& z, ctrack::Config* ct) {
  SDN_TRY(check_keys(c, z, "conntrack.zones", {"default_limit", "limits"}));
  SDN_TRY(get_uint(c, z, "default_limit", "conntrack.zones", &ct->default_zone_limit, 0, 1u << 30));
  if (YAML::Node l = z["limits"]) {
    if (!l.IsMap()) return c.err(l, "conntrack.zones.limits", "expected a mapping of zone: limit");
    for (auto it = l.begin(); it != l.end(); ++it) {
      std::string zk = it->first.Scalar();
      uint16_t zone = 0;
      uint32_t lim = 0;
      SDN_TRY(parse_uint(c, it->first, "conntrack.zones.limits", &zone, 0, 65535));
      SDN_TRY(parse_uint(c, it->second, "conntrack.zones.limits." + zk, &lim, 0, 1u << 30));
      ct->zone_limits.push_back({zone, lim});
    }
  }
  return {};
}

// Whether a reload may keep the tracker: every field the same but the
// timeouts (they apply), nat (conntrack_reload decides) and event_ring (the
// daemon's). A field added to ctrack::Config needs a restart unless named here.
bool same_except_timeouts(const ctrack::Config& a, const ctrack::Config& b) {
  ctrack::Config x = a;
  x.timeouts = b.timeouts;
  x.nat = b.nat;
  x.nat_caller_bytes = b.nat_caller_bytes;  // follows nat
  x.event_ring = b.event_ring;
  return x == b;
}

}  // namespace

Status parse_conntrack(const Ctx& c, const YAML::Node& n, ctrack::Config* ct, int* capacity_line) {
  SDN_TRY(check_keys(c, n, "conntrack",
                     {"capacity", "full_policy", "tcp_liberal", "tcp_midstream", "timeouts", "zones", "sweep_per_call",
                      "early_drop_scan", "nat"}));
  SDN_TRY(get_bool(c, n, "nat", "conntrack", &ct->nat));
  SDN_TRY(get_uint(c, n, "capacity", "conntrack", &ct->capacity, 16, 1u << 30));
  SDN_TRY(get_bool(c, n, "tcp_liberal", "conntrack", &ct->tcp_liberal));
  SDN_TRY(get_bool(c, n, "tcp_midstream", "conntrack", &ct->tcp_midstream));
  SDN_TRY(get_uint(c, n, "sweep_per_call", "conntrack", &ct->sweep_per_call, 0, 4096));
  SDN_TRY(get_uint(c, n, "early_drop_scan", "conntrack", &ct->early_drop_scan, 1, 4096));
  if (YAML::Node p = n["full_policy"]) {
    std::string s = p.IsScalar() ? p.Scalar() : "";
    if (s == "drop") ct->full_policy = ctrack::FullPolicy::kDrop;
    else if (s == "pass") ct->full_policy = ctrack::FullPolicy::kPassUntracked;
    else return c.err(p, "conntrack.full_policy", "expected drop or pass");
  }
  if (YAML::Node t = n["timeouts"]) SDN_TRY(parse_timeouts(c, t, &ct->timeouts));
  if (YAML::Node z = n["zones"]) SDN_TRY(parse_zones(c, z, ct));
  if (n["capacity"]) *capacity_line = n["capacity"].Mark().line + 1;
  return {};
}

ctrack::Config conntrack_shard_config(const Config& cfg) {
  ctrack::Config cc = cfg.ct;
  if (cfg.offload.provider == "none") cc.event_ring = 0;  // nobody would read the events
  else if (cc.event_ring == 0) cc.event_ring = 16384;
  return Datapath::tracker_config(cc);
}

bool conntrack_reload(const ctrack::Config& running, ctrack::Config* next, std::vector<std::string>* refused) {
  // NAT's room stays once there (rules without NAT run in it too).
  if (next->nat && !running.nat)
    refused->push_back("conntrack.nat: the rules now translate, and the tracker was started without room for NAT "
                       "(set conntrack.nat: true; needs a restart)");
  next->nat = running.nat;
  if (!same_except_timeouts(running, *next))
    refused->push_back("conntrack: only timeouts change on reload (capacity, policy and zones need a restart)");
  return running.timeouts != next->timeouts;
}

}  // namespace dp
