#include "daemon.h"

#include "../datapath/worker.h"

#include "dataplane/log.h"
#include "dataplane/nic_model.h"
#include "dataplane/packet_desc.h"
#include "ctrack/frame.h"
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

namespace {

using sdn::mono_ns;

volatile sig_atomic_t g_signal_stop = 0;
volatile sig_atomic_t g_signal_reload = 0;
Daemon* g_daemon = nullptr;

void on_signal(int sig) {
  if (sig == SIGHUP) g_signal_reload = 1;
  else g_signal_stop = 1;
}

void log(const std::string& s) { log_info(LogType::kControl, s); }
void warn(const std::string& s) { log_warning(LogType::kControl, s); }

void log_pipeline(const Pipeline& p) {
  log_info(LogType::kPipeline, "pipeline " + std::to_string(p.generation()) + ": " + std::to_string(p.rules().size()) +
                                   " rules; flow cache " +
                                   (p.fast_zone() >= 0 ? "on (zone " + std::to_string(p.fast_zone()) + ")"
                                                       : std::string("off (ct() in more than one zone)")));
}

// Symmetric Toeplitz key: the 0x6d5a pattern hashes (a,b) and (b,a) alike,
// so both directions of a connection reach the same worker and shard.
const uint8_t kSymmetricRssKey[52] = {
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a};

std::string dpdk_port_name(const PortConfig& p) {
  if (!p.dpdk_name.empty()) return p.dpdk_name;
  return p.devargs.substr(0, p.devargs.find(','));
}

bool is_vdev(const PortConfig& p) { return p.devargs.rfind("net_", 0) == 0; }

int tel_stats(const char*, const char*, rte_tel_data* d) {
  g_daemon->telemetry_stats(d);
  return 0;
}
int tel_ct_list(const char*, const char* params, rte_tel_data* d) {
  g_daemon->telemetry_ct_list(params, d);
  return 0;
}
int tel_rules(const char*, const char*, rte_tel_data* d) {
  g_daemon->telemetry_rules(d);
  return 0;
}

}  // namespace

std::vector<std::string> eal_args(const Config& cfg, bool force_no_huge) {
  std::vector<std::string> a = {"dataplane"};
  std::string lcores = std::to_string(cfg.workers.main_lcore);
  if (cfg.workers.cpus.empty()) {
    for (unsigned l : cfg.workers.lcores) lcores += "," + std::to_string(l);
    a.insert(a.end(), {"-l", lcores});
  } else {  // lcore@cpu: the main lcore on its own number, the workers where workers.cpus says
    lcores += "@" + std::to_string(cfg.workers.main_lcore);
    for (size_t i = 0; i < cfg.workers.lcores.size(); i++)
      lcores += "," + std::to_string(cfg.workers.lcores[i]) + "@" + std::to_string(cfg.workers.cpus[i]);
    a.insert(a.end(), {"--lcores", lcores});
  }
  a.insert(a.end(), {"--main-lcore", std::to_string(cfg.workers.main_lcore), "--file-prefix", cfg.eal.file_prefix});
  if (cfg.eal.no_huge || force_no_huge) a.insert(a.end(), {"--no-huge", "-m", std::to_string(cfg.eal.memory_mb)});
  // Lets rte_acl pick its AVX-512 classifier where the CPU has it (DPDK caps
  // vector width at 256 bits by default): 12% more pipeline throughput in
  // dataplane-bench here (AVX512X32 vs AVX2, same run). A no-op elsewhere.
  a.push_back("--force-max-simd-bitwidth=512");
  if (!cfg.cli.log_level.empty()) a.push_back("--log-level=dataplane.*:" + cfg.cli.log_level);
  bool pci = false;
  for (const auto& p : cfg.ports) {
    if (is_vdev(p)) {
      a.push_back("--vdev=" + p.devargs);
    } else {
      a.insert(a.end(), {"-a", p.devargs});
      pci = true;
    }
  }
  if (!pci) a.push_back("--no-pci");
  a.insert(a.end(), cfg.eal.extra.begin(), cfg.eal.extra.end());
  return a;
}

// ------------------------------------------------------------------ workers

struct Daemon::Worker {
  unsigned id = 0;
  unsigned lcore = 0;
  WorkerStats stats;
  std::unique_ptr<Datapath> dp;
  WorkerEnv env;
  LiveTrace trace;
};

// ------------------------------------------------------------------ setup

Daemon::Daemon(Config cfg, std::unique_ptr<ControlServer> ctl) : cfg_(std::move(cfg)), ctl_(std::move(ctl)) {
  for (const Rule& r : cfg_.rules) next_rule_id_ = std::max(next_rule_id_, r.id + 1);
}

Daemon::~Daemon() {
  ctl_.reset();  // its clients' replies (a live trace's session) end while the workers are still here
  shutdown();
  delete pipeline_.load();
  delete marks_.load();
  if (qsbr_) rte_free(qsbr_);
}

Status Daemon::setup_port(size_t i) {
  const PortConfig& pc = cfg_.ports[i];
  uint16_t pid = port_ids_[i];
  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(pid, &info); rc != 0)
    return Status::error("port '" + pc.name + "': dev_info: " + strerror(-rc));
  uint16_t nq = static_cast<uint16_t>(workers_.size());
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
      warn("port '" + pc.name + "' has no RSS: with several workers, both directions of a connection may reach "
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
      warn("port '" + pc.name + "': RSS redirection table: " + strerror(-rc) +
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
  if (Status s = offload_->configure_port(pid); !s) return Status::error("port '" + pc.name + "': offload: " + s.message());
  // In config order: on an E-Switch the first port is the transfer proxy,
  // which mlx5 wants started before its representors.
  const FlowApi& api = offload_->api();
  if (int rc = api.dev_start(api.self, pid); rc != 0)
    return Status::error("port '" + pc.name + "': start: " + strerror(-rc));
  started_ports_++;
  if (pc.promisc && rte_eth_promiscuous_get(pid) != 1) {
    if (rte_eth_promiscuous_enable(pid) == 0) promisc_on_[i] = true;
    else warn("port '" + pc.name + "': promiscuous mode not supported");
  }
  return {};
}

Status Daemon::start() {
  g_daemon = this;
  unsigned nw = static_cast<unsigned>(cfg_.workers.lcores.size());
  if (rte_lcore_id() != cfg_.workers.main_lcore) return Status::error("EAL main lcore differs from workers.main_lcore");

  auto off = make_offload_provider(cfg_.offload, nw);
  if (!off) return off.status();
  offload_ = std::move(off.value());
  ctrack::Config cc = cfg_.ct;
  if (cfg_.offload.provider == "none") cc.event_ring = 0;  // nobody would read the events
  else if (cc.event_ring == 0) cc.event_ring = 16384;
  for (unsigned i = 0; i < nw; i++) {
    auto t = ctrack::Tracker::create(cc);
    if (!t) return Status::error("conntrack: " + t.message());
    shards_.push_back(std::move(t.value()));
    auto w = std::make_unique<Worker>();
    w->id = i;
    w->lcore = cfg_.workers.lcores[i];
    w->dp = std::make_unique<Datapath>(i, shards_.back().get(), &w->stats);
    w->dp->set_hw_marks(&marks_);
    for (size_t p = 0; p < cfg_.ports.size(); p++) w->dp->set_mtu(static_cast<uint16_t>(p), cfg_.ports[p].mtu);
    workers_.push_back(std::move(w));
  }

  uint16_t max_mtu = 1500;
  for (const auto& p : cfg_.ports) max_mtu = std::max(max_mtu, p.mtu);
  uint16_t room = static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + std::max<uint32_t>(2048, max_mtu + 26u));
  pool_ = rte_pktmbuf_pool_create("dp_mbufs", cfg_.workers.mbufs, cfg_.workers.mbuf_cache, 0, room,
                                  static_cast<int>(rte_socket_id()));
  if (!pool_) return Status::error(std::string("mbuf pool: ") + rte_strerror(rte_errno));

  size_t sz = rte_rcu_qsbr_get_memsize(nw);
  qsbr_ = static_cast<rte_rcu_qsbr*>(rte_zmalloc("dp_qsbr", sz, RTE_CACHE_LINE_SIZE));
  if (!qsbr_ || rte_rcu_qsbr_init(qsbr_, nw) != 0) return Status::error("RCU: cannot allocate");

  for (const auto& pc : cfg_.ports) {
    uint16_t pid;
    std::string name = dpdk_port_name(pc);
    if (rte_eth_dev_get_port_by_name(name.c_str(), &pid) != 0)
      return Status::error("port '" + pc.name + "': no DPDK port named '" + name + "' (devargs '" + pc.devargs +
                           "'); for representors set dpdk_name");
    port_ids_.push_back(pid);
    rte_eth_dev_info info{};
    ifindex_.push_back(is_vdev(pc) && pc.devargs.rfind("net_af_packet", 0) == 0 &&
                               rte_eth_dev_info_get(pid, &info) == 0
                           ? static_cast<int>(info.if_index)
                           : 0);
  }
  promisc_on_.assign(port_ids_.size(), false);
  ring_drops_.assign(port_ids_.size(), 0);
  port_index_.assign(RTE_MAX_ETHPORTS, 0);
  for (size_t i = 0; i < port_ids_.size(); i++) port_index_[port_ids_[i]] = static_cast<uint16_t>(i);
  if (nw > 1) {
    // Several workers, a conntrack shard each: a connection's packets are
    // judged by the worker that owns it (steer.h); others hand them over.
    steer_ = std::make_unique<Steering>(kSymmetricRssKey, sizeof kSymmetricRssKey, nw);
    for (auto& w : workers_) w->dp->set_steering(steer_.get(), w->id);
    for (unsigned from = 0; from < nw; from++)
      for (unsigned to = 0; to < nw; to++) {
        rte_ring* r = nullptr;
        if (from != to) {
          std::string name = "dp_ho_" + std::to_string(from) + "_" + std::to_string(to);
          r = rte_ring_create(name.c_str(), 4096, static_cast<int>(rte_socket_id()), RING_F_SP_ENQ | RING_F_SC_DEQ);
          if (!r) return Status::error("handoff ring " + name + ": " + rte_strerror(rte_errno));
        }
        handoff_.push_back(r);
      }
  }
  if (Status s = offload_->prepare(port_ids_); !s) return Status::error("offload: " + s.message());
  for (size_t i = 0; i < cfg_.ports.size(); i++)
    if (Status s = setup_port(i); !s) return s;

  auto pl = Pipeline::build(cfg_.rules, nw);
  if (!pl) return pl.status();
  log_pipeline(*pl.value());
  pipeline_.store(pl.value().release());
  rules_ = cfg_.rules;

  host_.port_ids = port_ids_;
  for (auto& s : shards_) host_.shards.push_back(s.get());
  host_.marks = &marks_;
  if (Status s = offload_->start(host_); !s) return Status::error("offload: " + s.message());
  offload_->on_pipeline(*pipeline_.load());

  rte_telemetry_register_cmd("/dataplane/stats", tel_stats,
                             "Ports, workers, drops by reason, rule hits and conntrack stats. No parameters");
  rte_telemetry_register_cmd("/dataplane/ct/list", tel_ct_list,
                             "Connections. Parameters: zone=N,proto=tcp|udp|icmp,limit=N (<=100),offset=N");
  rte_telemetry_register_cmd("/dataplane/rules", tel_rules, "Rules with their hit counters");

  for (auto& w : workers_) {
    w->env.id = w->id;
    w->env.workers = nw;
    w->env.burst = cfg_.workers.burst;
    w->env.expire_slice = std::max<uint32_t>(64, cfg_.ct.capacity / 1000 + 1);
    w->env.port_ids = port_ids_;
    w->env.port_index = port_index_.data();
    w->env.pipeline = &pipeline_;
    w->env.stop = &stop_;
    w->env.qsbr = qsbr_;
    w->env.shard = shards_[w->id].get();
    w->env.nic = offload_->nic();
    w->env.dp = w->dp.get();
    w->env.stats = &w->stats;
    w->env.handoff = handoff_.data();
    w->env.trace = &w->trace;
    if (rte_eal_remote_launch(worker_lcore_entry, &w->env, w->lcore) != 0)
      return Status::error("cannot launch worker on lcore " + std::to_string(w->lcore));
    launched_ = true;
  }
  started_ = true;
  return {};
}

// ------------------------------------------------------------------ control

Status Daemon::install(std::vector<Rule> rules) {
  auto pl = Pipeline::build(rules, static_cast<unsigned>(workers_.size()));
  if (!pl) return pl.status();
  log_pipeline(*pl.value());
  std::lock_guard<std::mutex> lk(mu_);
  Pipeline* old = pipeline_.exchange(pl.value().release(), std::memory_order_acq_rel);
  // Free the old tables only after every worker has passed a quiescent state.
  rte_rcu_qsbr_synchronize(qsbr_, RTE_QSBR_THRID_INVALID);
  for (size_t i = 0; i < old->rules().size(); i++) {
    const Rule& r = old->rules()[i];
    RuleCounters c = old->counters(i);
    Retired& ret = retired_[r.id];
    std::string fp = rule_fingerprint(r);
    if (ret.fingerprint != fp) ret = Retired{std::move(fp), {}};
    ret.c.packets += c.packets;
    ret.c.bytes += c.bytes;
  }
  delete old;
  // A rule that is gone takes its counters along: an id used again later
  // starts from zero.
  std::set<uint32_t> live;
  for (const Rule& r : rules) live.insert(r.id);
  std::erase_if(retired_, [&](const auto& kv) { return !live.count(kv.first); });
  for (const Rule& r : rules) next_rule_id_ = std::max(next_rule_id_, r.id + 1);
  rules_ = std::move(rules);
  offload_->on_pipeline(*pipeline_.load());
  return {};
}

namespace {

std::string port_diff(const PortConfig& a, const PortConfig& b) {
  std::string d;
  auto add = [&](const char* k, const std::string& x, const std::string& y) {
    if (x != y) d += std::string(d.empty() ? "" : ", ") + k + " '" + x + "' -> '" + y + "'";
  };
  add("devargs", a.devargs, b.devargs);
  add("dpdk_name", a.dpdk_name, b.dpdk_name);
  add("mtu", std::to_string(a.mtu), std::to_string(b.mtu));
  add("promisc", a.promisc ? "true" : "false", b.promisc ? "true" : "false");
  add("rx_desc", std::to_string(a.rx_desc), std::to_string(b.rx_desc));
  add("tx_desc", std::to_string(a.tx_desc), std::to_string(b.tx_desc));
  return d;
}

bool same_ct_except_timeouts(const ctrack::Config& a, const ctrack::Config& b) {
  return a.capacity == b.capacity && a.full_policy == b.full_policy && a.tcp_liberal == b.tcp_liberal &&
         a.tcp_midstream == b.tcp_midstream && a.sweep_per_call == b.sweep_per_call &&
         a.early_drop_scan == b.early_drop_scan && a.default_zone_limit == b.default_zone_limit &&
         a.zone_limits == b.zone_limits;
}

bool same_timeouts(const ctrack::Timeouts& a, const ctrack::Timeouts& b) { return memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

// A reload applies what can change under traffic (the tables, conntrack
// timeouts) and refuses everything else with its reason, keeping the
// running state whole. Ports are bound by name: the file's port order does
// not matter.
Status Daemon::reload() {
  auto next = load_config(cfg_.file);
  if (!next) return next.status();
  Config& c = next.value();
  c.cli = cfg_.cli;
  if (Status s = c.apply_cli(); !s) return s;

  std::vector<std::string> refused;
  const EalConfig &ea = cfg_.eal, &eb = c.eal;
  if (ea.file_prefix != eb.file_prefix || ea.no_huge != eb.no_huge || ea.memory_mb != eb.memory_mb ||
      ea.extra != eb.extra)
    refused.push_back("eal: changed (needs a restart)");
  std::vector<int> map(c.ports.size(), -1);  // file's port index -> running port index
  for (size_t i = 0; i < c.ports.size(); i++) {
    for (size_t k = 0; k < cfg_.ports.size(); k++)
      if (cfg_.ports[k].name == c.ports[i].name) map[i] = static_cast<int>(k);
    if (map[i] < 0) {
      refused.push_back("ports: '" + c.ports[i].name + "' added (ports need a restart)");
      continue;
    }
    std::string d = port_diff(cfg_.ports[static_cast<size_t>(map[i])], c.ports[i]);
    if (!d.empty()) refused.push_back("ports: '" + c.ports[i].name + "' " + d + " (ports need a restart)");
  }
  for (const PortConfig& p : cfg_.ports) {
    bool kept = false;
    for (const PortConfig& q : c.ports) kept |= q.name == p.name;
    if (!kept) refused.push_back("ports: '" + p.name + "' removed (ports need a restart)");
  }
  const WorkerConfig &wa = cfg_.workers, &wb = c.workers;
  if (wa.main_lcore != wb.main_lcore || wa.lcores != wb.lcores || wa.cpus != wb.cpus || wa.burst != wb.burst ||
      wa.mbufs != wb.mbufs ||
      wa.mbuf_cache != wb.mbuf_cache)
    refused.push_back("workers: changed (needs a restart)");
  if (!same_ct_except_timeouts(cfg_.ct, c.ct))
    refused.push_back("conntrack: only timeouts change on reload (capacity, policy and zones need a restart)");
  const OffloadConfig &oa = cfg_.offload, &ob = c.offload;
  if (oa.provider != ob.provider || oa.max_in_flight != ob.max_in_flight || oa.table_size != ob.table_size ||
      oa.insert_rate != ob.insert_rate || oa.latency_us != ob.latency_us || oa.age_s != ob.age_s ||
      oa.domain != ob.domain || oa.conntrack != ob.conntrack || oa.nic != ob.nic)
    refused.push_back("offload: changed (its queues, tables and templates are sized at start; needs a restart)");
  if (cfg_.control_socket != c.control_socket) refused.push_back("control.socket: changed (needs a restart)");
  if (!refused.empty()) {
    std::string m = "reload refused, running config kept: ";
    for (size_t i = 0; i < refused.size(); i++) m += (i ? "; " : "") + refused[i];
    return Status::error(m);
  }

  remap_ports(c.rules, map);
  if (Status s = install(c.rules); !s) return s;
  bool timeouts = !same_timeouts(cfg_.ct.timeouts, c.ct.timeouts);
  if (timeouts) {
    for (auto& sh : shards_) sh->set_timeouts(c.ct.timeouts);
    cfg_.ct.timeouts = c.ct.timeouts;
  }
  cfg_.rules = rules_;
  log("reloaded " + cfg_.file + ": " + std::to_string(rules_.size()) + " rules" +
      (timeouts ? ", new conntrack timeouts" : ""));
  return {};
}

RuleCounters Daemon::rule_counters(const Pipeline& pl, size_t i) const {
  RuleCounters c = pl.counters(i);
  const Rule& r = pl.rules()[i];
  auto it = retired_.find(r.id);
  if (it != retired_.end() && it->second.fingerprint == rule_fingerprint(r)) {
    c.packets += it->second.c.packets;
    c.bytes += it->second.c.bytes;
  }
  return c;
}

std::string Daemon::rules_text() {
  std::lock_guard<std::mutex> lk(mu_);
  std::ostringstream o;
  Pipeline* pl = pipeline_.load();
  for (size_t i = 0; i < pl->rules().size(); i++) {
    const Rule& r = pl->rules()[i];
    RuleCounters c = rule_counters(*pl, i);
    o << "id=" << r.id << " table=" << r.table << " priority=" << r.priority << " match=\"" << r.match_text
      << "\" actions=\"" << r.actions_text << "\" packets=" << c.packets << " bytes=" << c.bytes << "\n";
  }
  return o.str();
}

std::string Daemon::rule_add(const std::string& yaml) {
  auto r = parse_rule_yaml(yaml, cfg_.port_names());
  if (!r) return "error: " + r.message();
  std::vector<Rule> next;
  {
    std::lock_guard<std::mutex> lk(mu_);
    next = rules_;
  }
  uint32_t id = r->id;
  if (id) {
    for (const auto& x : next)
      if (x.id == id) return "error: rule id " + std::to_string(id) + " exists";
  } else {
    if (next_rule_id_ > kMaxRuleId)
      return "error: rule ids exhausted (" + std::to_string(kMaxRuleId) +
             " assigned in this daemon's life); give an explicit id: N or restart";
    id = r->id = next_rule_id_;
  }
  next.push_back(*r);
  if (Status s = install(std::move(next)); !s) return "error: " + s.message();
  return "ok id=" + std::to_string(id);
}

ControlServer::Reply Daemon::ct_list(int zone) {
  // Streamed a slice of slots at a time: 10^6 entries never sit in one
  // string, and the control loop (offload events) runs between slices.
  struct Cursor {
    size_t shard = 0;
    uint32_t at = 0;
    uint64_t n = 0;
  };
  auto cur = std::make_shared<Cursor>();
  ControlServer::Reply r;
  r.text = "ok\n";
  r.more = [this, cur, zone](std::string* out) {
    if (cur->shard >= shards_.size()) return false;
    ctrack::Tracker& t = *shards_[cur->shard];
    std::ostringstream o;
    cur->at = t.for_each_from(
        mono_ns(), cur->at, 4096,
        [&](const ctrack::ConnInfo& c) {
          o << c.orig.str() << " " << c.state << (c.offloaded ? " offloaded" : "") << " pkts=" << c.packets[0] << "/"
            << c.packets[1] << " bytes=" << c.bytes[0] << "/" << c.bytes[1] << " age=" << c.age_ms / 1000
            << "s timeout=" << c.timeout_ms / 1000 << "s\n";
          cur->n++;
        },
        zone);
    if (cur->at >= t.capacity()) {
      cur->shard++;
      cur->at = 0;
      if (cur->shard == shards_.size()) o << "total " << cur->n << "\n";
    }
    *out += o.str();
    return true;
  };
  return r;
}

// What the running tables and conntrack would do with a described packet;
// nothing changes (conntrack is only looked up).
std::string Daemon::trace(const std::string& text) {
  std::string desc = text.substr(std::min(text.size(), text.find_first_not_of(" \t")));
  while (!desc.empty() && (desc.back() == '\n' || desc.back() == ' ')) desc.pop_back();
  auto d = parse_packet_desc(desc, cfg_.port_names());
  if (!d) return "error: trace: " + d.message();
  std::vector<uint8_t> frame = ctrack::build_frame(d->spec);
  ctrack::Parsed pp;
  if (ctrack::Drop why = ctrack::parse_packet(frame.data(), static_cast<uint32_t>(frame.size()), 0, &pp);
      why != ctrack::Drop::kNone)
    return std::string("error: trace: the packet does not parse: ") + ctrack::drop_name(why);
  pp.ct.in_port = static_cast<uint8_t>(d->in_port);
  unsigned shard = steer_ ? steer_->owner(pp.ct.key) : 0;
  uint64_t now = mono_ns();
  auto peek = [&](const ctrack::Packet& p, uint16_t zone, bool commit, std::string* note) -> uint8_t {
    ctrack::Packet q = p;
    q.key.zone = zone;
    const ctrack::Packet* qp = &q;
    ctrack::Tracker::Found f;
    ctrack::Tracker& t = *shards_[shard];
    t.lookup(&qp, 1, &f);
    std::string where = shards_.size() > 1 ? " (worker " + std::to_string(shard) + "'s shard)" : "";
    if (f.conn == ctrack::kNoConn) {
      bool tcp_no_syn = q.key.proto == IPPROTO_TCP && !(q.tcp_flags & ctrack::kSyn) && !t.config().tcp_midstream;
      if (tcp_no_syn) {
        *note = "no connection" + where + ", and a TCP segment without SYN starts none";
        return ctrack::kCtTrk | ctrack::kCtInv;
      }
      *note = "no connection" + where + (commit ? "; this ct(commit) would create one" : "");
      return ctrack::kCtTrk | ctrack::kCtNew;
    }
    t.for_each_from(now, f.conn, 1, [&](const ctrack::ConnInfo& c) {
      *note = "connection " + c.orig.str() + " " + c.state + ", entry " + std::to_string(f.conn) + where +
              " (the TCP window check is not run here)";
    });
    if (q.meta & ctrack::kMetaIcmpError) return ctrack::kCtTrk | ctrack::kCtRel;
    return static_cast<uint8_t>(ctrack::kCtTrk | ctrack::kCtEst | (f.dir ? ctrack::kCtRpl : 0));
  };
  std::lock_guard<std::mutex> lk(mu_);  // the pipeline stays while we read it
  Pipeline* pl = pipeline_.load();
  std::string o = "ok\n";
  o += "packet: " + desc + "\n";
  for (const std::string& l : pl->explain(pp, d->in_port, cfg_.port_names(), peek)) o += l + "\n";
  return o;
}

namespace {

// One line for a traced frame: its headers as captured, its length as
// received (the captured bytes padded out to it, so that the parser's
// length checks see the frame as it was).
std::string describe_frame(const TraceRecord& r) {
  std::vector<uint8_t> f(std::max<uint32_t>(r.pkt_len, r.cap), 0);
  memcpy(f.data(), r.frame, r.cap);
  ctrack::Parsed pp;
  ctrack::Drop why = ctrack::parse_packet(f.data(), static_cast<uint32_t>(f.size()), 0, &pp);
  std::string o;
  if (why != ctrack::Drop::kNone) {
    o = "(headers do not parse: " + std::string(ctrack::drop_name(why)) + ")";
  } else if (pp.kind == ctrack::L3Kind::kIp) {
    o = pp.ct.key.str();
    if (size_t z = o.rfind(" zone "); z != std::string::npos) o.resize(z);
    if (pp.ct.key.proto == IPPROTO_TCP) {
      static const char letters[] = "FSRPAU";
      std::string fl;
      for (int b = 0; b < 6; b++)
        if (pp.ct.tcp_flags & (1u << b)) fl += letters[b];
      o += " flags=" + (fl.empty() ? std::string("none") : fl);
    }
  } else {
    char t[32];
    snprintf(t, sizeof t, "ethertype 0x%04x", pp.ethertype);
    o = pp.kind == ctrack::L3Kind::kArp ? "arp" : pp.kind == ctrack::L3Kind::kNd ? "ipv6 nd" : t;
  }
  if (pp.vlan) o += " vlan=" + std::to_string(pp.vlan);
  return o + " len=" + std::to_string(r.pkt_len);
}

}  // namespace

// The next n packets the workers handle, as they were handled: recorded by
// each worker into its LiveTrace, answered when n have arrived or after
// `seconds`. The reply waits without holding up the control loop.
ControlServer::Reply Daemon::live_trace(uint32_t n, uint32_t seconds) {
  auto err = [](std::string m) { return ControlServer::Reply{"error: trace --live: " + m, nullptr, nullptr}; };
  if (live_) return err("another live trace is running");
  if (workers_.empty() || !launched_) return err("no workers are running");
  live_ = true;
  for (auto& w : workers_) {
    w->trace.used.store(0, std::memory_order_relaxed);
    w->trace.want.store(n, std::memory_order_release);
  }
  // Ends the trace however the reply ends (answered, or the client gone).
  struct Session {
    explicit Session(Daemon* x) : d(x) {}
    Session(const Session&) = delete;
    ~Session() { d->end_live_trace(); }
    Daemon* d;
  };
  auto session = std::make_shared<Session>(this);
  const uint64_t deadline = mono_ns() + uint64_t{seconds} * 1'000'000'000;
  auto total = [this] {
    uint32_t t = 0;
    for (auto& w : workers_) t += w->trace.used.load(std::memory_order_acquire);
    return t;
  };
  ControlServer::Reply r;
  r.ready = [=] { return total() >= n || mono_ns() >= deadline; };
  r.more = [this, n, seconds, session](std::string* out) {
    for (auto& w : workers_) w->trace.want.store(0, std::memory_order_relaxed);
    std::vector<const TraceRecord*> recs;
    for (auto& w : workers_) {
      uint32_t u = std::min(w->trace.used.load(std::memory_order_acquire), LiveTrace::kCap);
      for (uint32_t i = 0; i < u; i++) recs.push_back(&w->trace.rec[i]);
    }
    std::stable_sort(recs.begin(), recs.end(), [](auto* a, auto* b) { return a->ns < b->ns; });
    if (recs.size() > n) recs.resize(n);
    const PortNames names = cfg_.port_names();
    auto port = [&](int p) {
      return p >= 0 && static_cast<size_t>(p) < names.names.size() ? names.names[static_cast<size_t>(p)]
                                                                      : std::to_string(p);
    };
    std::ostringstream o;
    o << "ok\n";
    o << "live trace: " << recs.size() << " of " << n << " packets";
    if (recs.size() < n) o << " (" << seconds << " s passed first)";
    o << "\n";
    uint64_t t0 = recs.empty() ? 0 : recs.front()->ns;
    char ts[32];
    for (size_t k = 0; k < recs.size(); k++) {
      const TraceRecord& t = *recs[k];
      snprintf(ts, sizeof ts, "+%.6fs", static_cast<double>(t.ns - t0) / 1e9);
      o << "#" << k + 1 << " " << ts << " worker " << unsigned{t.worker} << " in_port=" << port(t.port) << " "
        << describe_frame(t) << "\n";
      o << "    ";
      if (t.stage == TraceRecord::kNicStage) {
        o << "NIC stage (emulated offload): "
          << (t.out_port >= 0 ? "output " + port(t.out_port) + ", the connection's rules are in the NIC"
                              : std::string("dropped by the NIC's rules"));
        o << "\n";
        continue;
      }
      if (t.handoff >= 0) {
        o << "handed to worker " << int{t.handoff} << ", which owns the connection\n";
        continue;
      }
      const PacketNote& nt = t.note;
      if (nt.why & PacketNote::kParseDrop) {
        o << "dropped: parse_" << ctrack::drop_name(static_cast<ctrack::Drop>(nt.why & ~PacketNote::kParseDrop))
          << "\n";
        continue;
      }
      if (nt.hw_marked) o << "NIC mark; ";
      if (nt.cached) o << "flow cache; ";
      if (nt.nrules) {
        o << "rules";
        for (uint32_t i = 0; i < nt.nrules; i++) o << " " << nt.rule_ids[i];
        o << "; ";
      }
      if (t.ct_state) o << "ct " << ct_state_str(t.ct_state) << "; ";
      if (t.mark) o << "mark " << t.mark << "; ";
      if (t.out_port >= 0) o << "output " << port(t.out_port);
      else if (nt.why) o << "dropped: " << drop_why_name(static_cast<DropWhy>(nt.why - 1));
      else o << "dropped";
      o << "\n";
    }
    *out += o.str();
    return false;
  };
  return r;
}

void Daemon::end_live_trace() {
  if (!live_) return;
  for (auto& w : workers_) w->trace.want.store(0, std::memory_order_relaxed);
  // A worker may be in a burst that read `want` before it went to 0; the
  // rings are reused only after every worker has passed a quiescent state.
  if (launched_ && !shut_) rte_rcu_qsbr_synchronize(qsbr_, RTE_QSBR_THRID_INVALID);
  live_ = false;
}

std::string Daemon::stats_text() {
  std::ostringstream o;
  o << "ok\n";
  WorkerStats sum;
  for (auto& w : workers_) {
    WorkerStats s = w->stats.snapshot();
    o << "worker " << w->id << " lcore " << w->lcore << ": rx " << s.rx_packets << " tx " << s.tx_packets
      << " busy_polls " << s.busy_polls << " idle_polls " << s.idle_polls << " cycles/pkt "
      << (s.rx_packets ? s.busy_cycles / s.rx_packets : 0) << " nic_stage_cycles/pkt "
      << (s.nic_packets ? s.nic_cycles / s.nic_packets : 0) << " hw_marked " << s.hw_marked << " cache_hits "
      << s.cache_hits << " handoff_out " << s.handoff_out << " handoff_in " << s.handoff_in << " expire_runs "
      << s.expire_runs << " expire_cycles/run " << (s.expire_runs ? s.expire_cycles / s.expire_runs : 0)
      << " expired " << s.expired << "\n";
    for (int i = 0; i < static_cast<int>(ctrack::Drop::kCount); i++) sum.parse_drop[i] += s.parse_drop[i];
    for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++) sum.drop[i] += s.drop[i];
  }
  o << "ports:";
  for (const auto& [k, v] : port_counters()) o << " " << k << "=" << v;
  o << "\n";
  o << "drops:";
  for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++)
    o << " " << drop_why_name(static_cast<DropWhy>(i)) << "=" << sum.drop[i];
  for (int i = 1; i < static_cast<int>(ctrack::Drop::kCount); i++)
    o << " parse_" << ctrack::drop_name(static_cast<ctrack::Drop>(i)) << "=" << sum.parse_drop[i];
  o << "\n";
  ctrack::Stats cs;
  for (auto& sh : shards_) cs += sh->stats();
  o << "ct:";
  cs.visit([&](const std::string& k, uint64_t v) { o << " " << k << "=" << v; });
  o << "\n";
  const OffloadStats os = offload_->stats();
  o << "offload " << offload_->name() << ":";
  for (const auto& [k, v] : os.counters) o << " " << k << "=" << v;
  o << "\n";
  for (const auto& [k, v] : os.notes) o << "offload " << k << ": " << v << "\n";
  return o.str();
}

ControlServer::Reply Daemon::handle(const std::string& req) {
  auto text = [](std::string s) { return ControlServer::Reply{std::move(s), nullptr, nullptr}; };
  std::istringstream in(req);
  std::string cmd, sub;
  in >> cmd;
  if (cmd == "rule") {
    in >> sub;
    if (sub == "add") {
      std::string rest;
      std::getline(in, rest, '\0');
      return text(rule_add(rest));
    }
    if (sub == "del") {
      uint32_t id = 0;
      std::string extra;
      if (!(in >> id) || (in >> extra)) return text("error: usage: rule del ID");
      std::vector<Rule> next;
      {
        std::lock_guard<std::mutex> lk(mu_);
        next = rules_;
      }
      auto before = next.size();
      std::erase_if(next, [&](const Rule& x) { return x.id == id; });
      if (next.size() == before) return text("error: no rule with id " + std::to_string(id));
      if (Status s = install(std::move(next)); !s) return text("error: " + s.message());
      return text("ok");
    }
    return text("error: usage: rule add {yaml} | rule del ID");
  }
  if (cmd == "rules") return text("ok\n" + rules_text());
  if (cmd == "ct") {
    in >> sub;
    int zone = -1;
    std::string z;
    if (in >> z) {
      char* end;
      long v = strtol(z.c_str(), &end, 10);
      if (*end || z.empty() || v < 0 || v > 65535) return text("error: zone '" + z + "' is not 0..65535");
      zone = static_cast<int>(v);
    }
    if (sub == "flush") {
      uint64_t n = 0;
      for (auto& sh : shards_) n += sh->flush(zone);
      return text("ok flushed " + std::to_string(n));
    }
    if (sub == "list") return ct_list(zone);
    return text("error: usage: ct flush [ZONE] | ct list [ZONE]");
  }
  if (cmd == "reload") {
    if (Status s = reload(); !s) return text("error: " + s.message());
    return text("ok");
  }
  if (cmd == "stats") return text(stats_text());
  if (cmd == "trace" && req.find("--live") != std::string::npos) {
    std::string flag, extra;
    uint32_t n = 0, secs = 10;
    in >> flag;
    auto num = [](const std::string& t, uint32_t lo, uint32_t hi, uint32_t* v) {
      char* end;
      long x = strtol(t.c_str(), &end, 10);
      if (t.empty() || *end || x < lo || x > hi) return false;
      *v = static_cast<uint32_t>(x);
      return true;
    };
    std::string ns, ss;
    const std::string usage = "error: usage: trace --live N [SECONDS] (N 1.." + std::to_string(LiveTrace::kCap) +
                              ", SECONDS 1..50, default 10)";
    if (flag != "--live" || !(in >> ns) || !num(ns, 1, LiveTrace::kCap, &n)) return text(usage);
    if (in >> ss && !num(ss, 1, 50, &secs)) return text(usage);
    if (in >> extra) return text(usage);
    return live_trace(n, secs);
  }
  if (cmd == "trace") {
    std::string rest;
    std::getline(in, rest, '\0');
    return text(trace(rest));
  }
  if (cmd == "offload") {
    in >> sub;
    if (sub == "testpmd") return text("ok\n" + offload_->testpmd_commands());
    return text("error: usage: offload testpmd");
  }
  return text("error: unknown command '" + cmd +
              "' (rule add|rule del|rules|ct flush|ct list|reload|stats|trace|offload testpmd)");
}

// af_packet keeps its ring's drops in the kernel (PACKET_STATISTICS, reset
// on read) and its PMD reports none; the daemon reads them off the PMD's
// sockets. Fragments the kernel could not reassemble (the PMD's fanout
// defragments) show in the netns' IP ReasmFails.
void Daemon::sample_port_drops() {
  bool any = false;
  for (int ix : ifindex_) any |= ix != 0;
  if (!any) return;
  std::error_code ec;
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
    for (size_t p = 0; p < ifindex_.size(); p++)
      if (ifindex_[p] && ifindex_[p] == ll.sll_ifindex) ring_drops_[p] += st.tp_drops;
  }
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

int Daemon::run() {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  log("running: " + std::to_string(port_ids_.size()) + " ports, " + std::to_string(workers_.size()) + " workers, " +
      std::to_string(rules_.size()) + " rules, offload " + offload_->name() + ", control " + ctl_->path());
  std::vector<ctrack::Event> ev(256);
  const bool offload_active = cfg_.offload.provider != "none";
  const ControlServer::Handler handler = [this](const std::string& r) { return handle(r); };
  uint64_t loops = 0, last_sample = 0;
  while (!g_signal_stop) {
    // With offload the loop also carries ct events to the NIC: poll often,
    // and without sleeping while operations are out (a NIC completes them
    // in microseconds; a connection waiting for its rules runs in software).
    int wait_ms = offload_active ? (offload_->busy() ? 0 : 1) : 20;
    ctl_->poll(wait_ms, mono_ns(), handler);
    if (g_signal_reload) {
      g_signal_reload = 0;
      if (Status s = reload(); !s) warn("reload failed, keeping the running rules: " + s.message());
    }
    for (unsigned w = 0; w < shards_.size(); w++) {
      uint32_t n;
      while ((n = shards_[w]->poll_events(ev.data(), static_cast<uint32_t>(ev.size()))) > 0)
        offload_->on_ct_events(w, ev.data(), n, mono_ns());
    }
    uint64_t now = mono_ns();
    offload_->poll(now);
    if (++loops % 16 == 0) {  // the telemetry thread reads this copy, never the provider
      OffloadStats os = offload_->stats();
      std::lock_guard<std::mutex> lk(off_mu_);
      off_snap_ = std::move(os);
    }
    if (now - last_sample >= 1'000'000'000) {
      std::lock_guard<std::mutex> lk(off_mu_);
      sample_port_drops();
      last_sample = now;
    }
  }
  log("stopping");
  return 0;
}

void Daemon::shutdown() {
  if (shut_) return;
  shut_ = true;
  started_ = false;
  if (launched_) {
    stop_.store(true);
    rte_eal_mp_wait_lcore();
  }
  for (rte_ring* r : handoff_) {
    if (!r) continue;
    void* m;
    while (rte_ring_sc_dequeue(r, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
    rte_ring_free(r);
  }
  handoff_.clear();
  if (offload_)
    if (Status s = offload_->flush(); !s) warn("offload flush: " + s.message());
  // Representors before the transfer proxy (mlx5_trigger.c:1391-1420).
  // Only what start() got to; the interfaces as they were found.
  for (size_t i = started_ports_; i-- > 0;) {
    if (promisc_on_[i] && rte_eth_promiscuous_disable(port_ids_[i]) != 0)
      warn("port '" + cfg_.ports[i].name + "': could not turn promiscuous mode off");
    const FlowApi& api = offload_->api();
    if (int rc = api.dev_stop(api.self, port_ids_[i]); rc != 0)
      warn("port '" + cfg_.ports[i].name + "': stop: " + strerror(-rc));
  }
  for (uint16_t pid : port_ids_) rte_eth_dev_close(pid);
  if (pool_) {
    unsigned in_use = rte_mempool_in_use_count(pool_);
    log("stopped; mbufs in use: " + std::to_string(in_use) + " of " + std::to_string(pool_->size));
  }
}

// ------------------------------------------------------------------ telemetry

std::vector<std::pair<std::string, uint64_t>> Daemon::port_counters() {
  std::vector<std::pair<std::string, uint64_t>> v;
  bool af_packet = false;
  for (size_t i = 0; i < port_ids_.size(); i++) {
    rte_eth_stats s{};
    rte_eth_stats_get(port_ids_[i], &s);
    rte_eth_link link{};
    rte_eth_link_get_nowait(port_ids_[i], &link);
    const std::string& n = cfg_.ports[i].name;
    v.insert(v.end(), {{n + "_rx_packets", s.ipackets},
                       {n + "_tx_packets", s.opackets},
                       {n + "_rx_bytes", s.ibytes},
                       {n + "_tx_bytes", s.obytes},
                       {n + "_rx_missed", s.imissed},
                       {n + "_rx_errors", s.ierrors},
                       {n + "_tx_errors", s.oerrors},
                       {n + "_link_up", static_cast<uint64_t>(link.link_status)}});
    if (ifindex_[i]) {
      std::lock_guard<std::mutex> lk(off_mu_);
      v.emplace_back(n + "_rx_ring_drops", ring_drops_[i]);
      af_packet = true;
    }
  }
  if (af_packet) {
    std::lock_guard<std::mutex> lk(off_mu_);
    v.emplace_back("kernel_ip_reasm_fails", reasm_fails_);
  }
  return v;
}

void Daemon::telemetry_stats(rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  rte_tel_data* ports = rte_tel_data_alloc();
  rte_tel_data_start_dict(ports);
  for (const auto& [k, v] : port_counters()) rte_tel_data_add_dict_u64(ports, k.c_str(), v);
  rte_tel_data_add_dict_container(d, "ports", ports, 0);

  rte_tel_data* workers = rte_tel_data_alloc();
  rte_tel_data_start_dict(workers);
  WorkerStats sum;
  for (auto& w : workers_) {
    WorkerStats s = w->stats.snapshot();
    std::string p = "w" + std::to_string(w->id) + "_";
    rte_tel_data_add_dict_u64(workers, (p + "lcore").c_str(), w->lcore);
    rte_tel_data_add_dict_u64(workers, (p + "rx_packets").c_str(), s.rx_packets);
    rte_tel_data_add_dict_u64(workers, (p + "tx_packets").c_str(), s.tx_packets);
    rte_tel_data_add_dict_u64(workers, (p + "busy_polls").c_str(), s.busy_polls);
    rte_tel_data_add_dict_u64(workers, (p + "idle_polls").c_str(), s.idle_polls);
    rte_tel_data_add_dict_u64(workers, (p + "cycles_per_packet").c_str(),
                              s.rx_packets ? s.busy_cycles / s.rx_packets : 0);
    rte_tel_data_add_dict_u64(workers, (p + "hw_marked").c_str(), s.hw_marked);
    rte_tel_data_add_dict_u64(workers, (p + "cache_hits").c_str(), s.cache_hits);
    rte_tel_data_add_dict_u64(workers, (p + "handoff_out").c_str(), s.handoff_out);
    rte_tel_data_add_dict_u64(workers, (p + "handoff_in").c_str(), s.handoff_in);
    rte_tel_data_add_dict_u64(workers, (p + "nic_stage_packets").c_str(), s.nic_packets);
    rte_tel_data_add_dict_u64(workers, (p + "nic_stage_cycles_per_packet").c_str(),
                              s.nic_packets ? s.nic_cycles / s.nic_packets : 0);
    rte_tel_data_add_dict_u64(workers, (p + "expire_runs").c_str(), s.expire_runs);
    rte_tel_data_add_dict_u64(workers, (p + "expire_cycles").c_str(), s.expire_cycles);
    rte_tel_data_add_dict_u64(workers, (p + "busy_cycles").c_str(), s.busy_cycles);
    rte_tel_data_add_dict_u64(workers, (p + "expired").c_str(), s.expired);
    for (int i = 0; i < static_cast<int>(ctrack::Drop::kCount); i++) sum.parse_drop[i] += s.parse_drop[i];
    for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++) sum.drop[i] += s.drop[i];
  }
  rte_tel_data_add_dict_container(d, "workers", workers, 0);

  rte_tel_data* drops = rte_tel_data_alloc();
  rte_tel_data_start_dict(drops);
  for (int i = 1; i < static_cast<int>(ctrack::Drop::kCount); i++)
    rte_tel_data_add_dict_u64(drops, (std::string("parse_") + ctrack::drop_name(static_cast<ctrack::Drop>(i))).c_str(),
                              sum.parse_drop[i]);
  for (int i = 0; i < static_cast<int>(DropWhy::kCount); i++)
    rte_tel_data_add_dict_u64(drops, drop_why_name(static_cast<DropWhy>(i)), sum.drop[i]);
  rte_tel_data_add_dict_container(d, "drops", drops, 0);

  rte_tel_data* rules = rte_tel_data_alloc();
  rte_tel_data_start_dict(rules);
  {
    std::lock_guard<std::mutex> lk(mu_);
    Pipeline* pl = pipeline_.load();
    for (size_t i = 0; i < pl->rules().size() && i < 120; i++) {
      rte_tel_data_add_dict_u64(rules, std::to_string(pl->rules()[i].id).c_str(), rule_counters(*pl, i).packets);
    }
  }
  rte_tel_data_add_dict_container(d, "rule_hits", rules, 0);

  ctrack::Stats cs;
  for (auto& sh : shards_) cs += sh->stats();
  rte_tel_data* ct = rte_tel_data_alloc();
  rte_tel_data_start_dict(ct);
  cs.visit([&](const std::string& k, uint64_t v) { rte_tel_data_add_dict_u64(ct, k.c_str(), v); });
  rte_tel_data_add_dict_container(d, "ct", ct, 0);

  OffloadStats os;
  {
    std::lock_guard<std::mutex> lk(off_mu_);
    os = off_snap_;
  }
  rte_tel_data* off = rte_tel_data_alloc();
  rte_tel_data_start_dict(off);
  rte_tel_data_add_dict_string(off, "provider", offload_->name());
  for (const auto& [k, v] : os.counters) rte_tel_data_add_dict_u64(off, k.c_str(), v);
  for (const auto& [k, v] : os.notes) rte_tel_data_add_dict_string(off, k.c_str(), v.substr(0, RTE_TEL_MAX_STRING_LEN - 1).c_str());
  rte_tel_data_add_dict_container(d, "offload", off, 0);
}

void Daemon::telemetry_ct_list(const char* params, rte_tel_data* d) {
  int zone = -1;
  int proto = -1;
  size_t limit = 50, offset = 0;
  std::string p = params ? params : "";
  std::istringstream in(p);
  std::string kv;
  while (std::getline(in, kv, ',')) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "zone") zone = atoi(v.c_str());
    else if (k == "limit") limit = std::min<size_t>(100, strtoul(v.c_str(), nullptr, 10));
    else if (k == "offset") offset = strtoul(v.c_str(), nullptr, 10);
    else if (k == "proto") proto = v == "tcp" ? IPPROTO_TCP : v == "udp" ? IPPROTO_UDP : v == "icmp" ? IPPROTO_ICMP : atoi(v.c_str());
  }
  // A dict of containers rather than an array: DPDK 22.11 leaks the
  // containers of an array reply.
  rte_tel_data_start_dict(d);
  size_t seen = 0, added = 0;
  uint64_t now = mono_ns();
  for (auto& s : shards_) {
    s->for_each(
        now,
        [&](const ctrack::ConnInfo& c) {
          if (proto >= 0 && c.orig.proto != proto) return;
          if (seen++ < offset || added >= limit) return;
          rte_tel_data* e = rte_tel_data_alloc();
          rte_tel_data_start_dict(e);
          rte_tel_data_add_dict_string(e, "tuple", c.orig.str().c_str());
          rte_tel_data_add_dict_u64(e, "zone", c.orig.zone);
          rte_tel_data_add_dict_string(e, "state", c.state.c_str());
          rte_tel_data_add_dict_u64(e, "offloaded", c.offloaded);
          rte_tel_data_add_dict_u64(e, "packets_orig", c.packets[0]);
          rte_tel_data_add_dict_u64(e, "packets_reply", c.packets[1]);
          rte_tel_data_add_dict_u64(e, "bytes_orig", c.bytes[0]);
          rte_tel_data_add_dict_u64(e, "bytes_reply", c.bytes[1]);
          rte_tel_data_add_dict_u64(e, "age_s", c.age_ms / 1000);
          rte_tel_data_add_dict_int(e, "timeout_s", static_cast<int>(c.timeout_ms / 1000));
          rte_tel_data_add_dict_container(d, std::to_string(added).c_str(), e, 0);
          added++;
        },
        zone);
  }
}

void Daemon::telemetry_rules(rte_tel_data* d) {
  rte_tel_data_start_dict(d);
  std::lock_guard<std::mutex> lk(mu_);
  Pipeline* pl = pipeline_.load();
  for (size_t i = 0; i < pl->rules().size() && i < 60; i++) {
    const Rule& r = pl->rules()[i];
    RuleCounters c = rule_counters(*pl, i);
    rte_tel_data* e = rte_tel_data_alloc();
    rte_tel_data_start_dict(e);
    rte_tel_data_add_dict_u64(e, "id", r.id);
    rte_tel_data_add_dict_u64(e, "table", r.table);
    rte_tel_data_add_dict_u64(e, "priority", static_cast<uint64_t>(r.priority));
    rte_tel_data_add_dict_string(e, "match", r.match_text.c_str());
    rte_tel_data_add_dict_string(e, "actions", r.actions_text.c_str());
    rte_tel_data_add_dict_u64(e, "packets", c.packets);
    rte_tel_data_add_dict_u64(e, "bytes", c.bytes);
    rte_tel_data_add_dict_container(d, ("r" + std::to_string(r.id)).c_str(), e, 0);
  }
}

}  // namespace dp
