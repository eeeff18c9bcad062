// JSON text out of nlohmann::json, for everything this project prints or
// sends. nlohmann's plain dump() throws type_error.316 on a string that is
// not UTF-8 (a control request echoed back, a rule's text, a file name);
// here such bytes become U+FFFD and the reply is still valid JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace sdn {

inline std::string json_dump(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sdn
