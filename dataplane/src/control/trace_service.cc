// Traces: a described packet through the tables (nothing changes), and
// live traces of what the workers do.
#include "daemon_internal.h"


#include "dataplane/log.h"
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

#include <nlohmann/json.hpp>
#include "sdn/json.h"

namespace dp {

using sdn::mono_ns;

std::string TraceService::trace(const std::string& text, Format fmt) {
  std::string desc = text.substr(std::min(text.size(), text.find_first_not_of(" \t")));
  while (!desc.empty() && (desc.back() == '\n' || desc.back() == ' ')) desc.pop_back();
  auto d = parse_packet_desc(desc, run_.cfg.port_names());
  auto error = [fmt](const std::string& m) {
    return fmt == Format::kJson ? sdn::json_dump(nlohmann::json{{"error", "trace: " + m}}) + "\n" : "error: trace: " + m;
  };
  if (!d) return error(d.message());
  std::vector<uint8_t> frame = ctrack::build_frame(d->spec);
  ctrack::Parsed pp;
  if (ctrack::Drop why = ctrack::parse_packet(frame.data(), static_cast<uint32_t>(frame.size()), 0, &pp);
      why != ctrack::Drop::kNone)
    return error(std::string("the packet does not parse: ") + ctrack::drop_name(why));
  pp.ct.in_port = static_cast<uint8_t>(d->in_port);
  unsigned shard = run_.steer ? run_.steer->owner(pp.ct.key) : 0;
  uint64_t now = mono_ns();
  auto peek = [&](const ctrack::Packet& p, uint16_t zone, bool commit, std::string* note,
                  ctrack::Key* nat_to) -> uint8_t {
    ctrack::Packet q = p;
    q.key.zone = zone;
    const ctrack::Packet* qp = &q;
    ctrack::Tracker::Found f;
    ctrack::Tracker& t = *run_.shards[shard];
    t.lookup(&qp, 1, &f);
    std::string where = run_.shards.size() > 1 ? " (worker " + std::to_string(shard) + "'s shard)" : "";
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
      if (c.nat != ctrack::NatKind::kNone) {
        *note += "; translated (" + std::string(c.nat == ctrack::NatKind::kSrc ? "snat" : "dnat") +
                 "): replies travel as " + c.reply.str();
        // Found under the reply tuple as replies travel, or under the
        // original as it was sent: each leaves as the other side's reverse.
        if (f.rside == (f.dir == 1)) *nat_to = f.rside ? c.orig.reversed() : c.reply.reversed();
      }
    });
    if (q.meta & ctrack::kMetaIcmpError) return ctrack::kCtTrk | ctrack::kCtRel;
    if (nat_to->family == 0 && note->find("; translated (") != std::string::npos) {
      *note += "; this tuple is the reverse of one of its sides: invalid (nat_clash)";
      return ctrack::kCtTrk | ctrack::kCtInv;
    }
    return static_cast<uint8_t>(ctrack::kCtTrk | ctrack::kCtEst | (f.dir ? ctrack::kCtRpl : 0));
  };
  const std::vector<std::string> steps = rules_.with_pipeline(
      [&](const Pipeline& pl) { return pl.explain(pp, d->in_port, run_.cfg.port_names(), peek, d->tun_id); });
  if (fmt == Format::kJson) return sdn::json_dump(nlohmann::json{{"packet", desc}, {"steps", steps}}) + "\n";
  std::string o = "ok\n";
  o += "packet: " + desc + "\n";
  for (const std::string& l : steps) o += l + "\n";
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

// The live trace as JSON lines: {"packets", "wanted", "timed_out"}, then per
// packet {"n", "t_s", "worker", "in_port", "frame", "stage": "nic" |
// "handoff" | "software", and what happened: "handoff_to", "parse_drop",
// "nic_mark", "flow_cache", "rules", "ct", "mark", "output" or "drop"}.
std::string TraceService::live_trace_json(const std::vector<const TraceRecord*>& recs, uint32_t n, uint32_t seconds) {
  const PortNames names = run_.cfg.port_names();
  auto port = [&](int p) {
    return p >= 0 && static_cast<size_t>(p) < names.names.size() ? names.names[static_cast<size_t>(p)]
                                                                    : std::to_string(p);
  };
  std::string o = sdn::json_dump(nlohmann::json{
                      {"packets", recs.size()}, {"wanted", n}, {"timed_out", recs.size() < n}, {"seconds", seconds}}) +
                  "\n";
  const uint64_t t0 = recs.empty() ? 0 : recs.front()->ns;
  for (size_t k = 0; k < recs.size(); k++) {
    const TraceRecord& t = *recs[k];
    nlohmann::json j = {{"n", k + 1},
                        {"t_s", static_cast<double>(t.ns - t0) / 1e9},
                        {"worker", unsigned{t.worker}},
                        {"in_port", port(t.port)},
                        {"frame", describe_frame(t)}};
    const PacketNote& nt = t.note;
    if (t.stage == TraceRecord::kNicStage) {
      j["stage"] = "nic";
      if (t.out_port >= 0) j["output"] = port(t.out_port);
      else j["drop"] = "nic_rules";
    } else if (t.handoff >= 0) {
      j["stage"] = "handoff";
      j["handoff_to"] = int{t.handoff};
    } else if (nt.why & PacketNote::kParseDrop) {
      j["stage"] = "software";
      j["drop"] = std::string("parse_") + ctrack::drop_name(static_cast<ctrack::Drop>(nt.why & ~PacketNote::kParseDrop));
    } else {
      j["stage"] = "software";
      j["nic_mark"] = bool(nt.hw_marked);
      j["flow_cache"] = bool(nt.cached);
      j["rules"] = nlohmann::json::array();
      for (uint32_t i = 0; i < nt.nrules; i++) j["rules"].push_back(nt.rule_ids[i]);
      if (t.ct_state) j["ct"] = ct_state_str(t.ct_state);
      if (t.mark) j["mark"] = t.mark;
      if (t.out_port >= 0) j["output"] = port(t.out_port);
      else j["drop"] = nt.why ? drop_why_name(static_cast<DropWhy>(nt.why - 1)) : "dropped";
    }
    o += sdn::json_dump(j) + "\n";
  }
  return o;
}

// The next n packets the workers handle, as they were handled: recorded by
// each worker into its LiveTrace, answered when n have arrived or after
// `seconds`. The reply waits without holding up the control loop.
ControlServer::Reply TraceService::live_trace(uint32_t n, uint32_t seconds, Format f) {
  auto err = [](std::string m) { return ControlServer::Reply{"error: trace --live: " + m, nullptr, nullptr}; };
  if (live_) return err("another live trace is running");
  if (run_.workers.empty() || !run_.launched) return err("no workers are running");
  live_ = true;
  for (auto& w : run_.workers) {
    w->trace.used.store(0, std::memory_order_relaxed);
    w->trace.want.store(n, std::memory_order_release);
  }
  // Ends the trace however the reply ends (answered, or the client gone).
  struct Session {
    explicit Session(TraceService* x) : d(x) {}
    Session(const Session&) = delete;
    ~Session() { d->end_live_trace(); }
    TraceService* d;
  };
  auto session = std::make_shared<Session>(this);
  const uint64_t deadline = mono_ns() + uint64_t{seconds} * 1'000'000'000;
  auto total = [this] {
    uint32_t t = 0;
    for (auto& w : run_.workers) t += w->trace.used.load(std::memory_order_acquire);
    return t;
  };
  ControlServer::Reply r;
  r.ready = [=] { return total() >= n || mono_ns() >= deadline; };
  r.more = [this, n, seconds, session, f](std::string* out) {
    for (auto& w : run_.workers) w->trace.want.store(0, std::memory_order_relaxed);
    std::vector<const TraceRecord*> recs;
    for (auto& w : run_.workers) {
      uint32_t u = std::min(w->trace.used.load(std::memory_order_acquire), LiveTrace::kCap);
      for (uint32_t i = 0; i < u; i++) recs.push_back(&w->trace.rec[i]);
    }
    std::stable_sort(recs.begin(), recs.end(), [](auto* a, auto* b) { return a->ns < b->ns; });
    if (recs.size() > n) recs.resize(n);
    const PortNames names = run_.cfg.port_names();
    auto port = [&](int p) {
      return p >= 0 && static_cast<size_t>(p) < names.names.size() ? names.names[static_cast<size_t>(p)]
                                                                      : std::to_string(p);
    };
    if (f == Format::kJson) {
      *out += live_trace_json(recs, n, seconds);
      return false;
    }
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

void TraceService::end_live_trace() {
  if (!live_) return;
  for (auto& w : run_.workers) w->trace.want.store(0, std::memory_order_relaxed);
  // A worker may be in a burst that read `want` before it went to 0; the
  // rings are reused only after every worker has passed a quiescent state.
  if (run_.launched && !run_.shut) rte_rcu_qsbr_synchronize(run_.qsbr, RTE_QSBR_THRID_INVALID);
  live_ = false;
}


Status TraceService::register_commands(CommandTable& t) {
  using C = CommandTable;
  static_assert(find_command("trace --live")->args[0].hi == LiveTrace::kCap, "trace --live N: the records a worker keeps");
  SDN_TRY(t.add("trace", [this](const CommandArgs& a, Format f) { return C::text(trace(a.str[0], f)); }));
  SDN_TRY(t.add("trace --live", [this](const CommandArgs& a, Format f) {
    return live_trace(static_cast<uint32_t>(a.num[0]), static_cast<uint32_t>(a.num[1]), f);
  }));
  return {};
}

}  // namespace dp
