#include "commands.h"

#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dataplane/log.h"
#include "sdn/json.h"

namespace dp {

sdn::Status CommandTable::add(const char* name, Handler h) {
  const CommandSpec* c = find_command(name);
  if (!c) return sdn::Status::error(std::string("command '") + name + "' is not in dataplane/commands.h");
  for (const Entry& e : entries_)
    if (e.spec == c) return sdn::Status::error(std::string("command '") + name + "' registered twice");
  entries_.push_back({c, std::move(h)});
  return {};
}

sdn::Status CommandTable::add_text(const char* name, TextHandler h) {
  return add(name, [h = std::move(h)](const CommandArgs& args, Format f) {
    ControlServer::Reply r = h(args);
    return f == Format::kJson ? as_json_lines(std::move(r)) : r;
  });
}

namespace {
// "ok" -> "", "ok: rule 7 added" -> "rule 7 added", anything else as it is.
std::string ok_message(const std::string& line) {
  if (line.rfind("ok", 0) != 0) return line;
  size_t i = 2;
  if (i < line.size() && line[i] == ':') i++;
  while (i < line.size() && line[i] == ' ') i++;
  return line.substr(i);
}
}  // namespace

ControlServer::Reply CommandTable::as_json_lines(ControlServer::Reply r) {
  // Whole lines only: a streamed chunk's unfinished last line waits for the next.
  struct State {
    bool first = true;
    std::string partial;
  };
  auto st = std::make_shared<State>();
  auto convert = [st](const std::string& chunk, bool last) {
    std::string in = st->partial + chunk, out;
    st->partial.clear();
    size_t at = 0;
    for (size_t nl; (nl = in.find('\n', at)) != std::string::npos || (last && at < in.size()); at = nl + 1) {
      if (nl == std::string::npos) nl = in.size();
      const std::string line = in.substr(at, nl - at);
      nlohmann::json j;
      if (st->first && line.rfind("error: ", 0) == 0) j = {{"error", line.substr(7)}};
      else if (st->first && line.rfind("error", 0) == 0) j = {{"error", line}};
      else if (st->first) j = {{"ok", true}, {"message", ok_message(line)}};
      else j = {{"line", line}};
      st->first = false;
      out += sdn::json_dump(j) + "\n";
      if (nl == in.size()) break;
    }
    if (!last && at < in.size()) st->partial = in.substr(at);
    return out;
  };
  ControlServer::Reply o;
  o.ready = r.ready;
  if (!r.more) {
    o.text = convert(r.text, true);
    return o;
  }
  o.text = convert(r.text, false);
  o.more = [convert, more = r.more](std::string* out) {
    std::string chunk;
    const bool again = more(&chunk);
    *out += convert(chunk, !again);
    return again;
  };
  return o;
}

sdn::Status CommandTable::complete() const {
  for (const CommandSpec& c : kCommands) {
    bool found = false;
    for (const Entry& e : entries_) found |= e.spec == &c;
    if (!found) return sdn::Status::error(std::string("command '") + c.name + "' has no handler");
  }
  return {};
}

ControlServer::Reply CommandTable::usage(const char* name, const std::string& why) {
  const CommandSpec* c = find_command(name);
  return text("error: usage: " + (c ? command_usage(*c) + command_ranges(*c) : std::string(name)) +
              (why.empty() ? "" : ": " + why));
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

namespace {
// The one reply a failed handler gives, in the request's format.
std::string internal_error(const char* name, Format f, const std::exception& x) {
  const std::string m = std::string("internal error in '") + name + "': " + x.what();
  log_error(LogType::kControl, m + " (the request was refused; nothing was changed by its reply)");
  return f == Format::kJson ? sdn::json_dump(nlohmann::json{{"error", m}}) + "\n" : "error: " + m;
}
}  // namespace

// Nothing a client sends ends the daemon: a handler (or its streamed
// reply) that throws answers with an error instead.
ControlServer::Reply CommandTable::guarded(const Entry& e, const CommandArgs& args, Format f) {
  ControlServer::Reply r;
  try {
    r = e.h(args, f);
  } catch (const std::exception& x) {
    return text(internal_error(e.spec->name, f, x));
  }
  if (r.more) {
    r.more = [more = std::move(r.more), name = e.spec->name, f](std::string* out) {
      try {
        return more(out);
      } catch (const std::exception& x) {
        *out += internal_error(name, f, x);
        return false;
      }
    };
  }
  return r;
}

ControlServer::Reply CommandTable::dispatch(const std::string& request) const {
  Format f = Format::kText;
  std::string req = request;
  if (Words j = words(req, 1); !j.w.empty() && j.w[0] == "--json") {
    f = Format::kJson;
    req = req.substr(j.end[0]);
  }
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
    CommandArgs args;
    if (std::string why = parse_command_args(*best->spec, std::string_view(req).substr(rw.end[best_words - 1]), &args);
        !why.empty()) {
      ControlServer::Reply r = usage(best->spec->name, why);
      return f == Format::kJson ? as_json_lines(std::move(r)) : r;
    }
    return guarded(*best, args, f);
  }
  // A known first word: the usages of the commands it starts.
  std::string first = rw.w.empty() ? "" : rw.w[0], usages;
  for (const CommandSpec& c : kCommands)
    if (words(c.name, 1).w[0] == first) usages += (usages.empty() ? "" : " | ") + command_usage(c);
  ControlServer::Reply r;
  if (!usages.empty()) {
    r = text("error: usage: " + usages);
  } else {
    std::string names;
    for (const CommandSpec& c : kCommands) names += (names.empty() ? "" : "|") + std::string(c.name);
    r = text("error: unknown command '" + first + "' (" + names + ")");
  }
  return f == Format::kJson ? as_json_lines(std::move(r)) : r;
}

}  // namespace dp
