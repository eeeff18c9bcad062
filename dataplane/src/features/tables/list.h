// The tables (rte_acl per table, pipeline/compile.cc and run.cc): their
// drop reasons, X(enumerator, name, what it counts).
#pragma once

#define DP_TABLES_DROPS(X)                                                               \
  X(kNoMatch, no_match, "no rule of a table the packet reached matched it")              \
  X(kRule, rule_drop, "a rule's drop action")
