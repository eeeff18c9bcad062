// The ports' bounds on the pipeline (ingress and egress MTU, the tx ring):
// their drop reasons, X(enumerator, name, what it counts).
#pragma once

#define DP_PORTS_DROPS(X)                                                                                   \
  X(kTxFull, tx_full, "the egress port's tx ring was full")                                                  \
  X(kTxMtu, tx_mtu, "longer than the egress port's MTU (never sent: the port or the peer's kernel would drop it)") \
  X(kRxOversize, rx_oversize,                                                                                \
    "the IP packet is longer than the ingress port's MTU (or its IP length claims so and the port cut the "   \
    "frame short)")
