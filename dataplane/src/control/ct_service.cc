// Conntrack queries: ct list / flush and the telemetry listing.
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

#include <nlohmann/json.hpp>
#include "sdn/json.h"

namespace dp {

using sdn::mono_ns;

ControlServer::Reply CtService::list(int zone, Format f) {
  // Streamed a slice of slots at a time: 10^6 entries never sit in one
  // string, and the control loop (offload events) runs between slices.
  struct Cursor {
    size_t shard = 0;
    uint32_t at = 0;
    uint64_t n = 0;
  };
  auto cur = std::make_shared<Cursor>();
  ControlServer::Reply r;
  r.text = f == Format::kJson ? "" : "ok\n";
  r.more = [this, cur, zone, f](std::string* out) {
    if (cur->shard >= run_.shards.size()) return false;
    ctrack::Tracker& t = *run_.shards[cur->shard];
    std::ostringstream o;
    cur->at = t.for_each_from(
        mono_ns(), cur->at, 4096,
        [&](const ctrack::ConnInfo& c) {
          const char* nat = c.nat == ctrack::NatKind::kSrc ? "snat" : c.nat == ctrack::NatKind::kDst ? "dnat" : nullptr;
          if (f == Format::kJson) {
            nlohmann::json j{{"zone", c.orig.zone},
                             {"tuple", c.orig.str()},
                             {"state", c.state},
                             {"offloaded", c.offloaded},
                             {"packets_orig", c.packets[0]},
                             {"packets_reply", c.packets[1]},
                             {"bytes_orig", c.bytes[0]},
                             {"bytes_reply", c.bytes[1]},
                             {"age_s", c.age_ms / 1000},
                             {"timeout_s", c.timeout_ms / 1000}};
            if (nat) {
              j["nat"] = nat;
              j["reply_tuple"] = c.reply.str();
            }
            o << sdn::json_dump(j) << "\n";
          } else {
            o << c.orig.str() << " " << c.state << (c.offloaded ? " offloaded" : "");
            if (nat) o << " " << nat << " reply=" << c.reply.str().substr(0, c.reply.str().rfind(" zone"));
            o << " pkts=" << c.packets[0] << "/"
              << c.packets[1] << " bytes=" << c.bytes[0] << "/" << c.bytes[1] << " age=" << c.age_ms / 1000
              << "s timeout=" << c.timeout_ms / 1000 << "s\n";
          }
          cur->n++;
        },
        zone);
    if (cur->at >= t.capacity()) {
      cur->shard++;
      cur->at = 0;
      if (cur->shard == run_.shards.size())
        o << (f == Format::kJson ? sdn::json_dump(nlohmann::json{{"total", cur->n}}) : "total " + std::to_string(cur->n)) << "\n";
    }
    *out += o.str();
    return true;
  };
  return r;
}

void CtService::telemetry(const char* params, rte_tel_data* d) {
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
  for (auto& s : run_.shards) {
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


Status CtService::register_commands(CommandTable& t) {
  using C = CommandTable;
  // [ZONE]: -1 for all.
  auto zone_of = [](const CommandArgs& a) { return a.given[0] ? static_cast<int>(a.num[0]) : -1; };
  SDN_TRY(t.add("ct list", [this, zone_of](const CommandArgs& a, Format f) { return list(zone_of(a), f); }));
  SDN_TRY(t.add_text("ct flush", [this, zone_of](const CommandArgs& a) {
    uint64_t n = 0;
    for (auto& sh : run_.shards) n += sh->flush(zone_of(a));
    return C::text("ok flushed " + std::to_string(n));
  }));
  return {};
}

}  // namespace dp
