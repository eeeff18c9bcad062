// Conntrack (a stage of the tables, after each table's actions): the
// packets waiting at a ct() through the tracker in groups, then on with the
// rest of their rule's actions.
#pragma once

#include "pipeline/burst.h"
#include "features/nat/stage.h"

namespace dp {

using stage::PktState;

// Conntrack for the packets waiting at a ct(), grouped by (zone, commit, nat);
// non-IP packets stay untracked. Then each goes on: to the ct's table, or
// the rest of its rule's actions.
inline void Datapath::conntrack(Burst& b) {
  PktState* s = b.s;
  const uint32_t nct = b.nct;
  const uint32_t* ctq = b.ctq;
  const ctrack::Packet* cpk[kMaxBurst];
  const ctrack::Tracker::Found* cfd[kMaxBurst];
  ctrack::CtResult res[kMaxBurst];
  ctrack::Key nat_to[kMaxBurst];
  bool done[kMaxBurst] = {};
  for (uint32_t a = 0; a < nct; a++) {
    if (done[a]) continue;
    const CompiledRule& lr = b.crules[s[ctq[a]].rule];
    const uint32_t lead_act = lr.first + s[ctq[a]].resume;
    const Action& lead = b.acts[lead_act];
    uint32_t ng = 0, nall = 0, all[kMaxBurst];
    bool any_found = false;
    for (uint32_t x = a; x < nct; x++) {
      if (done[x]) continue;
      const Action& act = b.acts[b.crules[s[ctq[x]].rule].first + s[ctq[x]].resume];
      if (act.ct_group != lead.ct_group) continue;  // (zone, commit and NAT range)
      done[x] = true;
      PktState& p = s[ctq[x]];
      if (p.key.kind == 0) continue;
      all[nall++] = ctq[x];
      if (p.have_ct) continue;  // the flow cache ran this ct() already
      p.parsed.ct.key.zone = act.zone;
      // A second ct() in the zone of the first finds the same connection:
      // its counters take the packet once.
      if (p.ct_zone == act.zone) p.parsed.ct.meta |= ctrack::kMetaCounted;
      else p.parsed.ct.meta &= static_cast<uint8_t>(~ctrack::kMetaCounted);
      // The flow cache's lookup, for the first ct() (in its zone).
      cfd[ng] = p.have_found && p.ncts == 0 && act.zone == b.fast_zone ? &p.found : nullptr;
      any_found |= cfd[ng] != nullptr;
      cpk[ng++] = &p.parsed.ct;
    }
    const ctrack::NatRange* nat = lead.nat.kind != ctrack::NatKind::kNone ? &lead.nat : nullptr;
    if (ng && any_found) ct_->process_found(cpk, cfd, ng, b.now_ns, lead.commit, res, nat, nat_to);
    else if (ng) ct_->process(cpk, ng, b.now_ns, lead.commit, res, nat, nat_to);
    for (uint32_t g = 0, k = 0; g < nall; g++) {
      PktState& p = s[all[g]];
      ctrack::CtResult r;
      if (p.have_ct) {
        r = p.first;
        p.have_ct = false;
        if (r.nat && !p.natted) translate(b, all[g], p.nat_to);
      } else {
        if (res[k].nat && !p.natted) translate(b, all[g], nat_to[k]);
        r = res[k++];
      }
      p.ct_state = r.state;
      if (++p.ncts == 1) {
        p.first = r;
        p.first_commit = lead.commit;
        p.first_act = lead_act;
        if (lead.zone != b.fast_zone) p.cacheable = false;
      } else {
        p.cacheable = false;
      }
      // A new entry (or one reused for a new connection) has no path yet.
      if (r.conn != ctrack::kNoConn && (r.state & ctrack::kCtNew)) cache_[r.conn].gen = 0;
      if (r.conn != ctrack::kNoConn) p.ct_zone = lead.zone;
      if (lead.commit && (r.reason == ctrack::Invalid::kTableFull || r.reason == ctrack::Invalid::kZoneLimit))
        p.ct_zone = -2;  // commit failed under full_policy: drop
      if (r.reason == ctrack::Invalid::kNatExhausted) p.ct_zone = -3;
      if (r.reason == ctrack::Invalid::kNatFamily) p.ct_zone = -4;
      p.key.ct(r.state, lead.zone);
    }
  }
  for (uint32_t a = 0; a < nct; a++) {
    uint32_t i = ctq[a];
    PktState& p = s[i];
    b.out[i].ct_state = p.ct_state;
    if (p.ct_zone <= -2) {
      b.drop(i, p.ct_zone == -2   ? DropWhy::kCtFull
                : p.ct_zone == -3 ? DropWhy::kNatExhausted
                                  : DropWhy::kNatFamily);
      p.cacheable = false;
      b.done(i);
      continue;
    }
    exec(b, i, p.resume, true);
  }
}

}  // namespace dp
