// The features' registrations: what each adds to the worker's counter
// table (drop reasons, rewrite counters) and the tunnels the pipeline
// terminates and encapsulates in. Each feature declares its lists in its
// folder (features/<name>/list.h); they are merged here, once, so that the
// WorkerStats arrays, `stats`, its JSON, telemetry and /metrics (with their
// HELP text) pick them up without further edits.
//
// A tunnel is one line of DP_TUNNELS: T(X, Struct, name, DROPS, COUNTERS):
// its module's struct (features/<name>/<name>.h: decap, encap template,
// config, offload answers; all static, dispatched at compile time by
// for_each_tunnel in features/overlay/tunnel.h), its config and rule name
// (`overlay.<name>`, `encap(<name>,...)`), its drop reasons and its
// counters (a decap and an encap counter, in that order).
#pragma once

#include "features/conntrack/list.h"
#include "features/fragments/list.h"
#include "features/geneve/list.h"
#include "features/nat/list.h"
#include "features/overlay/list.h"
#include "features/ports/list.h"
#include "features/tables/list.h"
#include "features/vxlan/list.h"

#define DP_TUNNELS(T, X) \
  T(X, Vxlan, vxlan, DP_VXLAN_DROPS, DP_VXLAN_COUNTERS) \
  T(X, Geneve, geneve, DP_GENEVE_DROPS, DP_GENEVE_COUNTERS)

#define DP_TUNNEL_DROPS_OF(X, S, n, drops, counters) drops(X)
#define DP_TUNNEL_COUNTERS_OF(X, S, n, drops, counters) counters(X)

// Every drop reason, X(enumerator, name, what it counts), in DropWhy's order.
#define DP_DROP_REASONS(X)                                                                           \
  DP_TABLES_DROPS(X) DP_PORTS_DROPS(X) DP_CONNTRACK_DROPS(X) DP_NAT_DROPS(X)                       \
  DP_TUNNELS(DP_TUNNEL_DROPS_OF, X) DP_OVERLAY_DROPS(X) DP_FRAGMENTS_DROPS(X)

// Every rewrite counter (`overlay` in stats), X(enumerator, name, HELP).
#define DP_REWRITE_COUNTERS(X) \
  DP_TUNNELS(DP_TUNNEL_COUNTERS_OF, X) DP_NAT_COUNTERS(X) DP_FRAGMENTS_COUNTERS(X)
