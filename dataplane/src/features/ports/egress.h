// Egress (the last stage of Datapath::run before the notes): the egress
// MTU, a tunnel's outer headers included; IPv4 without DF leaves in
// fragments.
#pragma once

#include "pipeline/burst.h"
#include "features/flow_cache/stage.h"

namespace dp {

using stage::PktState;

// The egress MTU of each packet going out: a tunnel's outer IPv4 packet
// (the inner frame and the outer headers but Ethernet), or the IP packet;
// IPv4 without DF leaves in fragments (a router's job).
// With kPaths (the flow cache is in the stage list), first the packet's
// path goes into the flow cache (flow_cache/stage.h), in the same loop.
template <bool kPaths, bool kEncaps>
inline void Datapath::egress(Burst& b) {
  const Pipeline& pl = b.pl;
  Verdict* out = b.out;
  for (uint32_t i = 0; i < b.n; i++) {
    PktState& p = b.s[i];
    if (kPaths && b.fast) remember_path(b, i);
    if (out[i].out_port < 0) continue;
    if (kEncaps && out[i].encap) {
      const Pipeline::Encap& e = pl.encaps_[out[i].encap - 1u];
      if (b.in[i].pkt_len - p.off + (e.len - net::kEthLen) > mtu_[out[i].out_port]) {
        b.drop(i, DropWhy::kEncapMtu);
        out[i].out_port = -1;
      } else {
        b.st.tunnel[e.counter]++;
      }
    } else if (b.l3len[i] > mtu_[out[i].out_port]) {
      if (p.df_clear) {  // a router's job: IPv4 without DF leaves in fragments
        out[i].frag_mtu = mtu_[out[i].out_port];
        out[i].l2_len = static_cast<uint8_t>(p.parsed.l3_off);
      } else {
        b.drop(i, DropWhy::kTxMtu);
        out[i].out_port = -1;
      }
    }
  }
}

}  // namespace dp
