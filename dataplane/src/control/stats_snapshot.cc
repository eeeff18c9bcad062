#include "stats_snapshot.h"

#include <map>
#include <sstream>

namespace dp {

bool ct_is_gauge(const std::string& n) { return n == "active" || n == "offloaded"; }
bool port_is_gauge(const std::string& n) { return n == "link_up"; }

std::string stats_text(const StatsSnapshot& s) {
  std::ostringstream o;
  o << "ok\n";
  auto pairs = [&](const StatsSnapshot::Counters& c) {
    for (const auto& [k, v] : c) o << " " << k << "=" << v;
  };
  for (const auto& w : s.workers) {
    o << "worker " << w.id << " lcore " << w.lcore << ":";
    pairs(w.counters);
    pairs(w.ratios);
    o << "\n";
  }
  o << "ports:";
  for (const auto& p : s.ports)
    for (const auto& [k, v] : p.counters) o << " " << p.name << "_" << k << "=" << v;
  pairs(s.host);
  o << "\ndrops:";
  pairs(s.drops);
  o << "\noverlay:";
  pairs(s.overlay);
  o << "\nct:";
  pairs(s.ct);
  o << "\noffload " << s.offload_provider << ":";
  pairs(s.offload);
  o << "\n";
  for (const auto& [k, v] : s.offload_notes) o << "offload " << k << ": " << v << "\n";
  return o.str();
}

nlohmann::json stats_json(const StatsSnapshot& s) {
  using nlohmann::json;
  auto obj = [](const StatsSnapshot::Counters& c) {
    json j = json::object();
    for (const auto& [k, v] : c) j[k] = v;
    return j;
  };
  json j;
  j["workers"] = json::array();
  for (const auto& w : s.workers) {
    json x = obj(w.counters);
    x["id"] = w.id;
    x["lcore"] = w.lcore;
    for (const auto& [k, v] : w.ratios) x[k] = v;
    j["workers"].push_back(x);
  }
  j["ports"] = json::object();
  for (const auto& p : s.ports) j["ports"][p.name] = obj(p.counters);
  j["host"] = obj(s.host);
  j["drops"] = obj(s.drops);
  j["overlay"] = obj(s.overlay);
  j["rules"] = json::array();
  for (const auto& r : s.rules)
    j["rules"].push_back({{"id", r.id}, {"table", r.table}, {"packets", r.packets}, {"bytes", r.bytes}});
  j["ct"] = obj(s.ct);
  j["offload"] = obj(s.offload);
  j["offload"]["provider"] = s.offload_provider;
  for (const auto& [k, v] : s.offload_notes) j["offload"]["notes"][k] = v;
  return j;
}

namespace {

// A label value: backslash, double quote and newline escaped.
std::string label(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

// Metric names keep [a-zA-Z0-9_]; anything else becomes '_'.
std::string metric(std::string n) {
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return n;
}

// Writes each family once (HELP, TYPE, then its samples).
class Families {
 public:
  void add(const std::string& name, bool gauge, const std::string& help, const std::string& labels, uint64_t v) {
    const std::string full = "dataplane_" + metric(name) + (gauge ? "" : "_total");
    auto it = index_.find(full);
    if (it == index_.end()) {
      it = index_.emplace(full, fams_.size()).first;
      fams_.push_back({full, gauge, help, {}});
    }
    fams_[it->second].samples += full + (labels.empty() ? "" : "{" + labels + "}") + " " + std::to_string(v) + "\n";
  }
  std::string text() const {
    std::string o;
    for (const auto& f : fams_)
      o += "# HELP " + f.name + " " + f.help + "\n# TYPE " + f.name + (f.gauge ? " gauge\n" : " counter\n") + f.samples;
    return o;
  }

 private:
  struct Family {
    std::string name;
    bool gauge;
    std::string help, samples;
  };
  std::vector<Family> fams_;
  std::map<std::string, size_t> index_;
};

}  // namespace

std::string stats_prometheus(const StatsSnapshot& s) {
  Families f;
  for (const auto& w : s.workers) {
    const std::string l = "worker=\"" + std::to_string(w.id) + "\",lcore=\"" + std::to_string(w.lcore) + "\"";
    for (const auto& [k, v] : w.counters) f.add("worker_" + k, false, "worker counter " + k + " (README: stats)", l, v);
  }
  for (const auto& p : s.ports) {
    const std::string l = "port=\"" + label(p.name) + "\"";
    for (const auto& [k, v] : p.counters)
      f.add("port_" + k, port_is_gauge(k), port_is_gauge(k) ? "1 when the port's link is up" : "port counter " + k, l, v);
  }
  for (const auto& [k, v] : s.host) f.add(k, false, "host counter " + k + " (af_packet ports)", "", v);
  for (const auto& [k, v] : s.drops)
    f.add("drops", false, "packets dropped, by reason", "reason=\"" + label(k) + "\"", v);
  for (const auto& [k, v] : s.overlay) f.add("overlay_" + k, false, "overlay counter " + k + " (README: Overlay)", "", v);
  for (const auto& r : s.rules) {
    const std::string l = "rule=\"" + std::to_string(r.id) + "\",table=\"" + std::to_string(r.table) + "\"";
    f.add("rule_packets", false, "packets that hit the rule", l, r.packets);
    f.add("rule_bytes", false, "bytes of the packets that hit the rule", l, r.bytes);
  }
  for (const auto& [k, v] : s.ct) {
    if (k.rfind("invalid_", 0) == 0) {
      f.add("ct_invalid", false, "packets conntrack judged invalid, by reason", "reason=\"" + label(k.substr(8)) + "\"", v);
      continue;
    }
    f.add("ct_" + k, ct_is_gauge(k), ct_is_gauge(k) ? "connections now: " + k : "conntrack counter " + k, "", v);
  }
  const std::string prov = "provider=\"" + label(s.offload_provider) + "\"";
  for (const auto& [k, v] : s.offload) {
    const bool g = s.offload_gauges.count(k) > 0;
    f.add("offload_" + k, g, g ? "offload level " + k : "offload counter " + k, prov, v);
  }
  std::string info = prov;
  for (const auto& [k, v] : s.offload_notes) info += "," + metric(k) + "=\"" + label(v) + "\"";
  f.add("offload_info", true, "the offload provider, its domain and conntrack strategy (and why)", info, 1);
  return f.text();
}

}  // namespace dp
