#include "dataplane/log.h"

#include <fnmatch.h>
#include <rte_log.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "sdn/text.h"

static_assert(RTE_LOG_INFO == 7 && RTE_LOG_WARNING == 5 && RTE_LOG_ERR == 4, "log.h's level numbers");

namespace dp {

namespace {

constexpr int kTypes = sizeof kLogTypeNames / sizeof kLogTypeNames[0];

struct Types {
  int id[kTypes];
  Types() {
    for (int i = 0; i < kTypes; i++) {
      // Registered before or after EAL: EAL applies its --log-level
      // patterns to the types registered then and picks them for later ones.
      id[i] = rte_log_register_type_and_pick_level(kLogTypeNames[i], RTE_LOG_INFO);
      if (id[i] < 0) id[i] = RTE_LOGTYPE_USER1;  // out of memory: still printed
    }
  }
};

const Types& types() {
  static const Types t;  // registered on first use
  return t;
}

// rte_log's stream: each line once, to one fd, "<N>"-prefixed for the
// journal. rte_vlog writes a message with vfprintf and fflush()es it, so a
// write here is one message (or a part of a long one: the line state
// carries over); the FILE's lock is held meanwhile.
struct Sink {
  int fd;
  bool journal;
  bool at_line_start = true;
};

ssize_t sink_write(void* cookie, const char* buf, size_t n) {
  Sink* s = static_cast<Sink*>(cookie);
  const int level = rte_log_cur_msg_loglevel();  // this message's (per thread)
  const char prio = static_cast<char>('0' + (level >= 1 && level <= 8 ? level - 1 : 6));
  std::string out;
  out.reserve(n + 8);
  for (size_t i = 0; i < n; i++) {
    if (s->at_line_start && s->journal) {
      out += '<';
      out += prio;
      out += '>';
    }
    out += buf[i];
    s->at_line_start = buf[i] == '\n';
  }
  for (size_t done = 0; done < out.size();) {
    const ssize_t w = write(s->fd, out.data() + done, out.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // stderr gone: the line is lost, the daemon goes on
    done += static_cast<size_t>(w);
  }
  return static_cast<ssize_t>(n);
}

}  // namespace

bool log_fd_is_journal(int fd) {
  const char* js = getenv("JOURNAL_STREAM");
  if (!js) return false;
  unsigned long long dev = 0, ino = 0;
  char end = 0;
  if (sscanf(js, "%llu:%llu%c", &dev, &ino, &end) != 2) return false;
  struct stat st{};
  return fstat(fd, &st) == 0 && static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

FILE* log_stream(int fd, bool journal) {
  cookie_io_functions_t io{};
  io.write = sink_write;
  io.close = [](void* cookie) {
    delete static_cast<Sink*>(cookie);
    return 0;
  };
  Sink* sink = new Sink{fd, journal};
  FILE* f = fopencookie(sink, "w", io);
  if (!f) delete sink;
  return f;
}

void log_open_stream() {
  // The daemon's: a static sink, never closed (it lives as long as the
  // process, and a leak checker sees nothing to free).
  static Sink sink{STDERR_FILENO, log_fd_is_journal(STDERR_FILENO)};
  static FILE* const f = [] {
    cookie_io_functions_t io{};
    io.write = sink_write;
    return fopencookie(&sink, "w", io);
  }();
  if (f) rte_openlog_stream(f);  // else DPDK's default stream
}

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

namespace {
constexpr const char* kLevelNames[] = {"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"};
}

const char* log_level_name(uint32_t level) { return level >= 1 && level <= 8 ? kLevelNames[level - 1] : "unknown"; }

sdn::Result<uint32_t> log_parse_level(const std::string& s) {
  for (uint32_t l = 1; l <= 8; l++)
    if (s == kLevelNames[l - 1] || s == std::to_string(l)) return l;
  const std::pair<const char*, uint32_t> aliases[] = {
      {"emergency", RTE_LOG_EMERG}, {"critical", RTE_LOG_CRIT}, {"error", RTE_LOG_ERR}, {"warn", RTE_LOG_WARNING}};
  for (const auto& [name, l] : aliases)
    if (s == name) return l;
  return sdn::Status::error(sdn::ErrorKind::kInvalid,
                            "level '" + sdn::escape_control(s) +
                                "': use emerg, alert, crit, err, warning, notice, info or debug "
                                "(or rte_log's number, 1 = emerg .. 8 = debug)");
}

std::vector<LogTypeLevel> log_types() {
  types();  // the daemon's are listed even before their first line
  // rte_log has no iterator: rte_log_list_types prints one name per line.
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  std::vector<LogTypeLevel> v;
  if (!f) return v;
  rte_log_list_types(f, "");
  fclose(f);
  for (const char *p = text, *nl; p && *p; p = nl + 1) {
    nl = strchr(p, '\n');
    if (!nl) nl = p + strlen(p);
    const std::string name(p, nl);
    // rte_log_register returns a known name's id (nothing registered).
    if (const int id = name.empty() ? -1 : rte_log_register(name.c_str()); id >= 0)
      v.push_back({name, static_cast<uint32_t>(rte_log_get_level(static_cast<uint32_t>(id)))});
    if (!*nl) break;
  }
  free(text);
  return v;
}

sdn::Result<std::vector<std::string>> log_set_levels(const std::string& type, const std::string& level) {
  auto l = log_parse_level(level);
  if (!l) return l.status();
  std::vector<std::string> matched;
  for (const LogTypeLevel& t : log_types())
    if (fnmatch(type.c_str(), t.name.c_str(), 0) == 0) matched.push_back(t.name);
  if (matched.empty()) {
    std::string ours;
    for (const char* n : kLogTypeNames) ours += (ours.empty() ? "" : ", ") + std::string(n);
    return sdn::Status::error(sdn::ErrorKind::kNotFound,
                              "log type '" + sdn::escape_control(type) + "' matches none (the daemon's: " + ours +
                                  "; DPDK's such as lib.eal, pmd.net.af_packet; a glob such as 'dataplane.*'; "
                                  "`dataplane-ctl log-level` lists them all)");
  }
  for (const std::string& n : matched) rte_log_set_level(static_cast<uint32_t>(rte_log_register(n.c_str())), *l);
  return matched;
}

}  // namespace dp
