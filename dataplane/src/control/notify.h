// The service manager's notification protocol (sd_notify(3)), spoken
// directly: one datagram per state change to $NOTIFY_SOCKET. Written here
// rather than linked from libsystemd so that the arm64 cross build and a
// host without systemd need nothing more; the protocol is a stable,
// documented datagram of KEY=VALUE lines. Without $NOTIFY_SOCKET every call
// does nothing.
#pragma once

#include <cstdint>
#include <string>

namespace dp {

class ServiceNotifier {
 public:
  // Reads $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID (a watchdog meant
  // for another process is ignored).
  ServiceNotifier();
  ~ServiceNotifier();
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  bool enabled() const { return fd_ >= 0; }
  // READY=1 with a STATUS= line: ports started, workers running.
  void ready(const std::string& status);
  void status(const std::string& status);
  // RELOADING=1 before a reload, READY=1 after it.
  void reloading();
  void reloaded(const std::string& status);
  void stopping();
  // Half the watchdog interval has passed since the last WATCHDOG=1: the
  // control loop checks its workers and pings (a hung loop, or a worker
  // that stopped polling, stops the pings and the manager restarts us).
  bool watchdog_due(uint64_t now_ns) const { return watchdog_ns_ && now_ns - last_ping_ns_ >= watchdog_ns_ / 2; }
  void watchdog_ping(uint64_t now_ns);
  uint64_t watchdog_interval_ns() const { return watchdog_ns_; }

 private:
  void send(const std::string& msg);
  int fd_ = -1;
  std::string addr_;
  uint64_t watchdog_ns_ = 0, last_ping_ns_ = 0;
  uint64_t failed_ = 0, last_warn_ns_ = 0;  // notifications that could not be sent in a row
};

}  // namespace dp
