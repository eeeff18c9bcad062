// The first stage of a worker's rx path when the NIC is emulated: what the
// NIC did to each packet of a burst, before software sees it. The worker
// knows only this; the mlx5 model (nic_model.h) implements it. One call per
// burst (as rte_eth_rx_burst's function pointer), none per packet.
#pragma once

#include <cstdint>

#include "ctrack/parse.h"
#include "dataplane/pipeline.h"

namespace dp {

inline constexpr int16_t kNicMiss = -2;  // the packet goes to software

class NicStage {
 public:
  virtual ~NicStage() = default;
  // Applies the control side's queued operations that are due for rx
  // queue q. Returns how many.
  virtual uint32_t service(unsigned q, uint64_t now_ns) = 0;
  // Steers the n packets rx queue q received. out[i]: the config port the
  // NIC sent packet i to, -1 (dropped) or kNicMiss; a MARK sets in[i]'s
  // has_mark/mark. For a kNicMiss, parsed[i] and drop[i] hold the parse the
  // steering did (the software pipeline reuses it).
  virtual void rx_burst(unsigned q, PacketIn* in, uint16_t n, uint64_t now_ns, int16_t* out,
                        ctrack::Parsed* parsed, ctrack::Drop* drop) = 0;
};

}  // namespace dp
