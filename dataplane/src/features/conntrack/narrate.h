// Conntrack's words in a trace (Pipeline::explain, pipeline/compile.cc's
// walk): a ct() step, the state it gives the packet and why.
#pragma once

#include <string>

#include "dataplane/rules.h"
#include "features/nat/narrate.h"

namespace dp::narrate {

// What a ct() does with a packet that is not IP.
inline std::string ct_untracked() { return "not IP: stays untracked"; }

// "  ct(commit,zone=Z[,nat(...)]): +new+trk[: note]"
inline std::string ct_step(const Action& a, uint8_t state, const std::string& note) {
  return "  ct(" + std::string(a.commit ? "commit," : "") + "zone=" + std::to_string(a.zone) + nat_arg(a) +
         "): " + ct_state_str(state) + (note.empty() ? "" : ": " + note);
}

}  // namespace dp::narrate
