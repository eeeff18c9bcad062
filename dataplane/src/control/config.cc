#include "dataplane/config.h"
#include "metrics.h"
#include "socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <unistd.h>
#include <sys/un.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "config_yaml.h"
#include "features/conntrack/config.h"
#include "features/tunnels.h"
#include "offload/config.h"
#include "sdn/number.h"
#include "sdn/yaml_load.h"

namespace dp {

using namespace conf;

namespace {

// yaml-cpp keeps both entries of a repeated key and answers lookups with
// the first: a second `0:` table or `capacity:` would vanish silently.
Status check_duplicates(const Ctx& c, const YAML::Node& n, const std::string& path) {
  if (n.IsMap()) {
    std::map<std::string, int> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
      std::string full = path.empty() ? k : path + "." + k;
      int line = it->first.Mark().line + 1;
      if (auto [at, fresh] = seen.emplace(k, line); !fresh)
        return c.err(it->first, full, "duplicate key (first at line " + std::to_string(at->second) + ")");
      if (Status s = check_duplicates(c, it->second, full); !s) return s;
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); i++)
      if (Status s = check_duplicates(c, n[i], path + "[" + std::to_string(i) + "]"); !s) return s;
  }
  return {};
}

Status parse_eal(const Ctx& c, const YAML::Node& n, EalConfig* e) {
  SDN_TRY(check_keys(c, n, "eal", {"file_prefix", "no_huge", "memory_mb", "extra_args"}));
  SDN_TRY(get_str(c, n, "file_prefix", "eal", &e->file_prefix));
  SDN_TRY(get_bool(c, n, "no_huge", "eal", &e->no_huge));
  SDN_TRY(get_uint(c, n, "memory_mb", "eal", &e->memory_mb, 64, 1u << 20));
  if (YAML::Node x = n["extra_args"]) {
    if (!x.IsSequence()) return c.err(x, "eal.extra_args", "expected a list of strings");
    for (const auto& a : x) e->extra.push_back(a.as<std::string>());
  }
  if (Status s = check_file_prefix(e->file_prefix); !s) return c.err(n["file_prefix"], "eal.file_prefix", s.message());
  return {};
}

Status parse_one_rule(const Ctx& c, const YAML::Node& r, const std::string& path, const PortNames& ports,
                      uint16_t table, Rule* out) {
  SDN_TRY(check_keys(c, r, path, {"id", "table", "priority", "match", "actions", "offload"}));
  Rule rule;
  rule.table = table;
  SDN_TRY(get_uint(c, r, "table", path, &rule.table, 0, kMaxTables - 1));
  SDN_TRY(get_uint(c, r, "id", path, &rule.id, 1, kMaxRuleId));
  uint32_t prio = 0;
  SDN_TRY(get_uint(c, r, "priority", path, &prio, 0, 65535));
  rule.priority = static_cast<int32_t>(prio);
  SDN_TRY(get_bool(c, r, "offload", path, &rule.offload));
  rule.match_text = r["match"] && r["match"].IsScalar() ? r["match"].Scalar() : "";
  if (r["match"] && !r["match"].IsScalar()) return c.err(r["match"], path + ".match", "expected a string");
  SDN_TRY(get_str(c, r, "actions", path, &rule.actions_text, true));
  auto m = parse_match(rule.match_text, ports);
  if (!m) return c.err(r["match"] ? r["match"] : r, path + ".match", m.message());
  rule.match = *m;
  auto a = parse_actions(rule.actions_text, ports);
  if (!a) return c.err(r["actions"], path + ".actions", a.message());
  rule.actions = std::move(a.value());
  if (Status s = check_rule(rule); !s) return c.err(r["actions"], path + ".actions", s.message());
  *out = std::move(rule);
  return {};
}

Status parse_tables(const Ctx& c, const YAML::Node& n, const PortNames& ports, std::vector<Rule>* rules) {
  if (!n.IsMap()) return c.err(n, "tables", "expected a mapping of table number: list of rules");
  std::set<uint32_t> ids;
  for (auto it = n.begin(); it != n.end(); ++it) {
    uint16_t table;
    SDN_TRY(parse_uint(c, it->first, "tables." + (it->first.IsScalar() ? it->first.Scalar() : std::string("?")),
                       &table, 0, kMaxTables - 1));
    std::string tpath = "tables." + std::to_string(table);
    if (!it->second.IsSequence()) return c.err(it->second, tpath, "expected a list of rules");
    for (size_t i = 0; i < it->second.size(); i++) {
      Rule r;
      std::string path = tpath + "[" + std::to_string(i) + "]";
      SDN_TRY(parse_one_rule(c, it->second[i], path, ports, table, &r));
      r.line = it->second[i].Mark().line + 1;
      if (r.table != table) return c.err(it->second[i], path + ".table", "differs from the table it is listed under");
      if (r.id && !ids.insert(r.id).second)
        return c.err(it->second[i]["id"], path + ".id", "duplicate rule id " + std::to_string(r.id));
      rules->push_back(std::move(r));
    }
  }
  uint32_t next = 1;
  for (auto& r : *rules) {
    if (r.id) continue;
    while (ids.count(next)) next++;
    r.id = next;
    ids.insert(next);
  }
  size_t bad = 0;
  if (Status s = check_rule_set(*rules, &bad); !s) {
    const Rule& r = (*rules)[bad];
    return Status::error(c.file + ":" + std::to_string(r.line) + ": key 'tables." + std::to_string(r.table) +
                         ".actions': " + s.message());
  }
  return {};
}

}  // namespace

PortNames Config::port_names() const {
  PortNames p;
  for (const auto& port : ports) p.names.push_back(port.name);
  return p;
}

Status parse_mac(const Ctx& c, const YAML::Node& n, const std::string& key, uint8_t mac[6]) {
  unsigned b[6];
  char tail;
  if (!n.IsScalar() || sscanf(n.Scalar().c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                              &tail) != 6)
    return c.err(n, key, "expected a MAC address aa:bb:cc:dd:ee:ff");
  for (int i = 0; i < 6; i++) mac[i] = static_cast<uint8_t>(b[i]);
  return {};
}

Status parse_ipv4(const Ctx& c, const YAML::Node& n, const std::string& key, uint8_t ip[4]) {
  if (!n.IsScalar() || inet_pton(AF_INET, n.Scalar().c_str(), ip) != 1)
    return c.err(n, key, "expected an IPv4 address (the underlay is IPv4)");
  return {};
}

// overlay.<tunnel>: {local, port, mac, udp_port, ttl, df, vnis, remotes,
// any_remote}, and the module's own list (T::kOptionKey).
template <typename T>
Status parse_tunnel(const Ctx& c, const YAML::Node& v, const PortNames& ports, TunnelConfig* o) {
  const std::string P = std::string("overlay.") + tunnel_kind_name(T::kKind);
  std::set<std::string> keys = {"local", "port", "mac", "udp_port", "ttl", "df", "vnis", "remotes", "any_remote"};
  if (T::kOptionKey) keys.insert(T::kOptionKey);
  SDN_TRY(check_keys(c, v, P, keys));
  o->on = true;
  o->line = v.Mark().line + 1;
  o->udp_port = T::kUdpPort;
  for (const char* k : {"local", "port", "mac", "vnis"})
    if (!v[k]) return c.err(v, P + "." + k, "is required");
  SDN_TRY(parse_ipv4(c, v["local"], P + ".local", o->local));
  SDN_TRY(parse_mac(c, v["mac"], P + ".mac", o->mac));
  std::string port;
  SDN_TRY(get_str(c, v, "port", P, &port));
  const int pi = ports.find(port);
  if (pi < 0) return c.err(v["port"], P + ".port", "no port named '" + port + "'");
  o->port = static_cast<uint16_t>(pi);
  SDN_TRY(get_uint(c, v, "udp_port", P, &o->udp_port, 1, 65535));
  SDN_TRY(get_uint(c, v, "ttl", P, &o->ttl, 1, 255));
  SDN_TRY(get_bool(c, v, "df", P, &o->df));
  SDN_TRY(get_bool(c, v, "any_remote", P, &o->any_remote));
  YAML::Node vn = v["vnis"];
  if (!vn.IsSequence() || vn.size() == 0) return c.err(vn, P + ".vnis", "expected a list of VNIs");
  std::map<uint32_t, int> seen;
  for (size_t i = 0; i < vn.size(); i++) {
    const std::string k = P + ".vnis[" + std::to_string(i) + "]";
    uint32_t vni = 0;
    SDN_TRY(parse_uint(c, vn[i], k, &vni, 1, kVxlanMaxVni));
    if (auto [at, fresh] = seen.emplace(vni, vn[i].Mark().line + 1); !fresh)
      return c.err(vn[i], k, "VNI " + std::to_string(vni) + " is listed twice (first at line " +
                                 std::to_string(at->second) + ")");
    o->vnis.push_back(vni);
  }
  std::sort(o->vnis.begin(), o->vnis.end());
  if (YAML::Node rs = v["remotes"]) {
    if (!rs.IsSequence()) return c.err(rs, P + ".remotes", "expected a list of {ip, mac}");
    for (size_t i = 0; i < rs.size(); i++) {
      const std::string k = P + ".remotes[" + std::to_string(i) + "]";
      SDN_TRY(check_keys(c, rs[i], k, {"ip", "mac"}));
      if (!rs[i]["ip"] || !rs[i]["mac"]) return c.err(rs[i], k, "needs ip and mac (the next hop toward it)");
      TunnelRemote r;
      r.line = rs[i].Mark().line + 1;
      SDN_TRY(parse_ipv4(c, rs[i]["ip"], k + ".ip", r.ip));
      SDN_TRY(parse_mac(c, rs[i]["mac"], k + ".mac", r.mac));
      if (o->remote(r.ip)) return c.err(rs[i]["ip"], k + ".ip", "remote listed twice");
      if (memcmp(r.ip, o->local, 4) == 0) return c.err(rs[i]["ip"], k + ".ip", "is this VTEP's own address");
      o->remotes.push_back(r);
    }
  }
  if (T::kOptionKey && v[T::kOptionKey]) {
    const YAML::Node os = v[T::kOptionKey];
    const std::string K = P + "." + T::kOptionKey;
    if (!os.IsSequence()) return c.err(os, K, "expected a list");
    for (size_t i = 0; i < os.size(); i++) {
      uint32_t x = 0;
      const std::string e = os[i].IsScalar() ? T::parse_option(os[i].Scalar(), &x) : "expected a scalar";
      if (!e.empty()) return c.err(os[i], K + "[" + std::to_string(i) + "]", e);
      o->options.push_back(x);
    }
    std::sort(o->options.begin(), o->options.end());
  }
  return {};
}

// overlay: {<tunnel>: {...}, ...}: a section per tunnel module.
Status parse_overlay(const Ctx& c, const YAML::Node& n, const PortNames& ports, OverlayConfig* o) {
  std::set<std::string> names;
  for_each_tunnel([&](auto t) { names.insert(tunnel_kind_name(decltype(t)::kKind)); });
  SDN_TRY(check_keys(c, n, "overlay", names));
  Status st;
  for_each_tunnel([&](auto t) {
    using T = decltype(t);
    if (YAML::Node v = n[tunnel_kind_name(T::kKind)]; st && v) st = parse_tunnel<T>(c, v, ports, &(*o)[T::kKind]);
  });
  return st;
}

// Every encap() names a configured VNI and a remote with a next hop.
Status check_encaps(const Ctx& c, const std::vector<Rule>& rules, const OverlayConfig& o) {
  for (const Rule& r : rules)
    for (const Action& a : r.actions) {
      if (a.type != ActType::kEncap) continue;
      auto err = [&](const std::string& m) {
        return Status::error(c.file + ":" + std::to_string(r.line) + ": key 'tables." + std::to_string(r.table) +
                             ".actions': rule " + std::to_string(r.id) + ": " + m);
      };
      char ip[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, a.remote, ip, sizeof ip);
      const std::string n = tunnel_kind_name(static_cast<TunnelKind>(a.tunnel));
      const TunnelConfig& t = o[static_cast<TunnelKind>(a.tunnel)];
      if (!t.on) return err("encap(" + n + ",...) needs overlay." + n + " (this host's VTEP)");
      if (!t.has_vni(a.vni)) return err("VNI " + std::to_string(a.vni) + " is not in overlay." + n + ".vnis");
      if (!t.remote(a.remote))
        return err("no next hop for remote " + std::string(ip) + " (overlay." + n + ".remotes lists none)");
    }
  return {};
}

Result<Config> parse_config(const std::string& text, const std::string& name) {
  Ctx c{name};
  auto loaded = sdn::load_yaml(text, name);
  if (!loaded) return loaded.status();
  YAML::Node root = *loaded;
  if (!root.IsMap()) return Status::error(name + ":1: expected a mapping at the top level");
  if (Status s = check_duplicates(c, root, ""); !s) return s;
  Config cfg;
  cfg.file = name;
  cfg.ct = conntrack_defaults();
  try {
    SDN_TRY(check_keys(c, root, "",
                       {"eal", "ports", "workers", "conntrack", "offload", "control", "metrics", "overlay", "tables"}));
    if (root["eal"]) SDN_TRY(parse_eal(c, root["eal"], &cfg.eal));
    SDN_TRY(parse_ports(c, root["ports"], &cfg.ports));
    if (root["workers"]) SDN_TRY(parse_workers(c, root["workers"], &cfg.workers));
    if (root["conntrack"]) SDN_TRY(parse_conntrack(c, root["conntrack"], &cfg.ct, &cfg.capacity_line));
    if (root["offload"]) SDN_TRY(parse_offload(c, root["offload"], &cfg.offload));
    if (YAML::Node ctl = root["control"]) {
      SDN_TRY(check_keys(c, ctl, "control", {"socket"}));
      SDN_TRY(get_str(c, ctl, "socket", "control", &cfg.control_socket));
      if (ctl["socket"]) {
        cfg.control_line = ctl["socket"].Mark().line + 1;
        if (Status s = check_socket_path(cfg.control_socket); !s) return c.err(ctl["socket"], "control.socket", s.message());
      }
    }
    if (YAML::Node m = root["metrics"]) {
      SDN_TRY(check_keys(c, m, "metrics", {"listen"}));
      SDN_TRY(get_str(c, m, "listen", "metrics", &cfg.metrics_listen));
      if (m["listen"]) {
        cfg.metrics_line = m["listen"].Mark().line + 1;
        if (Status s = parse_metrics_listen(cfg.metrics_listen); !s) return c.err(m["listen"], "metrics.listen", s.message());
      }
    }
    if (root["overlay"]) SDN_TRY(parse_overlay(c, root["overlay"], cfg.port_names(), &cfg.overlay));
    if (!root["tables"]) return c.err(root, "tables", "is required (the pipeline's rules)");
    SDN_TRY(parse_tables(c, root["tables"], cfg.port_names(), &cfg.rules));
    SDN_TRY(check_encaps(c, cfg.rules, cfg.overlay));
    // NAT needs the tracker's side table: on when the rules translate, or
    // asked for (rules added later may then translate).
    if (uses_nat(cfg.rules)) {
      YAML::Node ct = root["conntrack"];
      if (ct && ct["nat"] && !cfg.ct.nat)
        return c.err(ct["nat"], "conntrack.nat", "is false, but rules translate with ct(commit,nat(...))");
      cfg.ct.nat = true;
    }
  } catch (const YAML::Exception& e) {
    return Status::error(name + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (cfg.control_socket.empty()) {
    cfg.control_socket = "/run/dataplane/" + cfg.eal.file_prefix + ".sock";
    if (Status s = check_socket_path(cfg.control_socket); !s)
      return c.err(root["eal"]["file_prefix"], "eal.file_prefix", "the control socket it names: " + s.message());
  }
  return cfg;
}

Result<Config> load_config(const std::string& path) {
  auto text = sdn::read_config_file(path);
  if (!text) return text.status();
  return parse_config(*text, path);
}

Result<Rule> parse_rule_yaml(const std::string& text, const PortNames& ports) {
  std::string name = "rule";
  Ctx c{name};
  // Exactly one flow mapping: yaml-cpp stops at the end of the first node
  // and would drop whatever follows (a second rule, a typo) silently.
  size_t b = text.find_first_not_of(" \t\r\n");
  if (b == std::string::npos || text[b] != '{') return Status::error("rule: expected one rule as a YAML flow mapping {...}");
  int depth = 0;
  char quote = 0;
  size_t end = std::string::npos;
  for (size_t i = b; i < text.size() && end == std::string::npos; i++) {
    char ch = text[i];
    if (quote) {
      if (ch == '\\' && quote == '"') i++;
      else if (ch == quote) quote = 0;
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
    } else if (ch == '{' || ch == '[') {
      depth++;
    } else if ((ch == '}' || ch == ']') && --depth == 0) {
      end = i;
    }
  }
  if (end == std::string::npos) return Status::error("rule: unterminated {...}");
  size_t after = text.find_first_not_of(" \t\r\n", end + 1);
  if (after != std::string::npos)
    return Status::error("rule: expected one rule, found more after it: '" + text.substr(after, 40) + "'");
  auto loaded = sdn::load_yaml(text, "rule");
  if (!loaded) return loaded.status();
  try {
    YAML::Node n = *loaded;
    if (Status s = check_duplicates(c, n, "rule"); !s) return s;
    Rule r;
    SDN_TRY(parse_one_rule(c, n, "rule", ports, 0, &r));
    return r;
  } catch (const YAML::Exception& e) {
    return Status::error("rule: YAML syntax: " + e.msg);
  }
}

}  // namespace dp

namespace dp {

Status check_file_prefix(const std::string& p) {
  if (p.empty() || p.size() > 64) return Status::error("'" + p + "': use 1 to 64 characters");
  for (char ch : p)
    if (!isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_')
      return Status::error("'" + p + "': use letters, digits, '-' and '_' only (it names a directory)");
  return {};
}

Status check_socket_path(const std::string& p) {
  constexpr size_t kMax = sizeof(sockaddr_un::sun_path) - 1;
  if (p.empty() || p[0] != '/') return Status::error("'" + p + "' is not an absolute path");
  if (p.size() > kMax)
    return Status::error("'" + p + "' is " + std::to_string(p.size()) + " bytes; a unix socket path holds at most " +
                         std::to_string(kMax));
  if (p.back() == '/') return Status::error("'" + p + "' names a directory, not a socket");
  return {};
}

Status Config::apply_cli() {
  if (!cli.file_prefix.empty()) {
    if (Status s = check_file_prefix(cli.file_prefix); !s) return Status::error("--file-prefix " + s.message());
    eal.file_prefix = cli.file_prefix;
    // The prefix names the control socket unless the config's
    // control.socket does (control_line: where it was set).
    if (control_line == 0) {
      control_socket = "/run/dataplane/" + cli.file_prefix + ".sock";
      if (Status s = check_socket_path(control_socket); !s)
        return Status::error("--file-prefix: control socket " + s.message());
    }
  }
  if (cli.no_huge) eal.no_huge = true;
  if (!cli.log_level.empty()) {
    static const char* const levels[] = {"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug"};
    bool ok = false;
    for (const char* l : levels) ok |= cli.log_level == l;
    if (!ok) return Status::error("--log-level '" + cli.log_level + "': use error, warning, notice, info or debug");
  }
  return {};
}

namespace {

std::string cpu_list(const cpu_set_t& set) {
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) e++;
    out += (out.empty() ? "" : ",") + std::to_string(c) + (e > c ? "-" + std::to_string(e) : "");
    c = e;
  }
  return out;
}

uint64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string k;
  uint64_t v;
  std::string unit;
  while (in >> k >> v) {
    std::getline(in, unit);
    if (k == "MemAvailable:") return v * 1024;
  }
  return 0;
}

// The dataplane holding `cfg`'s control socket (its lock), if one does.
struct Holder {
  int pid = 0;
  std::string config;  // its --config, made absolute
  bool same = false;   // that is this file
};

Holder socket_holder(const Config& cfg) {
  Holder h;
  const std::string lock = cfg.control_socket + ".lock";
  int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return h;
  const bool free = flock(fd, LOCK_SH | LOCK_NB) == 0;  // the daemon holds LOCK_EX
  char pid[32] = {};
  const ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
  close(fd);
  if (free || n <= 0) return h;
  h.pid = atoi(pid);
  if (h.pid <= 0) return h;
  const std::string proc = "/proc/" + std::to_string(h.pid);
  std::ifstream in(proc + "/cmdline");
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  for (size_t i = 0; i + 1 < args.size(); i++)
    if (args[i] == "--config") h.config = args[i + 1];
  std::error_code ec;
  if (!h.config.empty() && h.config[0] != '/')
    h.config = std::filesystem::read_symlink(proc + "/cwd", ec).string() + "/" + h.config;
  if (!h.config.empty())
    h.same = std::filesystem::weakly_canonical(h.config, ec) == std::filesystem::weakly_canonical(cfg.file, ec);
  return h;
}

// The ports' devices exist: net_af_packet's iface=, a PCI address's device.
Status check_ports_exist(const Config& cfg) {
  for (size_t i = 0; i < cfg.ports.size(); i++) {
    const PortConfig& p = cfg.ports[i];
    auto at = [&](const std::string& msg) {
      const int line = p.at.devargs_line ? p.at.devargs_line : p.at.line;
      return Status::error(cfg.file + ":" + std::to_string(line) + ": key 'ports[" + std::to_string(i) + "].devargs': " +
                           msg);
    };
    const std::string dev = p.devargs.substr(0, p.devargs.find(','));
    if (dev.rfind("net_af_packet", 0) == 0) {
      const std::string iface = devarg(p.devargs, "iface");
      if (!iface.empty() && !std::filesystem::exists("/sys/class/net/" + iface))
        return at("interface '" + iface + "' does not exist in this network namespace (port '" + p.name + "')");
      continue;
    }
    // A PCI address: [DDDD:]BB:DD.F
    static const std::regex pci("^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]$");
    if (std::regex_match(dev, pci)) {
      std::string full = dev.size() == 7 ? "0000:" + dev : dev;
      for (char& ch : full) ch = static_cast<char>(tolower(static_cast<unsigned char>(ch)));
      if (!std::filesystem::exists("/sys/bus/pci/devices/" + full))
        return at("PCI device " + full + " does not exist (no /sys/bus/pci/devices/" + full + "; port '" + p.name + "')");
    }
  }
  return {};
}

}  // namespace

Status check_host(const Config& cfg, std::vector<std::string>* notes) {
  auto at = [&](int line, const std::string& key, const std::string& msg) {
    return Status::error(cfg.file + ":" + std::to_string(line) + ": key '" + key + "': " + msg);
  };
  // EAL maps lcore N to CPU N; a CPU outside this process's affinity makes
  // rte_eal_init print its usage and fail.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    if (!CPU_ISSET(cfg.workers.main_lcore, &set))
      return at(cfg.workers.at.main_line, "workers.main_lcore",
                "lcore " + std::to_string(cfg.workers.main_lcore) + " is not a CPU this process may run on (CPUs " +
                    cpu_list(set) + ")");
    const bool mapped = !cfg.workers.cpus.empty();
    for (size_t i = 0; i < cfg.workers.lcores.size(); i++) {
      unsigned l = mapped ? cfg.workers.cpus[i] : cfg.workers.lcores[i];
      const auto& at_w = cfg.workers.at;
      const int line = mapped ? at_w.cpus_line : i < at_w.lcore_lines.size() ? at_w.lcore_lines[i] : 0;
      if (!CPU_ISSET(l, &set))
        return at(line,
                  (mapped ? "workers.cpus[" : "workers.lcores[") + std::to_string(i) + "]",
                  (mapped ? "CPU " : "lcore ") + std::to_string(l) + " is not a CPU this process may run on (CPUs " +
                      cpu_list(set) + ")");
    }
  }
  // Every worker's shard is allocated and pre-faulted at start.
  ctrack::Config cc = cfg.ct;
  if (cc.event_ring == 0 && cfg.offload.provider != "none") cc.event_ring = 16384;
  if (cfg.offload.provider == "none") cc.event_ring = 0;
  uint64_t need = static_cast<uint64_t>(ctrack::Tracker::memory_needed(cc)) * cfg.workers.lcores.size();
  if (cfg.eal.no_huge) need += static_cast<uint64_t>(cfg.eal.memory_mb) << 20;  // EAL's heap comes from the same RAM
  uint64_t avail = mem_available_bytes();
  // Leave a quarter for everything else (DPDK's own memory, the kernel).
  if (avail && need > avail / 4 * 3)
    return at(cfg.capacity_line, "conntrack.capacity",
              std::to_string(cfg.ct.capacity) + " connections x " + std::to_string(cfg.workers.lcores.size()) +
                  " workers need " + std::to_string(need >> 20) + " MiB" +
                  (cfg.eal.no_huge ? " (with eal.memory_mb under no_huge)" : "") + "; this host has " +
                  std::to_string(avail >> 20) + " MiB available (at most 3/4 of it may go to conntrack)");
  // --check: a dataplane on the control socket is this config's own
  // running instance (skip what it holds) or another one (an error).
  const Holder h = notes ? socket_holder(cfg) : Holder{};
  if (h.pid && !h.same)
    return at(cfg.control_line, "control.socket",
              cfg.control_socket + " is in use by another dataplane (pid " + std::to_string(h.pid) + ", --config " +
                  (h.config.empty() ? "?" : h.config) + "); give this one its own --file-prefix or control.socket");
  if (h.same)
    notes->push_back("the running instance of this config (pid " + std::to_string(h.pid) + ") holds the control socket " +
                     cfg.control_socket + ": not checked as free");
  // The metrics address must be free now (a daemon binds it before EAL);
  // checked without binding a unix path, or removing what is there.
  if (!cfg.metrics_listen.empty())
    if (Status s = MetricsServer::check(cfg.metrics_listen); !s) {
      if (!h.same || !MetricsServer::held_by(cfg.metrics_listen, h.pid))
        return at(cfg.metrics_line, "metrics.listen", s.message());
      notes->push_back("the running instance (pid " + std::to_string(h.pid) + ") holds the metrics address " +
                       cfg.metrics_listen + ": not checked as free");
    }
  // The control socket's directory, as the daemon will check it.
  if (Status s = check_socket_place("control socket", cfg.control_socket); !s)
    return at(cfg.control_line, "control.socket", s.message());
  // --check only: a start finds out in EAL's probe.
  return notes ? check_ports_exist(cfg) : Status();
}

}  // namespace dp
