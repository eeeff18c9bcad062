// Geneve (RFC 8926; OVN's tunnel between chassis): the tunnel module
// (features/overlay/tunnel.h says what a module declares).
//
// Decap of frames to this VTEP's UDP port (6081 unless overlay.geneve.
// udp_port) on its underlay port: version 0 only, the O bit (a control
// message) dropped, an Ethernet payload (protocol type 0x6558) only, the
// options walked within Opt Len (each length-checked) and one with the
// critical bit dropped unless overlay.geneve.accept_options lists its
// class:type (it is then accepted and ignored; a non-critical option is
// ignored). Encap: encap(geneve,vni=N,remote=IP[,opt=CLASS:TYPE:DATA]...),
// the options as written (DATA in hex, a multiple of 4 bytes), C set when
// one has the critical bit. The NIC (features/geneve/nic.h, the mlx5 model):
// a connection's encap anywhere (a RAW_ENCAP of these headers); its decap
// under DV software steering only, for frames without options (no GENEVE
// item in 22.11's hardware steering: there Geneve decap is software's).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "features/overlay/tunnel.h"
#include "net/geneve.h"
#include "sdn/number.h"

namespace dp {

struct Geneve {
  static constexpr TunnelKind kKind = TunnelKind::kGeneve;
  static constexpr const char* kDisplay = "Geneve";
  static constexpr uint16_t kUdpPort = net::kGenevePort;
  static constexpr Tunnel kDecapCounter = Tunnel::kGeneveDecap, kEncapCounter = Tunnel::kGeneveEncap;
  static constexpr const char* kArgs = "geneve vni=N remote=IP opt=CLASS:TYPE:HEXDATA";
  static constexpr const char* kOptionKey = "accept_options";
  // The offload: a table-0 rule's flow may not encap (before any
  // connection, no UDP source port); a connection's may; the NIC matches
  // Geneve and decapsulates it under DV only (features/geneve/nic.h):
  // kHwsDecapRefuse says why not under HWS.
  static constexpr const char* kRuleEncapRefuse = "encap(geneve): Geneve encap runs in software";
  static constexpr const char* kConnEncapRefuse = nullptr;
  static constexpr const char* kConnDecapRefuse = nullptr;
  // (mlx5_flow_hw.c:4818-4851, hws/mlx5dr_definer.c:1603-1606; the model's
  // rule hws-geneve.) Short: it names a refused_ counter.
  static constexpr const char* kHwsDecapRefuse = "Geneve decap: no GENEVE item in 22.11 hardware steering";

  // Per packet.
  static Decap decap(const uint8_t* d, uint32_t len, const TunnelConfig& c) {
    static constexpr DecapWhy w{DropWhy::kGeneveHeader, DropWhy::kGeneveTrunc, DropWhy::kGeneveRemote,
                                DropWhy::kGeneveMac};
    const uint8_t* g = nullptr;
    bool not_ours = false;
    Decap r = udp_tunnel_outer(d, len, c, w, net::kGeneveLen, &g, &not_ours);
    if (not_ours || r.why != DropWhy::kCount) return r;
    net::GeneveHeader h;
    switch (net::parse_geneve(g, r.end - static_cast<uint32_t>(g - d), &h)) {
      case net::GeneveError::kNone: break;
      case net::GeneveError::kVersion: return fail(r, DropWhy::kGeneveVersion);
      case net::GeneveError::kShort:
      case net::GeneveError::kOptLen: return fail(r, DropWhy::kGeneveTrunc);
      case net::GeneveError::kOptionLen: return fail(r, DropWhy::kGeneveHeader);
    }
    if (h.oam) return fail(r, DropWhy::kGeneveControl);
    if (h.proto != net::kEthTeb) return fail(r, DropWhy::kGeneveHeader);
    const uint32_t hdr_len = h.len;
    r.vni = h.vni;
    if (!c.has_vni(r.vni)) return fail(r, DropWhy::kGeneveVni);
    if (h.has_critical) {  // each critical option must be one overlay.geneve.accept_options lists
      uint32_t at = 0;
      net::GeneveOption o;
      while (net::geneve_next_option(h.opts, h.opts_len, &at, &o))
        if (net::geneve_critical(o) &&
            !std::binary_search(c.options.begin(), c.options.end(), option_key(o.cls, o.type)))
          return fail(r, DropWhy::kGeneveCritical);
    }
    decap_inner(r, d, g, hdr_len, DropWhy::kGeneveTrunc);
    return r;
  }

  // Control path. opt=CLASS:TYPE:HEXDATA, as many as fit kTunnelOptMax.
  static bool parse_encap_arg(std::string_view arg, Action* a, std::string* err) {
    if (arg.rfind("opt=", 0) != 0) return false;
    const std::string v(arg.substr(4));
    const size_t c1 = v.find(':'), c2 = c1 == std::string::npos ? c1 : v.find(':', c1 + 1);
    double cls = 0, type = 0;
    if (c2 == std::string::npos || !sdn::parse_number(v.substr(0, c1), true, 0, 0xFFFF, &cls) ||
        !sdn::parse_number(v.substr(c1 + 1, c2 - c1 - 1), true, 0, 0xFF, &type)) {
      *err = "opt must be CLASS:TYPE:HEXDATA (class 0..0xffff, type 0..0xff)";
      return false;
    }
    std::string hex = v.substr(c2 + 1);
    if (hex.rfind("0x", 0) == 0) hex = hex.substr(2);
    uint8_t data[124];
    const size_t n = hex.size() / 2;
    if (hex.size() % 8 != 0 || n > sizeof data) {
      *err = "opt data must be a multiple of 4 bytes in hex, at most 124";
      return false;
    }
    for (size_t i = 0; i < n; i++) {
      unsigned b = 0;
      for (char ch : hex.substr(2 * i, 2)) {
        const int x = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                      : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (x < 0) {
          *err = "opt data must be hexadecimal";
          return false;
        }
        b = b << 4 | static_cast<unsigned>(x);
      }
      data[i] = static_cast<uint8_t>(b);
    }
    if (a->opt_len + 4 + n > kTunnelOptMax) {
      *err = "options longer than " + std::to_string(kTunnelOptMax) + " bytes";
      return false;
    }
    const net::GeneveOption o{static_cast<uint16_t>(cls), static_cast<uint8_t>(type), data, static_cast<uint8_t>(n)};
    a->opt_len = static_cast<uint8_t>(a->opt_len + net::put_geneve_option(a->opts + a->opt_len, o));
    return true;
  }
  static uint32_t encap_template(const TunnelConfig& c, const TunnelRemote& r, const Action& a, uint8_t* hdr) {
    uint32_t n = put_udp_outer_template(hdr, c, r);
    // The action's options as parse_encap_arg wrote them, read back.
    net::GeneveOption opts[kTunnelOptMax / 4];
    uint32_t nopts = 0, at = 0;
    while (nopts < kTunnelOptMax / 4 && net::geneve_next_option(a.opts, a.opt_len, &at, &opts[nopts])) nopts++;
    return n + net::put_geneve(hdr + n, net::Geneve{a.vni, opts, nopts});
  }
  // accept_options: CLASS:TYPE.
  static std::string parse_option(const std::string& s, uint32_t* out) {
    const size_t c = s.find(':');
    double cls = 0, type = 0;
    if (c == std::string::npos || !sdn::parse_number(s.substr(0, c), true, 0, 0xFFFF, &cls) ||
        !sdn::parse_number(s.substr(c + 1), true, 0, 0xFF, &type))
      return "expected CLASS:TYPE (class 0..0xffff, type 0..0xff)";
    *out = option_key(static_cast<uint16_t>(cls), static_cast<uint8_t>(type));
    return "";
  }

 private:
  static uint32_t option_key(uint16_t cls, uint8_t type) { return static_cast<uint32_t>(cls) << 8 | type; }
  static Decap fail(Decap r, DropWhy why) {
    r.why = why;
    return r;
  }
};

}  // namespace dp
