// The `conntrack:` section of the config (config.h): the tracker's
// ctrack::Config, its defaults as the daemon runs it, its parse, and what
// a reload does with it (the timeouts apply; everything else but nat needs
// a restart, and nat may not turn on).
#pragma once

#include "ctrack/tracker.h"
#include "control/config_section.h"

namespace dp {

// ctrack's defaults as the daemon runs them: the workers expire entries by
// time, and the offload's event ring is there.
ctrack::Config conntrack_defaults();

// conntrack: {capacity, full_policy, tcp_liberal, tcp_midstream, timeouts,
// zones, sweep_per_call, early_drop_scan, nat}. *capacity_line: where
// capacity is written (check_host's message), if it is.
Status parse_conntrack(const conf::Ctx& c, const YAML::Node& n, ctrack::Config* ct, int* capacity_line);

// A reload: NAT's room stays once there (next->nat takes the running
// value; turning it on is refused), the timeouts may change, any other
// field is refused. Returns whether the timeouts changed.
bool conntrack_reload(const ctrack::Config& running, ctrack::Config* next, std::vector<std::string>* refused);

}  // namespace dp
