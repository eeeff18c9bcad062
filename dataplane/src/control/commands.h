// The daemon's command dispatch: each service registers its handlers under
// the names of dataplane/commands.h; the table is the only dispatch.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dataplane/commands.h"
#include "sdn/status.h"
#include "socket.h"

namespace dp {

// How a reply is written: text, or JSON (a request that starts with
// "--json", as `dataplane-ctl --json COMMAND` sends it).
enum class Format { kText, kJson };

class CommandTable {
 public:
  // `args`: the request's arguments, checked against the command's
  // ArgSpecs (a request that does not fit gets the usage error, and the
  // handler is not called).
  using Handler = std::function<ControlServer::Reply(const CommandArgs& args, Format f)>;
  using TextHandler = std::function<ControlServer::Reply(const CommandArgs& args)>;

  // `name` must be one of kCommands; registering it twice is an error.
  sdn::Status add(const char* name, Handler h);
  // A command whose reply is text only: in JSON its reply becomes JSON
  // lines: {"ok": true, "message": ...} or {"error": ...} for the first
  // line, then {"line": ...} for each further line.
  sdn::Status add_text(const char* name, TextHandler h);
  // Every command of kCommands has a handler.
  sdn::Status complete() const;
  ControlServer::Reply dispatch(const std::string& request) const;
  // A text reply as JSON lines (see add_text).
  static ControlServer::Reply as_json_lines(ControlServer::Reply r);

  static ControlServer::Reply text(std::string s) { return ControlServer::Reply{std::move(s), nullptr, nullptr}; }
  // "error: usage: NAME ARGS (ranges)[: why]" for a registered command.
  static ControlServer::Reply usage(const char* name, const std::string& why = "");

 private:
  struct Entry {
    const CommandSpec* spec;
    Handler h;
  };
  static ControlServer::Reply guarded(const Entry& e, const CommandArgs& args, Format f);
  std::vector<Entry> entries_;
};

// log-level (log_service.cc): needs nothing of the daemon's.
sdn::Status register_log_commands(CommandTable& t);

}  // namespace dp
