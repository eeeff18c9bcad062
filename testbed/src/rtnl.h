// Internal: an rtnetlink socket (libmnl) bound to the namespace it was opened in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sdn/status.h"
#include "testbed/testbed.h"

struct mnl_socket;
struct nlmsghdr;

namespace testbed {

// Request buffers: every message here is far below a page.
inline constexpr size_t kNlBuf = 8192;

class Rtnl {
 public:
  // Opens the socket in the calling thread's namespace.
  static Result<std::unique_ptr<Rtnl>> open();
  ~Rtnl();

  // Sends one request and waits for its ACK. `what` prefixes the error text.
  Status request(nlmsghdr* nlh, const std::string& what);
  // Sends a dump request and calls cb for each message.
  Status dump(nlmsghdr* nlh, const std::function<void(const nlmsghdr*)>& cb, const std::string& what);

  Result<int> link_index(const std::string& ifname);
  Result<std::vector<LinkInfo>> links();
  Status del_link(const std::string& ifname);

  uint32_t next_seq() { return ++seq_; }

 private:
  Rtnl(mnl_socket* s, uint32_t portid) : sock_(s), portid_(portid) {}
  mnl_socket* sock_;
  uint32_t portid_;
  uint32_t seq_ = 0;
};

}  // namespace testbed
