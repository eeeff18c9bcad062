// dataplane-ctl: changes to a running dataplane over its root-only socket.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  std::string sock = "/run/dataplane/dataplane.sock", req;
  int i = 1;
  for (; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--socket" && i + 1 < argc) sock = argv[++i];
    else if (a == "--prefix" && i + 1 < argc) sock = std::string("/run/dataplane/") + argv[++i] + ".sock";
    else if (a == "--help" || a == "-h") {
      printf(
          "usage: dataplane-ctl [--prefix NAME | --socket PATH] COMMAND\n"
          "  rule add '{table: 1, priority: 200, match: \"ip_proto=tcp,tp_dst=22\", actions: drop}'\n"
          "  rule del ID\n"
          "  rules                 list rules with hit counters\n"
          "  ct list [ZONE]        connections\n"
          "  ct flush [ZONE]       remove connections\n"
          "  reload                re-read the config file's tables\n"
          "  stats                 per-worker counters\n"
          "  offload testpmd       hardware rules as testpmd flow commands\n"
          "Exit status 0 when the daemon answers ok, 1 otherwise.\n");
      return 0;
    } else break;
  }
  for (; i < argc; i++) req += (req.empty() ? "" : " ") + std::string(argv[i]);
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
  if (send(fd, req.data(), req.size(), 0) < 0) {
    fprintf(stderr, "dataplane-ctl: send: %s\n", strerror(errno));
    return 1;
  }
  static char buf[1 << 17];
  ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
  close(fd);
  if (n <= 0) {
    fprintf(stderr, "dataplane-ctl: no reply from %s\n", sock.c_str());
    return 1;
  }
  fwrite(buf, 1, static_cast<size_t>(n), stdout);
  if (buf[n - 1] != '\n') fputc('\n', stdout);
  return strncmp(buf, "ok", 2) == 0 ? 0 : 1;
}
