#include "testbed/testbed.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/capability.h>
#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <linux/veth.h>
#include <net/if_arp.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>

#include "rtnl.h"
#include "testbed/process.h"

namespace testbed {

namespace {

constexpr const char* kNetnsDir = "/run/netns";
constexpr const char* kNetnsPrefix = "tb-";
constexpr const char* kAliasPrefix = "testbed:";

std::string errno_str(const std::string& what) { return what + ": " + strerror(errno); }

std::string base36(uint64_t v) {
  static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  do {
    s.insert(s.begin(), digits[v % 36]);
    v /= 36;
  } while (v != 0);
  return s;
}

// Run id of a netns name "tb-<runid>-<name>", or empty.
std::string runid_of_netns(const std::string& n) {
  if (n.rfind(kNetnsPrefix, 0) != 0) return {};
  auto dash = n.find('-', 3);
  if (dash == std::string::npos) return {};
  return n.substr(3, dash - 3);
}

std::string lock_path(const std::string& runid) { return std::string(kRunDir) + "/" + runid + ".lock"; }

// A run is alive while some process holds the flock on its lock file.
bool run_alive(const std::string& runid) {
  int fd = ::open(lock_path(runid).c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  bool alive = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return alive;
}

// iproute2's recipe: /run/netns must be a shared mount so that namespace
// bind mounts propagate to other mount namespaces.
Status ensure_netns_dir() {
  if (mkdir(kNetnsDir, 0755) != 0 && errno != EEXIST) return Status::error(errno_str("mkdir /run/netns"));
  bool bound = false;
  while (mount("", kNetnsDir, "none", MS_SHARED | MS_REC, nullptr) != 0) {
    if (errno != EINVAL || bound) return Status::error(errno_str("make /run/netns a shared mount"));
    if (mount(kNetnsDir, kNetnsDir, "none", MS_BIND | MS_REC, nullptr) != 0)
      return Status::error(errno_str("bind-mount /run/netns"));
    bound = true;
  }
  return {};
}

Status remove_netns_path(const std::string& path) {
  if (umount2(path.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
    return Status::error(errno_str("umount " + path));
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return Status::error(errno_str("unlink " + path));
  return {};
}

// Opens an rtnetlink socket inside ns (fd) by way of a helper thread.
Result<std::unique_ptr<Rtnl>> open_rtnl_in(const Netns* ns) {
  std::unique_ptr<Rtnl> out;
  Status inner;
  Status st = run_in(ns, [&] {
    auto r = Rtnl::open();
    if (r) out = std::move(r.value());
    else inner = r.status();
  });
  if (!st) return st;
  if (!inner) return inner;
  return out;
}

nlmsghdr* put_ifinfo(char* buf, uint16_t type, uint16_t flags, ifinfomsg** ifi_out = nullptr) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = flags;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  if (ifi_out) *ifi_out = ifi;
  return nlh;
}

Result<std::array<uint8_t, 6>> parse_mac(const std::string& s) {
  std::array<uint8_t, 6> m{};
  unsigned v[6];
  char tail;
  if (sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
    return Status::error("bad MAC address '" + s + "' (want xx:xx:xx:xx:xx:xx)");
  for (int i = 0; i < 6; i++) {
    if (v[i] > 0xff) return Status::error("bad MAC address '" + s + "'");
    m[i] = static_cast<uint8_t>(v[i]);
  }
  return m;
}

}  // namespace

// ---------------------------------------------------------------- Prefix

Result<Prefix> Prefix::parse(std::string_view text) {
  std::string t(text);
  auto slash = t.find('/');
  if (slash == std::string::npos)
    return Status::error("address '" + t + "' has no prefix length (write e.g. 10.0.0.1/24 or fd00::1/64)");
  std::string addr = t.substr(0, slash), len = t.substr(slash + 1);
  Prefix p;
  if (inet_pton(AF_INET, addr.c_str(), p.addr) == 1) p.family = AF_INET;
  else if (inet_pton(AF_INET6, addr.c_str(), p.addr) == 1) p.family = AF_INET6;
  else return Status::error("'" + addr + "' is not an IPv4 or IPv6 address");
  int max = p.family == AF_INET ? 32 : 128;
  if (len.empty() || len.size() > 3 || len.find_first_not_of("0123456789") != std::string::npos)
    return Status::error("prefix length '" + len + "' in '" + t + "' is not a number");
  p.len = std::stoi(len);
  if (p.len > max)
    return Status::error("prefix length " + len + " in '" + t + "' exceeds " + std::to_string(max));
  return p;
}

std::string Prefix::str() const {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(family, addr, buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(len);
}

Status check_ifname(std::string_view name) {
  if (name.empty()) return Status::error("interface name is empty");
  if (name.size() > kMaxIfName)
    return Status::error("interface name '" + std::string(name) + "' is " + std::to_string(name.size()) +
                         " characters; Linux allows at most 15");
  for (char c : name)
    if (c == '/' || c == ':' || c <= ' ' || c == 127)
      return Status::error("interface name '" + std::string(name) + "' contains '/', ':' or whitespace");
  if (name == "." || name == "..") return Status::error("interface name '" + std::string(name) + "' is reserved");
  return {};
}

// ---------------------------------------------------------------- Netns

Netns::Netns(std::string name, std::string full, int fd)
    : name_(std::move(name)), full_(std::move(full)), fd_(fd) {}

Netns::~Netns() {
  rtnl_.reset();
  if (fd_ >= 0) ::close(fd_);
}

std::string Netns::path() const { return std::string(kNetnsDir) + "/" + full_; }

bool have_privileges() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  auto has = [&](int cap) { return (data[cap / 32].effective & (1u << (cap % 32))) != 0; };
  return has(CAP_NET_ADMIN) && has(CAP_SYS_ADMIN);
}

std::vector<std::string> list_netns() {
  std::vector<std::string> out;
  DIR* d = opendir(kNetnsDir);
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

Result<std::vector<LinkInfo>> list_links_here() {
  auto r = Rtnl::open();
  if (!r) return r.status();
  return r.value()->links();
}

// ---------------------------------------------------------------- Testbed

Testbed::Testbed(std::string run_id, int lock_fd) : run_id_(std::move(run_id)), lock_fd_(lock_fd) {}

Testbed::~Testbed() {
  Status st = tear_down();
  if (!st) fprintf(stderr, "testbed %s: teardown: %s\n", run_id_.c_str(), st.message().c_str());
}

Result<std::unique_ptr<Testbed>> Testbed::create() {
  if (mkdir(kRunDir, 0755) != 0 && errno != EEXIST) return Status::error(errno_str(std::string("mkdir ") + kRunDir));
  if (Status st = ensure_netns_dir(); !st) return st;
  auto swept = sweep_stale();
  if (!swept) return swept.status();

  // Lock a temp file first, then rename it into place, so a concurrent sweep
  // never sees our lock file unlocked.
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 64; attempt++) {
    unsigned c = counter.fetch_add(1) % 64;
    std::string id = base36(static_cast<uint64_t>(getpid()) * 64 + c);
    std::string final_path = lock_path(id);
    if (access(final_path.c_str(), F_OK) == 0) continue;  // in use by this process
    std::string tmp = final_path + ".tmp";
    int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status::error(errno_str("create " + tmp));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      continue;
    }
    if (rename(tmp.c_str(), final_path.c_str()) != 0) {
      Status e = Status::error(errno_str("rename " + tmp));
      ::close(fd);
      return e;
    }
    std::unique_ptr<Testbed> tb(new Testbed(id, fd));
    auto r = Rtnl::open();
    if (!r) return r.status();
    tb->root_ = std::move(r.value());
    return tb;
  }
  return Status::error("no free testbed run id for this process (64 testbeds alive?)");
}

std::string Testbed::root_ifname(const std::string& name) const { return "t" + run_id_ + name; }

std::string Testbed::resolve(Netns* ns, const std::string& ifname) const {
  return ns ? ifname : root_ifname(ifname);
}

Rtnl* Testbed::rtnl_for(Netns* ns) { return ns ? ns->rtnl_.get() : root_.get(); }

Netns* Testbed::netns(const std::string& name) const {
  for (auto& n : netns_)
    if (n->name() == name) return n.get();
  return nullptr;
}

Result<Netns*> Testbed::add_netns(const std::string& name) {
  if (name.empty() || name.find_first_of("/ \t\n") != std::string::npos || name.size() > 64)
    return Status::error("namespace name '" + name + "' must be 1..64 characters without '/' or spaces");
  if (netns(name)) return Status::error("namespace '" + name + "' already exists in this testbed");
  std::string full = kNetnsPrefix + run_id_ + "-" + name;
  std::string path = std::string(kNetnsDir) + "/" + full;

  int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (fd < 0) return Status::error(errno_str("create " + path));
  ::close(fd);

  Status inner;
  Status st = run_in(nullptr, [&] {
    if (unshare(CLONE_NEWNET) != 0) {
      inner = Status::error(errno_str("unshare(CLONE_NEWNET)"));
      return;
    }
    if (mount("/proc/thread-self/ns/net", path.c_str(), "none", MS_BIND, nullptr) != 0)
      inner = Status::error(errno_str("bind-mount namespace to " + path));
  });
  if (!st || !inner) {
    remove_netns_path(path);
    return !st ? st : inner;
  }
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    Status e = Status::error(errno_str("open " + path));
    remove_netns_path(path);
    return e;
  }
  std::unique_ptr<Netns> ns(new Netns(name, full, fd));
  netns_.push_back(std::move(ns));  // owned from here on: teardown removes it
  Netns* n = netns_.back().get();
  auto r = open_rtnl_in(n);
  if (!r) return r.status();
  n->rtnl_ = std::move(r.value());
  if (Status s = set_link(n, "lo", true); !s) return s;
  return n;
}

Status Testbed::add_veth(const VethEnd& a, const VethEnd& b, int mtu) {
  std::string an = resolve(a.ns, a.name), bn = resolve(b.ns, b.name);
  if (Status s = check_ifname(an); !s)
    return a.ns ? s : Status::error(s.message() + " (root-namespace names carry the run prefix 't" + run_id_ + "')");
  if (Status s = check_ifname(bn); !s)
    return b.ns ? s : Status::error(s.message() + " (root-namespace names carry the run prefix 't" + run_id_ + "')");
  if (mtu < 68 || mtu > 65535) return Status::error("MTU " + std::to_string(mtu) + " is outside 68..65535");

  char buf[kNlBuf];
  nlmsghdr* nlh = put_ifinfo(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  mnl_attr_put_strz(nlh, IFLA_IFNAME, an.c_str());
  mnl_attr_put_u32(nlh, IFLA_MTU, static_cast<uint32_t>(mtu));
  if (a.ns) mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, static_cast<uint32_t>(a.ns->fd()));
  else mnl_attr_put_strz(nlh, IFLA_IFALIAS, (kAliasPrefix + run_id_).c_str());
  nlattr* linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
  nlattr* data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  nlattr* peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
  auto* pifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  pifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, bn.c_str());
  mnl_attr_put_u32(nlh, IFLA_MTU, static_cast<uint32_t>(mtu));
  if (b.ns) mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, static_cast<uint32_t>(b.ns->fd()));
  mnl_attr_nest_end(nlh, peer);
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, linkinfo);
  if (Status s = root_->request(nlh, "create veth " + an + " <-> " + bn); !s) return s;

  // Record before further steps so that a later failure still tears it down.
  if (!a.ns) root_links_.push_back(an);
  if (!b.ns) root_links_.push_back(bn);
  if (!b.ns) {
    // The alias on the peer end must be set separately.
    char buf2[kNlBuf];
    nlmsghdr* m = put_ifinfo(buf2, RTM_NEWLINK, 0);
    mnl_attr_put_strz(m, IFLA_IFNAME, bn.c_str());
    mnl_attr_put_strz(m, IFLA_IFALIAS, (kAliasPrefix + run_id_).c_str());
    if (Status s = root_->request(m, "set alias on " + bn); !s) return s;
  }
  if (Status s = set_link(a.ns, a.name, true); !s) return s;
  return set_link(b.ns, b.name, true);
}

Status Testbed::set_link(Netns* ns, const std::string& ifname, bool up, int mtu) {
  std::string n = resolve(ns, ifname);
  if (Status s = check_ifname(n); !s) return s;
  char buf[kNlBuf];
  ifinfomsg* ifi;
  nlmsghdr* nlh = put_ifinfo(buf, RTM_NEWLINK, 0, &ifi);
  ifi->ifi_change = IFF_UP;
  ifi->ifi_flags = up ? IFF_UP : 0;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, n.c_str());
  if (mtu > 0) mnl_attr_put_u32(nlh, IFLA_MTU, static_cast<uint32_t>(mtu));
  return rtnl_for(ns)->request(nlh, "set link " + n);
}

Status Testbed::add_address(Netns* ns, const std::string& ifname, const std::string& prefix) {
  auto p = Prefix::parse(prefix);
  if (!p) return p.status();
  std::string n = resolve(ns, ifname);
  auto idx = rtnl_for(ns)->link_index(n);
  if (!idx) return idx.status();
  char buf[kNlBuf];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWADDR;
  nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = static_cast<uint8_t>(p->family);
  ifa->ifa_prefixlen = static_cast<uint8_t>(p->len);
  ifa->ifa_index = static_cast<uint32_t>(*idx);
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  size_t alen = p->family == AF_INET ? 4 : 16;
  // No duplicate address detection: the address must be usable at once.
  if (p->family == AF_INET6) ifa->ifa_flags = IFA_F_NODAD;
  mnl_attr_put(nlh, IFA_LOCAL, alen, p->addr);
  mnl_attr_put(nlh, IFA_ADDRESS, alen, p->addr);
  return rtnl_for(ns)->request(nlh, "add address " + prefix + " to " + n);
}

Status Testbed::add_route(Netns* ns, const std::string& dst, const std::string& via, const std::string& dev) {
  Prefix d;
  if (dst == "default") {
    auto g = via.empty() ? Result<Prefix>(Status::error("a default route needs a gateway"))
                         : Prefix::parse(via + (via.find(':') != std::string::npos ? "/128" : "/32"));
    if (!g) return g.status();
    d.family = g->family;
    d.len = 0;
  } else {
    auto p = Prefix::parse(dst);
    if (!p) return p.status();
    d = *p;
  }
  char buf[kNlBuf];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWROUTE;
  nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  rtm->rtm_family = static_cast<uint8_t>(d.family);
  rtm->rtm_dst_len = static_cast<uint8_t>(d.len);
  rtm->rtm_table = RT_TABLE_MAIN;
  rtm->rtm_protocol = RTPROT_BOOT;
  rtm->rtm_type = RTN_UNICAST;
  rtm->rtm_scope = via.empty() ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  size_t alen = d.family == AF_INET ? 4 : 16;
  if (d.len > 0) mnl_attr_put(nlh, RTA_DST, alen, d.addr);
  if (!via.empty()) {
    uint8_t gw[16];
    if (inet_pton(d.family, via.c_str(), gw) != 1)
      return Status::error("gateway '" + via + "' is not an address of the route's family");
    mnl_attr_put(nlh, RTA_GATEWAY, alen, gw);
  }
  if (!dev.empty()) {
    auto idx = rtnl_for(ns)->link_index(resolve(ns, dev));
    if (!idx) return idx.status();
    mnl_attr_put_u32(nlh, RTA_OIF, static_cast<uint32_t>(*idx));
  }
  return rtnl_for(ns)->request(nlh, "add route " + dst + (via.empty() ? "" : " via " + via));
}

Status Testbed::add_neighbor(Netns* ns, const std::string& ifname, const std::string& ip, const std::string& mac) {
  auto m = parse_mac(mac);
  if (!m) return m.status();
  uint8_t a[16];
  int fam = inet_pton(AF_INET, ip.c_str(), a) == 1 ? AF_INET : (inet_pton(AF_INET6, ip.c_str(), a) == 1 ? AF_INET6 : 0);
  if (!fam) return Status::error("'" + ip + "' is not an IPv4 or IPv6 address");
  std::string n = resolve(ns, ifname);
  auto idx = rtnl_for(ns)->link_index(n);
  if (!idx) return idx.status();
  char buf[kNlBuf];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWNEIGH;
  nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
  auto* nd = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  nd->ndm_family = static_cast<uint8_t>(fam);
  nd->ndm_ifindex = *idx;
  nd->ndm_state = NUD_PERMANENT;
  mnl_attr_put(nlh, NDA_DST, fam == AF_INET ? 4 : 16, a);
  mnl_attr_put(nlh, NDA_LLADDR, 6, m->data());
  return rtnl_for(ns)->request(nlh, "add neighbour " + ip + " on " + n);
}

Status Testbed::disable_tx_checksum(Netns* ns, const std::string& ifname) {
  std::string n = resolve(ns, ifname);
  if (Status s = check_ifname(n); !s) return s;
  Status inner;
  Status st = run_in(ns, [&] {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      inner = Status::error(errno_str("socket"));
      return;
    }
    ethtool_value ev{};
    ev.cmd = ETHTOOL_STXCSUM;
    ev.data = 0;
    ifreq ifr{};
    memcpy(ifr.ifr_name, n.c_str(), n.size());
    ifr.ifr_data = reinterpret_cast<char*>(&ev);
    if (ioctl(fd, SIOCETHTOOL, &ifr) != 0) inner = Status::error(errno_str("ethtool tx checksum off on " + n));
    ::close(fd);
  });
  return !st ? st : inner;
}

Result<std::string> Testbed::mac_address(Netns* ns, const std::string& ifname) {
  std::string n = resolve(ns, ifname);
  if (Status s = check_ifname(n); !s) return s;
  std::string mac;
  Status inner;
  Status st = run_in(ns, [&] {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      inner = Status::error(errno_str("socket"));
      return;
    }
    ifreq ifr{};
    memcpy(ifr.ifr_name, n.c_str(), n.size());
    if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
      inner = Status::error(errno_str("read MAC of " + n));
    } else {
      char b[18];
      auto* h = reinterpret_cast<unsigned char*>(ifr.ifr_hwaddr.sa_data);
      snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", h[0], h[1], h[2], h[3], h[4], h[5]);
      mac = b;
    }
    ::close(fd);
  });
  if (!st) return st;
  if (!inner) return inner;
  return mac;
}

Result<std::vector<LinkInfo>> Testbed::links(Netns* ns) { return rtnl_for(ns)->links(); }

Status Testbed::tear_down() {
  if (torn_down_) return {};
  torn_down_ = true;
  std::string errors;
  auto note = [&](const Status& s) {
    if (!s) errors += (errors.empty() ? "" : "; ") + s.message();
  };
  // Deleting one end of a veth deletes its peer synchronously; deleting a
  // namespace would leave that to an asynchronous kernel worker.
  for (auto it = root_links_.rbegin(); it != root_links_.rend(); ++it) {
    Status s = root_->del_link(*it);
    if (!s && !s.is(sdn::ErrorKind::kNotFound)) note(s);
  }
  root_links_.clear();
  for (auto it = netns_.rbegin(); it != netns_.rend(); ++it) {
    Netns* n = it->get();
    if (n->rtnl_) {
      auto ls = n->rtnl_->links();
      if (ls) {
        std::set<int> deleted;
        for (const auto& l : *ls)
          if (l.name != "lo") n->rtnl_->del_link(l.name);  // peers may be gone already
      }
    }
    note(remove_netns_path(n->path()));
  }
  netns_.clear();
  if (lock_fd_ >= 0) {
    unlink(lock_path(run_id_).c_str());
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
  return errors.empty() ? Status() : Status::error(errors);
}

Result<int> Testbed::sweep_stale() {
  const std::string run_dir = kRunDir;
  int removed = 0;
  std::string errors;
  for (const auto& n : list_netns()) {
    std::string id = runid_of_netns(n);
    if (id.empty() || run_alive(id)) continue;
    std::string path = std::string(kNetnsDir) + "/" + n;
    // Delete the links inside first so that root-side veth peers go at once.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      Netns tmp(n, n, fd);
      auto r = open_rtnl_in(&tmp);
      if (r) {
        auto ls = r.value()->links();
        if (ls)
          for (const auto& l : *ls)
            if (l.name != "lo") r.value()->del_link(l.name);
      }
    }
    Status s = remove_netns_path(path);
    if (s) removed++;
    else errors += s.message() + "; ";
  }
  auto root = Rtnl::open();
  if (!root) return root.status();
  auto ls = root.value()->links();
  if (!ls) return ls.status();
  for (const auto& l : *ls) {
    if (l.alias.rfind(kAliasPrefix, 0) != 0) continue;
    std::string id = l.alias.substr(strlen(kAliasPrefix));
    if (run_alive(id)) continue;
    Status s = root.value()->del_link(l.name);
    if (s) removed++;
    else if (!s.is(sdn::ErrorKind::kNotFound)) errors += s.message() + "; ";
  }
  if (DIR* d = opendir(run_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string f = e->d_name;
      auto dot = f.find(".lock");
      if (dot == std::string::npos) continue;
      std::string path = run_dir + "/" + f;
      if (f.size() == dot + 5) {
        if (!run_alive(f.substr(0, dot))) unlink(path.c_str());
      } else if (f.size() == dot + 9 && f.compare(dot, 9, ".lock.tmp") == 0) {
        int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);  // a run that died while starting
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) unlink(path.c_str());
        if (fd >= 0) ::close(fd);
      }
    }
    closedir(d);
  }
  auto dpdk = sweep_dpdk_leftovers({"harness-"});
  if (dpdk) removed += *dpdk;
  else errors += dpdk.message() + "; ";
  if (!errors.empty()) return Status::error("sweep: " + errors);
  return removed;
}

namespace {

// The pid at the end of a prefix "...-<pid>", or -1.
pid_t prefix_pid(const std::string& prefix) {
  size_t d = prefix.rfind('-');
  if (d == std::string::npos || d + 1 == prefix.size()) return -1;
  for (size_t i = d + 1; i < prefix.size(); i++)
    if (!isdigit(static_cast<unsigned char>(prefix[i]))) return -1;
  return static_cast<pid_t>(std::stol(prefix.substr(d + 1)));
}

bool pid_dead(pid_t p) { return p > 0 && kill(p, 0) != 0 && errno == ESRCH; }

// A DPDK primary holds a write lock on its runtime dir's `config` for life.
bool runtime_dir_in_use(const std::string& dir) {
  int fd = ::open((dir + "/config").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock fl{};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  bool used = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return used;
}

bool in_family(const std::string& name, const std::vector<std::string>& families) {
  for (const auto& f : families)
    if (name.rfind(f, 0) == 0) return true;
  return false;
}

}  // namespace

namespace {

// The dataplane's control socket and its lock (/run/dataplane/PREFIX.sock
// and PREFIX.sock.lock: a clean exit removes both, a killed daemon leaves them)
// for prefixes `want` accepts, once no daemon holds the lock.
int remove_dataplane_sockets(const std::function<bool(const std::string&)>& want, std::string* errors) {
  int removed = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/run/dataplane", ec)) {
    const std::string f = e.path().filename();
    if (!f.ends_with(".sock.lock") || !want(f.substr(0, f.size() - 10))) continue;
    const std::string lock = e.path(), sock = lock.substr(0, lock.size() - 5);
    int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {  // no daemon serves it
      if (unlink(sock.c_str()) == 0) removed++;
      else if (errno != ENOENT) *errors += errno_str("remove " + sock) + "; ";
      if (unlink(lock.c_str()) == 0) removed++;
      else *errors += errno_str("remove " + lock) + "; ";
    }
    ::close(fd);
  }
  return removed;
}

// Hugepage files, runtime dirs and the dataplane's control sockets whose
// file prefix `want` accepts; a file still mapped (locked by its process), a
// runtime dir or a socket in use stays.
Result<int> remove_dpdk_files(const std::function<bool(const std::string&)>& want) {
  int removed = 0;
  std::string errors;
  std::vector<std::string> mounts;
  {
    std::ifstream m("/proc/mounts");
    std::string dev, dir, type, rest;
    while (m >> dev >> dir >> type && std::getline(m, rest))
      if (type == "hugetlbfs") mounts.push_back(dir);
  }
  for (const auto& dir : mounts) {
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      std::string f = e->d_name;
      size_t m = f.find("map_");
      if (m == std::string::npos || !want(f.substr(0, m))) continue;
      std::string path = dir + "/" + f;
      int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) continue;
      if (flock(fd, LOCK_EX | LOCK_NB) == 0) {  // nobody maps it
        if (unlink(path.c_str()) == 0) removed++;
        else errors += errno_str("remove " + path) + "; ";
      }
      ::close(fd);
    }
    closedir(d);
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/var/run/dpdk", ec)) {
    std::string f = e.path().filename();
    if (!want(f) || runtime_dir_in_use(e.path())) continue;
    std::error_code rc;
    std::filesystem::remove_all(e.path(), rc);
    if (rc) errors += "remove " + e.path().string() + ": " + rc.message() + "; ";
    else removed++;
  }
  removed += remove_dataplane_sockets(want, &errors);
  if (!errors.empty()) return Status::error("DPDK leftovers: " + errors);
  return removed;
}

}  // namespace

Result<int> Testbed::sweep_dpdk_leftovers(const std::vector<std::string>& families) {
  return remove_dpdk_files(
      [&](const std::string& prefix) { return in_family(prefix, families) && pid_dead(prefix_pid(prefix)); });
}

Result<int> Testbed::remove_dpdk_prefix(const std::string& prefix) {
  return remove_dpdk_files([&](const std::string& p) { return p == prefix; });
}

}  // namespace testbed
