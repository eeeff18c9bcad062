#include "commands.h"

#include <sstream>

namespace dp {

sdn::Status CommandTable::add(const char* name, Handler h) {
  const CommandSpec* c = find_command(name);
  if (!c) return sdn::Status::error(std::string("command '") + name + "' is not in dataplane/commands.h");
  for (const Entry& e : entries_)
    if (e.spec == c) return sdn::Status::error(std::string("command '") + name + "' registered twice");
  entries_.push_back({c, std::move(h)});
  return {};
}

sdn::Status CommandTable::complete() const {
  for (const CommandSpec& c : kCommands) {
    bool found = false;
    for (const Entry& e : entries_) found |= e.spec == &c;
    if (!found) return sdn::Status::error(std::string("command '") + c.name + "' has no handler");
  }
  return {};
}

ControlServer::Reply CommandTable::usage(const char* name) {
  const CommandSpec* c = find_command(name);
  return text("error: usage: " + (c ? command_usage(*c) : std::string(name)));
}

namespace {

// The request's words, with where the text after each one starts.
struct Words {
  std::vector<std::string> w;
  std::vector<size_t> end;
};

Words words(const std::string& s, size_t most) {
  Words r;
  size_t i = 0;
  while (r.w.size() < most) {
    while (i < s.size() && isspace(static_cast<unsigned char>(s[i]))) i++;
    if (i == s.size()) break;
    size_t b = i;
    while (i < s.size() && !isspace(static_cast<unsigned char>(s[i]))) i++;
    r.w.push_back(s.substr(b, i - b));
    r.end.push_back(i);
  }
  return r;
}

}  // namespace

ControlServer::Reply CommandTable::dispatch(const std::string& req) const {
  Words rw = words(req, 2);
  const Entry* best = nullptr;
  size_t best_words = 0;
  for (const Entry& e : entries_) {
    Words nw = words(e.spec->name, 2);
    if (nw.w.size() > rw.w.size() || nw.w.size() <= best_words) continue;
    bool match = true;
    for (size_t k = 0; k < nw.w.size() && match; k++) match = nw.w[k] == rw.w[k];
    if (match) {
      best = &e;
      best_words = nw.w.size();
    }
  }
  if (best) {
    size_t at = rw.end[best_words - 1];
    while (at < req.size() && isspace(static_cast<unsigned char>(req[at]))) at++;
    return best->h(req.substr(at));
  }
  // A known first word: the usages of the commands it starts.
  std::string first = rw.w.empty() ? "" : rw.w[0], usages;
  for (const CommandSpec& c : kCommands)
    if (words(c.name, 1).w[0] == first) usages += (usages.empty() ? "" : " | ") + command_usage(c);
  if (!usages.empty()) return text("error: usage: " + usages);
  std::string names;
  for (const CommandSpec& c : kCommands) names += (names.empty() ? "" : "|") + std::string(c.name);
  return text("error: unknown command '" + first + "' (" + names + ")");
}

}  // namespace dp
