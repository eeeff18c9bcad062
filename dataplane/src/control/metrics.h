// Prometheus's scrape endpoint: GET /metrics over HTTP/1.x on the address of
// the config's metrics.listen ("127.0.0.1:9469", "[::1]:9469", or
// "unix:/run/dataplane/NAME.metrics.sock"), served by one thread of its own
// that renders a StatsSnapshot on each scrape (the workers do nothing for
// it) and serves every connection at once with a deadline each. Off unless
// configured.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sdn/status.h"

namespace dp {

// Checks the syntax of a listen address; the words say what is wrong.
sdn::Status parse_metrics_listen(const std::string& spec);

class MetricsServer {
 public:
  static constexpr size_t kMaxConns = 64;                  // open at once; the oldest idle one makes room
  static constexpr uint64_t kDeadlineNs = 3'000'000'000;   // from accept to the last byte of the reply
  static constexpr size_t kMaxRequest = 8192;              // request header bytes
  static constexpr int kTickMs = 200;

  // What open() would refuse, without taking anything (--check): a bad
  // address, one in use, a unix path that is not a socket or sits in a
  // directory others may write. Nothing is bound, created or removed.
  static sdn::Status check(const std::string& spec);
  // Whether process `pid` listens on `spec` (its socket's inode, from
  // /proc/PID/net/{tcp,tcp6,unix}, among /proc/PID/fd): --check of a running
  // instance's own config does not count that address as taken.
  static bool held_by(const std::string& spec, int pid);
  // Binds and listens (an address in use is an error here, before EAL).
  static sdn::Result<std::unique_ptr<MetricsServer>> open(const std::string& spec);
  ~MetricsServer();  // stops the thread at once, closes, removes a unix socket
  // Serves scrapes on a thread until destroyed; `render` gives the body.
  void start(std::function<std::string()> render);
  const std::string& spec() const { return spec_; }

 private:
  struct Conn {
    int fd;
    uint64_t since;   // accept time
    std::string req;  // the request so far
    std::string out;  // the reply, once the request is whole
    size_t sent;
  };
  MetricsServer() = default;
  void serve();
  void accept_all(uint64_t now);
  void step(Conn& c, short revents);
  std::string answer(const std::string& req);
  int fd_ = -1, wake_ = -1;
  std::string spec_, unix_path_;
  std::function<std::string()> render_;
  std::atomic<bool> stop_{false};
  std::vector<Conn> conns_;  // the thread's own
  uint64_t timed_out_ = 0, evicted_ = 0;
  std::thread thread_;
};

}  // namespace dp
