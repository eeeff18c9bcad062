#include "metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sdn/clock.h"
#include "sdn/number.h"
#include "socket.h"

namespace dp {

using sdn::Result;
using sdn::Status;

namespace {

struct Addr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  std::string unix_path;
};

Result<Addr> resolve(const std::string& spec) {
  Addr a;
  if (spec.rfind("unix:", 0) == 0) {
    a.unix_path = spec.substr(5);
    auto* u = reinterpret_cast<sockaddr_un*>(&a.ss);
    if (a.unix_path.empty() || a.unix_path[0] != '/')
      return Status::error(sdn::ErrorKind::kInvalid, "'" + spec + "': unix: needs an absolute path");
    if (a.unix_path.size() >= sizeof u->sun_path)
      return Status::error(sdn::ErrorKind::kInvalid, "'" + spec + "': the path is longer than a socket path can be");
    u->sun_family = AF_UNIX;
    memcpy(u->sun_path, a.unix_path.c_str(), a.unix_path.size() + 1);
    a.len = sizeof(sockaddr_un);
    return a;
  }
  std::string host, port;
  const bool bracketed = !spec.empty() && spec[0] == '[';  // [IPV6]:PORT only
  if (bracketed) {
    const size_t close = spec.find(']');
    if (close == std::string::npos || close + 1 >= spec.size() || spec[close + 1] != ':')
      return Status::error(sdn::ErrorKind::kInvalid, "'" + spec + "': want [IPV6]:PORT");
    host = spec.substr(1, close - 1);
    port = spec.substr(close + 2);
  } else {
    const size_t colon = spec.rfind(':');
    if (colon == std::string::npos || spec.find(':') != colon)
      return Status::error(sdn::ErrorKind::kInvalid,
                           "'" + spec + "': want IPV4:PORT, [IPV6]:PORT or unix:/PATH (e.g. 127.0.0.1:9469)");
    host = spec.substr(0, colon);
    port = spec.substr(colon + 1);
  }
  double p;
  if (Status s = sdn::parse_number(port, true, 1, 65535, &p); !s)
    return Status::error(sdn::ErrorKind::kInvalid, "'" + spec + "': port " + s.message());
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
  if (bracketed && inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) != 1) {
    return Status::error(sdn::ErrorKind::kInvalid,
                         "'" + spec + "': '" + host + "' in brackets is not an IPv6 address (IPv4: " + host + ":" + port + ")");
  } else if (!bracketed && inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(p));
    a.len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    if (!bracketed)
      return Status::error(sdn::ErrorKind::kInvalid, "'" + spec + "': an IPv6 address goes in brackets: [" + host + "]:" + port);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(p));
    a.len = sizeof(sockaddr_in6);
  } else {
    return Status::error(sdn::ErrorKind::kInvalid, "'" + spec + "': '" + host + "' is not an IPv4 or IPv6 address");
  }
  return a;
}

}  // namespace

Status parse_metrics_listen(const std::string& spec) { return resolve(spec).status(); }

namespace {
// Whether a program answers on the unix socket at `a` (a live daemon's).
bool answers(const Addr& a) {
  int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool live = probe >= 0 && connect(probe, reinterpret_cast<const sockaddr*>(&a.ss), a.len) == 0;
  if (probe >= 0) close(probe);
  return live;
}
}  // namespace

Status MetricsServer::check(const std::string& spec) {
  auto a = resolve(spec);
  if (!a) return a.status();
  if (!a->unix_path.empty()) {
    if (Status s = check_socket_place("metrics socket", a->unix_path); !s) return s;
    if (answers(*a)) return Status::error(sdn::ErrorKind::kBusy, spec + ": in use (a program answers on it)");
    return {};
  }
  // An address: free if it can be bound now (the socket goes at once).
  int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::error(spec + ": socket: " + strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&a->ss), a->len), e = errno;
  close(fd);
  if (rc != 0) return Status::error(sdn::kind_of_errno(e), spec + ": " + strerror(e));
  return {};
}

bool MetricsServer::held_by(const std::string& spec, int pid) {
  auto a = resolve(spec);
  if (!a || pid <= 0) return false;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::string inode;
  if (!a->unix_path.empty()) {
    std::ifstream in(proc + "/net/unix");
    for (std::string l; std::getline(in, l);) {
      std::istringstream f(l);
      std::vector<std::string> w;
      for (std::string x; f >> x;) w.push_back(x);
      if (w.size() >= 8 && w[7] == a->unix_path) inode = w[6];
    }
  } else {
    char want[80];
    const bool v4 = a->ss.ss_family == AF_INET;
    if (v4) {
      const auto* s4 = reinterpret_cast<const sockaddr_in*>(&a->ss);
      snprintf(want, sizeof want, "%08X:%04X", s4->sin_addr.s_addr, ntohs(s4->sin_port));
    } else {
      const auto* s6 = reinterpret_cast<const sockaddr_in6*>(&a->ss);
      uint32_t w[4];
      memcpy(w, &s6->sin6_addr, sizeof w);
      snprintf(want, sizeof want, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3], ntohs(s6->sin6_port));
    }
    std::ifstream in(proc + (v4 ? "/net/tcp" : "/net/tcp6"));
    for (std::string l; std::getline(in, l);) {
      std::istringstream f(l);
      std::vector<std::string> w;
      for (std::string x; f >> x;) w.push_back(x);
      if (w.size() >= 10 && w[1] == want && w[3] == "0A") inode = w[9];  // 0A: LISTEN
    }
  }
  if (inode.empty()) return false;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(proc + "/fd", ec))
    if (std::filesystem::read_symlink(e.path(), ec).string() == "socket:[" + inode + "]") return true;
  return false;
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::open(const std::string& spec) {
  auto a = resolve(spec);
  if (!a) return a.status();
  if (Status s = check(spec); !s) return s;
  std::unique_ptr<MetricsServer> m(new MetricsServer());
  m->spec_ = spec;
  m->fd_ = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (m->fd_ < 0) return Status::error(spec + ": socket: " + strerror(errno));
  m->wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m->wake_ < 0) return Status::error(spec + ": eventfd: " + strerror(errno));
  int one = 1;
  if (a->unix_path.empty()) setsockopt(m->fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // A unix socket left by a killed daemon (nobody answers on it: check())
  // is taken over; check() refused anything at the path that is not a socket.
  struct stat st {};
  if (!a->unix_path.empty() && lstat(a->unix_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(a->unix_path.c_str());
  if (bind(m->fd_, reinterpret_cast<sockaddr*>(&a->ss), a->len) != 0)
    return Status::error(sdn::kind_of_errno(errno), spec + ": " + strerror(errno));
  m->unix_path_ = a->unix_path;
  if (listen(m->fd_, SOMAXCONN) != 0) return Status::error(spec + ": listen: " + strerror(errno));
  return m;
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  if (wake_ >= 0) {
    const uint64_t one = 1;
    if (write(wake_, &one, sizeof one) < 0) {
      // The thread also looks at stop_ every kTickMs.
    }
  }
  if (thread_.joinable()) thread_.join();
  for (Conn& c : conns_) close(c.fd);
  if (fd_ >= 0) close(fd_);
  if (wake_ >= 0) close(wake_);
  if (!unix_path_.empty()) unlink(unix_path_.c_str());
}

void MetricsServer::start(std::function<std::string()> render) {
  render_ = std::move(render);
  thread_ = std::thread([this] { serve(); });
}

// One thread, one poll over the listener and every connection: nobody's
// slowness delays anybody else. A connection has kDeadlineNs from its
// accept for the whole exchange (a client trickling a byte at a time is
// closed then); past kMaxConns the oldest that has not sent its request
// yet is closed for the newcomer, so idle connections cannot lock a
// scraper out. Stopping never waits on a client.
void MetricsServer::serve() {
  std::vector<pollfd> p;
  while (!stop_) {
    p.clear();
    p.push_back({wake_, POLLIN, 0});
    p.push_back({fd_, POLLIN, 0});
    for (const Conn& c : conns_) p.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
    if (::poll(p.data(), p.size(), kTickMs) < 0 && errno != EINTR) break;
    if (stop_) break;
    const uint64_t now = sdn::mono_ns();
    // Each connection that is ready, then new ones (their slots exist after).
    for (size_t i = 0; i < conns_.size(); i++) {
      const short re = p[i + 2].revents;
      if (re) step(conns_[i], re);
    }
    std::erase_if(conns_, [&](Conn& c) {
      if (c.fd >= 0 && now - c.since < kDeadlineNs) return false;
      if (c.fd >= 0) {
        close(c.fd);
        timed_out_++;
      }
      return true;
    });
    if (p[1].revents & POLLIN) accept_all(now);
  }
}

void MetricsServer::accept_all(uint64_t now) {
  for (;;) {
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) return;  // EAGAIN: none left (or EMFILE: the others are served first)
    if (conns_.size() >= kMaxConns) {
      // The oldest still reading (or the oldest of all) makes room.
      auto victim = conns_.begin();
      for (auto it = conns_.begin(); it != conns_.end(); ++it)
        if (it->out.empty()) {
          victim = it;
          break;
        }
      close(victim->fd);
      conns_.erase(victim);
      evicted_++;
    }
    conns_.push_back(Conn{c, now, {}, {}, 0});
  }
}

// Reads what came and answers once the request's header is whole; writes
// what the socket takes. Sets fd = -1 when the connection is done.
void MetricsServer::step(Conn& c, short revents) {
  auto done = [&] {
    close(c.fd);
    c.fd = -1;
  };
  if (c.out.empty()) {
    char buf[2048];
    ssize_t n = recv(c.fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return done();
    if (n > 0) c.req.append(buf, static_cast<size_t>(n));
    const bool whole = c.req.find("\r\n\r\n") != std::string::npos || c.req.find("\n\n") != std::string::npos;
    if (!whole && c.req.size() < kMaxRequest) return;
    c.out = answer(c.req);
    c.req.clear();
    c.req.shrink_to_fit();
    return;
  }
  if (revents & (POLLERR | POLLHUP)) return done();
  ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return done();
  c.sent += static_cast<size_t>(n);
  if (c.sent == c.out.size()) done();
}

// One request, one reply, then the connection closes (HTTP/1.0 style; a
// scraper reconnects each time).
std::string MetricsServer::answer(const std::string& req) {
  const std::string line = req.substr(0, req.find_first_of("\r\n"));
  std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8", body;
  const bool get = line.rfind("GET ", 0) == 0, head = line.rfind("HEAD ", 0) == 0;
  const size_t sp = line.find(' ');
  const std::string path = sp == std::string::npos ? "" : line.substr(sp + 1, line.find(' ', sp + 1) - sp - 1);
  if (req.size() >= kMaxRequest && req.find("\n\n") == std::string::npos && req.find("\r\n\r\n") == std::string::npos) {
    status = "431 Request Header Fields Too Large";
    type = "text/plain";
    body = "GET /metrics\n";
  } else if (!get && !head) {
    status = "405 Method Not Allowed";
    type = "text/plain";
    body = "GET /metrics\n";
  } else if (path != "/metrics" && path.rfind("/metrics?", 0) != 0) {
    status = "404 Not Found";
    type = "text/plain";
    body = "GET /metrics\n";
  } else {
    body = render_();
  }
  std::string out = "HTTP/1.0 " + status + "\r\nContent-Type: " + type + "\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (!head) out += body;
  return out;
}

}  // namespace dp
