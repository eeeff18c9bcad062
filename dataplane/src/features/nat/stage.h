// NAT (per packet, where a ct(nat) or the flow cache gives a connection's
// translation): the bytes (features/nat/rewrite.h) and the classifier's key.
#pragma once

#include "pipeline/burst.h"
#include "features/nat/rewrite.h"

namespace dp {

using stage::PktState;

// A translated connection's packet: its bytes, then what the classifier
// reads in later tables. The tracker keeps being asked with the tuple the
// packet came in with (a second ct() finds the connection as the first did).
// plain: a frame the parse lane took and the flow cache judged (take_path:
// nat::rewrite_plain, and it never enters the tables).
[[gnu::always_inline]] inline void Datapath::translate(Burst& b, uint32_t i, const ctrack::Key& to, bool plain) {
  PktState& p = b.s[i];
  if (plain) nat::rewrite_plain(b.in[i].data + p.off, b.in[i].len - p.off, p.parsed, to);
  else nat::rewrite(b.in[i].data + p.off, b.in[i].len - p.off, p.parsed, to);
  b.st.tunnel[static_cast<int>(Tunnel::kNat)]++;
  if (plain || p.table < 0) return;  // the flow cache judged it: no table reads it (nor natted)
  p.natted = true;
  p.key.tuple(to);
}

// translate() of a lookup's done packet (the lane's, judged by the flow
// cache) from its direction's rewrite.
[[gnu::always_inline]] inline void Datapath::translate_plain(Burst& b, uint32_t i, const nat::PlainRewrite& rw) {
  nat::rewrite_plain_cached(b.in[i].data + b.s[i].off, b.s[i].parsed.ct.key.proto, rw);
  b.st.tunnel[static_cast<int>(Tunnel::kNat)]++;
}

}  // namespace dp
