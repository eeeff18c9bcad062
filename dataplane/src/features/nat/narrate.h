// NAT's words in a trace (Pipeline::explain, pipeline/compile.cc's walk),
// inside the ct() step that translates (features/conntrack/narrate.h).
#pragma once

#include <string>

#include "ctrack/tracker.h"
#include "dataplane/rules.h"

namespace dp::narrate {

// ct()'s nat(...) argument as written, or "".
inline std::string nat_arg(const Action& a) {
  return a.nat.kind != ctrack::NatKind::kNone ? ",nat(" + nat_str(a.nat) + ")" : "";
}

// A translated connection: the tuple it leaves with (later tables see it).
inline std::string nat_leaves_as(const ctrack::Key& to) {
  return "; translated, it leaves as " + to.str().substr(0, to.str().rfind(" zone"));
}

// A new connection ct() would translate, or "" without nat(...).
inline std::string nat_new(const Action& a) {
  if (a.nat.kind == ctrack::NatKind::kNone) return "";
  return "; a new connection is translated from nat(" + nat_str(a.nat) + ")";
}

}  // namespace dp::narrate
