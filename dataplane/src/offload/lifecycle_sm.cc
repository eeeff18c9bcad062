// The offloaded connection's lifecycle as a pure function (lifecycle_sm.h).
#include "lifecycle_sm.h"

#include <cerrno>
#include <cstdlib>

namespace dp::life {

namespace {

bool busy_errno(int err) { return err == EAGAIN || err == EBUSY; }

uint8_t popcount(uint8_t v) { return static_cast<uint8_t>(__builtin_popcount(v)); }

// The slot is free: the connection is queued again (a retry still wanted)
// or the tracker is told it left the NIC.
void finish(Step& st) {
  State& s = st.next;
  if (s.was_installed) st.add({Fx::kCountRemoved});
  st.add({Fx::kFreeSlot});
  const bool again = s.retry && s.linked;
  st.add({again ? Fx::kRequeueRetry : Fx::kTellNotOffloaded});
  State n = queued(s.tries, false, s.sws);
  n.phase = again ? Phase::kQueued : Phase::kIdle;
  n.linked = again;
  s = n;
}

void start_remove(Step& st, const char* why) {
  State& s = st.next;
  if (installed(s)) {
    st.add({Fx::kFold});
    st.add({Fx::kDeactivate});
  }
  s.phase = Phase::kRemoving;
  s.why_removed = why;
  s.err = 0;
  if (!s.made) {
    finish(st);
    return;
  }
  st.add({Fx::kQueueRemoval});
}

// Now, or once the operations out complete.
void request_remove(Step& st, const char* why) {
  State& s = st.next;
  if (s.phase == Phase::kRemoving) return;
  if (s.pending) {
    s.doomed = true;
    s.why_removed = why;
    return;
  }
  start_remove(st, why);
}

void unlink(Step& st) {
  if (st.next.linked) st.add({Fx::kUnlink});
  st.next.linked = false;
}

void submit_rules(Step& st) {
  State& s = st.next;
  s.phase = Phase::kInstalling;
  s.pending = static_cast<uint8_t>(s.pending + (s.ct_obj ? 3 : 2));
  st.add({Fx::kSubmitRules});
}

bool has_slot(Phase p) { return p != Phase::kIdle && p != Phase::kQueued; }

void on_requested(Step& st, const Event& e) {
  State& s = st.next;
  if (e.why) {  // refused whatever the provider holds of it (translated before looked up)
    if (e.why == kWhyBacklog) st.add({Fx::kCountBacklog});
    st.add({Fx::kRefuse, e.why});
    st.add({Fx::kTellNoOffload});
    return;
  }
  if (s.phase != Phase::kIdle) return;  // already asked for
  s.phase = Phase::kQueued;
  s.linked = true;
  st.add({Fx::kEnqueue});
}

void on_go(Step& st, const Event& e) {
  State& s = st.next;
  if (s.phase == Phase::kQueued) {
    if (e.why) {
      unlink(st);
      st.add({Fx::kRefuse, e.why});
      if (e.why != kWhyGone) st.add({Fx::kTellNoOffload});
      s.phase = Phase::kIdle;
      return;
    }
    s.tries++;
    if (!s.ct_obj) {
      submit_rules(st);
      return;
    }
    s.phase = Phase::kCreatingCt;
    s.pending = 1;
    st.add({Fx::kSubmitCtCreate});
    return;
  }
  if (s.phase != Phase::kRemoving || s.pending) {
    st.illegal = Illegal::kNotQueued;
    return;
  }
  if (s.made & kMadeFlows) {
    s.pending = static_cast<uint8_t>(s.pending + popcount(s.made & kMadeFlows));
    st.add({Fx::kSubmitDestroyFlows, nullptr, 0, static_cast<uint8_t>(s.made & kMadeFlows)});
  } else if (s.made & kMadeCt) {
    s.pending++;
    st.add({Fx::kSubmitDestroyCt});
  } else {
    finish(st);
  }
}

void on_submitted(Step& st, const Event& e) {
  State& s = st.next;
  if (s.phase != Phase::kCreatingCt || s.rules_reserved) {
    st.illegal = Illegal::kNotCreating;
    return;
  }
  if (!e.ok) return;  // refused at once: its failure completes at the next pull
  if (s.sws) {        // DV: the object exists already
    submit_rules(st);
    return;
  }
  // HWS: the rules go in once the create has completed (the driver takes
  // a rule naming an object still WAIT_ASYNC, mlx5_flow_aso.c:1753-1756).
  s.rules_reserved = true;
  st.add({Fx::kReserveRules});
}

void made_by(State& s, Op op) {
  switch (op) {
    case Op::kCtCreate: s.made |= kMadeCt; break;
    case Op::kFlow0: s.made |= kMadeFlow0; break;
    case Op::kFlow1: s.made |= kMadeFlow1; break;
    case Op::kDelFlow0: s.made &= static_cast<uint8_t>(~kMadeFlow0); break;
    case Op::kDelFlow1: s.made &= static_cast<uint8_t>(~kMadeFlow1); break;
    case Op::kDelCt: s.made &= static_cast<uint8_t>(~kMadeCt); break;
    default: break;
  }
}

// The last operation of an install completed.
void install_done(Step& st) {
  State& s = st.next;
  if (s.err) {
    // A resource that frees by itself (EAGAIN: freed counters wait for the
    // counter service's cycle, up to 500 ms; EBUSY: a full conntrack
    // queue): installs pause, and the connection is tried again once what
    // was made of it is gone, up to kBusyTries times. After that, or for
    // anything else, it stays in software (after EAGAIN/EBUSY its next
    // packet offers it again).
    if (busy_errno(s.err) && s.linked && !s.doomed && s.tries < kBusyTries) {
      st.add({Fx::kHoldInstalls});
      s.retry = true;
      st.add({Fx::kCountRetry});
    } else {
      st.add({Fx::kFailInstall, nullptr, s.err});
      if (!busy_errno(s.err)) st.add({Fx::kTellNoOffload});
      unlink(st);
    }
    start_remove(st, "failed");
    return;
  }
  if (s.doomed) {
    start_remove(st, s.why_removed);
    return;
  }
  s.phase = Phase::kConfirming;
  st.add({Fx::kTellOffloaded});
}

void on_completed(Step& st, const Event& e) {
  State& s = st.next;
  if (!s.pending) {
    st.illegal = Illegal::kNothingOut;
    return;
  }
  s.pending--;
  if (e.err) {
    if (!s.err) s.err = e.err;
  } else {
    made_by(s, e.op);
    if (e.op == Op::kQuery && !s.doomed && s.phase == Phase::kResyncing && e.tracked) {
      s.pending++;
      st.add({Fx::kSubmitResyncUpdate});
    }
  }
  if (e.op == Op::kQuery || e.op == Op::kResync) {
    if (e.err) {
      st.add({Fx::kFailResync, nullptr, e.err});
      s.err = 0;
    }
    if (e.op == Op::kResync && !e.err) st.add({Fx::kCountResync});
  }
  if (e.op == Op::kCtCreate && s.rules_reserved) {
    s.rules_reserved = false;
    st.add({Fx::kReleaseRules});
  }
  if (e.op == Op::kCtCreate && !e.err && !s.sws && s.phase == Phase::kCreatingCt && !s.doomed && !s.err) {
    submit_rules(st);
    return;
  }
  if (s.pending) return;
  switch (s.phase) {
    case Phase::kCreatingCt:
    case Phase::kInstalling: install_done(st); return;
    case Phase::kResyncing:
      s.phase = Phase::kInstalled;
      st.add({Fx::kTellResyncDone});
      if (s.doomed) start_remove(st, s.why_removed);
      return;
    default: break;
  }
  // Removing.
  if (s.err) {
    st.add({Fx::kFailRemove, nullptr, s.err});
    s.err = 0;
  }
  if (s.made & kMadeFlows) {
    // A destruction failed: the rules may still be in the NIC, so the
    // context must stay. Try again.
    st.add({Fx::kRequeueRemoval});
  } else if (s.made & kMadeCt) {
    s.pending++;
    st.add({Fx::kSubmitDestroyCt});  // the rules are gone: now the context
  } else {
    finish(st);
  }
}

void on_resync_asked(Step& st, const Event& e) {
  State& s = st.next;
  if (!has_slot(s.phase) || !s.ct_obj || (s.phase == Phase::kRemoving && s.retry)) {
    // Not in the NIC, or no context to resync (flows: the segment raced
    // the rules going in).
    st.add({Fx::kTellResyncDone});
    return;
  }
  if (s.phase != Phase::kInstalled || s.doomed) return;
  if (!e.ok) {  // the conntrack queue is busy: the next refused segment asks again
    st.add({Fx::kCountResyncDeferred});
    st.add({Fx::kTellResyncDone});
    return;
  }
  s.phase = Phase::kResyncing;
  s.pending++;
  st.add({Fx::kSubmitQuery});
}

void on_port_stopped(Step& st) {
  State& s = st.next;
  if (s.phase == Phase::kQueued) {
    unlink(st);
    s.phase = Phase::kIdle;
    return;
  }
  if (!has_slot(s.phase)) return;
  if (s.pending) {
    st.illegal = Illegal::kOpsOutstanding;
    return;
  }
  if (installed(s)) st.add({Fx::kDeactivate});
  st.add({Fx::kForget});
  s.made = 0;
  s.retry = false;
  unlink(st);
  finish(st);
}

// Closed, flushed, or (its path changed) revoked.
void on_gone(Step& st, const Event& e, const char* why) {
  State& s = st.next;
  if (e.kind == EventKind::kRulesSwapped) {
    // Its path is the same, or it is leaving; a queued one is translated
    // again when its turn comes.
    if (e.ok || !has_slot(s.phase) || s.phase == Phase::kRemoving) return;
    st.add({Fx::kCountRevoked});
  }
  if (s.phase == Phase::kIdle) return;
  if (s.phase == Phase::kQueued) {
    unlink(st);
    s.phase = Phase::kIdle;
    return;
  }
  unlink(st);
  request_remove(st, why);
}

}  // namespace

State queued(uint8_t tries, bool ct_obj, bool sws) {
  State s;
  s.phase = Phase::kQueued;
  s.tries = tries;
  s.ct_obj = ct_obj;
  s.sws = sws;
  s.linked = true;
  return s;
}

Step step(const State& s, const Event& e) {
  Step st;
  st.next = s;
  if (s.phase == Phase::kConfirming && e.kind != EventKind::kConfirmed) {
    st.illegal = Illegal::kAwaitingAnswer;
    return st;
  }
  switch (e.kind) {
    case EventKind::kRequested: on_requested(st, e); break;
    case EventKind::kGo: on_go(st, e); break;
    case EventKind::kSubmitted: on_submitted(st, e); break;
    case EventKind::kCompleted: on_completed(st, e); break;
    case EventKind::kConfirmed:
      if (s.phase != Phase::kConfirming) {
        st.illegal = Illegal::kNotAsked;
      } else if (e.ok) {
        st.next.phase = Phase::kInstalled;
        st.next.was_installed = true;
        st.add({Fx::kActivate});
      } else {
        start_remove(st, "destroyed");  // the tracker dropped it meanwhile
      }
      break;
    case EventKind::kAged:
      if (!installed(s)) {
        st.illegal = Illegal::kNotInstalled;
      } else if (!s.doomed) {
        st.add({Fx::kCountAged});
        unlink(st);
        request_remove(st, "aged");
      }
      break;
    case EventKind::kClosed: on_gone(st, e, e.why ? e.why : "closed"); break;
    case EventKind::kRulesSwapped: on_gone(st, e, "rules changed"); break;
    case EventKind::kFlush: on_gone(st, e, "flush"); break;
    case EventKind::kResyncAsked: on_resync_asked(st, e); break;
    case EventKind::kPortStopped: on_port_stopped(st); break;
  }
  if (st.illegal != Illegal::kNone) {  // nothing happens
    st.next = s;
    st.n = 0;
  }
  return st;
}

const char* illegal_name(Illegal e) {
  switch (e) {
    case Illegal::kNone: return "none";
    case Illegal::kNothingOut: return "completion with nothing out";
    case Illegal::kNotQueued: return "nothing to submit";
    case Illegal::kNotCreating: return "no conntrack object being created";
    case Illegal::kNotAsked: return "tracker's answer not asked for";
    case Illegal::kNotInstalled: return "aged but not installed";
    case Illegal::kOpsOutstanding: return "port stopped with operations out";
    case Illegal::kAwaitingAnswer: return "awaiting the tracker's answer";
  }
  return "?";
}

const char* phase_name(Phase p) {
  static const char* const n[kPhases] = {"idle",      "queued",    "creating_ct", "installing",
                                         "confirming", "installed", "resyncing",   "removing"};
  return n[static_cast<int>(p)];
}

const char* event_name(EventKind k) {
  static const char* const n[kEventKinds] = {"requested",     "go",           "submitted", "completed",
                                             "confirmed",     "aged",         "closed",    "rules_swapped",
                                             "resync_asked",  "port_stopped", "flush"};
  return n[static_cast<int>(k)];
}

}  // namespace dp::life
