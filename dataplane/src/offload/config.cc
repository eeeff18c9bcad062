// The `offload:` section (offload/config.h).
#include "offload/config.h"

#include "control/config_yaml.h"
#include "dataplane/nic_model.h"

namespace dp {

using namespace conf;

Status parse_offload(const Ctx& c, const YAML::Node& n, OffloadConfig* o) {
  if (n["transfer"])
    return c.err(n["transfer"], "offload.transfer",
                 "replaced by offload.domain: auto | transfer | ingress (auto picks from the ports)");
  SDN_TRY(check_keys(c, n, "offload",
                     {"provider", "max_in_flight", "table_size", "insert_rate", "latency_us", "age_s", "domain",
                      "conntrack", "engine", "nic"}));
  SDN_TRY(get_str(c, n, "provider", "offload", &o->provider));
  if (o->provider != "none" && o->provider != "emulated" && o->provider != "rte_flow" && o->provider != "auto")
    return c.err(n["provider"], "offload.provider", "expected none, emulated, rte_flow or auto");
  SDN_TRY(get_uint(c, n, "max_in_flight", "offload", &o->max_in_flight, 1, 1u << 20));
  SDN_TRY(get_uint(c, n, "table_size", "offload", &o->table_size, 1, 1u << 24));
  SDN_TRY(get_uint(c, n, "insert_rate", "offload", &o->insert_rate, 1, 1u << 30));
  SDN_TRY(get_uint(c, n, "latency_us", "offload", &o->latency_us, 0, 10'000'000));
  SDN_TRY(get_uint(c, n, "age_s", "offload", &o->age_s, 1, 86400));
  auto one_of = [&](const char* key, std::string* out, const std::vector<std::string>& allowed) -> Status {
    SDN_TRY(get_str(c, n, key, "offload", out));
    for (const auto& a : allowed)
      if (*out == a) return {};
    std::string all;
    for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
    return c.err(n[key], std::string("offload.") + key, "'" + *out + "': expected one of " + all);
  };
  SDN_TRY(one_of("domain", &o->domain, {"auto", "transfer", "ingress"}));
  SDN_TRY(one_of("conntrack", &o->conntrack, {"auto", "aso", "flows"}));
  SDN_TRY(one_of("engine", &o->engine, {"auto", "hws", "sws"}));
  std::vector<std::string> nics;
  for (const auto& p : nic_profiles()) nics.push_back(p.name);
  SDN_TRY(one_of("nic", &o->nic, nics));
  if (n["nic"] && o->provider != "emulated")
    return c.err(n["nic"], "offload.nic", "names the NIC model's profile: only with provider: emulated");
  return {};
}

void offload_reload(const OffloadConfig& running, const OffloadConfig& next, std::vector<std::string>* refused) {
  if (!(running == next))
    refused->push_back("offload: changed (its queues, tables and templates are sized at start; needs a restart)");
}

}  // namespace dp
