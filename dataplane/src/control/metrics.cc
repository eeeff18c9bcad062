#include "metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sdn/number.h"

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
  if (!spec.empty() && spec[0] == '[') {
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
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(p));
    a.len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
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

Result<std::unique_ptr<MetricsServer>> MetricsServer::open(const std::string& spec) {
  auto a = resolve(spec);
  if (!a) return a.status();
  std::unique_ptr<MetricsServer> m(new MetricsServer());
  m->spec_ = spec;
  m->fd_ = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (m->fd_ < 0) return Status::error(spec + ": socket: " + strerror(errno));
  int one = 1;
  if (a->unix_path.empty()) setsockopt(m->fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // A unix socket left by a killed daemon is taken over only when nobody
  // answers on it; anything else at the path is an error.
  if (!a->unix_path.empty() && access(a->unix_path.c_str(), F_OK) == 0) {
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live = connect(probe, reinterpret_cast<sockaddr*>(&a->ss), a->len) == 0;
    close(probe);
    if (live) return Status::error(sdn::ErrorKind::kBusy, spec + ": in use (a program answers on it)");
    unlink(a->unix_path.c_str());
  }
  if (bind(m->fd_, reinterpret_cast<sockaddr*>(&a->ss), a->len) != 0)
    return Status::error(sdn::kind_of_errno(errno), spec + ": " + strerror(errno));
  m->unix_path_ = a->unix_path;
  if (listen(m->fd_, 16) != 0) return Status::error(spec + ": listen: " + strerror(errno));
  return m;
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
  if (!unix_path_.empty()) unlink(unix_path_.c_str());
}

void MetricsServer::start(std::function<std::string()> render) {
  render_ = std::move(render);
  thread_ = std::thread([this] { serve(); });
}

void MetricsServer::serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 200) != 1) continue;
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    answer(c);
    close(c);
  }
}

// One request, one reply, then the connection closes (HTTP/1.0 style; a
// scraper reconnects each time). A client that sends nothing for 2 s is
// dropped: one slow client holds the endpoint no longer than that.
void MetricsServer::answer(int fd) {
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string req;
  char buf[2048];
  while (req.find("\r\n\r\n") == std::string::npos && req.find("\n\n") == std::string::npos && req.size() < 8192) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return;
    req.append(buf, static_cast<size_t>(n));
  }
  const std::string line = req.substr(0, req.find_first_of("\r\n"));
  std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8", body;
  const bool get = line.rfind("GET ", 0) == 0, head = line.rfind("HEAD ", 0) == 0;
  const std::string path = line.substr(line.find(' ') + 1, line.find(' ', line.find(' ') + 1) - line.find(' ') - 1);
  if (!get && !head) {
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
  for (size_t at = 0; at < out.size();) {
    ssize_t n = send(fd, out.data() + at, out.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}

}  // namespace dp
