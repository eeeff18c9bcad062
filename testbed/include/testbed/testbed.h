// The namespace testbed: network namespaces and veth pairs built over
// rtnetlink (libmnl), owned by one Testbed object and removed when it goes
// away, also on exceptions. Stale objects of crashed runs are swept at start.
//
// Naming. Every run gets a run id (base36 of pid and an instance counter).
//   netns          /run/netns/tb-<runid>-<name>   (visible to `ip netns`)
//   root-ns links  t<runid><name>, ifalias "testbed:<runid>"
//   liveness       /run/testbed/<runid>.lock, flock()ed for the run's lifetime
// A run whose lock file is missing or unlocked is dead and its objects are
// swept. Interfaces inside a testbed namespace keep the caller's name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sdn/status.h"

namespace testbed {

using sdn::Result;
using sdn::Status;

// One run dir for every run on the machine: liveness is only decided there.
inline constexpr const char* kRunDir = "/run/testbed";
inline constexpr int kMaxIfName = 15;  // IFNAMSIZ - 1

// "10.0.0.1/24" or "fd00::1/64". The prefix length is required.
struct Prefix {
  int family = 0;  // AF_INET or AF_INET6
  uint8_t addr[16] = {};
  int len = 0;
  static Result<Prefix> parse(std::string_view text);
  std::string str() const;
};

// Error unless `name` is a usable Linux interface name (1..15 bytes, no '/',
// ':' or whitespace).
Status check_ifname(std::string_view name);

struct LinkInfo {
  int index = 0;
  std::string name;
  std::string alias;
  int mtu = 0;
  bool up = false;
};

class Rtnl;

// A named network namespace. Owned by a Testbed.
class Netns {
 public:
  ~Netns();
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;

  const std::string& name() const { return name_; }  // short name given by the caller
  const std::string& full_name() const { return full_; }  // name under /run/netns
  std::string path() const;
  int fd() const { return fd_; }

 private:
  friend class Testbed;
  Netns(std::string name, std::string full, int fd);
  std::string name_;
  std::string full_;
  int fd_ = -1;
  std::unique_ptr<Rtnl> rtnl_;
};

// One end of a veth pair: inside `ns`, or in the root namespace when ns is null.
struct VethEnd {
  Netns* ns = nullptr;
  std::string name;
};

class Testbed {
 public:
  // Sweeps leftovers of dead runs, then takes a run id.
  static Result<std::unique_ptr<Testbed>> create();
  ~Testbed();  // tear_down(), errors reported on stderr
  Testbed(const Testbed&) = delete;
  Testbed& operator=(const Testbed&) = delete;

  const std::string& run_id() const { return run_id_; }

  // Creates /run/netns/tb-<runid>-<name> with loopback up.
  Result<Netns*> add_netns(const std::string& name);
  Netns* netns(const std::string& name) const;

  // Creates a veth pair with both ends moved into their namespaces, MTU set
  // and links up. Root-namespace ends get the run prefix (see root_ifname).
  Status add_veth(const VethEnd& a, const VethEnd& b, int mtu = 1500);

  Status set_link(Netns* ns, const std::string& ifname, bool up, int mtu = 0);
  Status add_address(Netns* ns, const std::string& ifname, const std::string& prefix);
  // `dst` is "default" or a prefix; `via` may be empty for an on-link route.
  Status add_route(Netns* ns, const std::string& dst, const std::string& via,
                   const std::string& dev = "");
  // Permanent neighbour (ARP/ND) entry.
  Status add_neighbor(Netns* ns, const std::string& ifname, const std::string& ip,
                      const std::string& mac);
  // TX checksum offload off via SIOCETHTOOL inside the namespace. DPDK's
  // net_af_packet PMD does not fill in checksums the kernel left partial.
  Status disable_tx_checksum(Netns* ns, const std::string& ifname);
  Result<std::string> mac_address(Netns* ns, const std::string& ifname);

  Result<std::vector<LinkInfo>> links(Netns* ns);

  // The name a root-namespace interface called `name` gets in this run.
  std::string root_ifname(const std::string& name) const;

  // Deletes every link and namespace this run made, in reverse order.
  Status tear_down();

  // Sweeps objects of dead runs. Returns how many objects were removed.
  // Besides namespaces and links: the DPDK leftovers of harness processes
  // that died (see sweep_dpdk_leftovers).
  static Result<int> sweep_stale();
  // DPDK hugepage files (<hugetlbfs>/<prefix>map_N), runtime dirs
  // (/var/run/dpdk/<prefix>) and the dataplane's control socket and its lock
  // (/run/dataplane/<prefix>.sock, .sock.lock) of file prefixes
  // `<kind>-<pid>` that start with one of `families` and whose pid is gone.
  // A hugepage file a live DPDK process still maps is locked shared by it,
  // and a socket's lock is held by its daemon: those are left alone.
  static Result<int> sweep_dpdk_leftovers(const std::vector<std::string>& families);
  // The same for one file prefix, once its process has exited: what a
  // clean DPDK exit leaves too (EAL keeps its files for secondaries, the
  // dataplane its socket's lock).
  static Result<int> remove_dpdk_prefix(const std::string& prefix);

 private:
  Testbed(std::string run_id, int lock_fd);
  Rtnl* rtnl_for(Netns* ns);
  std::string resolve(Netns* ns, const std::string& ifname) const;

  std::string run_id_;
  int lock_fd_ = -1;
  std::unique_ptr<Rtnl> root_;
  std::vector<std::unique_ptr<Netns>> netns_;
  std::vector<std::string> root_links_;  // prefixed names we created in the root ns
  bool torn_down_ = false;
};

// True when this process may build testbeds (CAP_NET_ADMIN and CAP_SYS_ADMIN).
// Tests that need it exit 77 (skip) with a reason when it is false.
bool have_privileges();

// Names of all namespaces under /run/netns (for tests and `harness testbed status`).
std::vector<std::string> list_netns();

// Links in the caller's current network namespace.
Result<std::vector<LinkInfo>> list_links_here();

}  // namespace testbed
