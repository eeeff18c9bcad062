// dataplane-ctl: changes to a running dataplane over its root-only socket.
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <string>
#include <vector>

#include "dataplane/commands.h"
#include "version.h"

namespace {

// Where the sockets are: /run/dataplane, or $DATAPLANE_RUN_DIR.
std::string run_dir() {
  const char* d = getenv("DATAPLANE_RUN_DIR");
  return d && *d ? d : "/run/dataplane";
}

// The running dataplanes' control sockets in the run directory: NAME.sock
// with the lock NAME.sock.lock a daemon keeps beside it (a metrics socket
// there has none). Sorted names (without .sock).
std::vector<std::string> control_sockets() {
  std::vector<std::string> names;
  DIR* d = opendir(run_dir().c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() <= 5 || n.compare(n.size() - 5, 5, ".sock") != 0) continue;
    struct stat st {}, lk {};
    const std::string p = run_dir() + "/" + n;
    if (lstat(p.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && lstat((p + ".lock").c_str(), &lk) == 0)
      names.push_back(n.substr(0, n.size() - 5));
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// "-i a, -i b, --prefix other": how to name each running one.
std::string how_to_name(const std::vector<std::string>& names) {
  std::string o;
  for (const auto& n : names)
    o += (o.empty() ? "" : ", ") + (n.rfind("dataplane-", 0) == 0 ? "-i " + n.substr(10) : "--prefix " + n);
  return o.empty() ? "none" : o;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sock, instance, req;
  bool json = false;
  int i = 1;
  for (; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--socket" && i + 1 < argc) sock = argv[++i];
    else if (a == "--prefix" && i + 1 < argc) sock = run_dir() + "/" + argv[++i] + ".sock";
    else if ((a == "-i" || a == "--instance") && i + 1 < argc) instance = argv[++i];
    else if (a == "--json") json = true;
    else if (a == "--help" || a == "-h") {
      printf("usage: dataplane-ctl [-i NAME | --prefix PREFIX | --socket PATH] [--json] COMMAND | --help | --commands | --version\n%s"
             "-i NAME (or $DATAPLANE_INSTANCE): the instance dataplane@NAME, socket /run/dataplane/dataplane-NAME.sock.\n"
             "--prefix PREFIX: the daemon run with --file-prefix PREFIX, socket /run/dataplane/PREFIX.sock.\n"
             "Without any: the one daemon whose socket is in /run/dataplane; with several, it names them and\n"
             "exits 2. $DATAPLANE_RUN_DIR replaces /run/dataplane.\n"
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
  if (sock.empty() && instance.empty())
    if (const char* e = getenv("DATAPLANE_INSTANCE")) instance = e;
  if (sock.empty() && !instance.empty()) {
    for (char ch : instance)
      if (!isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') {
        fprintf(stderr, "dataplane-ctl: instance '%s': use letters, digits, '-' and '_' (dataplane@NAME)\n",
                instance.c_str());
        return 2;
      }
    sock = run_dir() + "/dataplane-" + instance + ".sock";
    struct stat st {};
    if (lstat(sock.c_str(), &st) != 0) {
      fprintf(stderr, "dataplane-ctl: no instance '%s' runs (no %s); running: %s\n", instance.c_str(), sock.c_str(),
              how_to_name(control_sockets()).c_str());
      return 1;
    }
  }
  if (sock.empty()) {
    const std::vector<std::string> running = control_sockets();
    if (running.size() > 1) {
      fprintf(stderr, "dataplane-ctl: %zu dataplanes run; name one: %s\n", running.size(), how_to_name(running).c_str());
      return 2;
    }
    sock = run_dir() + "/" + (running.empty() ? "dataplane" : running[0]) + ".sock";
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
