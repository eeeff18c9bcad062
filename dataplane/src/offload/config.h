// The `offload:` section of the config: OffloadConfig (its fields and
// defaults: dataplane/offload_config.h), its parse, and what a reload does
// with it (every field needs a restart).
#pragma once

#include "control/config_section.h"
#include "dataplane/offload_config.h"

namespace dp {

// offload: {provider, max_in_flight, table_size, insert_rate, latency_us,
// age_s, domain, conntrack, engine, nic}
Status parse_offload(const conf::Ctx& c, const YAML::Node& n, OffloadConfig* o);

// A reload: refused if anything differs.
void offload_reload(const OffloadConfig& running, const OffloadConfig& next, std::vector<std::string>* refused);

}  // namespace dp
