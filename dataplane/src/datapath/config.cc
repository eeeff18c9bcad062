// The `workers:` section (datapath/config.h).
#include "datapath/config.h"

#include <set>

#include "control/config_yaml.h"

namespace dp {

using namespace conf;

Status parse_workers(const Ctx& c, const YAML::Node& n, WorkerConfig* w) {
  SDN_TRY(check_keys(c, n, "workers", {"main_lcore", "lcores", "cpus", "burst", "mbufs", "mbuf_cache"}));
  SDN_TRY(get_uint(c, n, "main_lcore", "workers", &w->main_lcore, 0, 1023));
  if (n["main_lcore"]) w->at.main_line = n["main_lcore"].Mark().line + 1;
  SDN_TRY(get_uint(c, n, "burst", "workers", &w->burst, 1, 32));
  SDN_TRY(get_uint(c, n, "mbufs", "workers", &w->mbufs, 1023, 1u << 24));
  SDN_TRY(get_uint(c, n, "mbuf_cache", "workers", &w->mbuf_cache, 0, 512));
  if (YAML::Node l = n["lcores"]) {
    if (!l.IsSequence() || l.size() == 0) return c.err(l, "workers.lcores", "expected a non-empty list of lcore ids");
    w->lcores.clear();
    w->at.lcore_lines.clear();
    std::set<unsigned> seen;
    for (size_t i = 0; i < l.size(); i++) {
      unsigned v;
      std::string p = "workers.lcores[" + std::to_string(i) + "]";
      if (!l[i].IsScalar()) return c.err(l[i], p, "expected an lcore id");
      try {
        v = l[i].as<unsigned>();
      } catch (const std::exception&) {
        return c.err(l[i], p, "'" + l[i].Scalar() + "' is not an lcore id");
      }
      if (v > 1023 || !seen.insert(v).second) return c.err(l[i], p, "lcore ids must be unique and 0..1023");
      w->lcores.push_back(v);
      w->at.lcore_lines.push_back(l[i].Mark().line + 1);
    }
  }
  if (YAML::Node cp = n["cpus"]) {
    if (!cp.IsSequence() || cp.size() != w->lcores.size())
      return c.err(cp, "workers.cpus", "expected a list of CPU ids, one per entry of workers.lcores");
    w->at.cpus_line = cp.Mark().line + 1;
    for (size_t i = 0; i < cp.size(); i++) {
      unsigned v;
      SDN_TRY(parse_uint(c, cp[i], "workers.cpus[" + std::to_string(i) + "]", &v, 0, 1023));
      w->cpus.push_back(v);
    }
  }
  for (unsigned l : w->lcores)
    if (l == w->main_lcore)
      return c.err(n, "workers.lcores", "lcore " + std::to_string(l) + " is the main (control) lcore");
  if (w->lcores.size() > 16) return c.err(n, "workers.lcores", "at most 16 workers");
  return {};
}

void workers_reload(const WorkerConfig& running, const WorkerConfig& next, std::vector<std::string>* refused) {
  if (!(running == next)) refused->push_back("workers: changed (needs a restart)");
}

}  // namespace dp
