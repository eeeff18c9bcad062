#include "testbed/telemetry.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace testbed {

sdn::Result<std::string> telemetry_query(const std::string& prefix, const std::string& command) {
  std::string path = "/var/run/dpdk/" + prefix + "/dpdk_telemetry.v2";
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return sdn::Status::error(std::string("socket: ") + strerror(errno));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    int e = errno;
    close(fd);
    return sdn::Status::error("telemetry " + path + ": " + strerror(e));
  }
  std::vector<char> buf(1 << 16);
  ssize_t n = recv(fd, buf.data(), buf.size(), 0);  // banner: version, pid, max_output_len
  if (n <= 0 || send(fd, command.data(), command.size(), 0) < 0 || (n = recv(fd, buf.data(), buf.size(), 0)) <= 0) {
    int e = errno;
    close(fd);
    return sdn::Status::error("telemetry " + path + ": no reply (" + strerror(e) + ")");
  }
  close(fd);
  return std::string(buf.data(), static_cast<size_t>(n));
}

namespace {

// Depth first, in document order.
const nlohmann::ordered_json* find_key(const nlohmann::ordered_json& j, const std::string& key) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == key && it->is_number()) return &*it;
      if (const auto* f = find_key(*it, key)) return f;
    }
  } else if (j.is_array()) {
    for (const auto& e : j)
      if (const auto* f = find_key(e, key)) return f;
  }
  return nullptr;
}

}  // namespace

long long json_number(const std::string& json, const std::string& key) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(json, nullptr, false);
  // Loud, never a number: a renamed key read as -1 once made tests pass
  // that measured nothing (gtest reports the exception as the failure).
  if (j.is_discarded()) throw std::runtime_error("json_number('" + key + "'): not JSON: " + json.substr(0, 300));
  const nlohmann::ordered_json* v = find_key(j, key);
  if (!v || !v->is_number())
    throw std::runtime_error("json_number: no number under key '" + key + "' in " + json.substr(0, 300));
  return v->is_number_float() ? static_cast<long long>(v->get<double>()) : v->get<long long>();
}

}  // namespace testbed
