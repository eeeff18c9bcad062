// The names and descriptions of the registered features' counters and
// tunnels (registry.h), as stats, JSON, telemetry and /metrics show them.
#include "features/registry.h"

#include "dataplane/overlay.h"
#include "dataplane/pipeline.h"

namespace dp {

const char* drop_why_name(DropWhy d) {
  static const char* const n[] = {
#define DP_NAME(e, name, what) #name,
      DP_DROP_REASONS(DP_NAME)
#undef DP_NAME
  };
  static_assert(sizeof(n) / sizeof(n[0]) == static_cast<size_t>(DropWhy::kCount));
  return n[static_cast<int>(d)];
}

const char* drop_why_help(DropWhy d) {
  static const char* const n[] = {
#define DP_WHAT(e, name, what) what,
      DP_DROP_REASONS(DP_WHAT)
#undef DP_WHAT
  };
  return n[static_cast<int>(d)];
}

const char* tunnel_name(Tunnel t) {
  static const char* const n[] = {
#define DP_NAME(e, name, what) #name,
      DP_REWRITE_COUNTERS(DP_NAME)
#undef DP_NAME
  };
  static_assert(sizeof(n) / sizeof(n[0]) == static_cast<size_t>(Tunnel::kCount));
  return n[static_cast<int>(t)];
}

const char* tunnel_kind_name(TunnelKind k) {
  static const char* const n[] = {
#define DP_NAME(X, S, name, d, c) #name,
      DP_TUNNELS(DP_NAME, _)
#undef DP_NAME
  };
  return n[static_cast<int>(k)];
}

}  // namespace dp
