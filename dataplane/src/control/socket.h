// Internal: the control socket. One small poll loop serves every client at
// once; nobody's silence delays anybody else's request, or the offload
// events the same loop carries.
//
// Protocol (AF_UNIX SEQPACKET, root only): one request message per
// connection; the reply is one or more messages and ends with a message of
// exactly kEnd. A connection closed before kEnd is a reply cut short.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sdn/status.h"

namespace dp {

// A socket path root may bind (the control socket, a unix metrics socket;
// `what` names it in the error): nothing but a socket at `path` (never a
// file or a symlink, which a stale-socket cleanup would delete), and its
// directory and every one above it owned by root or us and writable by no
// one else (or sticky, as /tmp). A missing directory is fine when the one
// above it is (the daemon makes it 0700). Changes nothing; --check runs it.
sdn::Status check_socket_place(const std::string& what, const std::string& path);

class ControlServer {
 public:
  static constexpr char kEnd[] = "\x04";           // the last message of a reply
  static constexpr size_t kMaxRequest = 65536;     // larger requests get an error
  static constexpr size_t kChunk = 60000;          // reply bytes per message
  static constexpr size_t kMaxClients = 1024;      // more are closed at once
  static constexpr uint64_t kIdleNs = 30'000'000'000;  // a client that sends nothing for this long is closed

  // A reply: `text`, then whatever `more` appends each time the client has
  // drained what it got (more returns false when it has nothing left).
  // Large listings stream this way without building them whole. With
  // `ready`, nothing is sent until it returns true (a reply that waits for
  // something, polled every loop; the client is not woken meanwhile).
  struct Reply {
    std::string text;
    std::function<bool(std::string* out)> more;
    std::function<bool()> ready;
  };
  using Handler = std::function<Reply(const std::string& request)>;

  // Checks and takes `path`: its directory is made 0700 if missing (one
  // level), `<path>.lock` is locked so that a second daemon on the same path
  // is refused, a stale socket from a killed daemon is removed, and nothing
  // that is not a socket is ever removed.
  static sdn::Result<std::unique_ptr<ControlServer>> open(const std::string& path);
  ~ControlServer();  // closes clients and removes the socket
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Accepts, reads and writes whatever is ready, waiting at most timeout_ms
  // for something to be. Never blocks on one client.
  void poll(int timeout_ms, uint64_t now_ns, const Handler& handler);
  size_t clients() const { return clients_.size(); }
  const std::string& path() const { return path_; }

 private:
  ControlServer() = default;
  struct Client {
    int fd = -1;
    uint64_t since = 0;  // connect time
    bool answered = false;
    std::string out;  // reply bytes not yet sent
    size_t sent = 0;
    std::function<bool(std::string*)> more;
    std::function<bool()> ready;
    bool end_sent = false;
  };
  void serve_read(Client& c, const Handler& handler);
  bool serve_write(Client& c);  // false: done or broken, close it

  std::string path_;
  int lock_fd_ = -1, fd_ = -1;
  std::string lock_path_;
  bool locked_ = false;  // holds the lock: the file is its to remove
  std::vector<Client> clients_;
};

}  // namespace dp
