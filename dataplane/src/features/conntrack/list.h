// Conntrack and connection ownership (the burst's ct() batches, handoff to
// the owning worker): drop reasons, X(enumerator, name, what it counts).
#pragma once

#define DP_CONNTRACK_DROPS(X)                                                                             \
  X(kCtFull, ct_full,                                                                                      \
    "ct(commit) found no free entry (table full or zone limit, full_policy: drop; with pass it goes on "   \
    "untracked and ct counts it as untracked)")                                                            \
  X(kHandoffFull, handoff_full, "the ring to the worker that owns the connection was full")
