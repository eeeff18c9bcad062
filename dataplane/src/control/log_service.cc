// `log-level`: the rte_log types and their levels, and a change of them at
// run time (dataplane/log.h). Answered at once: nothing here waits.
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "dataplane/log.h"
#include "sdn/json.h"

namespace dp {

namespace {

ControlServer::Reply list(Format f) {
  const std::vector<LogTypeLevel> v = log_types();
  if (f == Format::kJson) {
    nlohmann::json types = nlohmann::json::array();
    for (const LogTypeLevel& t : v) types.push_back({{"type", t.name}, {"level", log_level_name(t.level)}});
    return CommandTable::text(sdn::json_dump(nlohmann::json{{"ok", true}, {"types", types}}) + "\n");
  }
  size_t w = 0;
  for (const LogTypeLevel& t : v) w = std::max(w, t.name.size());
  std::string o = "ok: " + std::to_string(v.size()) + " log types\n";
  for (const LogTypeLevel& t : v) o += t.name + std::string(w + 2 - t.name.size(), ' ') + log_level_name(t.level) + "\n";
  return CommandTable::text(o);
}

ControlServer::Reply set(const std::string& type, const std::string& level, Format f) {
  auto done = log_set_levels(type, level);
  if (!done) {
    const std::string m = "log-level: " + done.message();
    return CommandTable::text(f == Format::kJson ? sdn::json_dump(nlohmann::json{{"error", m}}) + "\n"
                                                 : "error: " + m);
  }
  const char* name = log_level_name(*log_parse_level(level));
  std::string names;
  for (const std::string& n : *done) names += (names.empty() ? "" : ", ") + n;
  log_line(LogType::kControl, 6 /* RTE_LOG_NOTICE */, "log level " + std::string(name) + ": " + names);
  if (f == Format::kJson)
    return CommandTable::text(sdn::json_dump(nlohmann::json{{"ok", true}, {"level", name}, {"types", *done}}) + "\n");
  return CommandTable::text("ok: " + std::string(name) + ": " + names);
}

}  // namespace

sdn::Status register_log_commands(CommandTable& t) {
  return t.add("log-level", [](const CommandArgs& a, Format f) {
    if (!a.given[0]) return list(f);
    return set(a.str[0], a.str[1], f);
  });
}

}  // namespace dp
