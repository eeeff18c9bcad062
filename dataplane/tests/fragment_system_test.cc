// Item 10 of issue 28, from outside: 3,000-byte UDP datagrams from real
// sockets cross the daemon on af_packet ports in fragments, IPv4 and IPv6,
// through the stock firewall and through source NAT, both ways. The
// receiving kernel reassembles and verifies each datagram (a datagram with
// a wrong checksum or a missing piece never reaches the socket) and says
// where it came from: the translated source.
//
// On the way: IPv4 fragments are put together by the DUT's kernel before
// the PMD (af_packet's fanout defragments; framesz=4096 lets the whole
// datagram into the ring) and the daemon fragments it again for the egress
// MTU; IPv6 fragments come as they are and go through the fragment table.
#include <netinet/ip.h>

#include "dut.h"

namespace dptest {
namespace {

constexpr size_t kDatagram = 3000;

class Frag : public Dut {
 protected:
  static inline bool nat = false;
  static void SetUpTestSuite() {
    // (The stock firewall.yaml gives af_packet framesz=4096: a reassembled
    // 3,000-byte datagram fits the ring.)
    ASSERT_NE(read_file(g_srcdir + "/configs/dataplane/firewall.yaml").find("iface=veth-inside,framesz=4096"),
              std::string::npos);
    edits.clear();
    if (nat)
      edits.push_back(
          {"{priority: 100, match: \"in_port=inside,ct_state=+trk+new\",  actions: \"ct(commit),output:outside\"}",
           "{priority: 100, match: \"in_port=inside,ct_state=+trk+new,eth_type=ipv4\", "
           "actions: \"ct(commit,nat(src=10.0.0.100)),output:outside\"}\n"
           "    - {priority: 100, match: \"in_port=inside,ct_state=+trk+new,eth_type=ipv6\", "
           "actions: \"ct(commit,nat(src=[fd00::100])),output:outside\"}"});
    Dut::SetUpTestSuite();
    ASSERT_TRUE(tb->add_address(client, "c0", "fd00::1/64").ok());
    ASSERT_TRUE(tb->add_address(server, "s0", "fd00::2/64").ok());
    if (nat) {  // the server answers the public addresses at the client's MAC (the DUT untranslates)
      auto mac = tb->mac_address(client, "c0");
      ASSERT_TRUE(mac.ok()) << mac.message();
      ASSERT_TRUE(tb->add_neighbor(server, "s0", "10.0.0.100", *mac).ok());
      ASSERT_TRUE(tb->add_neighbor(server, "s0", "fd00::100", *mac).ok());
    }
  }

  // A UDP socket in `ns` bound to ip:port; IPv4 datagrams leave without DF
  // (the kernel fragments them for the 1500-byte link).
  static int udp_in(Netns* ns, const std::string& ip, uint16_t port, sockaddr_storage* a) {
    const bool v6 = ip.find(':') != std::string::npos;
    int fd = -1;
    run_in(ns, [&] { fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); });
    if (fd < 0) return -1;
    if (!v6) {
      int dont = IP_PMTUDISC_DONT;
      setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &dont, sizeof dont);
    }
    *a = to_addr(ip, port);
    if (bind(fd, reinterpret_cast<sockaddr*>(a), sizeof *a) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  static sockaddr_storage to_addr(const std::string& ip, uint16_t port) {
    sockaddr_storage s{};
    if (ip.find(':') != std::string::npos) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&s);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(port);
      inet_pton(AF_INET6, ip.c_str(), &a->sin6_addr);
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&s);
      a->sin_family = AF_INET;
      a->sin_port = htons(port);
      inet_pton(AF_INET, ip.c_str(), &a->sin_addr);
    }
    return s;
  }
  static std::string ip_of(const sockaddr_storage& s) {
    char b[64] = "";
    if (s.ss_family == AF_INET6) inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(s).sin6_addr, b, sizeof b);
    else inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(s).sin_addr, b, sizeof b);
    return b;
  }
  static uint16_t port_of(const sockaddr_storage& s) {
    return ntohs(s.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(s).sin6_port
                                         : reinterpret_cast<const sockaddr_in&>(s).sin_port);
  }
  // One datagram within 3 s: its bytes and its source.
  static bool recv_dgram(int fd, std::string* data, sockaddr_storage* from) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 3000) != 1) return false;
    char buf[65536];
    socklen_t l = sizeof *from;
    ssize_t n = recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(from), &l);
    if (n < 0) return false;
    data->assign(buf, static_cast<size_t>(n));
    return true;
  }
  static long long counter(const char* group, const char* key) {
    nlohmann::json j = stats_json();
    if (j.is_null() || !j[group].is_object() || !j[group].contains(key) || !j[group][key].is_number()) {
      ADD_FAILURE() << "--json stats has no " << group << "." << key << ": " << j.dump().substr(0, 600);
      return -1;
    }
    return j[group][key].get<long long>();
  }

  // Datagrams of kDatagram bytes client -> server and back, `rounds` times;
  // the server sees them from `want_src`.
  static void exchange(const std::string& client_ip, const std::string& server_ip, const std::string& want_src,
                       uint16_t cport, int rounds = 5) {
    sockaddr_storage ca, sa;
    int c = udp_in(client, client_ip, cport, &ca), s = udp_in(server, server_ip, 9000, &sa);
    ASSERT_GE(c, 0);
    ASSERT_GE(s, 0);
    for (int r = 0; r < rounds; r++) {
      std::string req(kDatagram, static_cast<char>('a' + r)), rep(kDatagram, static_cast<char>('A' + r));
      req[0] = rep[0] = static_cast<char>(r);
      ASSERT_EQ(sendto(c, req.data(), req.size(), 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa),
                static_cast<ssize_t>(req.size()));
      std::string got;
      sockaddr_storage from{};
      ASSERT_TRUE(recv_dgram(s, &got, &from)) << client_ip << " -> " << server_ip << " round " << r
                                              << ": the datagram never reached the server\n"
                                              << ctl("stats");
      EXPECT_EQ(got, req);
      EXPECT_EQ(ip_of(from), want_src) << "the server sees the datagram from";
      if (want_src == client_ip) {
        EXPECT_EQ(port_of(from), cport);
      }
      ASSERT_EQ(sendto(s, rep.data(), rep.size(), 0, reinterpret_cast<sockaddr*>(&from), sizeof from),
                static_cast<ssize_t>(rep.size()));
      ASSERT_TRUE(recv_dgram(c, &got, &from)) << server_ip << " -> " << client_ip << " round " << r
                                              << ": the reply never reached the client\n"
                                              << ctl("stats");
      EXPECT_EQ(got, rep);
      EXPECT_EQ(ip_of(from), server_ip);
    }
    close(c);
    close(s);
  }
  static void no_fragment_drops() {
    for (const char* k : {"frag_overlap", "frag_too_many", "frag_timeout", "frag_no_mbuf", "rx_oversize", "tx_mtu"})
      EXPECT_EQ(counter("drops", k), 0) << k;
  }
};

class FragFirewall : public Frag {
 protected:
  static void SetUpTestSuite() {
    nat = false;
    Frag::SetUpTestSuite();
  }
};

class FragNat : public Frag {
 protected:
  static void SetUpTestSuite() {
    nat = true;
    Frag::SetUpTestSuite();
  }
  static void TearDownTestSuite() {
    nat = false;
    Frag::TearDownTestSuite();
  }
};

TEST_F(FragFirewall, Ipv4UdpDatagramsCrossInFragmentsBothWays) {
  const long long out0 = counter("overlay", "ip_fragments_out");
  exchange("10.0.0.1", "10.0.0.2", "10.0.0.1", 7100);
  // 5 datagrams each way, 3 fragments each, made again by the daemon.
  EXPECT_GE(counter("overlay", "ip_fragments_out") - out0, 30);
  no_fragment_drops();
}

TEST_F(FragFirewall, Ipv6UdpDatagramsCrossInFragmentsBothWays) {
  exchange("fd00::1", "fd00::2", "fd00::1", 7101);
  no_fragment_drops();
}

TEST_F(FragFirewall, FragmentsFromOutsideOpenNothing) {
  // The server's datagram to a client port nobody opened: its first
  // fragment is new from outside, its later ones follow no connection.
  sockaddr_storage ca, sa;
  int c = udp_in(client, "fd00::1", 7102, &ca), s = udp_in(server, "fd00::2", 9001, &sa);
  ASSERT_GE(c, 0);
  ASSERT_GE(s, 0);
  const long long inv0 = counter("ct", "invalid_fragment");
  std::string big(kDatagram, 'x'), got;
  sendto(s, big.data(), big.size(), 0, reinterpret_cast<sockaddr*>(&ca), sizeof ca);
  sockaddr_storage from{};
  EXPECT_FALSE(recv_dgram(c, &got, &from)) << "an unsolicited fragmented datagram reached the client";
  EXPECT_EQ(counter("ct", "invalid_fragment") - inv0, 2) << "its two later fragments";
  close(c);
  close(s);
}

TEST_F(FragNat, Ipv4UdpDatagramsCrossTheNatWithTheTranslatedSource) {
  exchange("10.0.0.1", "10.0.0.2", "10.0.0.100", 7200);
  no_fragment_drops();
}

TEST_F(FragNat, Ipv6UdpDatagramsCrossTheNatWithTheTranslatedSource) {
  exchange("fd00::1", "fd00::2", "fd00::100", 7201);
  no_fragment_drops();
}

}  // namespace
}  // namespace dptest
