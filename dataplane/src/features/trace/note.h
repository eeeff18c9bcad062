// Live-trace notes (after the stages, when a trace asks): what happened
// to each packet, and the rules it took.
#pragma once

#include "pipeline/burst.h"

namespace dp {

using stage::PktState;

// What happened to each packet, for a live trace.
inline void Datapath::note(const Burst& b, PacketNote* notes) const {
  for (uint32_t i = 0; i < b.n; i++) {
    const PktState& p = b.s[i];
    PacketNote& o = notes[i];
    o.why = p.why;
    o.cached = p.cached != nullptr;
    o.hw_marked = p.hw_marked;
    o.nrules = 0;
    if (p.cached) {
      for (uint32_t r = 0; r < p.cached->nrules; r++) o.rule_ids[o.nrules++] = b.crules[p.cached->rules[r]].id;
    } else {
      for (uint32_t r = 0; r < p.nhits; r++) o.rule_ids[o.nrules++] = b.crules[p.hits[r]].id;
    }
  }
}

}  // namespace dp
