// Prometheus's scrape endpoint: GET /metrics over HTTP/1.x on the address of
// the config's metrics.listen ("127.0.0.1:9469", "[::1]:9469", or
// "unix:/run/dataplane/NAME.metrics.sock"), served by one thread of its own
// that renders a StatsSnapshot on each scrape (the workers do nothing for
// it). Off unless configured.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "sdn/status.h"

namespace dp {

// Checks the syntax of a listen address; the words say what is wrong.
sdn::Status parse_metrics_listen(const std::string& spec);

class MetricsServer {
 public:
  // Binds and listens (an address in use is an error here, before EAL).
  static sdn::Result<std::unique_ptr<MetricsServer>> open(const std::string& spec);
  ~MetricsServer();  // stops the thread, closes, removes a unix socket
  // Serves scrapes on a thread until destroyed; `render` gives the body.
  void start(std::function<std::string()> render);
  const std::string& spec() const { return spec_; }

 private:
  MetricsServer() = default;
  void serve();
  void answer(int fd);
  int fd_ = -1;
  std::string spec_, unix_path_;
  std::function<std::string()> render_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace dp
