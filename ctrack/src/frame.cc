#include "ctrack/frame.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "net/checksum.h"
#include "net/headers.h"

namespace ctrack {

namespace {

void put16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v >> 16));
  put16(b, static_cast<uint16_t>(v));
}

}  // namespace

std::vector<uint8_t> build_frame(const FrameSpec& s) {
  uint8_t sa[16] = {}, da[16] = {};
  bool v6 = s.src.find(':') != std::string::npos;
  inet_pton(v6 ? AF_INET6 : AF_INET, s.src.c_str(), sa);
  inet_pton(v6 ? AF_INET6 : AF_INET, s.dst.c_str(), da);

  std::vector<uint8_t> l4;
  if (s.proto == IPPROTO_TCP) {
    std::vector<uint8_t> opt = s.tcp_options;
    while (opt.size() % 4) opt.push_back(0);
    put16(l4, s.sport);
    put16(l4, s.dport);
    put32(l4, s.seq);
    put32(l4, s.ack);
    l4.push_back(static_cast<uint8_t>(((20 + opt.size()) / 4) << 4));
    l4.push_back(s.tcp_flags);
    put16(l4, s.win);
    put32(l4, 0);  // checksum, urgent
    l4.insert(l4.end(), opt.begin(), opt.end());
  } else if (s.proto == IPPROTO_UDP) {
    put16(l4, s.sport);
    put16(l4, s.dport);
    put16(l4, static_cast<uint16_t>(8 + s.payload));
    put16(l4, 0);
  } else if (s.proto == IPPROTO_ICMP || s.proto == IPPROTO_ICMPV6) {
    l4.push_back(s.icmp_type);
    l4.push_back(s.icmp_code);
    put16(l4, 0);
    if (s.inner.empty()) {
      put16(l4, s.icmp_id);
      put16(l4, s.icmp_seq);
    } else {
      put32(l4, 0);
      l4.insert(l4.end(), s.inner.begin(), s.inner.end());
    }
  }
  l4.insert(l4.end(), s.payload, 0x5a);

  // L4 checksum (with the pseudo-header for TCP, UDP and ICMPv6).
  size_t csum_off = s.proto == IPPROTO_TCP ? 16 : s.proto == IPPROTO_UDP ? 6 : 2;
  if (s.proto == IPPROTO_TCP || s.proto == IPPROTO_UDP || s.proto == IPPROTO_ICMPV6 || s.proto == IPPROTO_ICMP)
    net::put16(l4.data() + csum_off,
          net::l4_checksum(sa, da, v6 ? 16 : 4, s.proto, l4.data(), static_cast<uint32_t>(l4.size())));

  std::vector<uint8_t> f(s.dst_mac, s.dst_mac + 6);
  f.insert(f.end(), s.src_mac, s.src_mac + 6);
  if (s.vlan >= 0) {
    put16(f, 0x8100);
    put16(f, static_cast<uint16_t>(s.vlan));
  }
  put16(f, v6 ? 0x86DD : 0x0800);
  size_t ip = f.size();
  if (!v6) {
    f.push_back(0x45);
    f.push_back(0);
    put16(f, static_cast<uint16_t>(20 + l4.size()));
    put16(f, s.ip_id);
    put16(f, s.df ? 0x4000 : 0);
    f.push_back(s.ttl);
    f.push_back(s.proto);
    put16(f, 0);
    f.insert(f.end(), sa, sa + 4);
    f.insert(f.end(), da, da + 4);
    net::ipv4_set_checksum(f.data() + ip, 20);
  } else {
    put32(f, 0x60000000);
    put16(f, static_cast<uint16_t>(l4.size()));
    f.push_back(s.proto);
    f.push_back(s.ttl);
    f.insert(f.end(), sa, sa + 16);
    f.insert(f.end(), da, da + 16);
  }
  f.insert(f.end(), l4.begin(), l4.end());
  while (f.size() < 60) f.push_back(0);  // Ethernet minimum (without FCS)
  return f;
}

std::vector<uint8_t> vxlan_frame(FrameSpec outer, uint32_t vni, const std::vector<uint8_t>& inner) {
  outer.vlan = -1;
  outer.proto = 17;
  outer.dport = net::kVxlanPort;
  outer.payload = 8 + inner.size();
  std::vector<uint8_t> f = build_frame(outer);
  f.resize(42);
  f[40] = f[41] = 0;
  uint8_t vx[net::kVxlanLen];
  net::put_vxlan(vx, vni);
  f.insert(f.end(), vx, vx + net::kVxlanLen);
  f.insert(f.end(), inner.begin(), inner.end());
  return f;
}

std::vector<std::vector<uint8_t>> fragment_frame(const std::vector<uint8_t>& frame, uint16_t mtu, uint32_t id6) {
  const size_t l2 = frame[12] == 0x81 && frame[13] == 0x00 ? 18 : 14;
  const bool v6 = frame[l2 - 2] == 0x86;
  const size_t hl = v6 ? 40 : (frame[l2] & 0x0F) * 4u;
  const size_t ip_len = v6 ? 40 + (frame[l2 + 4] << 8 | frame[l2 + 5]) : (frame[l2 + 2] << 8 | frame[l2 + 3]);
  const uint8_t* data = frame.data() + l2 + hl;
  const size_t total = ip_len - hl;
  const size_t step = ((mtu - hl - (v6 ? 8 : 0)) / 8) * 8;
  std::vector<std::vector<uint8_t>> out;
  for (size_t off = 0; off < total; off += step) {
    const size_t n = std::min(step, total - off);
    const bool more = off + n < total;
    std::vector<uint8_t> f(frame.begin(), frame.begin() + static_cast<long>(l2 + hl));
    if (v6) {
      const uint8_t next = f[l2 + 6];
      f[l2 + 6] = 44;
      put16(f, 0);
      f[f.size() - 2] = next;  // next header, reserved
      put16(f, static_cast<uint16_t>(off | (more ? 1 : 0)));
      put32(f, id6);
      net::put16(f.data() + l2 + 4, static_cast<uint16_t>(8 + n));
    } else {
      net::put16(f.data() + l2 + 2, static_cast<uint16_t>(hl + n));
      net::put16(f.data() + l2 + 6, static_cast<uint16_t>((more ? 0x2000 : 0) | off / 8));
      net::ipv4_set_checksum(f.data() + l2, hl);
    }
    f.insert(f.end(), data + off, data + off + n);
    while (f.size() < 60) f.push_back(0);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ctrack
