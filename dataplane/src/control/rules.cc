#include "dataplane/rules.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <charconv>
#include <cstring>
#include <utility>

#include "ctrack/tracker.h"
#include "features/tunnels.h"

namespace dp {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on commas outside parentheses.
std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); i++) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      auto t = trim(s.substr(start, i - start));
      if (!t.empty() || i < s.size()) out.push_back(t);
      start = i + 1;
    } else if (s[i] == '(') {
      depth++;
    } else if (s[i] == ')') {
      depth--;
    }
  }
  return out;
}

template <typename T>
bool parse_num(std::string_view s, T* out, T max) {
  s = trim(s);
  if (s.empty()) return false;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size() || v > static_cast<uint64_t>(max)) return false;
  *out = static_cast<T>(v);
  return true;
}

Status bad(std::string_view field, std::string_view value, const std::string& why) {
  return Status::error("'" + std::string(field) + "=" + std::string(value) + "': " + why);
}

Status parse_prefix(std::string_view field, std::string_view v, int family, uint8_t* addr, uint8_t* len) {
  std::string s(v);
  auto slash = s.find('/');
  std::string a = s.substr(0, slash);
  int max = family == 4 ? 32 : 128;
  int l = max;
  if (slash != std::string::npos && !parse_num(std::string_view(s).substr(slash + 1), &l, max))
    return bad(field, v, "prefix length must be 0.." + std::to_string(max));
  if (inet_pton(family == 4 ? AF_INET : AF_INET6, a.c_str(), addr) != 1)
    return bad(field, v, family == 4 ? "not an IPv4 address" : "not an IPv6 address");
  // Host bits must be zero, as a router's config would insist.
  for (int bit = l; bit < max; bit++)
    if (addr[bit / 8] & (0x80 >> (bit % 8))) return bad(field, v, "host bits set past /" + std::to_string(l));
  *len = static_cast<uint8_t>(l);
  return {};
}

Status parse_range(std::string_view field, std::string_view v, uint16_t* lo, uint16_t* hi) {
  auto dash = v.find('-');
  if (dash == std::string_view::npos) {
    if (!parse_num(v, lo, uint16_t{0xFFFF})) return bad(field, v, "port must be 0..65535");
    *hi = *lo;
    return {};
  }
  if (!parse_num(v.substr(0, dash), lo, uint16_t{0xFFFF}) || !parse_num(v.substr(dash + 1), hi, uint16_t{0xFFFF}))
    return bad(field, v, "range must be N-M with 0 <= N <= M <= 65535");
  if (*lo > *hi) return bad(field, v, "range must be N-M with N <= M");
  return {};
}

// "+a-b+c" over a name table -> value/mask.
Status parse_flags(std::string_view field, std::string_view v, const std::vector<std::pair<std::string, uint8_t>>& names,
                   uint8_t* value, uint8_t* mask) {
  *value = *mask = 0;
  size_t i = 0;
  if (v.empty()) return bad(field, v, "empty");
  while (i < v.size()) {
    char sign = v[i];
    if (sign != '+' && sign != '-') return bad(field, v, "each flag needs + or -");
    size_t j = i + 1;
    while (j < v.size() && v[j] != '+' && v[j] != '-') j++;
    std::string_view name = v.substr(i + 1, j - i - 1);
    uint8_t bit = 0;
    for (const auto& [n, b] : names)
      if (name == n) bit = b;
    if (!bit) {
      std::string all;
      for (const auto& [n, b] : names) all += (all.empty() ? "" : " ") + n;
      return bad(field, v, "unknown flag '" + std::string(name) + "' (known: " + all + ")");
    }
    if (*mask & bit) return bad(field, v, "flag '" + std::string(name) + "' given twice");
    *mask |= bit;
    if (sign == '+') *value |= bit;
    i = j;
  }
  return {};
}

}  // namespace

int PortNames::find(std::string_view n) const {
  for (size_t i = 0; i < names.size(); i++)
    if (names[i] == n) return static_cast<int>(i);
  return -1;
}

bool Match::applies_v4() const {
  if (has(kMEthType)) return eth_type == kEthIpv4;
  return family != 6;
}
bool Match::applies_v6() const {
  if (has(kMEthType)) return eth_type == kEthIpv6;
  return family != 4;
}
bool Match::applies_other() const {
  if (has(kMEthType)) return eth_type != kEthIpv4 && eth_type != kEthIpv6;
  // L3/L4/ct fields only make sense for IP.
  return !(fields & (kMSrc | kMDst | kMProto | kMTpSrc | kMTpDst | kMTcpFlags | kMCtState | kMCtZone));
}

Result<Match> parse_match(std::string_view text, const PortNames& ports) {
  Match m;
  for (std::string_view item : split_top(text)) {
    if (item.empty()) return Status::error("empty field in match (stray comma?)");
    auto eq = item.find('=');
    if (eq == std::string_view::npos) return Status::error("'" + std::string(item) + "': expected FIELD=VALUE");
    std::string_view f = trim(item.substr(0, eq)), v = trim(item.substr(eq + 1));
    auto once = [&](MatchBit b) -> Status {
      if (m.fields & b) return Status::error("'" + std::string(f) + "' given twice");
      m.fields |= b;
      return {};
    };
    Status st;
    if (f == "in_port") {
      if (!(st = once(kMInPort))) return st;
      int p = ports.find(v);
      if (p < 0) return bad(f, v, "no port named '" + std::string(v) + "'");
      m.in_port = static_cast<uint16_t>(p);
    } else if (f == "eth_type" || f == "dl_type") {
      if (!(st = once(kMEthType))) return st;
      if (v == "arp") m.eth_type = kEthArp;
      else if (v == "ipv4" || v == "ip") m.eth_type = kEthIpv4;
      else if (v == "ipv6") m.eth_type = kEthIpv6;
      else if (v == "nd") m.eth_type = kEthNd;
      else if (!parse_num(v, &m.eth_type, uint16_t{0xFFFF}) || m.eth_type < 0x600)
        return bad(f, v, "expected arp, ipv4, ipv6, nd or an ethertype >= 0x0600");
    } else if (f == "vlan") {
      if (!(st = once(kMVlan))) return st;
      if (!parse_num(v, &m.vlan, uint16_t{4095})) return bad(f, v, "VLAN id must be 0..4095");
    } else if (f == "ip_src" || f == "ip_dst" || f == "ipv6_src" || f == "ipv6_dst") {
      bool src = f.substr(f.size() - 3) == "src";
      int fam = f[2] == 'v' ? 6 : 4;
      if (!(st = once(src ? kMSrc : kMDst))) return st;
      if (m.family && m.family != fam) return bad(f, v, "mixes IPv4 and IPv6 addresses");
      m.family = static_cast<uint8_t>(fam);
      if (!(st = parse_prefix(f, v, fam, src ? m.src : m.dst, src ? &m.src_len : &m.dst_len))) return st;
    } else if (f == "ip_proto" || f == "nw_proto") {
      if (!(st = once(kMProto))) return st;
      if (v == "tcp") m.proto = IPPROTO_TCP;
      else if (v == "udp") m.proto = IPPROTO_UDP;
      else if (v == "icmp") m.proto = IPPROTO_ICMP;
      else if (v == "icmpv6") m.proto = IPPROTO_ICMPV6;
      else if (v == "sctp") m.proto = IPPROTO_SCTP;
      else if (!parse_num(v, &m.proto, uint8_t{255})) return bad(f, v, "expected tcp, udp, icmp, icmpv6, sctp or 0..255");
    } else if (f == "tp_src" || f == "tp_dst") {
      bool src = f == "tp_src";
      if (!(st = once(src ? kMTpSrc : kMTpDst))) return st;
      if (!(st = src ? parse_range(f, v, &m.tp_src_lo, &m.tp_src_hi) : parse_range(f, v, &m.tp_dst_lo, &m.tp_dst_hi)))
        return st;
    } else if (f == "tcp_flags") {
      if (!(st = once(kMTcpFlags))) return st;
      if (!(st = parse_flags(f, v,
                             {{"fin", ctrack::kFin}, {"syn", ctrack::kSyn}, {"rst", ctrack::kRst}, {"psh", ctrack::kPsh},
                              {"ack", ctrack::kAck}, {"urg", ctrack::kUrg}, {"ece", ctrack::kEce}, {"cwr", ctrack::kCwr}},
                             &m.tcp_flags, &m.tcp_flags_mask)))
        return st;
    } else if (f == "ct_state") {
      if (!(st = once(kMCtState))) return st;
      if (!(st = parse_flags(f, v,
                             {{"trk", ctrack::kCtTrk}, {"new", ctrack::kCtNew}, {"est", ctrack::kCtEst},
                              {"rel", ctrack::kCtRel}, {"rpl", ctrack::kCtRpl}, {"inv", ctrack::kCtInv}},
                             &m.ct_state, &m.ct_state_mask)))
        return st;
    } else if (f == "ct_zone") {
      if (!(st = once(kMCtZone))) return st;
      if (!parse_num(v, &m.ct_zone, uint16_t{0xFFFF})) return bad(f, v, "zone must be 0..65535");
    } else if (f == "tun_id") {
      if (!(st = once(kMTunId))) return st;
      if (!parse_num(v, &m.tun_id, uint32_t{0xFFFFFF})) return bad(f, v, "tun_id (a VNI) must be 0..16777215");
    } else {
      return Status::error("unknown match field '" + std::string(f) +
                           "' (known: in_port eth_type vlan ip_src ip_dst ipv6_src ipv6_dst ip_proto tp_src tp_dst "
                           "tcp_flags ct_state ct_zone tun_id)");
    }
  }
  // Cross-field checks.
  if ((m.fields & (kMTpSrc | kMTpDst)) && !(m.fields & kMProto))
    return Status::error("tp_src/tp_dst need ip_proto=tcp, udp or sctp");
  if ((m.fields & kMTcpFlags) && !(m.has(kMProto) && m.proto == IPPROTO_TCP))
    return Status::error("tcp_flags needs ip_proto=tcp");
  if (m.has(kMEthType) && m.family &&
      !((m.family == 4 && m.eth_type == kEthIpv4) || (m.family == 6 && m.eth_type == kEthIpv6)))
    return Status::error("eth_type does not match the address family of ip_src/ip_dst");
  if (m.has(kMEthType) && m.eth_type != kEthIpv4 && m.eth_type != kEthIpv6 &&
      (m.fields & (kMProto | kMTpSrc | kMTpDst | kMTcpFlags | kMCtState | kMCtZone)))
    return Status::error("IP fields given with a non-IP eth_type");
  return m;
}

// One end of a NAT address range: A.B.C.D or [X::Y].
bool parse_nat_addr(std::string_view v, int* family, uint8_t* out) {
  std::string a(v);
  int f = 4;
  if (!a.empty() && a.front() == '[' && a.back() == ']') {
    a = a.substr(1, a.size() - 2);
    f = 6;
  }
  if (inet_pton(f == 6 ? AF_INET6 : AF_INET, a.c_str(), out) != 1) return false;
  if (*family && *family != f) return false;
  *family = f;
  return true;
}

uint64_t nat_addr_key(const uint8_t* a, int family) {
  const uint8_t* p = a + (family == 6 ? 12 : 0);
  return static_cast<uint64_t>(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

// The block of addresses no host answers from that a range reaches into,
// or null: a translation to one would send packets nobody can reply to.
const char* nat_no_host(const ctrack::NatRange& r) {
  const uint64_t lo = nat_addr_key(r.addr_min, r.family), hi = nat_addr_key(r.addr_max, r.family);
  if (r.family == 4) {
    static const struct {
      uint64_t first, last;
      const char* name;
    } kBlocks[] = {
        {0x00000000, 0x00FFFFFF, "0.0.0.0/8 (this network)"},
        {0x7F000000, 0x7FFFFFFF, "127.0.0.0/8 (loopback)"},
        {0xE0000000, 0xEFFFFFFF, "224.0.0.0/4 (multicast)"},
        {0xFFFFFFFF, 0xFFFFFFFF, "255.255.255.255 (broadcast)"},
    };
    for (const auto& b : kBlocks)
      if (lo <= b.last && b.first <= hi) return b.name;
    return nullptr;
  }
  if (r.addr_min[0] == 0xFF) return "ff00::/8 (multicast)";  // a range shares its first 96 bits
  static const uint8_t kZero[12] = {};
  if (memcmp(r.addr_min, kZero, sizeof kZero) == 0 && lo == 0) return ":: (unspecified)";
  if (memcmp(r.addr_min, kZero, sizeof kZero) == 0 && lo == 1) return "::1 (loopback)";
  return nullptr;
}

// src=A[-B][:P[-Q]] or dst=..., as OVS writes them.
Status parse_nat(std::string_view v, ctrack::NatRange* r) {
  v = trim(v);
  if (v.rfind("src=", 0) == 0) r->kind = ctrack::NatKind::kSrc;
  else if (v.rfind("dst=", 0) == 0) r->kind = ctrack::NatKind::kDst;
  else return Status::error("expected src=ADDR[-ADDR][:PORT[-PORT]] or dst=...");
  v.remove_prefix(4);
  // The port part starts at the last ':' outside brackets.
  size_t colon = std::string_view::npos;
  int depth = 0;
  for (size_t i = 0; i < v.size(); i++) {
    if (v[i] == '[') depth++;
    else if (v[i] == ']') depth--;
    else if (v[i] == ':' && depth == 0) colon = i;
  }
  std::string_view addrs = v.substr(0, colon), ports = colon == std::string_view::npos ? "" : v.substr(colon + 1);
  size_t dash = std::string_view::npos;
  depth = 0;
  for (size_t i = 0; i < addrs.size(); i++) {
    if (addrs[i] == '[') depth++;
    else if (addrs[i] == ']') depth--;
    else if (addrs[i] == '-' && depth == 0) dash = i;
  }
  int family = 0;
  std::string_view lo = addrs.substr(0, dash), hi = dash == std::string_view::npos ? lo : addrs.substr(dash + 1);
  if (!parse_nat_addr(lo, &family, r->addr_min) || !parse_nat_addr(hi, &family, r->addr_max))
    return Status::error("'" + std::string(addrs) + "': expected an address or a range A-B of one family (IPv6 in [])");
  r->family = static_cast<uint8_t>(family);
  const int n = family == 6 ? 16 : 4;
  if (memcmp(r->addr_min, r->addr_max, static_cast<size_t>(n)) > 0)
    return Status::error("'" + std::string(addrs) + "': the range ends before it starts");
  if (family == 6 && memcmp(r->addr_min, r->addr_max, 12) != 0)
    return Status::error("'" + std::string(addrs) + "': an IPv6 range may differ only in its last 32 bits");
  if (const char* block = nat_no_host(*r))
    return Status::error("'" + std::string(addrs) + "': in " + block + ": not an address to translate to");
  if (colon != std::string_view::npos) {
    size_t pd = ports.find('-');
    std::string_view plo = ports.substr(0, pd), phi = pd == std::string_view::npos ? plo : ports.substr(pd + 1);
    if (!parse_num(plo, &r->port_min, uint16_t{0xFFFF}) || !parse_num(phi, &r->port_max, uint16_t{0xFFFF}) ||
        r->port_min == 0 || r->port_min > r->port_max)
      return Status::error("'" + std::string(ports) + "': expected a port or a range P-Q within 1..65535");
  }
  return {};
}

// Do two ranges of one kind share a translated address and port?
bool nat_overlap(const ctrack::NatRange& a, const ctrack::NatRange& b) {
  if (a.kind != b.kind || a.family != b.family) return false;
  if (a.family == 6 && memcmp(a.addr_min, b.addr_min, 12) != 0) return false;
  if (nat_addr_key(a.addr_max, a.family) < nat_addr_key(b.addr_min, b.family) ||
      nat_addr_key(b.addr_max, b.family) < nat_addr_key(a.addr_min, a.family))
    return false;
  const bool a_all = a.port_min == 0, b_all = b.port_min == 0;
  if (a_all || b_all) return true;
  return !(a.port_max < b.port_min || b.port_max < a.port_min);
}

bool same_nat(const ctrack::NatRange& a, const ctrack::NatRange& b) {
  return a.kind == b.kind && a.family == b.family && memcmp(a.addr_min, b.addr_min, 16) == 0 &&
         memcmp(a.addr_max, b.addr_max, 16) == 0 && a.port_min == b.port_min && a.port_max == b.port_max;
}

namespace {

// encap(<tunnel>,vni=N,remote=IP[,...]): the tunnel by its module's name,
// the arguments every tunnel takes, then the module's own (Geneve's opt=).
Status parse_encap(std::string_view item, Action* a) {
  const auto args = split_top(item.substr(6, item.size() - 7));
  std::string known;
  for_each_tunnel([&](auto t) { known += std::string(known.empty() ? "" : "; ") + decltype(t)::kArgs; });
  const TunnelKind k = args.empty() ? TunnelKind::kCount : tunnel_by_name(args[0]);
  if (k == TunnelKind::kCount)
    return Status::error("'" + std::string(item) + "': expected encap(TUNNEL,vni=N,remote=IP) (known: " + known + ")");
  a->tunnel = static_cast<uint8_t>(k);
  const std::string name = tunnel_kind_name(k);
  bool vni = false, remote = false;
  for (size_t i = 1; i < args.size(); i++) {
    const std::string_view arg = args[i];
    if (arg.rfind("vni=", 0) == 0) {
      if (!parse_num(arg.substr(4), &a->vni, uint32_t{0xFFFFFF}) || a->vni == 0)
        return Status::error("'" + std::string(item) + "': vni must be 1..16777215");
      vni = true;
    } else if (arg.rfind("remote=", 0) == 0) {
      if (inet_pton(AF_INET, std::string(arg.substr(7)).c_str(), a->remote) != 1)
        return Status::error("'" + std::string(item) + "': remote must be an IPv4 address (the underlay is IPv4)");
      remote = true;
    } else {
      std::string err, args_help;
      bool mine = false;
      with_tunnel(k, [&](auto t) {
        mine = decltype(t)::parse_encap_arg(arg, a, &err);
        args_help = decltype(t)::kArgs;
      });
      if (!err.empty()) return Status::error("'" + std::string(item) + "': " + err);
      if (!mine)
        return Status::error("'" + std::string(item) + "': unknown encap argument '" + std::string(arg) +
                             "' (known: " + args_help + ")");
    }
  }
  if (!vni || !remote)
    return Status::error("'" + std::string(item) + "': expected encap(" + name + ",vni=N,remote=IP)");
  return {};
}

}  // namespace

Result<std::vector<Action>> parse_actions(std::string_view text, const PortNames& ports) {
  std::vector<Action> out;
  auto items = split_top(text);
  if (items.empty() || (items.size() == 1 && items[0].empty())) return Status::error("no actions");
  for (std::string_view item : items) {
    Action a;
    if (item.empty()) return Status::error("empty action (stray comma?)");
    if (item == "drop") {
      a.type = ActType::kDrop;
    } else if (item == "count") {
      a.type = ActType::kCount;
    } else if (item.rfind("output:", 0) == 0) {
      a.type = ActType::kOutput;
      int p = ports.find(trim(item.substr(7)));
      if (p < 0) return Status::error("'" + std::string(item) + "': no port named '" + std::string(item.substr(7)) + "'");
      a.port = static_cast<uint16_t>(p);
    } else if (item.rfind("goto_table:", 0) == 0) {
      a.type = ActType::kGotoTable;
      if (!parse_num(item.substr(11), &a.table, int16_t{kMaxTables - 1}))
        return Status::error("'" + std::string(item) + "': table must be 0.." + std::to_string(kMaxTables - 1));
    } else if (item.rfind("set_mark:", 0) == 0) {
      a.type = ActType::kSetMark;
      if (!parse_num(item.substr(9), &a.mark, uint32_t{0xFFFFFFFF}))
        return Status::error("'" + std::string(item) + "': mark must be a 32-bit number");
    } else if (item.rfind("encap(", 0) == 0 && item.back() == ')') {
      a.type = ActType::kEncap;
      if (Status st = parse_encap(item, &a); !st) return st;
    } else if (item.rfind("ct(", 0) == 0 && item.back() == ')') {
      a.type = ActType::kCt;
      bool nat = false;
      for (std::string_view arg : split_top(item.substr(3, item.size() - 4))) {
        if (arg.empty()) continue;
        if ((arg == "nat" || arg.rfind("nat(", 0) == 0) && std::exchange(nat, true))
          return Status::error("'" + std::string(item) + "': one nat per ct() (a connection has one translation)");
        if (arg == "commit") {
          a.commit = true;
        } else if (arg.rfind("zone=", 0) == 0) {
          if (!parse_num(arg.substr(5), &a.zone, uint16_t{0xFFFF}))
            return Status::error("'" + std::string(item) + "': zone must be 0..65535");
        } else if (arg.rfind("table=", 0) == 0) {
          if (!parse_num(arg.substr(6), &a.table, int16_t{kMaxTables - 1}))
            return Status::error("'" + std::string(item) + "': table must be 0.." + std::to_string(kMaxTables - 1));
        } else if (arg == "nat") {
        } else if (arg.rfind("nat(", 0) == 0 && arg.back() == ')') {
          if (Status st = parse_nat(arg.substr(4, arg.size() - 5), &a.nat); !st)
            return Status::error("'" + std::string(arg) + "': " + st.message());
        } else {
          return Status::error("'" + std::string(item) + "': unknown ct argument '" + std::string(arg) +
                               "' (known: commit zone=N table=N nat nat(src=...) nat(dst=...))");
        }
      }
    } else {
      return Status::error("unknown action '" + std::string(item) +
                           "' (known: ct(...) output:PORT drop count set_mark:N goto_table:N encap(TUNNEL,...))");
    }
    out.push_back(a);
  }
  return out;
}

Status check_rule(const Rule& r) {
  if (r.table >= kMaxTables) return Status::error("table must be 0.." + std::to_string(kMaxTables - 1));
  int cts = 0;
  for (size_t i = 0; i < r.actions.size(); i++) {
    const Action& a = r.actions[i];
    bool terminal = a.type == ActType::kOutput || a.type == ActType::kDrop || a.type == ActType::kGotoTable ||
                    (a.type == ActType::kCt && a.table >= 0);
    if (a.type == ActType::kCt && ++cts > 1) return Status::error("at most one ct() per rule");
    if (a.type == ActType::kEncap && (i + 1 >= r.actions.size() || r.actions.back().type != ActType::kOutput))
      return Status::error("encap(...) goes before the output: that sends the encapsulated packet");
    if (a.type == ActType::kEncap) {
      for (size_t k = i + 1; k < r.actions.size(); k++)
        if (r.actions[k].type == ActType::kCt || r.actions[k].type == ActType::kEncap)
          return Status::error("nothing but count, set_mark and output after encap(...)");
    }
    if (a.type == ActType::kCt && a.nat.kind != ctrack::NatKind::kNone && !a.commit)
      return Status::error("nat(src=...) and nat(dst=...) choose a translation at commit: ct(commit,nat(...))");
    if (terminal && i + 1 != r.actions.size())
      return Status::error("actions after a terminal action (output, drop, goto_table, ct(table=N)) never run");
    if (!terminal && i + 1 == r.actions.size())
      return Status::error("the last action must be output, drop, goto_table or ct(table=N)");
    if ((a.type == ActType::kGotoTable || (a.type == ActType::kCt && a.table >= 0)) && a.table <= r.table)
      return Status::error("tables only go forward: table " + std::to_string(a.table) + " from table " +
                           std::to_string(r.table));
  }
  return {};
}

Status check_rule_set(const std::vector<Rule>& rules, size_t* bad) {
  std::vector<bool> used(kMaxTables, false);
  for (const Rule& r : rules) used[r.table] = true;
  for (size_t i = 0; i < rules.size(); i++)
    for (const Action& a : rules[i].actions) {
      bool jumps = a.type == ActType::kGotoTable || (a.type == ActType::kCt && a.table >= 0);
      if (jumps && (a.table < 0 || a.table >= static_cast<int>(kMaxTables) || !used[static_cast<size_t>(a.table)])) {
        if (bad) *bad = i;
        return Status::error("rule " + std::to_string(rules[i].id) + " goes to table " + std::to_string(a.table) +
                             ", which has no rules (every packet sent there would be dropped as no_match)");
      }
    }
  std::vector<std::pair<size_t, const ctrack::NatRange*>> pools;
  for (size_t i = 0; i < rules.size(); i++)
    for (const Action& a : rules[i].actions) {
      if (a.type != ActType::kCt || a.nat.kind == ctrack::NatKind::kNone) continue;
      for (const auto& [j, q] : pools)
        if (!same_nat(a.nat, *q) && nat_overlap(a.nat, *q)) {
          if (bad) *bad = i;
          return Status::error("rule " + std::to_string(rules[i].id) + "'s nat(" + nat_str(a.nat) +
                               ") overlaps rule " + std::to_string(rules[j].id) + "'s nat(" + nat_str(*q) +
                               "): pools are the same range or apart (two would hand out the same tuples)");
        }
      pools.push_back({i, &a.nat});
    }
  return {};
}

std::string rule_fingerprint(const Rule& r) {
  return std::to_string(r.table) + "\x1f" + std::to_string(r.priority) + "\x1f" + r.match_text + "\x1f" +
         r.actions_text + "\x1f" + (r.offload ? "1" : "0");
}

void remap_ports(std::vector<Rule>& rules, const std::vector<int>& map) {
  for (Rule& r : rules) {
    if (r.match.has(kMInPort)) r.match.in_port = static_cast<uint16_t>(map[r.match.in_port]);
    for (Action& a : r.actions)
      if (a.type == ActType::kOutput) a.port = static_cast<uint16_t>(map[a.port]);
  }
}

std::string nat_str(const ctrack::NatRange& r) {
  if (r.kind == ctrack::NatKind::kNone) return "";
  char lo[INET6_ADDRSTRLEN], hi[INET6_ADDRSTRLEN];
  const int af = r.family == 6 ? AF_INET6 : AF_INET;
  inet_ntop(af, r.addr_min, lo, sizeof lo);
  inet_ntop(af, r.addr_max, hi, sizeof hi);
  auto a = [&](const char* x) { return r.family == 6 ? "[" + std::string(x) + "]" : std::string(x); };
  std::string s = (r.kind == ctrack::NatKind::kSrc ? "src=" : "dst=") + a(lo);
  if (strcmp(lo, hi) != 0) s += "-" + a(hi);
  if (r.port_min) {
    s += ":" + std::to_string(r.port_min);
    if (r.port_max != r.port_min) s += "-" + std::to_string(r.port_max);
  }
  return s;
}

bool uses_nat(const std::vector<Rule>& rules) {
  for (const Rule& r : rules)
    for (const Action& a : r.actions)
      if (a.type == ActType::kCt && a.nat.kind != ctrack::NatKind::kNone) return true;
  return false;
}

std::string ct_state_str(uint8_t b) {
  std::string s;
  if (b & ctrack::kCtTrk) s += "+trk";
  if (b & ctrack::kCtNew) s += "+new";
  if (b & ctrack::kCtEst) s += "+est";
  if (b & ctrack::kCtRel) s += "+rel";
  if (b & ctrack::kCtRpl) s += "+rpl";
  if (b & ctrack::kCtInv) s += "+inv";
  if (b & ctrack::kCtUntracked) s += "+untracked";
  return s.empty() ? "-trk" : s;
}

}  // namespace dp
