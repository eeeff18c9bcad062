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

class CommandTable {
 public:
  // `args`: the request after the command's name, leading blanks removed.
  using Handler = std::function<ControlServer::Reply(const std::string& args)>;

  // `name` must be one of kCommands; registering it twice is an error.
  sdn::Status add(const char* name, Handler h);
  // Every command of kCommands has a handler.
  sdn::Status complete() const;
  ControlServer::Reply dispatch(const std::string& request) const;

  static ControlServer::Reply text(std::string s) { return ControlServer::Reply{std::move(s), nullptr, nullptr}; }
  // "error: usage: NAME ARGS" for a registered command.
  static ControlServer::Reply usage(const char* name);

 private:
  struct Entry {
    const CommandSpec* spec;
    Handler h;
  };
  std::vector<Entry> entries_;
};

}  // namespace dp
