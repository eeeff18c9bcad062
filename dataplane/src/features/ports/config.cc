// The `ports:` section (features/ports/config.h).
#include "features/ports/config.h"

#include <map>
#include <set>

#include "control/config_yaml.h"
#include "sdn/number.h"

namespace dp {

// One key=value of a device's devargs ("net_af_packet0,iface=v0,framesz=4096").
std::string devarg(const std::string& devargs, const std::string& key) {
  for (size_t p = devargs.find(','); p != std::string::npos; p = devargs.find(',', p + 1)) {
    if (devargs.compare(p + 1, key.size() + 1, key + "=") == 0) {
      const size_t from = p + 2 + key.size(), e = devargs.find(',', from);
      return devargs.substr(from, e == std::string::npos ? e : e - from);
    }
  }
  return {};
}

namespace {

using namespace conf;

// What a port's devargs attach to, for spotting two ports on one device:
// af_packet's iface=, else the device (PCI address or vdev name).
std::string port_device(const std::string& devargs) {
  if (devargs.rfind("net_af_packet", 0) == 0 || devargs.rfind("net_af_xdp", 0) == 0)
    if (std::string i = devarg(devargs, "iface"); !i.empty()) return "interface " + i;
  return "device " + devargs.substr(0, devargs.find(','));
}

// What differs between a running port and the file's, in words.
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
  // A field this list does not name yet still refuses the reload.
  if (d.empty() && !(a == b)) d = "changed";
  return d;
}

}  // namespace

Status parse_ports(const Ctx& c, const YAML::Node& n, std::vector<PortConfig>* ports) {
  if (!n || !n.IsSequence() || n.size() == 0) return c.err(n, "ports", "expected a non-empty list of ports");
  std::set<std::string> names;
  std::map<std::string, std::string> devices;  // what it attaches to -> port name
  std::set<std::string> dpdk_names;
  for (size_t i = 0; i < n.size(); i++) {
    const YAML::Node& p = n[i];
    std::string path = "ports[" + std::to_string(i) + "]";
    SDN_TRY(check_keys(c, p, path, {"name", "devargs", "dpdk_name", "mtu", "promisc", "rx_desc", "tx_desc"}));
    PortConfig pc;
    pc.at.line = p.Mark().line + 1;
    SDN_TRY(get_str(c, p, "name", path, &pc.name, true));
    SDN_TRY(get_str(c, p, "devargs", path, &pc.devargs, true));
    pc.at.devargs_line = p["devargs"].Mark().line + 1;
    SDN_TRY(get_str(c, p, "dpdk_name", path, &pc.dpdk_name));
    SDN_TRY(get_uint(c, p, "mtu", path, &pc.mtu, 68, 9600));
    SDN_TRY(get_bool(c, p, "promisc", path, &pc.promisc));
    SDN_TRY(get_uint(c, p, "rx_desc", path, &pc.rx_desc, 64, 32768));
    SDN_TRY(get_uint(c, p, "tx_desc", path, &pc.tx_desc, 64, 32768));
    for (char ch : pc.name)
      if (!isalnum(static_cast<unsigned char>(ch)) && ch != '_')
        return c.err(p["name"], path + ".name", "use letters, digits and '_' only (it names telemetry keys)");
    if (!names.insert(pc.name).second) return c.err(p["name"], path + ".name", "duplicate port name '" + pc.name + "'");
    if (std::string fz = devarg(pc.devargs, "framesz"); !fz.empty() && pc.devargs.rfind("net_af_packet", 0) == 0) {
      double v = 0;
      if (Status s = sdn::parse_number(fz, true, 256, 65536, &v); !s)
        return c.err(p["devargs"], path + ".devargs", "framesz: " + s.message());
      pc.frame_room = static_cast<uint32_t>(v);
    }
    std::string dev = port_device(pc.devargs);
    if (auto [at, fresh] = devices.emplace(dev, pc.name); !fresh && pc.dpdk_name.empty())
      return c.err(p["devargs"], path + ".devargs",
                   "port '" + at->second + "' is already on " + dev + " (for representors of one device set dpdk_name)");
    std::string ethdev = pc.dpdk_name.empty() ? pc.devargs.substr(0, pc.devargs.find(',')) : pc.dpdk_name;
    if (!dpdk_names.insert(ethdev).second)
      return c.err(p[pc.dpdk_name.empty() ? "devargs" : "dpdk_name"], path + (pc.dpdk_name.empty() ? ".devargs" : ".dpdk_name"),
                   "another port already uses the DPDK port '" + ethdev + "'");
    ports->push_back(pc);
  }
  if (ports->size() > 64) return c.err(n, "ports", "at most 64 ports");
  return {};
}

void ports_reload(const std::vector<PortConfig>& running, const std::vector<PortConfig>& next, std::vector<int>* map,
                  std::vector<std::string>* refused) {
  map->assign(next.size(), -1);
  for (size_t i = 0; i < next.size(); i++) {
    for (size_t k = 0; k < running.size(); k++)
      if (running[k].name == next[i].name) (*map)[i] = static_cast<int>(k);
    if ((*map)[i] < 0) {
      refused->push_back("ports: '" + next[i].name + "' added (ports need a restart)");
      continue;
    }
    std::string d = port_diff(running[static_cast<size_t>((*map)[i])], next[i]);
    if (!d.empty()) refused->push_back("ports: '" + next[i].name + "' " + d + " (ports need a restart)");
  }
  for (const PortConfig& p : running) {
    bool kept = false;
    for (const PortConfig& q : next) kept |= q.name == p.name;
    if (!kept) refused->push_back("ports: '" + p.name + "' removed (ports need a restart)");
  }
}

}  // namespace dp
