#include "dataplane/packet_desc.h"

#include "ctrack/packet.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdlib>

namespace dp {

namespace {

bool number(const std::string& s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 10) return false;
  char* end;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (*end || v > max) return false;
  *out = v;
  return true;
}

// "10.0.0.1:1234" / "[fd00::1]:80" / "10.0.0.1" -> address, port (0 none).
bool endpoint(const std::string& s, bool want_port, std::string* addr, uint16_t* port) {
  std::string a = s, p;
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos) return false;
    a = s.substr(1, close - 1);
    if (close + 1 < s.size()) {
      if (s[close + 1] != ':') return false;
      p = s.substr(close + 2);
    }
  } else if (size_t c = s.find(':'); c != std::string::npos && s.find(':', c + 1) == std::string::npos) {
    a = s.substr(0, c);
    p = s.substr(c + 1);
  }
  in6_addr buf;
  if (inet_pton(AF_INET, a.c_str(), &buf) != 1 && inet_pton(AF_INET6, a.c_str(), &buf) != 1) return false;
  *addr = a;
  if (want_port != !p.empty()) return false;
  uint64_t v = 0;
  if (want_port && !number(p, 65535, &v)) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

}  // namespace

Result<PacketDesc> parse_packet_desc(const std::string& text, const PortNames& ports) {
  PacketDesc d;
  ctrack::FrameSpec& f = d.spec;
  bool have_port = false, have_proto = false, have_addrs = false;
  std::string tuple;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    std::string tok = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? text.size() + 1 : comma + 1;
    while (!tok.empty() && tok.front() == ' ') tok.erase(0, 1);
    while (!tok.empty() && tok.back() == ' ') tok.pop_back();
    if (tok.empty()) continue;
    size_t eq = tok.find('=');
    std::string k = eq == std::string::npos ? tok : tok.substr(0, eq), v = eq == std::string::npos ? "" : tok.substr(eq + 1);
    uint64_t n = 0;
    if (k == "in_port") {
      int p = ports.find(v);
      if (p < 0) return Status::error("in_port '" + v + "': no such port");
      d.in_port = static_cast<uint16_t>(p);
      have_port = true;
    } else if (eq == std::string::npos && (k == "tcp" || k == "udp" || k == "icmp" || k == "icmp6")) {
      f.proto = static_cast<uint8_t>(k == "tcp" ? int{IPPROTO_TCP} : k == "udp" ? int{IPPROTO_UDP} : k == "icmp" ? int{IPPROTO_ICMP} : int{IPPROTO_ICMPV6});
      have_proto = true;
    } else if (eq == std::string::npos && tok.find('>') != std::string::npos) {
      tuple = tok;
      have_addrs = true;
    } else if (k == "flags") {
      uint8_t fl = 0;
      for (char c : v) {
        switch (c) {
          case 'S': fl |= ctrack::kSyn; break;
          case 'A': fl |= ctrack::kAck; break;
          case 'F': fl |= ctrack::kFin; break;
          case 'R': fl |= ctrack::kRst; break;
          case 'P': fl |= ctrack::kPsh; break;
          case 'U': fl |= ctrack::kUrg; break;
          default: return Status::error("flags '" + v + "': use the letters S A F R P U");
        }
      }
      f.tcp_flags = fl;
    } else if (k == "vlan" && number(v, 4095, &n)) {
      f.vlan = static_cast<int>(n);
    } else if (k == "len" && number(v, 1400, &n)) {
      f.payload = n;
    } else if (k == "type" && number(v, 255, &n)) {
      f.icmp_type = static_cast<uint8_t>(n);
    } else if (k == "seq" && number(v, 0xFFFFFFFFull, &n)) {
      f.seq = static_cast<uint32_t>(n);
    } else if (k == "ack" && number(v, 0xFFFFFFFFull, &n)) {
      f.ack = static_cast<uint32_t>(n);
    } else if (k == "tun_id" && number(v, 0xFFFFFF, &n)) {
      d.tun_id = static_cast<uint32_t>(n);
    } else {
      return Status::error("'" + tok + "': not in_port=, tcp|udp|icmp|icmp6, A[:p]>B[:q], flags=, vlan=, len=, "
                           "type=, seq=, ack=, tun_id=");
    }
  }
  if (!have_port) return Status::error("in_port= is required");
  if (!have_proto || !have_addrs) return Status::error("a protocol (tcp, udp, icmp, icmp6) and A>B addresses are required");
  size_t gt = tuple.find('>');
  bool ports_too = f.proto == IPPROTO_TCP || f.proto == IPPROTO_UDP;
  if (!endpoint(tuple.substr(0, gt), ports_too, &f.src, &f.sport) ||
      !endpoint(tuple.substr(gt + 1), ports_too, &f.dst, &f.dport))
    return Status::error("'" + tuple + "': expected " +
                         (ports_too ? "10.0.0.1:1234>10.0.0.2:80 or [fd00::1]:1234>[fd00::2]:80"
                                    : "10.0.0.1>10.0.0.2 (no ports for icmp)"));
  bool v6a = f.src.find(':') != std::string::npos, v6b = f.dst.find(':') != std::string::npos;
  if (v6a != v6b) return Status::error("'" + tuple + "': both addresses IPv4 or both IPv6");
  if (f.proto == IPPROTO_ICMP && v6a) return Status::error("icmp with IPv6 addresses: use icmp6");
  if (f.proto == IPPROTO_ICMPV6 && !v6a) return Status::error("icmp6 with IPv4 addresses: use icmp");
  if (f.proto == IPPROTO_ICMPV6 && f.icmp_type == 8) f.icmp_type = 128;  // echo request
  return d;
}

}  // namespace dp
