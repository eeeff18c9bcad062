#include "harness/lab.h"
#include "sdn/number.h"
#include "sdn/yaml_load.h"

#include <arpa/inet.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "harness/sweep.h"

namespace harness {

using sdn::Result;
using sdn::Status;

namespace {

std::string join(const std::string& where, const std::string& key) { return where.empty() ? key : where + "." + key; }

// A Linux interface name: 1..15 bytes (IFNAMSIZ - 1), no '/', ':' or
// whitespace (dev_valid_name() in the kernel), and here also nothing a
// shell, nft or ip would read as syntax: letters, digits, '.', '-', '_', '@'.
bool interface_name(const std::string& s) {
  if (s.empty() || s.size() > 15 || s == "." || s == "..") return false;
  for (char ch : s)
    if (!isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_' && ch != '@') return false;
  return true;
}

struct Reader {
  std::string path;
  Status err(const YAML::Node& at, const std::string& key, const std::string& msg) const {
    return Status::error(path + ":" + std::to_string(at.Mark().line + 1) + ": key '" + key + "': " + msg);
  }
  // Every key of map `n` (named `where`) must be one of `known`.
  Status keys(const YAML::Node& n, const std::string& where, const std::set<std::string>& known) const {
    if (!n.IsMap()) return err(n, where, "expected a mapping");
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k = it->first.as<std::string>();
      if (!known.count(k)) return err(it->first, join(where, k), "unknown key");
    }
    return {};
  }
  Status str(const YAML::Node& n, const std::string& key, const std::string& where, std::string* out,
             bool required) const {
    YAML::Node v = n[key];
    if (!v) return required ? err(n, join(where, key), "missing") : Status{};
    if (!v.IsScalar()) return err(v, join(where, key), "expected a string");
    *out = v.Scalar();
    return {};
  }
  Status num(const YAML::Node& n, const std::string& key, const std::string& where, double lo, double hi,
             double* out) const {
    YAML::Node v = n[key];
    if (!v) return {};
    if (!v.IsScalar()) return err(v, join(where, key), "expected a number");
    if (Status s = sdn::parse_number(v.Scalar(), false, lo, hi, out); !s) return err(v, join(where, key), s.message());
    return {};
  }
  Status ssh(const YAML::Node& host, const std::string& where, SshHost* h) const {
    YAML::Node n = host["ssh"];
    if (!n) return err(host, where + ".ssh", "missing");
    if (Status s = keys(n, where + ".ssh", {"destination", "user", "port", "key", "jump", "known_hosts",
                                             "connect_timeout_s"});
        !s)
      return s;
    if (Status s = str(n, "destination", where + ".ssh", &h->destination, true); !s) return s;
    if (h->destination.empty() || h->destination[0] == '-')
      return err(n["destination"], where + ".ssh.destination", "not a host name or address");
    if (Status s = str(n, "user", where + ".ssh", &h->user, false); !s) return s;
    if (Status s = str(n, "key", where + ".ssh", &h->key, false); !s) return s;
    if (Status s = str(n, "jump", where + ".ssh", &h->jump, false); !s) return s;
    if (Status s = str(n, "known_hosts", where + ".ssh", &h->known_hosts, false); !s) return s;
    double port = h->port, ct = h->connect_timeout_s;
    if (Status s = num(n, "port", where + ".ssh", 1, 65535, &port); !s) return s;
    if (Status s = num(n, "connect_timeout_s", where + ".ssh", 1, 300, &ct); !s) return s;
    h->port = static_cast<int>(port);
    h->connect_timeout_s = static_cast<int>(ct);
    return {};
  }
  Status endpoint(const YAML::Node& root, const std::string& name, LabHost* h) const {
    YAML::Node n = root[name];
    const std::string where = "hosts." + name;
    if (!n) return err(root, where, "missing");
    if (Status s = keys(n, where, {"ssh", "interface", "address", "cpus"}); !s) return s;
    h->ssh.name = name;
    if (Status s = ssh(n, where, &h->ssh); !s) return s;
    if (Status s = str(n, "interface", where, &h->interface, true); !s) return s;
    if (!interface_name(h->interface))
      return err(n["interface"], where + ".interface",
                 "'" + h->interface + "' is not an interface name (1-15 of letters, digits, '.', '-', '_', '@')");
    if (Status s = str(n, "address", where, &h->address, true); !s) return s;
    in_addr a{};
    if (inet_pton(AF_INET, h->address.c_str(), &a) != 1) return err(n["address"], where + ".address", "not an IPv4 address");
    if (YAML::Node c = n["cpus"]) {
      if (Status s = keys(c, where + ".cpus", {"iperf3", "sockperf", "harness-conns"}); !s) return s;
      for (auto it = c.begin(); it != c.end(); ++it) {
        std::string k = it->first.as<std::string>(), v = it->second.Scalar();
        if (v.empty() || v.find_first_not_of("0123456789,-") != std::string::npos)
          return err(it->second, where + ".cpus." + k, "'" + v + "' is not a CPU list (like 2-9,12)");
        h->cpus[k] = v;
      }
    }
    return {};
  }
};

}  // namespace

Result<Inventory> load_inventory(const std::string& path) {
  Reader r{path};
  auto loaded = sdn::load_yaml_file(path);
  if (!loaded) return loaded.status();
  YAML::Node root = *loaded;
  if (!root.IsMap()) return Status::error(path + ":1: expected a mapping");
  Inventory inv;
  inv.path = path;
  if (Status s = r.keys(root, "", {"hosts", "link_gbps", "mtu", "tools"}); !s) return s;
  if (Status s = r.num(root, "link_gbps", "", 0, 10000, &inv.link_gbps); !s) return s;
  double mtu = inv.mtu;
  if (Status s = r.num(root, "mtu", "", kMtuLimit.lo, kMtuLimit.hi, &mtu); !s) return s;
  inv.mtu = static_cast<int>(mtu);
  if (YAML::Node t = root["tools"]) {
    if (Status s = r.keys(t, "tools", {"harness-conns"}); !s) return s;
    if (Status s = r.str(t, "harness-conns", "tools", &inv.harness_conns, false); !s) return s;
  }
  YAML::Node hosts = root["hosts"];
  if (!hosts) return r.err(root, "hosts", "missing");
  if (Status s = r.keys(hosts, "hosts", {"client", "server", "dut"}); !s) return s;
  if (Status s = r.endpoint(hosts, "client", &inv.client); !s) return s;
  if (Status s = r.endpoint(hosts, "server", &inv.server); !s) return s;
  YAML::Node d = hosts["dut"];
  if (!d) return r.err(hosts, "hosts.dut", "missing");
  if (Status s = r.keys(d, "hosts.dut", {"ssh", "interfaces", "profiles", "dataplane"}); !s) return s;
  inv.dut.ssh.name = "dut";
  if (Status s = r.ssh(d, "hosts.dut", &inv.dut.ssh); !s) return s;
  YAML::Node ifs = d["interfaces"];
  if (!ifs || !ifs.IsSequence() || ifs.size() != 2)
    return r.err(ifs ? ifs : d, "hosts.dut.interfaces", "expected two interfaces: client side, server side");
  for (size_t i = 0; i < ifs.size(); i++) {
    const std::string key = "hosts.dut.interfaces[" + std::to_string(i) + "]";
    if (!ifs[i].IsScalar()) return r.err(ifs[i], key, "expected an interface name");
    if (!interface_name(ifs[i].Scalar()))
      return r.err(ifs[i], key,
                   "'" + ifs[i].Scalar() + "' is not an interface name (1-15 of letters, digits, '.', '-', '_', '@')");
    inv.dut.interfaces.push_back(ifs[i].Scalar());
  }
  YAML::Node pr = d["profiles"];
  if (!pr || !pr.IsSequence() || pr.size() == 0)
    return r.err(pr ? pr : d, "hosts.dut.profiles", "expected a non-empty list of DUT profiles");
  for (const auto& x : pr) {
    const DutProfile* p = find_dut(x.Scalar());
    if (!p || p->role == DutRole::kTool) return r.err(x, "hosts.dut.profiles", "unknown DUT profile '" + x.Scalar() + "'");
    inv.dut.profiles.push_back(x.Scalar());
  }
  if (YAML::Node dp = d["dataplane"]) {
    if (Status s = r.keys(dp, "hosts.dut.dataplane", {"config", "program", "ctl", "hw_check"}); !s) return s;
    if (Status s = r.str(dp, "config", "hosts.dut.dataplane", &inv.dut.dataplane_config, true); !s) return s;
    if (Status s = r.str(dp, "program", "hosts.dut.dataplane", &inv.dut.dataplane_program, false); !s) return s;
    if (Status s = r.str(dp, "ctl", "hosts.dut.dataplane", &inv.dut.dataplane_ctl, false); !s) return s;
    if (Status s = r.str(dp, "hw_check", "hosts.dut.dataplane", &inv.dut.hw_check, false); !s) return s;
  } else {
    for (const auto& p : inv.dut.profiles)
      if (p == name(DutKind::kDataplane)) return r.err(d, "hosts.dut.dataplane", "missing (the dataplane profile needs its config)");
  }
  return inv;
}

Status write_inventory(const Inventory& inv, const std::string& path) {
  YAML::Emitter e;
  auto ssh = [&](const SshHost& h) {
    e << YAML::Key << "ssh" << YAML::Value << YAML::BeginMap << YAML::Key << "destination" << YAML::Value
      << h.destination << YAML::Key << "user" << YAML::Value << h.user << YAML::Key << "port" << YAML::Value << h.port;
    if (!h.key.empty()) e << YAML::Key << "key" << YAML::Value << h.key;
    if (!h.jump.empty()) e << YAML::Key << "jump" << YAML::Value << h.jump;
    if (!h.known_hosts.empty()) e << YAML::Key << "known_hosts" << YAML::Value << h.known_hosts;
    e << YAML::Key << "connect_timeout_s" << YAML::Value << h.connect_timeout_s << YAML::EndMap;
  };
  e << YAML::BeginMap;
  if (inv.link_gbps > 0) e << YAML::Key << "link_gbps" << YAML::Value << inv.link_gbps;
  e << YAML::Key << "mtu" << YAML::Value << inv.mtu;
  e << YAML::Key << "tools" << YAML::Value << YAML::BeginMap << YAML::Key << "harness-conns" << YAML::Value
    << inv.harness_conns << YAML::EndMap;
  e << YAML::Key << "hosts" << YAML::Value << YAML::BeginMap;
  for (const LabHost* h : {&inv.client, &inv.server}) {
    e << YAML::Key << h->ssh.name << YAML::Value << YAML::BeginMap;
    ssh(h->ssh);
    e << YAML::Key << "interface" << YAML::Value << h->interface << YAML::Key << "address" << YAML::Value << h->address;
    if (!h->cpus.empty()) {
      e << YAML::Key << "cpus" << YAML::Value << YAML::BeginMap;
      for (auto& [k, v] : h->cpus) e << YAML::Key << k << YAML::Value << v;
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  e << YAML::Key << "dut" << YAML::Value << YAML::BeginMap;
  ssh(inv.dut.ssh);
  e << YAML::Key << "interfaces" << YAML::Value << YAML::Flow << inv.dut.interfaces;
  e << YAML::Key << "profiles" << YAML::Value << YAML::Flow << inv.dut.profiles;
  if (!inv.dut.dataplane_config.empty()) {
    e << YAML::Key << "dataplane" << YAML::Value << YAML::BeginMap << YAML::Key << "config" << YAML::Value
      << inv.dut.dataplane_config << YAML::Key << "program" << YAML::Value << inv.dut.dataplane_program
      << YAML::Key << "ctl" << YAML::Value << inv.dut.dataplane_ctl;
    if (!inv.dut.hw_check.empty()) e << YAML::Key << "hw_check" << YAML::Value << inv.dut.hw_check;
    e << YAML::EndMap;
  }
  e << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  std::ofstream out(path);
  out << "# written by `harness testbed up --inventory`: the namespace testbed as a lab\n" << e.c_str() << "\n";
  if (!out) return Status::error("cannot write " + path);
  return {};
}

}  // namespace harness
