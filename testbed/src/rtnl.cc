#include "rtnl.h"

#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace testbed {

Result<std::unique_ptr<Rtnl>> Rtnl::open() {
  mnl_socket* s = mnl_socket_open(NETLINK_ROUTE);
  if (s == nullptr) return Status::error(std::string("netlink socket: ") + strerror(errno));
  if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
    int e = errno;
    mnl_socket_close(s);
    return Status::error(std::string("netlink bind: ") + strerror(e));
  }
  return std::unique_ptr<Rtnl>(new Rtnl(s, mnl_socket_get_portid(s)));
}

Rtnl::~Rtnl() { mnl_socket_close(sock_); }

Status Rtnl::request(nlmsghdr* nlh, const std::string& what) {
  nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = next_seq();
  if (mnl_socket_sendto(sock_, nlh, nlh->nlmsg_len) < 0)
    return Status::error(what + ": netlink send: " + strerror(errno));
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(sock_, buf.data(), buf.size());
    if (n < 0) return Status::error(what + ": netlink recv: " + strerror(errno));
    int rc = mnl_cb_run(buf.data(), n, nlh->nlmsg_seq, portid_, nullptr, nullptr);
    if (rc == MNL_CB_ERROR) return Status::error(sdn::kind_of_errno(errno), what + ": " + strerror(errno));
    if (rc == MNL_CB_STOP) return {};
    // An ACK arrives as NLMSG_ERROR with error 0, which mnl_cb_run reports as STOP.
  }
}

namespace {
struct DumpCtx {
  const std::function<void(const nlmsghdr*)>* cb;
};
int dump_cb(const nlmsghdr* nlh, void* data) {
  (*static_cast<DumpCtx*>(data)->cb)(nlh);
  return MNL_CB_OK;
}
}  // namespace

Status Rtnl::dump(nlmsghdr* nlh, const std::function<void(const nlmsghdr*)>& cb, const std::string& what) {
  nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_DUMP;
  nlh->nlmsg_seq = next_seq();
  if (mnl_socket_sendto(sock_, nlh, nlh->nlmsg_len) < 0)
    return Status::error(what + ": netlink send: " + strerror(errno));
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 4);
  DumpCtx ctx{&cb};
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(sock_, buf.data(), buf.size());
    if (n < 0) return Status::error(what + ": netlink recv: " + strerror(errno));
    int rc = mnl_cb_run(buf.data(), n, nlh->nlmsg_seq, portid_, dump_cb, &ctx);
    if (rc == MNL_CB_ERROR) return Status::error(sdn::kind_of_errno(errno), what + ": " + strerror(errno));
    if (rc == MNL_CB_STOP) return {};
  }
}

namespace {
LinkInfo parse_link(const nlmsghdr* nlh) {
  LinkInfo li;
  auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
  li.index = ifi->ifi_index;
  li.up = (ifi->ifi_flags & IFF_UP) != 0;
  auto* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(nlh));
  for (auto* a = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(nlh, sizeof(*ifi)));
       mnl_attr_ok(a, static_cast<int>(tail - reinterpret_cast<const char*>(a))); a = mnl_attr_next(a)) {
    switch (mnl_attr_get_type(a)) {
      case IFLA_IFNAME: li.name = mnl_attr_get_str(a); break;
      case IFLA_IFALIAS: li.alias = mnl_attr_get_str(a); break;
      case IFLA_MTU: li.mtu = static_cast<int>(mnl_attr_get_u32(a)); break;
      default: break;
    }
  }
  return li;
}
}  // namespace

Result<std::vector<LinkInfo>> Rtnl::links() {
  char buf[kNlBuf];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETLINK;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  std::vector<LinkInfo> out;
  Status st = dump(nlh, [&](const nlmsghdr* m) {
    if (m->nlmsg_type == RTM_NEWLINK) out.push_back(parse_link(m));
  }, "list links");
  if (!st) return st;
  return out;
}

Result<int> Rtnl::link_index(const std::string& ifname) {
  auto all = links();
  if (!all) return all.status();
  for (const auto& l : *all)
    if (l.name == ifname) return l.index;
  return Status::error(sdn::ErrorKind::kNotFound, "no interface named '" + ifname + "'");
}

Status Rtnl::del_link(const std::string& ifname) {
  char buf[kNlBuf];
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_DELLINK;
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname.c_str());
  return request(nlh, "delete link " + ifname);
}

}  // namespace testbed
