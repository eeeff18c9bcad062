// The mbuf's part of a tunnel verdict (the worker, hwcheck, the benchmark):
// a decapsulated frame's outer headers come off, an encapsulated one's go
// on, in the buffer's headroom.
#pragma once

#include <rte_mbuf.h>

#include "dataplane/pipeline.h"
#include "features/overlay/outer.h"

namespace dp {

// False: no headroom for the outer headers (encap_headroom).
inline bool apply_tunnel(const Pipeline& pl, rte_mbuf* m, const Verdict& v) {
  if (v.strip) rte_pktmbuf_adj(m, v.strip);
  if (!v.encap) return true;
  const uint32_t inner = m->pkt_len;
  const Pipeline::Encap& e = pl.encap(v.encap);
  auto* h = reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(m, e.len));
  if (!h) return false;
  write_outer(h, e, inner, v.encap_sport);
  return true;
}

}  // namespace dp
