#include "dataplane/log.h"

#include <rte_log.h>

#include "sdn/text.h"

static_assert(RTE_LOG_INFO == 7 && RTE_LOG_WARNING == 5 && RTE_LOG_ERR == 4, "log.h's level numbers");

namespace dp {

namespace {

struct Types {
  int id[3];
  Types() {
    const char* names[3] = {"dataplane.control", "dataplane.offload", "dataplane.pipeline"};
    for (int i = 0; i < 3; i++) {
      id[i] = rte_log_register_type_and_pick_level(names[i], RTE_LOG_INFO);
      if (id[i] < 0) id[i] = RTE_LOGTYPE_USER1;  // before EAL: still printed
    }
  }
};

const Types& types() {
  static const Types t;  // registered on first use, after EAL (its --log-level patterns apply)
  return t;
}

}  // namespace

void log_set_level(uint32_t level) {
  for (int id : types().id) rte_log_set_level(static_cast<uint32_t>(id), level);
}

void log_line(LogType t, uint32_t level, const std::string& msg) {
  const Types& types = dp::types();
  const char* part = t == LogType::kOffload ? "offload: " : "";
  // One message, one line: a config key or a client's bytes with a newline
  // in them cannot forge a line of their own in the journal.
  rte_log(level, static_cast<uint32_t>(types.id[static_cast<int>(t)]), "dataplane: %s%s\n", part,
          sdn::escape_control(msg).c_str());
}

}  // namespace dp
