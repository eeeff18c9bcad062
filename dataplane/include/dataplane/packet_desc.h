// A packet described in one line, for `dataplane-ctl trace`:
//   in_port=inside,tcp,10.0.0.1:1234>10.0.0.2:80,flags=S
//   in_port=outside,udp,[fd00::2]:53>[fd00::1]:3333,vlan=7,len=100
//   in_port=inside,icmp,10.0.0.1>10.0.0.2,type=8
// Fields: in_port (a port name; required), the protocol (tcp, udp, icmp,
// icmp6), the addresses (and ports for tcp/udp), flags (TCP: S, A, F, R, P,
// U letters; default S), vlan, len (payload bytes), type (ICMP), seq, ack,
// tun_id (the VNI it came in with, as if decapsulated on in_port).
#pragma once

#include <string>
#include <vector>

#include "ctrack/frame.h"
#include "dataplane/rules.h"

namespace dp {

struct PacketDesc {
  uint16_t in_port = 0;
  uint32_t tun_id = 0;
  ctrack::FrameSpec spec;
};

Result<PacketDesc> parse_packet_desc(const std::string& text, const PortNames& ports);

}  // namespace dp
