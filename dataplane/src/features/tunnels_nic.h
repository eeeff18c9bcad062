// The tunnel modules' NIC hooks (offload/tunnel_nic.h), for
// offload/hwflow.cc. A new tunnel: its features/<name>/nic.h and its
// #include here (for_each_tunnel then asks it with the others).
#pragma once

#include "features/geneve/nic.h"
#include "features/vxlan/nic.h"
