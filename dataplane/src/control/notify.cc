#include "notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "dataplane/log.h"
#include "sdn/clock.h"
#include "sdn/number.h"
#include "sdn/text.h"

namespace dp {

ServiceNotifier::ServiceNotifier() {
  const char* path = getenv("NOTIFY_SOCKET");
  if (!path || !*path) return;
  // A path, or an abstract socket written with a leading '@'.
  if ((path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sockaddr_un::sun_path)) {
    log_warning(LogType::kSystemd, std::string("NOTIFY_SOCKET '") + path + "' is not a socket path; not notifying the service manager");
    return;
  }
  addr_ = path;
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    log_warning(LogType::kSystemd, std::string("NOTIFY_SOCKET: socket: ") + strerror(errno));
    return;
  }
  const char* usec = getenv("WATCHDOG_USEC");
  const char* pid = getenv("WATCHDOG_PID");
  double us = 0, p = 0;
  const bool for_me = !pid || (sdn::parse_number(pid, true, 1, 4194304, &p) && static_cast<pid_t>(p) == getpid());
  if (usec && for_me) {
    if (sdn::Status s = sdn::parse_number(usec, true, 1, 3.6e12, &us); !s)
      log_warning(LogType::kSystemd, "WATCHDOG_USEC: " + s.message() + "; no watchdog pings");
    else watchdog_ns_ = static_cast<uint64_t>(us) * 1000;
  }
}

ServiceNotifier::~ServiceNotifier() {
  if (fd_ >= 0) close(fd_);
}

void ServiceNotifier::send(const std::string& msg) {
  if (fd_ < 0) return;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path, addr_.data(), addr_.size());
  if (a.sun_path[0] == '@') a.sun_path[0] = '\0';
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + addr_.size());
  // Never waits: a manager that does not read (its queue full) must not
  // stall the control loop; the datagram is lost and counted instead.
  if (sendto(fd_, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&a), len) >= 0) {
    if (failed_)
      log_info(LogType::kSystemd, "NOTIFY_SOCKET " + addr_ + ": reachable again after " + std::to_string(failed_) +
                                      " failed notifications");
    failed_ = 0;
    return;
  }
  // A manager that went away: the first failure says why, then one line a
  // minute with the count (not one per watchdog ping).
  const int err = errno;
  const uint64_t now = sdn::mono_ns();
  if (failed_++ == 0 || now - last_warn_ns_ >= 60'000'000'000ull) {
    log_warning(LogType::kSystemd, "NOTIFY_SOCKET " + addr_ + ": " + strerror(err) +
                                       (failed_ > 1 ? " (" + std::to_string(failed_) + " failed so far)" : ""));
    last_warn_ns_ = now;
  }
}

// STATUS= is one line: whatever it carries (a file name, a config key, a
// client's text) is escaped so that it cannot add a KEY=VALUE of its own.
void ServiceNotifier::ready(const std::string& s) {
  send("READY=1\nSTATUS=" + sdn::escape_control(s) + "\nMAINPID=" + std::to_string(getpid()) + "\n");
}
void ServiceNotifier::status(const std::string& s) { send("STATUS=" + sdn::escape_control(s) + "\n"); }
void ServiceNotifier::reloading() { send("RELOADING=1\nSTATUS=reloading\n"); }
void ServiceNotifier::reloaded(const std::string& s) { send("READY=1\nSTATUS=" + sdn::escape_control(s) + "\n"); }
void ServiceNotifier::stopping() { send("STOPPING=1\nSTATUS=stopping\n"); }

void ServiceNotifier::watchdog_ping(uint64_t now_ns) {
  last_ping_ns_ = now_ns;
  send("WATCHDOG=1\n");
}

}  // namespace dp
