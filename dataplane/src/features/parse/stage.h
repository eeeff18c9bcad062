// Rx (the first stage of Datapath::run): a tunnel's decap where the port
// terminates one, the NIC's mark, the parse (or the NIC stage's), the
// ingress MTU, IP fragments, and which worker owns the connection.
#pragma once

#include <algorithm>

#include "pipeline/burst.h"
#include "features/fragments/table.h"
#include "ctrack/parse.h"

namespace dp {

using stage::PktState;
using stage::begin_packet;
using stage::l3_bytes;
using stage::ip_claimed;

// Packet i's parse (or the NIC stage's), its ingress MTU and, for an IP
// fragment, the fragment table. False: it left the burst (dropped, or held).
// (Always inlined: as a call per packet it cost new connections 3-5 %.)
__attribute__((always_inline)) inline bool Datapath::rx_parse(Burst& b, uint32_t i, uint32_t flen, uint32_t mtu_from, RxCounts& c) {
  const PacketIn* in = b.in;
  Verdict* out = b.out;
  PktState& p = b.s[i];
  const uint16_t mtu = mtu_[in[i].port];
  if (p.off == 0 && !in[i].parsed && ctrack::parse_ip4_plain(in[i].data, flen, 0, &p.parsed)) {
    // Untagged IPv4 without options, not a fragment, TCP (no options, or
    // Linux's timestamps) or UDP (ctrack's lane): what follows for any
    // frame, with what that parse knows (no tunnel, IP at 14).
    b.l3len[i] = in[i].pkt_len - 14;
    p.df_clear = !(in[i].data[14 + 6] & 0x40);
    if (in[i].pkt_len - 14 > mtu && !(reasm_in_[in[i].port] && p.df_clear)) {
      b.drop(i, DropWhy::kRxOversize);
      return false;
    }
    p.parsed.ct.in_port = static_cast<uint8_t>(in[i].port);
    return true;
  }
  // The same for a decapsulated inner frame (a lane of its own: the plain
  // one above stays as it was): the MTU bounds its inner IP packet on the
  // way out, the outer IP packet on the way in; a connection it starts
  // stays in software.
  if (p.off && ctrack::parse_ip4_plain(in[i].data + p.off, flen - p.off, 0, &p.parsed)) {
    b.l3len[i] = flen - p.off - 14;
    p.df_clear = !(in[i].data[p.off + 14 + 6] & 0x40);
    if (in[i].pkt_len - mtu_from > mtu) {
      b.drop(i, DropWhy::kRxOversize);
      return false;
    }
    p.parsed.ct.in_port = static_cast<uint8_t>(in[i].port);
    p.parsed.ct.meta |= ctrack::kMetaNoOffload;
    return true;
  }
  ctrack::Drop d;
  if (in[i].parsed && p.off == 0) {  // the NIC stage's parse
    p.parsed = *in[i].parsed;
    d = in[i].parse_drop;
  } else {
    d = ctrack::parse_packet(in[i].data + p.off, flen - p.off, 0, &p.parsed);
  }
  if (d != ctrack::Drop::kNone) {
    // A frame as long as the port takes (the MTU, less up to two VLAN
    // tags the port's frame limit may count) whose IP length goes past
    // it and past the MTU: the port cut an oversize packet short
    // (af_packet truncates to its ring's frame size), not a malformed
    // header. A short frame claiming more is malformed.
    if (d == ctrack::Drop::kIpLen && p.off == 0 && in[i].pkt_len - p.parsed.l3_off + 8u >= mtu &&
        ip_claimed(in[i].data, in[i].len, p.parsed) > mtu) {
      b.drop(i, DropWhy::kRxOversize);
    } else {
      b.st.parse_drop[static_cast<int>(d)]++;
      p.why = static_cast<uint8_t>(PacketNote::kParseDrop | static_cast<uint8_t>(d));
    }
    return false;
  }
  b.l3len[i] = (p.off ? flen : in[i].pkt_len) - p.off - p.parsed.l3_off;
  const uint8_t* ip = in[i].data + p.off + p.parsed.l3_off;
  p.df_clear = p.parsed.kind == ctrack::L3Kind::kIp && p.parsed.ct.key.family == 4 && !(ip[6] & 0x40);
  if (in[i].pkt_len - (p.off ? mtu_from : p.parsed.l3_off) > mtu &&  // the frame as the port took it
      !(reasm_in_[in[i].port] && p.off == 0 && p.df_clear)) {         // (or as its kernel put it together)
    b.drop(i, DropWhy::kRxOversize);
    return false;
  }
  if (p.parsed.frag != ctrack::Parsed::kFragNone) {
    FragNote fn = in[i].frag;
    if (!fn.valid) {
      DropWhy why = DropWhy::kCount;
      const FragTable::Out o = frags_->on_fragment(p.parsed, ip, in[i].port, p.tun_id, in[i].cookie,
                                                   in[i].pkt_len, b.now_ns, &fn, &why);
      if (o == FragTable::Out::kHeld) {  // counted when it leaves the table
        out[i].held = true;
        c.handed++;
        c.handed_bytes += in[i].pkt_len;
        return false;
      }
      if (o == FragTable::Out::kDrop) {
        b.drop(i, why);
        return false;
      }
    }
    ctrack::Packet& cp = p.parsed.ct;
    if (p.parsed.frag == ctrack::Parsed::kFragLater) {  // its first fragment's ports
      cp.key.sport = fn.sport;
      cp.key.dport = fn.dport;
      cp.tcp_flags = fn.tcp_flags;
    } else if (fn.total && cp.key.proto == IPPROTO_TCP) {  // the segment's whole length
      cp.payload_len = static_cast<uint16_t>(fn.total - (p.parsed.frag_len - cp.payload_len));
    }
    out[i].frag = fn;
  }
  p.parsed.ct.in_port = static_cast<uint8_t>(in[i].port);
  if (p.off) p.parsed.ct.meta |= ctrack::kMetaNoOffload;
  return true;
}

// One packet of rx (ingress's loop, and the flow cache's lane for what it
// does not take): a tunnel's decap (kTunnels), or what the first worker
// carried; the NIC's mark; parse, the ingress MTU and connection ownership.
// It leaves the packet in the tables (table 0, counted in b.active) or out
// of them (dropped, held, handed off).
template <bool kTunnels>
__attribute__((always_inline)) inline void Datapath::rx_one(Burst& b, uint32_t i, RxCounts& c) {
  const PacketIn* in = b.in;
  Verdict* out = b.out;
  WorkerStats& st = b.st;
  out[i] = stage::kFreshVerdict;
  PktState& p = b.s[i];
  begin_packet(p, b.fast);
  // The frame's bytes the parse may read (a decapsulated frame: up to the
  // outer datagram's end) and where the IP packet the MTU bounds starts.
  uint32_t flen = in[i].len, mtu_from = 0;
  const bool carried = in[i].carried;
  if (carried) {  // handed to us: the receiving worker's decap and parse
    const Carried& cr = *in[i].carry;
    p.parsed = cr.parsed;
    p.off = cr.off;
    p.tun_id = cr.tun_id;
    p.decap_counter = cr.decap_counter;
    p.df_clear = cr.df_clear;
    b.l3len[i] = cr.l3len;
    out[i].strip = cr.off;
    out[i].frag = in[i].frag;
  } else if (const uint8_t tunnels = kTunnels ? b.pl.decap_on_[in[i].port] : 0) {
    const Decap dc = tunnel_decap(tunnels, in[i].data, in[i].len, b.pl.ov_, &p.decap_counter);
    if (dc.why != DropWhy::kCount) {
      b.drop(i, dc.why);
      return;
    }
    if (dc.off) {  // a tunnel to us (0: another frame, for the tables as it is)
      p.off = dc.off;
      p.tun_id = dc.vni;
      out[i].strip = dc.off;
      flen = dc.end;
      mtu_from = dc.l3;  // the outer IP packet, whatever tag came before it
    }
  }
  // The NIC's marks and parse are of the outer frame: a decapsulated one
  // takes neither.
  if (p.off == 0 && in[i].has_mark && b.hw && (in[i].mark & HwMarkTable::kTag)) {
    uint32_t idx = in[i].mark & ~HwMarkTable::kTag;
    if (idx & HwMarkTable::kRule) {
      idx &= ~HwMarkTable::kRule;
      if (idx < b.pl.table0_by_id_.size()) p.pre = b.pl.table0_by_id_[idx];
      if (p.pre >= 0) st.hw_marked++;
      p.hw_marked = b.noting && p.pre >= 0;
    } else if (idx < b.hw->out_port.size() && b.hw->out_port[idx] >= 0) {
      out[i].out_port = b.hw->out_port[idx];
      out[i].mark = in[i].mark;
      b.l3len[i] = l3_bytes(in[i].data, in[i].len, in[i].pkt_len);
      st.hw_marked++;
      p.hw_marked = b.noting;
      return;
    }
  }
  if (!carried && !rx_parse(b, i, flen, mtu_from, c)) return;  // the parse, ingress MTU, fragments
  if (p.parsed.kind == ctrack::L3Kind::kIp) {
    if (steer_ && !carried) {
      unsigned owner = steer_->owner(p.parsed.ct.key);
      if (owner != self_) {
        if (Carried* cr = in[i].carry) *cr = Carried{p.parsed, p.tun_id, b.l3len[i], p.off, p.decap_counter, p.df_clear};
        out[i].handoff = static_cast<int8_t>(owner);
        c.handoffs++;
        c.handed++;
        c.handed_bytes += in[i].pkt_len;
        return;  // the owner counts it (and with no carry, decapsulates and parses it again)
      }
    }
    if (p.parsed.frag == ctrack::Parsed::kFragFirst) {
      c.firsts[c.nfirst++] = p.parsed.frag_id;
    } else if (p.parsed.frag == ctrack::Parsed::kFragLater && c.nfirst &&
               std::find(c.firsts, c.firsts + c.nfirst, p.parsed.frag_id) != c.firsts + c.nfirst) {
      frags_->defer(in[i].cookie, out[i].frag);  // after its first's connection is made
      out[i].held = true;
      c.handed++;
      c.handed_bytes += in[i].pkt_len;
      return;
    }
    p.key.kind = p.parsed.ct.key.family;
  } else {
    p.key.kind = 0;
    p.key.other_type = p.parsed.kind == ctrack::L3Kind::kNd ? kEthNd : p.parsed.ethertype;
  }
  if (p.off) st.tunnel[p.decap_counter]++;  // here: by the worker that keeps it
  p.table = 0;
  b.active++;
}

// Rx's counters for the burst: counted where they are judged (the owner),
// not where they came in (held fragments: when they leave the table).
inline void Datapath::rx_counted(Burst& b, uint64_t rx_bytes, const RxCounts& c, size_t dropped_before) {
  b.st.rx_packets += b.n - c.handed;
  b.st.rx_bytes += rx_bytes - c.handed_bytes;
  b.st.handoff_out += c.handoffs;
  count_dropped_fragments(dropped_before);
}

// Rx: each packet's rx_one.
// (Counters are summed in locals and stored once: a per-packet increment of
// one memory word is a dependency chain through store forwarding.)
template <bool kTunnels>
inline void Datapath::ingress(Burst& b) {
  uint64_t rx_bytes = 0;
  RxCounts c;  // what left for another worker or the fragment table: counted there
  const size_t dropped_before = frags_->dropped().size();
  for (uint32_t i = 0; i < b.n; i++) {
    rx_bytes += b.in[i].pkt_len;
    rx_one<kTunnels>(b, i, c);
  }
  rx_counted(b, rx_bytes, c, dropped_before);
}

}  // namespace dp
