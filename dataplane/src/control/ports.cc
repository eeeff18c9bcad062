// The ports service (port_service.h).
#include "port_service.h"

#include "daemon_internal.h"


#include "dataplane/log.h"
#include "sdn/clock.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_telemetry.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace dp {


Status PortService::open(const WorkerConfig& w) {
  // A buffer holds the largest frame a port can give: its MTU's, or for
  // net_af_packet its framesz (an IPv4 datagram the kernel reassembled
  // arrives whole, up to that; the PMD copies into the buffer unchecked).
  uint32_t max_frame = 2048;
  for (const auto& p : cfg_) max_frame = std::max({max_frame, p.mtu + 26u, p.frame_room});
  if (RTE_PKTMBUF_HEADROOM + max_frame > UINT16_MAX)
    return Status::error("ports: frames of " + std::to_string(max_frame) + " bytes do not fit an mbuf");
  uint16_t room = static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + max_frame);
  // Each mbuf's private area holds what its receiving worker learnt of it
  // (Carried: the decap and the parse) when it goes to the connection's
  // owner, so the owner does not parse it again. (It follows the mbuf
  // header, whose 128 bytes keep it on a cache line as Carried wants.)
  static_assert(sizeof(rte_mbuf) % alignof(Carried) == 0 && alignof(Carried) <= RTE_CACHE_LINE_SIZE);
  const uint16_t priv = static_cast<uint16_t>(RTE_ALIGN(sizeof(Carried), RTE_MBUF_PRIV_ALIGN));
  pool_ = rte_pktmbuf_pool_create("dp_mbufs", w.mbufs, w.mbuf_cache, priv, room, static_cast<int>(rte_socket_id()));
  if (!pool_) return Status::error(std::string("mbuf pool: ") + rte_strerror(rte_errno));
  for (const auto& pc : cfg_) {
    uint16_t pid;
    std::string name = dpdk_port_name(pc);
    if (rte_eth_dev_get_port_by_name(name.c_str(), &pid) != 0)
      return Status::error("port '" + pc.name + "': no DPDK port named '" + name + "' (devargs '" + pc.devargs +
                           "'); for representors set dpdk_name");
    ids_.push_back(pid);
    rte_eth_dev_info info{};
    ifindex_.push_back(is_vdev(pc) && pc.devargs.rfind("net_af_packet", 0) == 0 && rte_eth_dev_info_get(pid, &info) == 0
                           ? static_cast<int>(info.if_index)
                           : 0);
  }
  promisc_on_.assign(ids_.size(), false);
  ring_drops_.assign(ids_.size(), 0);
  index_.assign(RTE_MAX_ETHPORTS, 0);
  for (size_t i = 0; i < ids_.size(); i++) index_[ids_[i]] = static_cast<uint16_t>(i);
  return {};
}

Status PortService::setup(size_t i, uint16_t nq, OffloadProvider& offload) {
  const PortConfig& pc = cfg_[i];
  uint16_t pid = ids_[i];
  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(pid, &info); rc != 0)
    return Status::error("port '" + pc.name + "': dev_info: " + strerror(-rc));
  if (nq > info.max_rx_queues || nq > info.max_tx_queues)
    return Status::error("port '" + pc.name + "': " + std::to_string(nq) + " workers need that many queues; the port has " +
                         std::to_string(info.max_rx_queues) + " rx / " + std::to_string(info.max_tx_queues) +
                         " tx (for net_af_packet add qpairs=N to devargs)");
  rte_eth_conf conf{};
  // Some PMDs (net_af_packet) advertise a standard frame at configure time
  // and take jumbo MTUs only through rte_eth_dev_set_mtu afterwards.
  bool set_mtu_later = static_cast<uint32_t>(pc.mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN) > info.max_rx_pktlen;
  conf.rxmode.mtu = set_mtu_later ? RTE_ETHER_MTU : pc.mtu;
  if (nq > 1) {
    uint64_t hf = info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
    if (hf) {
      conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
      conf.rx_adv_conf.rss_conf.rss_key = const_cast<uint8_t*>(kSymmetricRssKey);
      conf.rx_adv_conf.rss_conf.rss_key_len =
          std::min<uint8_t>(info.hash_key_size ? info.hash_key_size : 40, sizeof kSymmetricRssKey);
      conf.rx_adv_conf.rss_conf.rss_hf = hf;
    } else {
      log_warning(LogType::kPorts, "port '" + pc.name + "' has no RSS: with several workers, both directions of a connection may reach "
          "different shards (the kernel's af_packet fanout hash is used instead)");
    }
  }
  if (int rc = rte_eth_dev_configure(pid, nq, nq, &conf); rc != 0)
    return Status::error("port '" + pc.name + "': configure: " + strerror(-rc));
  if (conf.rxmode.mq_mode == RTE_ETH_MQ_RX_RSS && info.reta_size) {
    // The redirection table steer.h assumes: entry i -> queue i % workers.
    std::vector<rte_eth_rss_reta_entry64> reta((info.reta_size + RTE_ETH_RETA_GROUP_SIZE - 1) /
                                               RTE_ETH_RETA_GROUP_SIZE);
    for (uint16_t e = 0; e < info.reta_size; e++) {
      reta[e / RTE_ETH_RETA_GROUP_SIZE].mask |= 1ull << (e % RTE_ETH_RETA_GROUP_SIZE);
      reta[e / RTE_ETH_RETA_GROUP_SIZE].reta[e % RTE_ETH_RETA_GROUP_SIZE] = static_cast<uint16_t>(e % nq);
    }
    if (int rc = rte_eth_dev_rss_reta_update(pid, reta.data(), info.reta_size); rc != 0)
      log_warning(LogType::kPorts, "port '" + pc.name + "': RSS redirection table: " + strerror(-rc) +
           "; packets its RSS steers elsewhere are handed to their owner");
  }
  if (set_mtu_later) {
    if (int rc = rte_eth_dev_set_mtu(pid, pc.mtu); rc != 0)
      return Status::error("port '" + pc.name + "': MTU " + std::to_string(pc.mtu) + " (device max frame " +
                           std::to_string(info.max_rx_pktlen) + ", max MTU " + std::to_string(info.max_mtu) +
                           "): " + strerror(-rc) + "; for net_af_packet raise framesz in devargs");
  }
  uint16_t nrx = pc.rx_desc, ntx = pc.tx_desc;
  rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nrx, &ntx);
  int socket = rte_eth_dev_socket_id(pid);
  for (uint16_t q = 0; q < nq; q++) {
    if (int rc = rte_eth_rx_queue_setup(pid, q, nrx, static_cast<unsigned>(socket), nullptr, pool_); rc != 0)
      return Status::error("port '" + pc.name + "': rx queue " + std::to_string(q) + ": " + strerror(-rc));
    if (int rc = rte_eth_tx_queue_setup(pid, q, ntx, static_cast<unsigned>(socket), nullptr); rc != 0)
      return Status::error("port '" + pc.name + "': tx queue " + std::to_string(q) + ": " + strerror(-rc));
  }
  if (Status s = offload.configure_port(pid); !s) return Status::error("port '" + pc.name + "': offload: " + s.message());
  return {};
}

// In the offload's start order: on an E-Switch the transfer proxy first,
// wherever the config lists it (mlx5_trigger.c:1117-1122).
Status PortService::start(size_t i, const FlowApi& api) {
  const PortConfig& pc = cfg_[i];
  uint16_t pid = ids_[i];
  if (int rc = api.dev_start(api.self, pid); rc != 0)
    return Status::error("port '" + pc.name + "': start: " + strerror(-rc));
  started_.push_back(i);
  if (pc.promisc && rte_eth_promiscuous_get(pid) != 1) {
    if (rte_eth_promiscuous_enable(pid) == 0) promisc_on_[i] = true;
    else log_warning(LogType::kPorts, "port '" + pc.name + "': promiscuous mode not supported");
  }
  return {};
}

// af_packet keeps its ring's drops in the kernel (PACKET_STATISTICS, reset
// on read) and its PMD reports none; the daemon reads them off the PMD's
// sockets. Fragments the kernel could not reassemble (the PMD's fanout
// defragments) show in the netns' IP ReasmFails.
void PortService::sample_drops() {
  std::lock_guard<std::mutex> lk(mu_);
  bool any = false;
  for (int ix : ifindex_) any |= ix != 0;
  if (!any) return;
  std::error_code ec;
  std::vector<uint64_t> rollover(ifindex_.size(), 0);
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = atoi(e.path().filename().c_str());
    int domain = 0;
    socklen_t l = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) != 0 || domain != AF_PACKET) continue;
    sockaddr_ll ll{};
    socklen_t al = sizeof ll;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ll), &al) != 0) continue;
    tpacket_stats st{};
    socklen_t sl = sizeof st;
    if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl) != 0) continue;
    // The PMD's fanout rolls a busy flow over to another queue's socket
    // when its own ring is 3/4 full (PACKET_FANOUT_FLAG_ROLLOVER, which it
    // always sets): a connection's packets then reach two workers out of
    // order. Cumulative per socket.
    tpacket_rollover_stats ro{};
    socklen_t rl = sizeof ro;
    const bool have_ro = getsockopt(fd, SOL_PACKET, PACKET_ROLLOVER_STATS, &ro, &rl) == 0;
    for (size_t p = 0; p < ifindex_.size(); p++)
      if (ifindex_[p] && ifindex_[p] == ll.sll_ifindex) {
        ring_drops_[p] += st.tp_drops;
        if (have_ro) rollover[p] += ro.tp_all;
      }
  }
  ring_rollover_ = rollover;
  std::ifstream snmp("/proc/net/snmp");
  std::string head, vals;
  while (std::getline(snmp, head) && std::getline(snmp, vals)) {
    if (head.rfind("Ip:", 0) != 0) continue;
    std::istringstream h(head), v(vals);
    std::string k, x;
    while (h >> k && v >> x)
      if (k == "ReasmFails") reasm_fails_ = strtoull(x.c_str(), nullptr, 10);
    break;
  }
}

std::vector<std::pair<std::string, uint64_t>> PortService::counters() {
  std::vector<std::pair<std::string, uint64_t>> v;
  bool af_packet = false;
  for (size_t i = 0; i < ids_.size(); i++) {
    rte_eth_stats s{};
    rte_eth_stats_get(ids_[i], &s);
    rte_eth_link link{};
    rte_eth_link_get_nowait(ids_[i], &link);
    const std::string& n = cfg_[i].name;
    v.insert(v.end(), {{n + "_rx_packets", s.ipackets},
                       {n + "_tx_packets", s.opackets},
                       {n + "_rx_bytes", s.ibytes},
                       {n + "_tx_bytes", s.obytes},
                       {n + "_rx_missed", s.imissed},
                       {n + "_rx_errors", s.ierrors},
                       {n + "_tx_errors", s.oerrors},
                       {n + "_rx_nombuf", s.rx_nombuf},
                       {n + "_link_up", static_cast<uint64_t>(link.link_status)}});
    if (ifindex_[i]) {
      std::lock_guard<std::mutex> lk(mu_);
      v.emplace_back(n + "_rx_ring_drops", ring_drops_[i]);
      v.emplace_back(n + "_rx_rollover", i < ring_rollover_.size() ? ring_rollover_[i] : 0);
      af_packet = true;
    }
  }
  if (af_packet) {
    std::lock_guard<std::mutex> lk(mu_);
    v.emplace_back("kernel_ip_reasm_fails", reasm_fails_);
  }
  return v;
}


void PortService::stop(const FlowApi& api) {
  for (size_t k = started_.size(); k-- > 0;) {
    const size_t i = started_[k];
    if (promisc_on_[i] && rte_eth_promiscuous_disable(ids_[i]) != 0)
      warn("port '" + cfg_[i].name + "': could not turn promiscuous mode off");
    if (int rc = api.dev_stop(api.self, ids_[i]); rc != 0) warn("port '" + cfg_[i].name + "': stop: " + strerror(-rc));
  }
  started_.clear();
  for (uint16_t pid : ids_) rte_eth_dev_close(pid);
  if (pool_) {
    unsigned in_use = rte_mempool_in_use_count(pool_);
    log("stopped; mbufs in use: " + std::to_string(in_use) + " of " + std::to_string(pool_->size));
  }
}

}  // namespace dp
