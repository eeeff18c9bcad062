// What a config section's header (features/<name>/config.h,
// datapath/config.h, offload/config.h) declares its parse and reload with,
// without yaml-cpp: the readers themselves are control/config_yaml.h's.
#pragma once

#include <string>
#include <vector>

#include "sdn/status.h"

namespace YAML {
class Node;
}

namespace dp {

using sdn::Status;
namespace conf {
struct Ctx;  // config_yaml.h
}

}  // namespace dp
