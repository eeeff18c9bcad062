// The ports' words in a trace (Pipeline::explain, pipeline/compile.cc's
// walk): the port a packet leaves by.
#pragma once

#include <cstdint>
#include <string>

#include "dataplane/rules.h"

namespace dp::narrate {

// A port by its config name (its number if the names do not reach it).
inline std::string port_name(const PortNames& ports, uint16_t p) {
  return p < ports.names.size() ? ports.names[p] : std::to_string(p);
}

// output(port), with the mark set_mark left on the packet (0: none).
inline std::string output(const PortNames& ports, uint16_t port, uint32_t mark) {
  return "result: output to " + port_name(ports, port) + (mark ? ", mark " + std::to_string(mark) : "");
}

}  // namespace dp::narrate
