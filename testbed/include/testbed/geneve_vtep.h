// The remote Geneve VTEP (RFC 8926, UDP 6081) of a test or a harness run:
// the kernel's geneve device where the kernel has one, otherwise
// testbed/tools/geneve-vtep.py, a userspace VTEP written on scapy's Geneve
// layer that owns a TAP device of the same name (a kernel without
// CONFIG_GENEVE answers `ip link add ... type geneve` with "Unknown device
// type"). Either way the device is DEV in the namespace, with the MAC given,
// down: the caller sets its MTU, addresses and routes as for the kernel's.
// The userspace VTEP is a Process (killed with its parent, also on kill -9;
// its TAP goes with it and with the namespace).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sdn/status.h"
#include "testbed/process.h"

namespace testbed {

class Netns;

struct GeneveVtepSpec {
  const Netns* ns = nullptr;
  // `ip link add DEV address MAC type geneve id VNI remote REMOTE dstport PORT`
  // as the caller builds it: tried first.
  std::vector<std::string> kernel_argv;
  std::string dev;     // the device's name (kernel or TAP)
  std::string mac;
  uint32_t vni = 0;
  std::string remote;  // the other VTEP's IPv4 address
  uint16_t port = 6081;
  std::vector<std::string> options;  // the userspace VTEP's options to send, CLASS:TYPE:HEX
  std::string script;    // path of geneve-vtep.py
  std::string log_path;  // its stdout and stderr
  bool force_userspace = false;  // skip the kernel device
};

struct GeneveVtep {
  bool userspace = false;
  std::string why;   // the kernel's answer when userspace
  Process process;   // the userspace VTEP (none for the kernel's device)
  // "kernel geneve device" or "userspace (scapy), the kernel has no Geneve".
  std::string describe() const;
};

// The kernel's device if `ip link add` makes it, else the userspace VTEP
// started and ready (its "geneve-vtep: ready" line, within 20 s). Any other
// failure of `ip link add` is an error, not a fallback.
sdn::Result<GeneveVtep> make_geneve_vtep(const GeneveVtepSpec& spec);

// Where geneve-vtep.py is under a source tree.
std::string geneve_vtep_script(const std::string& source_root);

}  // namespace testbed
