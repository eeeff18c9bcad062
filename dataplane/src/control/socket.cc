#include "socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dp {

using sdn::Result;
using sdn::Status;

namespace {

std::string errstr(int e) { return strerror(e); }

// Whoever may write a directory on the way to the socket may swap the
// socket for their own and answer root's `reload` with "ok". The socket's
// directory: owned by this process's user (or root) and writable by no one
// else. Each directory above it: the same, or sticky (/tmp: no one renames
// what is not theirs).
// `above`: `dir` is the one above the socket's (still to be made).
Status check_socket_dir(const std::string& what, const std::string& dir, bool above = false) {
  const uid_t me = geteuid();
  std::string d = dir;
  for (bool first = !above;; first = false) {
    struct stat st {};
    if (stat(d.c_str(), &st) != 0) return Status::error(what + " directory " + d + ": " + errstr(errno));
    const bool owner_ok = st.st_uid == me || st.st_uid == 0;
    const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    if (!owner_ok)
      return Status::error(what + " directory " + d + " is owned by uid " + std::to_string(st.st_uid) +
                           ": that user could put another socket in its place; use a directory owned by root");
    if (others_write && (first || !(st.st_mode & S_ISVTX)))
      return Status::error(what + " directory " + d + " is writable by " +
                           (st.st_mode & S_IWOTH ? "everyone" : "its group") +
                           " (mode " + std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                           std::to_string(st.st_mode & 7) + "): use a directory only root can write");
    if (d == "/") return {};
    size_t slash = d.rfind('/');
    d = slash == 0 ? "/" : d.substr(0, slash);
  }
}

}  // namespace

Status check_socket_place(const std::string& what, const std::string& path) {
  std::string dir = path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::error(what + " directory " + dir + ": " + errstr(errno));
    // Made 0700 at start (one level): what is above it must be safe.
    std::string up = dir.substr(0, dir.rfind('/'));
    if (up.empty()) up = "/";
    if (stat(up.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::error(what + " directory " + dir + ": missing, and " + up + " is not a directory to make it in");
    return check_socket_dir(what, up, true);
  }
  if (!S_ISDIR(st.st_mode)) return Status::error(what + " directory " + dir + " is not a directory");
  if (Status d = check_socket_dir(what, dir); !d) return d;
  if (lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode))
    return Status::error(what + " " + path + " exists and is not a socket; not removing it");
  return {};
}

Result<std::unique_ptr<ControlServer>> ControlServer::open(const std::string& path) {
  sockaddr_un sa{};
  if (path.empty() || path[0] != '/' || path.size() >= sizeof sa.sun_path)
    return Status::error("control socket '" + path + "': needs an absolute path of at most " +
                         std::to_string(sizeof sa.sun_path - 1) + " bytes");
  std::unique_ptr<ControlServer> s(new ControlServer());
  s->path_ = path;
  if (Status d = check_socket_place("control socket", path); !d) return d;
  std::string dir = path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0 && (errno != ENOENT || mkdir(dir.c_str(), 0700) != 0))
    return Status::error("control socket directory " + dir + ": " + errstr(errno));

  std::string lock = path + ".lock";
  // The lock file goes with a clean stop (unlinked while held): a lock taken
  // on a file that is no longer the one at `lock` (a stopping daemon removed
  // it meanwhile) is taken again on the new one.
  for (int tries = 0;; tries++) {
    s->lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (s->lock_fd_ < 0) return Status::error("control socket lock " + lock + ": " + errstr(errno));
    if (flock(s->lock_fd_, LOCK_EX | LOCK_NB) != 0) break;  // refused below, with who holds it
    struct stat held{}, now{};
    if (fstat(s->lock_fd_, &held) == 0 && stat(lock.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino)
      break;
    close(s->lock_fd_);
    s->lock_fd_ = -1;
    if (tries == 100) return Status::error("control socket lock " + lock + ": keeps being replaced");
  }
  s->lock_path_ = lock;
  if (flock(s->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    char pid[32] = {};
    ssize_t n = pread(s->lock_fd_, pid, sizeof pid - 1, 0);
    std::string who = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "?";
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    if (e == EWOULDBLOCK)
      return Status::error("control socket " + path + " is in use by another dataplane (pid " + who + ", lock " +
                           lock + "); give this one its own --file-prefix or control.socket");
    return Status::error("control socket lock " + lock + ": " + errstr(e));
  }
  s->locked_ = true;
  std::string me = std::to_string(getpid()) + "\n";
  if (ftruncate(s->lock_fd_, 0) != 0 || pwrite(s->lock_fd_, me.data(), me.size(), 0) < 0) {
    // The lock holds without the pid; it only makes the message above better.
  }

  // Holding the lock, whatever socket is at `path` is a dead daemon's.
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return Status::error("control socket " + path + " exists and is not a socket; not removing it");
    if (unlink(path.c_str()) != 0) return Status::error("control socket " + path + ": remove stale: " + errstr(errno));
  }
  s->fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd_ < 0) return Status::error("control socket: " + errstr(errno));
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  mode_t old = umask(0077);  // root only from the start, not after a chmod
  int rc = bind(s->fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  int e = errno;
  umask(old);
  if (rc != 0) return Status::error("control socket " + path + ": bind: " + errstr(e));
  if (listen(s->fd_, SOMAXCONN) != 0) return Status::error("control socket " + path + ": listen: " + errstr(errno));
  return s;
}

ControlServer::~ControlServer() {
  for (Client& c : clients_) close(c.fd);
  if (fd_ >= 0) {
    close(fd_);
    unlink(path_.c_str());
  }
  // Removed while held (open() takes a lock again when its file was
  // replaced meanwhile, so two daemons never hold different files of one
  // name); only kill -9 leaves it, for the next start to reuse.
  if (lock_fd_ >= 0) {
    if (locked_) unlink(lock_path_.c_str());
    close(lock_fd_);
  }
}

void ControlServer::poll(int timeout_ms, uint64_t now_ns, const Handler& handler) {
  std::vector<pollfd> p;
  p.reserve(clients_.size() + 1);
  p.push_back({fd_, POLLIN, 0});
  for (const Client& c : clients_) {
    short ev = !c.answered ? POLLIN : c.ready && !c.ready() ? 0 : POLLOUT;
    p.push_back({c.fd, ev, 0});
  }
  if (::poll(p.data(), p.size(), timeout_ms) <= 0) {
    // Nothing ready; still close clients that have been silent too long.
    std::erase_if(clients_, [&](Client& c) {
      if (c.answered || now_ns - c.since < kIdleNs) return false;
      close(c.fd);
      return true;
    });
    return;
  }
  std::vector<bool> drop(clients_.size(), false);
  for (size_t i = 0; i < clients_.size(); i++) {
    Client& c = clients_[i];
    short re = p[i + 1].revents;
    if (!re) {
      if (!c.answered && now_ns - c.since >= kIdleNs) drop[i] = true;
      continue;
    }
    if (c.answered && c.ready && (re & (POLLHUP | POLLERR))) {  // gave up waiting
      drop[i] = true;
      continue;
    }
    if (!c.answered) {
      if (re & (POLLIN | POLLHUP | POLLERR)) serve_read(c, handler);
      if (c.fd < 0) drop[i] = true;
    }
    if (c.answered && !serve_write(c)) drop[i] = true;
  }
  size_t k = 0;
  for (size_t i = 0; i < clients_.size(); i++) {
    if (drop[i]) {
      if (clients_[i].fd >= 0) close(clients_[i].fd);
    } else {
      // Never onto itself: a self-move empties a std::string and a
      // std::function, and the reply would go on from freed bytes.
      if (k != i) clients_[k] = std::move(clients_[i]);
      k++;
    }
  }
  clients_.resize(k);
  if (p[0].revents & POLLIN) {
    for (;;) {
      int fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      if (clients_.size() >= kMaxClients) {
        static const char busy[] = "error: too many control clients";
        send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        send(fd, kEnd, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
        continue;
      }
      Client c;
      c.fd = fd;
      c.since = now_ns;
      clients_.push_back(std::move(c));
    }
  }
}

void ControlServer::serve_read(Client& c, const Handler& handler) {
  static char buf[kMaxRequest];
  iovec iov{buf, sizeof buf};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  ssize_t n = recvmsg(c.fd, &m, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {  // gone without asking
    close(c.fd);
    c.fd = -1;
    return;
  }
  Reply r;
  if (m.msg_flags & MSG_TRUNC) r.text = "error: request larger than " + std::to_string(kMaxRequest) + " bytes";
  else {
    // The command table answers its handlers' failures itself; this is
    // the last line, for anything that gets past it.
    try {
      r = handler(std::string(buf, static_cast<size_t>(n)));
    } catch (const std::exception& x) {
      r = Reply{std::string("error: internal error: ") + x.what(), nullptr, nullptr};
    }
  }
  c.answered = true;
  c.out = std::move(r.text);
  c.more = std::move(r.more);
  c.ready = std::move(r.ready);
}

bool ControlServer::serve_write(Client& c) {
  if (c.ready) {
    if (!c.ready()) return true;
    c.ready = nullptr;
  }
  for (;;) {
    if (c.sent == c.out.size()) {
      c.out.clear();
      c.sent = 0;
      for (int calls = 0; c.more && c.out.size() < 4 * kChunk; calls++) {
        if (calls == 64 && c.out.empty()) return true;  // a long stretch of nothing: let others go first
        bool again = false;
        try {
          again = c.more(&c.out);
        } catch (const std::exception& x) {
          c.out += std::string("error: internal error: ") + x.what();
        }
        if (!again) c.more = nullptr;
      }
      if (c.out.empty()) {
        if (c.end_sent) return false;
        ssize_t n = send(c.fd, kEnd, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) return errno == EAGAIN;
        c.end_sent = true;
        return false;  // done: close
      }
    }
    size_t len = std::min(kChunk, c.out.size() - c.sent);
    ssize_t n = send(c.fd, c.out.data() + c.sent, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN;  // full: wait for POLLOUT; else the client went away
    c.sent += static_cast<size_t>(n);
  }
}

}  // namespace dp
