// The control socket server on its own: many clients, streamed replies to
// slow readers, requests too large, a socket path it must not take.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "../src/control/commands.h"
#include "../src/control/socket.h"

namespace dp {
namespace {

using namespace std::chrono_literals;

// In a directory only this process's user may write (the server refuses a
// socket in one others could write, such as /tmp itself).
std::string sock_path(const char* what) {
  static const struct Dir {
    std::string path = "/tmp/dp-control-test-" + std::to_string(getpid());
    Dir() { mkdir(path.c_str(), 0700); }
    ~Dir() { std::filesystem::remove_all(path); }
  } dir;
  return dir.path + "/" + what + ".sock";
}

int connect_to(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads a whole reply (up to the end marker); `slow` sleeps between reads
// so that the server finds the socket full and must resume later.
bool read_reply(int fd, std::string* out, bool slow) {
  char buf[65536];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) return false;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    if (n == 1 && buf[0] == ControlServer::kEnd[0]) return true;
    out->append(buf, static_cast<size_t>(n));
    if (slow) std::this_thread::sleep_for(2ms);
  }
}

std::string pattern(size_t n) {
  std::string s;
  s.reserve(n);
  for (size_t i = 0; s.size() < n; i++) s += "line " + std::to_string(i) + "\n";
  s.resize(n);
  return s;
}

// A reply streamed in pieces to readers slower than the server, while other
// clients come and go: every byte arrives, in order.
TEST(ControlServer, StreamsLongRepliesWholeToSlowReaders) {
  std::string path = sock_path("stream");
  auto srv = ControlServer::open(path);
  ASSERT_TRUE(srv.ok()) << srv.message();
  const std::string want = pattern(3 << 20);
  ControlServer::Handler h = [&](const std::string& req) {
    ControlServer::Reply r;
    if (req != "big") {
      r.text = "ok small";
      return r;
    }
    auto at = std::make_shared<size_t>(0);
    r.text = "";
    r.more = [&want, at](std::string* o) {
      if (*at >= want.size()) return false;
      size_t n = std::min<size_t>(70000, want.size() - *at);
      o->append(want, *at, n);
      *at += n;
      return true;
    };
    return r;
  };
  std::atomic<int> done{0};
  std::vector<std::thread> clients;
  std::vector<std::string> got(3);
  std::vector<bool> ok(3, false);
  for (int c = 0; c < 3; c++)
    clients.emplace_back([&, c] {
      int fd = connect_to(path);
      if (fd >= 0 && send(fd, "big", 3, 0) == 3) ok[static_cast<size_t>(c)] = read_reply(fd, &got[static_cast<size_t>(c)], c != 2);
      if (fd >= 0) close(fd);
      done++;
    });
  // Short requests from others in between, each answered.
  std::atomic<int> small_ok{0};
  std::thread smalls([&] {
    for (int i = 0; i < 40; i++) {
      int fd = connect_to(path);
      std::string r;
      if (fd >= 0 && send(fd, "hi", 2, 0) == 2 && read_reply(fd, &r, false) && r == "ok small") small_ok++;
      if (fd >= 0) close(fd);
      std::this_thread::sleep_for(5ms);
    }
    done++;
  });
  auto end = std::chrono::steady_clock::now() + 60s;
  while (done < 4 && std::chrono::steady_clock::now() < end) srv.value()->poll(1, 0, h);
  for (auto& t : clients) t.join();
  smalls.join();
  for (int c = 0; c < 3; c++) {
    EXPECT_TRUE(ok[static_cast<size_t>(c)]) << "client " << c;
    EXPECT_EQ(got[static_cast<size_t>(c)].size(), want.size()) << "client " << c;
    EXPECT_TRUE(got[static_cast<size_t>(c)] == want) << "client " << c << ": the stream differs";
  }
  EXPECT_EQ(small_ok.load(), 40);
}

TEST(ControlServer, RefusesWhatIsNotASocketAndASecondOwner) {
  std::string file = sock_path("file");
  std::ofstream(file) << "keep";
  auto a = ControlServer::open(file);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.message().find("exists and is not a socket; not removing it"), std::string::npos) << a.message();
  std::ifstream in(file);
  std::string k;
  in >> k;
  EXPECT_EQ(k, "keep");
  unlink(file.c_str());
  unlink((file + ".lock").c_str());

  std::string path = sock_path("twice");
  auto first = ControlServer::open(path);
  ASSERT_TRUE(first.ok()) << first.message();
  auto second = ControlServer::open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.message().find("is in use by another dataplane (pid " + std::to_string(getpid())), std::string::npos)
      << second.message();
  EXPECT_FALSE(ControlServer::open("relative.sock").ok());
  EXPECT_FALSE(ControlServer::open("/tmp/" + std::string(120, 'x')).ok());
  first.value().reset();
  // A clean stop leaves neither the socket nor its lock; the next one starts.
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  EXPECT_NE(access((path + ".lock").c_str(), F_OK), 0) << "the lock file was left behind";
  auto third = ControlServer::open(path);
  ASSERT_TRUE(third.ok()) << third.message();
  third.value().reset();
  EXPECT_NE(access((path + ".lock").c_str(), F_OK), 0);
}

TEST(ControlServer, ARequestTooLargeGetsAnError) {
  std::string path = sock_path("large");
  auto srv = ControlServer::open(path);
  ASSERT_TRUE(srv.ok());
  ControlServer::Handler h = [](const std::string&) { return ControlServer::Reply{"ok", nullptr}; };
  std::string reply;
  std::atomic<bool> finished{false};
  std::thread c([&] {
    int fd = connect_to(path);
    int sz = 1 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    std::string big(200000, 'x');
    if (send(fd, big.data(), big.size(), 0) == static_cast<ssize_t>(big.size())) read_reply(fd, &reply, false);
    close(fd);
    finished = true;
  });
  auto end = std::chrono::steady_clock::now() + 10s;
  while (!finished && std::chrono::steady_clock::now() < end) srv.value()->poll(1, 0, h);
  c.join();
  EXPECT_EQ(reply.rfind("error: request larger than", 0), 0u) << reply;
  srv.value().reset();
  unlink((path + ".lock").c_str());
}

}  // namespace
}  // namespace dp

namespace dp {
namespace {

// The commands' typed arguments: the dispatcher reads them from the one
// declaration (dataplane/commands.h) before any handler runs; a request
// that does not fit gets the usage, its ranges and why, and the handler
// is never called.
TEST(Commands, ArgumentsAreCheckedAgainstTheirDeclarationBeforeTheHandler) {
  CommandTable t;
  std::string seen;
  int calls = 0;
  for (const CommandSpec& c : kCommands) {
    sdn::Status s = t.add(c.name, [&, name = std::string(c.name)](const CommandArgs& a, Format) {
      calls++;
      seen = name;
      for (size_t i = 0; i < kMaxArgs; i++)
        seen += a.given[i] ? " [" + a.str[i] + "=" + std::to_string(a.num[i]) + "]" : " [-" + std::to_string(a.num[i]) + "]";
      return CommandTable::text("ok");
    });
    ASSERT_TRUE(s) << s.message();
  }
  ASSERT_TRUE(t.complete());
  auto ask = [&](const std::string& r) { return t.dispatch(r).text; };

  EXPECT_EQ(ask("trace --live 5"), "ok");
  EXPECT_EQ(seen, "trace --live [5=5] [-10]");  // SECONDS' default
  EXPECT_EQ(ask("trace --live 256 0x32"), "ok");
  EXPECT_EQ(seen, "trace --live [256=256] [0x32=50]");
  EXPECT_EQ(ask("ct list"), "ok");
  EXPECT_EQ(seen, "ct list [-18446744073709551615] [-0]");  // no ZONE: every zone
  EXPECT_EQ(ask("ct flush 65535"), "ok");
  EXPECT_EQ(seen, "ct flush [65535=65535] [-0]");
  EXPECT_EQ(ask("trace in_port=inside,tcp,10.0.0.1:1>10.0.0.2:80  "), "ok");
  EXPECT_EQ(seen, "trace [in_port=inside,tcp,10.0.0.1:1>10.0.0.2:80=0] [-0]");
  EXPECT_EQ(ask("rule add {table: 1, priority: 5, match: \"tp_dst=1\", actions: drop}"), "ok");
  EXPECT_EQ(seen, "rule add [{table: 1, priority: 5, match: \"tp_dst=1\", actions: drop}=0] [-0]");
  EXPECT_EQ(ask("log-level"), "ok");
  EXPECT_EQ(ask("log-level dataplane.* debug"), "ok");
  EXPECT_EQ(seen, "log-level [dataplane.*=0] [debug=0]");
  const int good = calls;

  const std::string live = "error: usage: trace --live N [SECONDS] (N 1..256, SECONDS 1..50, default 10): ";
  EXPECT_EQ(ask("trace --live"), live + "N missing");
  EXPECT_EQ(ask("trace --live 0"), live + "N: '0' is out of range 1..256");
  EXPECT_EQ(ask("trace --live 010"), live.substr(0, live.size() - 2) + ": N: '010': a leading zero is ambiguous (octal?); write the decimal number, or 0x for hex");
  EXPECT_EQ(ask("trace --live 5 x"), live + "SECONDS: 'x' is not a number");
  EXPECT_EQ(ask("trace --live 5 5 5"), live + "'5': more than the command takes");
  EXPECT_EQ(ask("ct list 65536"), "error: usage: ct list [ZONE] (ZONE 0..65535): ZONE: '65536' is out of range 0..65535");
  EXPECT_EQ(ask("ct flush 1 2"), "error: usage: ct flush [ZONE] (ZONE 0..65535): '2': more than the command takes");
  EXPECT_EQ(ask("rule del"), "error: usage: rule del ID (ID 0..4294967295): ID missing");
  EXPECT_EQ(ask("rule del -1"), "error: usage: rule del ID (ID 0..4294967295): ID: '-1' is out of range 0..4294967295");
  EXPECT_EQ(ask("log-level dataplane.control"), "error: usage: log-level [TYPE LEVEL]: LEVEL missing");
  EXPECT_EQ(ask("stats now"), "error: usage: stats: 'now': more than the command takes");
  EXPECT_EQ(ask("trace   "), "error: usage: trace PACKET: PACKET missing");
  EXPECT_EQ(calls, good) << "a handler ran for a request that did not fit its arguments";
  // In JSON, the same error as one object.
  EXPECT_EQ(ask("--json trace --live 0"),
            "{\"error\":\"usage: trace --live N [SECONDS] (N 1..256, SECONDS 1..50, default 10): N: '0' is out of "
            "range 1..256\"}\n");
  // The help shows the usage as before.
  EXPECT_NE(commands_help().find("  trace --live N [SECONDS]"), std::string::npos) << commands_help();
  EXPECT_NE(commands_help().find("  log-level [TYPE LEVEL]"), std::string::npos) << commands_help();
}

}  // namespace
}  // namespace dp
