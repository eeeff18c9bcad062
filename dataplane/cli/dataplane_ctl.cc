// dataplane-ctl: changes to a running dataplane over its root-only socket.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "dataplane/commands.h"
#include "version.h"

int main(int argc, char** argv) {
  std::string sock = "/run/dataplane/dataplane.sock", req;
  bool json = false;
  int i = 1;
  for (; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--socket" && i + 1 < argc) sock = argv[++i];
    else if (a == "--prefix" && i + 1 < argc) sock = std::string("/run/dataplane/") + argv[++i] + ".sock";
    else if (a == "--json") json = true;
    else if (a == "--help" || a == "-h") {
      printf("usage: dataplane-ctl [--prefix NAME | --socket PATH] [--json] COMMAND | --help | --commands | --version\n%s"
             "Exit status 0 when the daemon answers ok, 1 otherwise (an error, or a reply cut short).\n"
             "--json: the reply as JSON, one object per line (README: dataplane-ctl --json).\n"
             "dataplane-ctl --commands lists the command words, one command per line (shell completion).\n",
             dp::commands_help().c_str());
      return 0;
    } else if (a == "--version") {
      printf("dataplane-ctl %s (revision %s)\nDPDK %s built against (libdpdk.pc; dataplane-ctl does not link DPDK)\n",
             DP_VERSION, DP_REVISION, DP_DPDK_BUILD_VERSION);
      return 0;
    } else if (a == "--commands") {
      for (const dp::CommandSpec& c : dp::kCommands) printf("%s\n", c.name);
      return 0;
    } else break;
  }
  for (; i < argc; i++) req += (req.empty() ? "" : " ") + std::string(argv[i]);
  if (!req.empty() && json) req = "--json " + req;
  if (req.empty()) {
    fprintf(stderr, "dataplane-ctl: no command (see --help)\n");
    return 2;
  }
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock.c_str());
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    fprintf(stderr, "dataplane-ctl: cannot connect to %s: %s\n", sock.c_str(), strerror(errno));
    return 1;
  }
  // Only a daemon of root's, or of this user's, hears the request: a socket
  // someone else put at this path gets nothing, not even the command.
  ucred peer{};
  socklen_t plen = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &plen) != 0) {
    fprintf(stderr, "dataplane-ctl: %s: cannot tell who listens: %s\n", sock.c_str(), strerror(errno));
    return 1;
  }
  if (peer.uid != 0 && peer.uid != geteuid()) {
    fprintf(stderr, "dataplane-ctl: %s is served by uid %u (pid %d), not by root: not sending it anything\n",
            sock.c_str(), static_cast<unsigned>(peer.uid), static_cast<int>(peer.pid));
    return 1;
  }
  if (send(fd, req.data(), req.size(), 0) < 0) {
    fprintf(stderr, "dataplane-ctl: send: %s\n", strerror(errno));
    return 1;
  }
  // The reply: messages until the one-byte end marker (EOT). A connection
  // closed before it is a reply cut short, never a complete answer.
  timeval tv{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  static char buf[1 << 16];
  bool first = true, ok = false, nl = true, ended = false;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) errno = ETIMEDOUT;
      break;
    }
    if (n == 1 && buf[0] == '\x04') {
      ended = true;
      break;
    }
    if (first)
      ok = json ? !(n >= 9 && strncmp(buf, "{\"error\":", 9) == 0) : n >= 2 && strncmp(buf, "ok", 2) == 0;
    first = false;
    fwrite(buf, 1, static_cast<size_t>(n), stdout);
    nl = buf[n - 1] == '\n';
  }
  int e = errno;
  close(fd);
  if (!nl) fputc('\n', stdout);
  fflush(stdout);
  if (!ended) {
    fprintf(stderr, "dataplane-ctl: %s from %s%s\n", first ? "no reply" : "reply cut short", sock.c_str(),
            e ? (std::string(": ") + strerror(e)).c_str() : "");
    return 1;
  }
  return ok ? 0 : 1;
}
