// The tables' words in a trace (Pipeline::explain, pipeline/compile.cc's
// walk): each table a packet meets, the rule it hits, and where the tables
// drop it.
#pragma once

#include <string>

#include "dataplane/rules.h"

namespace dp::narrate {

inline std::string no_table(int t) { return "table " + std::to_string(t) + ": no rules: dropped (no_match)"; }

inline std::string no_match(int t) { return "table " + std::to_string(t) + ": no rule matches: dropped (no_match)"; }

inline std::string rule_hit(int t, const Rule& r) {
  return "table " + std::to_string(t) + ": rule " + std::to_string(r.id) + " (priority " + std::to_string(r.priority) +
         ") match \"" + r.match_text + "\" actions \"" + r.actions_text + "\"";
}

inline std::string no_terminal() { return "result: no terminal action: dropped"; }

inline std::string rule_drop(const Rule& r) { return "result: dropped by rule " + std::to_string(r.id) + " (rule_drop)"; }

}  // namespace dp::narrate
