// Conntrack (a stage of the tables, after each table's actions): the
// packets waiting at a ct() through the tracker in groups, then on with the
// rest of their rule's actions.
#pragma once

#include "pipeline/burst.h"
#include "features/nat/stage.h"

namespace dp {

using stage::PktState;

// Conntrack for the packets waiting at a ct(), grouped by Action::ct_group
// (zone, commit, NAT range); non-IP packets stay untracked. Then each goes
// on: to the ct's table, or the rest of its rule's actions.
//
// A pass of one group (the usual case) is one call of the tracker. With
// several groups, each is a call, and a connection's packets keep their
// burst order across them: every packet is looked up first, and a packet
// waits for a later call while an earlier packet of its connection (the
// same entry, or the same canonical hash where there is none yet) is in a
// group not yet run.
inline void Datapath::conntrack(Burst& b) {
  PktState* s = b.s;
  const uint32_t nct = b.nct;
  const uint32_t* ctq = b.ctq;
  const ctrack::Packet* cpk[kMaxBurst];
  const ctrack::Tracker::Found* cfd[kMaxBurst];
  ctrack::CtResult res[kMaxBurst];
  ctrack::Key nat_to[kMaxBurst];
  bool done[kMaxBurst] = {};
  const uint32_t* grp = b.ctg;
  const bool multi = b.ct_multi;
  // With several groups: each packet's connection (id), from its lookup.
  ctrack::Tracker::Found looked[kMaxBurst];
  const ctrack::Tracker::Found* fnd[kMaxBurst];
  uint64_t id[kMaxBurst];
  if (multi) [[unlikely]] {
    const ctrack::Packet* lp[kMaxBurst];
    uint32_t lx[kMaxBurst], nl = 0;
    for (uint32_t x = 0; x < nct; x++) {
      PktState& p = s[ctq[x]];
      fnd[x] = nullptr;
      id[x] = 0;  // none: orders against nothing (untracked, or tracked already by the flow cache)
      if (p.key.kind == 0 || p.have_ct) continue;
      // (All in one lookup, not the flow cache's where it made one: that
      // was made before the cache's hits and earlier passes ran, and an
      // identity from it could differ from one made now for another packet
      // of the same connection, an entry freed or made in between.)
      p.parsed.ct.key.zone = b.acts[b.crules[p.rule].first + p.resume].zone;
      lp[nl] = &p.parsed.ct;
      lx[nl++] = x;
    }
    if (nl) ct_->lookup(lp, nl, looked);
    for (uint32_t k = 0; k < nl; k++) fnd[lx[k]] = &looked[k];
    for (uint32_t x = 0; x < nct; x++)
      if (const ctrack::Tracker::Found* f = fnd[x])
        id[x] = f->conn != ctrack::kNoConn ? 1ull << 32 | f->conn : 2ull << 32 | f->hash;
  }
  for (uint32_t a = 0; a < nct; a++) {
    if (done[a]) continue;
    const CompiledRule& lr = b.crules[s[ctq[a]].rule];
    const uint32_t lead_act = lr.first + s[ctq[a]].resume;
    const Action& lead = b.acts[lead_act];
    uint32_t ng = 0, nall = 0, all[kMaxBurst];
    uint64_t wait[kMaxBurst];  // connections with a packet in a group not yet run
    uint32_t nw = 0;
    bool any_found = false;
    for (uint32_t x = a; x < nct; x++) {
      if (done[x] || grp[x] != grp[a]) {
        if (multi && !done[x] && id[x]) wait[nw++] = id[x];
        continue;
      }
      if (multi) {
        bool waits = false;
        for (uint32_t w = 0; w < nw && !waits && id[x]; w++) waits = wait[w] == id[x];
        if (waits) {
          wait[nw++] = id[x];
          continue;
        }
      }
      done[x] = true;
      PktState& p = s[ctq[x]];
      if (p.key.kind == 0) continue;
      all[nall++] = ctq[x];
      if (p.have_ct) continue;  // the flow cache ran this ct() already
      const Action& act = b.acts[b.crules[p.rule].first + p.resume];
      p.parsed.ct.key.zone = act.zone;
      // A second ct() in the zone of the first finds the same connection:
      // its counters take the packet once.
      if (p.ct_zone == act.zone) p.parsed.ct.meta |= ctrack::kMetaCounted;
      else p.parsed.ct.meta &= static_cast<uint8_t>(~ctrack::kMetaCounted);
      // The flow cache's lookup, for the first ct() (in its zone), or the
      // one made above.
      cfd[ng] = multi ? fnd[x] : p.have_found && p.ncts == 0 && act.zone == b.fast_zone ? &p.found : nullptr;
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
        if (res[k].nat && !p.natted) {
          translate(b, all[g], nat_to[k]);
          p.nat_to = nat_to[k];  // (remember_path records the rewrite from it)
        }
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
      if (r.conn != ctrack::kNoConn && (r.state & ctrack::kCtNew)) tag(r.conn).gen = 0;
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
