#include "daemon.h"

#include "daemon_internal.h"

#include "dataplane/log.h"
#include "dataplane/nic_model.h"
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

void install_signal_handlers() {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;  // EAL's and the ports' set-up calls go on; the control loop's poll() still wakes
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

bool stop_requested() { return g_signal_stop != 0; }

std::string stages_of(const Pipeline& p) {
  std::string s;
  for (const char* n : p.stage_names()) s += (s.empty() ? "" : ",") + std::string(n);
  return s;
}

void log_pipeline(const Pipeline& p) {
  log_info(LogType::kPipeline, "pipeline " + std::to_string(p.generation()) + ": " + std::to_string(p.rules().size()) +
                                   " rules; flow cache " +
                                   (p.fast_zone() >= 0 ? "on (zone " + std::to_string(p.fast_zone()) + ")"
                                                       : std::string("off (ct() in more than one zone)")) +
                                   "; rte_acl classify " + acl_classifier() + "; stages " + stages_of(p));
  if (std::string(acl_classifier()) == "scalar")
    log_warning(LogType::kPipeline, "rte_acl runs its scalar classifier: neither the CPU nor EAL's SIMD width "
                                    "(--force-max-simd-bitwidth) allows a vector one");
}

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
      std::string dev = p.devargs;
      if (cfg.offload.provider == "rte_flow" || cfg.offload.provider == "auto") {
        // The steering engine is fixed at probe (dv_flow_en).
        std::string why;
        dev = engine_devargs(p.devargs, cfg.offload.engine, pci_firmware(p.devargs), &why);
        log_info(LogType::kOffload, "port " + p.name + ": " + dev + " (" + why + ")");
      }
      a.insert(a.end(), {"-a", dev});
      pci = true;
    }
  }
  if (!pci) a.push_back("--no-pci");
  a.insert(a.end(), cfg.eal.extra.begin(), cfg.eal.extra.end());
  return a;
}

// ------------------------------------------------------------------ workers
Daemon::Daemon(Config cfg, std::unique_ptr<ControlServer> ctl, std::unique_ptr<MetricsServer> metrics)
    : cfg_(std::move(cfg)), ctl_(std::move(ctl)), metrics_(std::move(metrics)) {}

Daemon::~Daemon() {
  metrics_.reset();  // its thread reads the workers' counters and the shards
  ctl_.reset();  // its clients' replies (a live trace's session) end while the workers are still here
  shutdown();
  delete pipeline_.load();
  delete marks_.load();
  if (qsbr_) rte_free(qsbr_);
}

ControlServer::Reply Daemon::handle(const std::string& request) { return commands_.dispatch(request); }

// Each service's commands; every command of the table has a handler.
Status Daemon::register_commands() {
  SDN_TRY(rules_.register_commands(commands_));
  SDN_TRY(ct_.register_commands(commands_));
  SDN_TRY(trace_.register_commands(commands_));
  SDN_TRY(stats_.register_commands(commands_));
  SDN_TRY(register_log_commands(commands_));
  return commands_.complete();
}

Status Daemon::start() {
  // A stop asked for meanwhile ends the start between its steps (the
  // destructor undoes what was done, as for a failed start; main exits 0).
  auto stop_asked = [this] { return interrupted_ = stop_requested(); };
  const Status stopped = Status::error("stopped during start-up");
  SDN_TRY(register_commands());
  g_daemon = this;
  unsigned nw = static_cast<unsigned>(cfg_.workers.lcores.size());
  if (rte_lcore_id() != cfg_.workers.main_lcore) return Status::error("EAL main lcore differs from workers.main_lcore");

  auto off = make_offload_provider(cfg_.offload, nw);
  if (!off) return off.status();
  offload_ = std::move(off.value());
  const ctrack::Config cc = conntrack_shard_config(cfg_);
  for (unsigned i = 0; i < nw; i++) {
    auto t = ctrack::Tracker::create(cc);
    if (!t) return Status::error("conntrack: " + t.message());
    shards_.push_back(std::move(t.value()));
    auto w = std::make_unique<WorkerSlot>();
    w->id = i;
    w->lcore = cfg_.workers.lcores[i];
    w->dp = std::make_unique<Datapath>(i, shards_.back().get(), &w->stats);
    w->dp->set_hw_marks(&marks_);
    for (size_t p = 0; p < cfg_.ports.size(); p++) {
      w->dp->set_mtu(static_cast<uint16_t>(p), cfg_.ports[p].mtu);
      // af_packet's socket reassembles IPv4 (PACKET_FANOUT_FLAG_DEFRAG):
      // a datagram over the MTU from it is whole, not oversized.
      if (cfg_.ports[p].devargs.rfind("net_af_packet", 0) == 0) w->dp->set_reassembled_in(static_cast<uint16_t>(p));
    }
    workers_.push_back(std::move(w));
  }
  if (stop_asked()) return stopped;

  if (Status s = ports_.open(cfg_.workers); !s) return s;
  size_t sz = rte_rcu_qsbr_get_memsize(nw);
  qsbr_ = static_cast<rte_rcu_qsbr*>(rte_zmalloc("dp_qsbr", sz, RTE_CACHE_LINE_SIZE));
  if (!qsbr_ || rte_rcu_qsbr_init(qsbr_, nw) != 0) return Status::error("RCU: cannot allocate");

  if (nw > 1) {
    // Several workers, a conntrack shard each: a connection's packets are
    // judged by the worker that owns it (steer.h); others hand them over.
    steer_ = std::make_unique<Steering>(kSymmetricRssKey, sizeof kSymmetricRssKey, nw);
    for (auto& w : workers_) w->dp->set_steering(steer_.get(), w->id);
    // NAT: each shard takes only translated tuples whose replies it owns.
    nat_owners_.resize(nw);
    for (unsigned i = 0; i < nw; i++) {
      nat_owners_[i] = NatOwner{steer_.get(), i};
      shards_[i]->set_nat_filter(
          [](const ctrack::Key& reply, const void* ctx) {
            const auto* o = static_cast<const NatOwner*>(ctx);
            return o->steer->owner(reply) == o->self;
          },
          &nat_owners_[i]);
    }
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
  if (Status s = offload_->prepare(ports_.ids()); !s) return Status::error("offload: " + s.message());
  for (size_t i = 0; i < cfg_.ports.size(); i++)
    if (Status s = ports_.setup(i, static_cast<uint16_t>(nw), *offload_); !s) return s;
  for (size_t i : offload_->start_order(cfg_.ports.size()))
    if (Status s = ports_.start(i, offload_->api()); !s) return s;
  if (stop_asked()) return stopped;

  auto pl = Pipeline::build(cfg_.rules, nw, &cfg_.overlay);
  if (!pl) return pl.status();
  log_pipeline(*pl.value());
  pipeline_.store(pl.value().release());
  rules_.started();

  host_.port_ids = ports_.ids();
  for (auto& s : shards_) host_.shards.push_back(s.get());
  host_.marks = &marks_;
  if (Status s = offload_->start(host_); !s) return Status::error("offload: " + s.message());
  offload_->on_pipeline(*pipeline_.load());
  if (stop_asked()) return stopped;

  rte_telemetry_register_cmd("/dataplane/stats", tel_stats,
                             "Ports, workers, drops by reason, rule hits and conntrack stats. No parameters");
  rte_telemetry_register_cmd("/dataplane/ct/list", tel_ct_list,
                             "Connections. Parameters: zone=N,proto=tcp|udp|icmp,limit=N (<=100),offset=N");
  rte_telemetry_register_cmd("/dataplane/rules", tel_rules, "Rules with their hit counters");

  const int frag_note_off = register_frag_note_field();
  if (frag_note_off < 0) return Status::error(std::string("mbuf dynamic field for fragments: ") + rte_strerror(rte_errno));
  for (auto& w : workers_) {
    w->env.id = w->id;
    w->env.workers = nw;
    w->env.burst = cfg_.workers.burst;
    w->env.expire_slice = expire_slice(cfg_.ct.capacity);
    w->env.port_ids = ports_.ids();
    w->env.port_index = ports_.index();
    w->env.pipeline = &pipeline_;
    w->env.stop = &stop_;
    w->env.qsbr = qsbr_;
    w->env.shard = shards_[w->id].get();
    w->env.nic = offload_->nic();
    w->env.dp = w->dp.get();
    w->env.pool = ports_.pool();
    w->env.frag_note_off = frag_note_off;
    w->env.carry = rte_pktmbuf_priv_size(ports_.pool()) >= sizeof(Carried);
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

int Daemon::run() {
  if (g_signal_stop) {  // asked for between start() and here: never announced as running
    log("stopping: a signal during start-up");
    return 0;
  }
  const std::string running = std::to_string(ports_.size()) + " ports, " + std::to_string(workers_.size()) +
                              " workers, " + std::to_string(rules_.size()) + " rules, offload " + offload_->name();
  if (metrics_) metrics_->start([this] { return stats_prometheus(stats_.snapshot(false)); });
  log("running: " + running + ", control " + ctl_->path() + (metrics_ ? ", metrics " + metrics_->spec() : ""));
  notify_.ready("forwarding: " + running);
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
      rules_.reload([](const Status& s) {
        if (!s) warn("reload failed, keeping the running rules: " + s.message());
      });
    }
    rules_.poll();
    stats_.serve_dpdk_reads();  // /metrics' and telemetry's port counters and mempools
    for (unsigned w = 0; w < shards_.size(); w++) {
      uint32_t n;
      while ((n = shards_[w]->poll_events(ev.data(), static_cast<uint32_t>(ev.size()))) > 0)
        offload_->on_ct_events(w, ev.data(), n, mono_ns());
    }
    uint64_t now = mono_ns();
    offload_->poll(now);
    if (notify_.watchdog_due(now) && workers_polling()) notify_.watchdog_ping(now);
    if (++loops % 16 == 0) {  // the telemetry thread reads this copy, never the provider
      stats_.offload_snapshot(offload_->stats());
    }
    if (now - last_sample >= 1'000'000'000) {
      ports_.sample_drops();
      last_sample = now;
    }
  }
  notify_.stopping();
  log("stopping");
  return 0;
}

// Every worker has polled since the last look (its poll counters moved).
bool Daemon::workers_polling() {
  bool all = true;
  polls_seen_.resize(workers_.size());
  for (size_t i = 0; i < workers_.size(); i++) {
    const WorkerStats s = workers_[i]->stats.snapshot();
    const uint64_t polls = s.busy_polls + s.idle_polls;
    if (polls == polls_seen_[i]) {
      log_warning(LogType::kWorker, "worker " + std::to_string(i) + " has not polled since the last watchdog ping; not pinging");
      all = false;
    }
    polls_seen_[i] = polls;
  }
  return all;
}

void Daemon::shutdown() {
  if (shut_) return;
  shut_ = true;
  metrics_.reset();
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
  if (offload_) {
    ports_.stop(offload_->api());
    offload_->on_ports_stopped();
  }
}

}  // namespace dp
