// A client for DPDK's telemetry socket (/var/run/dpdk/PREFIX/dpdk_telemetry.v2),
// the same protocol the stock dpdk-telemetry.py speaks: connect, read the
// banner, send a command, read one JSON reply.
#pragma once

#include <string>

#include "sdn/status.h"

namespace testbed {

// Sends `command` (e.g. "/dataplane/stats") to the DPDK process with this
// file prefix and returns the raw JSON reply.
sdn::Result<std::string> telemetry_query(const std::string& file_prefix, const std::string& command);

// The number under the first "key" (depth first, in document order) of a
// JSON text. Throws std::runtime_error (a test failure, with the text)
// when there is none or the text is not JSON: never a silent -1.
long long json_number(const std::string& json, const std::string& key);

}  // namespace testbed
