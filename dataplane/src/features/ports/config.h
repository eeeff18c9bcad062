// The `ports:` section of the config (config.h): each port's device,
// MTU, promiscuity and rings, its parse, and what a reload does with it
// (every field needs a restart; ports are bound by name).
#pragma once

#include <cstdint>

#include "control/config_section.h"

namespace dp {

struct PortConfig {
  std::string name;
  std::string devargs;    // "net_af_packet0,iface=veth0" (a vdev) or "0000:03:00.0[,...]" (PCI)
  std::string dpdk_name;  // the ethdev name to attach to, when devargs creates several (representors)
  uint16_t mtu = 1500;
  bool promisc = true;
  uint16_t rx_desc = 1024, tx_desc = 1024;
  uint32_t frame_room = 0;  // net_af_packet's framesz= (a frame the kernel reassembled can be this long), 0 if unset
  // Where the port and its devargs are written: for messages, not compared
  // (a reload that only moves lines changes nothing).
  struct Lines {
    int line = 0;
    int devargs_line = 0;
    friend bool operator==(const Lines&, const Lines&) { return true; }
  } at;
  // Every field needs a restart (a reload compares them all: a new one too).
  bool operator==(const PortConfig&) const = default;
};

// The value of key= in a device's devargs, empty if absent.
std::string devarg(const std::string& devargs, const std::string& key);

// ports: [{name, devargs, dpdk_name, mtu, promisc, rx_desc, tx_desc}, ...]
Status parse_ports(const conf::Ctx& c, const YAML::Node& n, std::vector<PortConfig>* ports);

// A reload: the file's ports against the running ones, by name. map[i]:
// the running index of the file's port i (-1: added). Each port added,
// removed or changed is refused with what changed ("ports need a restart").
void ports_reload(const std::vector<PortConfig>& running, const std::vector<PortConfig>& next, std::vector<int>* map,
                  std::vector<std::string>* refused);

}  // namespace dp
