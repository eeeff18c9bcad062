// The offloaded connection's lifecycle machine (src/offload/lifecycle_sm.h),
// table-driven: every (phase, event) pair has at least one row (checked),
// with the next phase, the effects in order, or the named error of a pair
// the provider never sends (the state then stays as it was, no effects).
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "offload/lifecycle_sm.h"

namespace dp::life {
namespace {

// A representative state of each phase.
State at(Phase p) {
  State s;
  s.phase = p;
  switch (p) {
    case Phase::kIdle: break;
    case Phase::kQueued: s = queued(0, true, false); break;
    case Phase::kCreatingCt:  // HWS, its conntrack object's create out
      s.ct_obj = s.linked = true;
      s.pending = 1;
      s.tries = 1;
      break;
    case Phase::kInstalling:  // exact rules (no object): two rules out
      s.linked = true;
      s.pending = 2;
      s.tries = 1;
      break;
    case Phase::kConfirming:
      s.linked = true;
      s.made = kMadeFlows;
      s.tries = 1;
      break;
    case Phase::kInstalled:
      s.ct_obj = s.linked = s.was_installed = true;
      s.made = kMadeFlows | kMadeCt;
      s.tries = 1;
      break;
    case Phase::kResyncing:
      s.ct_obj = s.linked = s.was_installed = true;
      s.made = kMadeFlows | kMadeCt;
      s.pending = 1;
      s.tries = 1;
      break;
    case Phase::kRemoving:
      s.ct_obj = s.was_installed = true;
      s.made = kMadeFlows | kMadeCt;
      s.why_removed = "closing";
      s.tries = 1;
      break;
  }
  return s;
}

State with(Phase p, const std::function<void(State&)>& f) {
  State s = at(p);
  f(s);
  return s;
}

Event ev(EventKind k) { return Event{k}; }
Event why(EventKind k, const char* w) {
  Event e{k};
  e.why = w;
  return e;
}
Event ok(EventKind k, bool v) {
  Event e{k};
  e.ok = v;
  return e;
}
Event done(Op op, int err = 0, bool tracked = true) {
  Event e{EventKind::kCompleted};
  e.op = op;
  e.err = err;
  e.tracked = tracked;
  return e;
}

struct Row {
  const char* name;
  State s;
  Event e;
  Illegal illegal;
  Phase next;
  std::vector<Fx> fx;
  std::function<void(const State&)> check = nullptr;
};

using P = Phase;
using E = EventKind;
constexpr Illegal kOk = Illegal::kNone;

std::vector<Row> idle_queued_rows() {
  return {
      {"idle requested", at(P::kIdle), ev(E::kRequested), kOk, P::kQueued, {Fx::kEnqueue},
       [](const State& n) { EXPECT_TRUE(n.linked); }},
      {"idle requested, refused", at(P::kIdle), why(E::kRequested, "protocol"), kOk, P::kIdle,
       {Fx::kRefuse, Fx::kTellNoOffload}},
      {"idle requested, backlog", at(P::kIdle), why(E::kRequested, kWhyBacklog), kOk, P::kIdle,
       {Fx::kCountBacklog, Fx::kRefuse, Fx::kTellNoOffload}},
      {"idle go", at(P::kIdle), ev(E::kGo), Illegal::kNotQueued, P::kIdle, {}},
      {"idle submitted", at(P::kIdle), ev(E::kSubmitted), Illegal::kNotCreating, P::kIdle, {}},
      {"idle completed", at(P::kIdle), done(Op::kFlow0), Illegal::kNothingOut, P::kIdle, {}},
      {"idle confirmed", at(P::kIdle), ev(E::kConfirmed), Illegal::kNotAsked, P::kIdle, {}},
      {"idle aged", at(P::kIdle), ev(E::kAged), Illegal::kNotInstalled, P::kIdle, {}},
      {"idle closed", at(P::kIdle), why(E::kClosed, "closing"), kOk, P::kIdle, {}},
      {"idle rules swapped", at(P::kIdle), ok(E::kRulesSwapped, false), kOk, P::kIdle, {}},
      {"idle resync asked", at(P::kIdle), ev(E::kResyncAsked), kOk, P::kIdle, {Fx::kTellResyncDone}},
      {"idle port stopped", at(P::kIdle), ev(E::kPortStopped), kOk, P::kIdle, {}},
      {"idle flush", at(P::kIdle), ev(E::kFlush), kOk, P::kIdle, {}},

      {"queued requested again", at(P::kQueued), ev(E::kRequested), kOk, P::kQueued, {}},
      {"queued requested, refused", at(P::kQueued), why(E::kRequested, "ipv6"), kOk, P::kQueued,
       {Fx::kRefuse, Fx::kTellNoOffload}},
      {"queued go, object", at(P::kQueued), ev(E::kGo), kOk, P::kCreatingCt, {Fx::kSubmitCtCreate},
       [](const State& n) {
         EXPECT_EQ(n.pending, 1);
         EXPECT_EQ(n.tries, 1);
       }},
      {"queued go, exact rules", with(P::kQueued, [](State& s) { s.ct_obj = false; }), ev(E::kGo), kOk,
       P::kInstalling, {Fx::kSubmitRules}, [](const State& n) { EXPECT_EQ(n.pending, 2); }},
      {"queued go, refused", at(P::kQueued), why(E::kGo, "no rules"), kOk, P::kIdle,
       {Fx::kUnlink, Fx::kRefuse, Fx::kTellNoOffload}},
      {"queued go, gone", at(P::kQueued), why(E::kGo, kWhyGone), kOk, P::kIdle, {Fx::kUnlink, Fx::kRefuse}},
      {"queued submitted", at(P::kQueued), ev(E::kSubmitted), Illegal::kNotCreating, P::kQueued, {}},
      {"queued completed", at(P::kQueued), done(Op::kFlow0), Illegal::kNothingOut, P::kQueued, {}},
      {"queued confirmed", at(P::kQueued), ev(E::kConfirmed), Illegal::kNotAsked, P::kQueued, {}},
      {"queued aged", at(P::kQueued), ev(E::kAged), Illegal::kNotInstalled, P::kQueued, {}},
      {"queued closed", at(P::kQueued), why(E::kClosed, "closing"), kOk, P::kIdle, {Fx::kUnlink}},
      {"queued rules swapped", at(P::kQueued), ok(E::kRulesSwapped, false), kOk, P::kQueued, {}},
      {"queued resync asked", at(P::kQueued), ev(E::kResyncAsked), kOk, P::kQueued, {Fx::kTellResyncDone}},
      {"queued port stopped", at(P::kQueued), ev(E::kPortStopped), kOk, P::kIdle, {Fx::kUnlink}},
      {"queued flush", at(P::kQueued), ev(E::kFlush), kOk, P::kIdle, {Fx::kUnlink}},
  };
}

std::vector<Row> creating_rows() {
  const State reserved = with(P::kCreatingCt, [](State& s) { s.rules_reserved = true; });
  return {
      {"creating requested", at(P::kCreatingCt), ev(E::kRequested), kOk, P::kCreatingCt, {}},
      {"creating go", at(P::kCreatingCt), ev(E::kGo), Illegal::kNotQueued, P::kCreatingCt, {}},
      {"creating submitted, hws", at(P::kCreatingCt), ev(E::kSubmitted), kOk, P::kCreatingCt, {Fx::kReserveRules},
       [](const State& n) { EXPECT_TRUE(n.rules_reserved); }},
      {"creating submitted, sws", with(P::kCreatingCt, [](State& s) { s.sws = true; }), ev(E::kSubmitted), kOk,
       P::kInstalling, {Fx::kSubmitRules}, [](const State& n) { EXPECT_EQ(n.pending, 4); }},
      {"creating submitted, refused at once", at(P::kCreatingCt), ok(E::kSubmitted, false), kOk, P::kCreatingCt, {}},
      {"creating submitted twice", reserved, ev(E::kSubmitted), Illegal::kNotCreating, P::kCreatingCt, {}},
      {"creating object made", reserved, done(Op::kCtCreate), kOk, P::kInstalling,
       {Fx::kReleaseRules, Fx::kSubmitRules},
       [](const State& n) {
         EXPECT_EQ(n.pending, 3);
         EXPECT_EQ(n.made, kMadeCt);
       }},
      {"creating object refused", reserved, done(Op::kCtCreate, ENOSPC), kOk, P::kIdle,
       {Fx::kReleaseRules, Fx::kFailInstall, Fx::kTellNoOffload, Fx::kUnlink, Fx::kFreeSlot, Fx::kTellNotOffloaded}},
      {"creating object busy: retried", reserved, done(Op::kCtCreate, EAGAIN), kOk, P::kQueued,
       {Fx::kReleaseRules, Fx::kHoldInstalls, Fx::kCountRetry, Fx::kFreeSlot, Fx::kRequeueRetry},
       [](const State& n) {
         EXPECT_EQ(n.tries, 1);
         EXPECT_TRUE(n.linked);
       }},
      {"creating object made, doomed", with(P::kCreatingCt, [](State& s) { s.doomed = true, s.why_removed = "closing"; }),
       done(Op::kCtCreate), kOk, P::kRemoving, {Fx::kQueueRemoval},
       [](const State& n) { EXPECT_STREQ(n.why_removed, "closing"); }},
      {"creating confirmed", at(P::kCreatingCt), ev(E::kConfirmed), Illegal::kNotAsked, P::kCreatingCt, {}},
      {"creating aged", at(P::kCreatingCt), ev(E::kAged), Illegal::kNotInstalled, P::kCreatingCt, {}},
      {"creating closed", at(P::kCreatingCt), why(E::kClosed, "closing"), kOk, P::kCreatingCt, {Fx::kUnlink},
       [](const State& n) {
         EXPECT_TRUE(n.doomed);
         EXPECT_FALSE(n.linked);
       }},
      {"creating rules swapped", at(P::kCreatingCt), ok(E::kRulesSwapped, false), kOk, P::kCreatingCt,
       {Fx::kCountRevoked, Fx::kUnlink}, [](const State& n) { EXPECT_STREQ(n.why_removed, "rules changed"); }},
      {"creating rules swapped, same path", at(P::kCreatingCt), ok(E::kRulesSwapped, true), kOk, P::kCreatingCt, {}},
      {"creating resync asked", at(P::kCreatingCt), ev(E::kResyncAsked), kOk, P::kCreatingCt, {}},
      {"creating port stopped", at(P::kCreatingCt), ev(E::kPortStopped), Illegal::kOpsOutstanding, P::kCreatingCt,
       {}},
      {"creating flush", at(P::kCreatingCt), ev(E::kFlush), kOk, P::kCreatingCt, {Fx::kUnlink},
       [](const State& n) { EXPECT_STREQ(n.why_removed, "flush"); }},
  };
}

std::vector<Row> installing_rows() {
  const State last = with(P::kInstalling, [](State& s) {
    s.pending = 1;
    s.made = kMadeFlow0;
  });
  const State last_failed = with(P::kInstalling, [](State& s) {
    s.pending = 1;
    s.made = kMadeFlow0;
    s.err = ENOSPC;
  });
  return {
      {"installing requested, refused", at(P::kInstalling), why(E::kRequested, "protocol"), kOk, P::kInstalling,
       {Fx::kRefuse, Fx::kTellNoOffload}},
      {"installing go", at(P::kInstalling), ev(E::kGo), Illegal::kNotQueued, P::kInstalling, {}},
      {"installing submitted", at(P::kInstalling), ev(E::kSubmitted), Illegal::kNotCreating, P::kInstalling, {}},
      {"installing first rule made", at(P::kInstalling), done(Op::kFlow0), kOk, P::kInstalling, {},
       [](const State& n) {
         EXPECT_EQ(n.pending, 1);
         EXPECT_EQ(n.made, kMadeFlow0);
       }},
      {"installing all made", last, done(Op::kFlow1), kOk, P::kConfirming, {Fx::kTellOffloaded}},
      {"installing one refused", last_failed, done(Op::kFlow1), kOk, P::kRemoving,
       {Fx::kFailInstall, Fx::kTellNoOffload, Fx::kUnlink, Fx::kQueueRemoval},
       [](const State& n) {
         EXPECT_EQ(n.made, kMadeFlows);
         EXPECT_EQ(n.err, 0);
         EXPECT_STREQ(n.why_removed, "failed");
       }},
      {"installing busy, tries used up", with(P::kInstalling, [](State& s) { s.pending = 1, s.made = kMadeFlow0, s.tries = kBusyTries; }),
       done(Op::kFlow1, EBUSY), kOk, P::kRemoving, {Fx::kFailInstall, Fx::kUnlink, Fx::kQueueRemoval}},
      {"installing busy, closed meanwhile", with(P::kInstalling, [](State& s) { s.pending = 1, s.made = kMadeFlow0, s.linked = false; }),
       done(Op::kFlow1, EAGAIN), kOk, P::kRemoving, {Fx::kFailInstall, Fx::kQueueRemoval}},
      {"installing done, doomed", with(P::kInstalling, [](State& s) { s.pending = 1, s.doomed = true, s.why_removed = "aged"; }),
       done(Op::kFlow1), kOk, P::kRemoving, {Fx::kQueueRemoval}, [](const State& n) { EXPECT_STREQ(n.why_removed, "aged"); }},
      {"installing confirmed", at(P::kInstalling), ev(E::kConfirmed), Illegal::kNotAsked, P::kInstalling, {}},
      {"installing aged", at(P::kInstalling), ev(E::kAged), Illegal::kNotInstalled, P::kInstalling, {}},
      {"installing closed", at(P::kInstalling), why(E::kClosed, "destroyed"), kOk, P::kInstalling, {Fx::kUnlink},
       [](const State& n) { EXPECT_TRUE(n.doomed); }},
      {"installing rules swapped", at(P::kInstalling), ok(E::kRulesSwapped, false), kOk, P::kInstalling,
       {Fx::kCountRevoked, Fx::kUnlink}},
      {"installing resync asked, no object", at(P::kInstalling), ev(E::kResyncAsked), kOk, P::kInstalling,
       {Fx::kTellResyncDone}},
      {"installing port stopped", at(P::kInstalling), ev(E::kPortStopped), Illegal::kOpsOutstanding, P::kInstalling,
       {}},
      {"installing flush", at(P::kInstalling), ev(E::kFlush), kOk, P::kInstalling, {Fx::kUnlink}},
  };
}

std::vector<Row> confirming_rows() {
  std::vector<Row> rows = {
      {"confirming taken", at(P::kConfirming), ok(E::kConfirmed, true), kOk, P::kInstalled, {Fx::kActivate},
       [](const State& n) { EXPECT_TRUE(n.was_installed); }},
      {"confirming refused", at(P::kConfirming), ok(E::kConfirmed, false), kOk, P::kRemoving, {Fx::kQueueRemoval},
       [](const State& n) { EXPECT_STREQ(n.why_removed, "destroyed"); }},
  };
  // Anything else is the provider's bug: it answers at once.
  for (int k = 0; k < kEventKinds; k++)
    if (static_cast<E>(k) != E::kConfirmed)
      rows.push_back({"confirming, another event", at(P::kConfirming), ev(static_cast<E>(k)), Illegal::kAwaitingAnswer,
                      P::kConfirming, {}});
  return rows;
}

std::vector<Row> installed_rows() {
  const std::vector<Fx> leave = {Fx::kFold, Fx::kDeactivate, Fx::kQueueRemoval};
  auto then = [&](std::vector<Fx> a) {
    a.insert(a.end(), leave.begin(), leave.end());
    return a;
  };
  return {
      {"installed requested", at(P::kInstalled), ev(E::kRequested), kOk, P::kInstalled, {}},
      {"installed go", at(P::kInstalled), ev(E::kGo), Illegal::kNotQueued, P::kInstalled, {}},
      {"installed submitted", at(P::kInstalled), ev(E::kSubmitted), Illegal::kNotCreating, P::kInstalled, {}},
      {"installed completed", at(P::kInstalled), done(Op::kFlow0), Illegal::kNothingOut, P::kInstalled, {}},
      {"installed confirmed", at(P::kInstalled), ev(E::kConfirmed), Illegal::kNotAsked, P::kInstalled, {}},
      {"installed aged", at(P::kInstalled), ev(E::kAged), kOk, P::kRemoving, then({Fx::kCountAged, Fx::kUnlink}),
       [](const State& n) { EXPECT_STREQ(n.why_removed, "aged"); }},
      {"installed closed", at(P::kInstalled), why(E::kClosed, "closing"), kOk, P::kRemoving, then({Fx::kUnlink}),
       [](const State& n) { EXPECT_STREQ(n.why_removed, "closing"); }},
      {"installed rules swapped", at(P::kInstalled), ok(E::kRulesSwapped, false), kOk, P::kRemoving,
       then({Fx::kCountRevoked, Fx::kUnlink})},
      {"installed rules swapped, same path", at(P::kInstalled), ok(E::kRulesSwapped, true), kOk, P::kInstalled, {}},
      {"installed resync asked", at(P::kInstalled), ev(E::kResyncAsked), kOk, P::kResyncing, {Fx::kSubmitQuery},
       [](const State& n) { EXPECT_EQ(n.pending, 1); }},
      {"installed resync asked, queue busy", at(P::kInstalled), ok(E::kResyncAsked, false), kOk, P::kInstalled,
       {Fx::kCountResyncDeferred, Fx::kTellResyncDone}},
      {"installed resync asked, no object", with(P::kInstalled, [](State& s) { s.ct_obj = false; }),
       ev(E::kResyncAsked), kOk, P::kInstalled, {Fx::kTellResyncDone}},
      {"installed port stopped", at(P::kInstalled), ev(E::kPortStopped), kOk, P::kIdle,
       {Fx::kDeactivate, Fx::kForget, Fx::kUnlink, Fx::kCountRemoved, Fx::kFreeSlot, Fx::kTellNotOffloaded}},
      {"installed flush", at(P::kInstalled), ev(E::kFlush), kOk, P::kRemoving, then({Fx::kUnlink}),
       [](const State& n) { EXPECT_STREQ(n.why_removed, "flush"); }},
  };
}

std::vector<Row> resyncing_rows() {
  const State updating = at(P::kResyncing);
  const State doomed = with(P::kResyncing, [](State& s) { s.doomed = true, s.why_removed = "closing"; });
  return {
      {"resyncing requested", updating, ev(E::kRequested), kOk, P::kResyncing, {}},
      {"resyncing go", updating, ev(E::kGo), Illegal::kNotQueued, P::kResyncing, {}},
      {"resyncing submitted", updating, ev(E::kSubmitted), Illegal::kNotCreating, P::kResyncing, {}},
      {"resyncing query read", updating, done(Op::kQuery), kOk, P::kResyncing, {Fx::kSubmitResyncUpdate},
       [](const State& n) { EXPECT_EQ(n.pending, 1); }},
      {"resyncing query read, tracker has none", updating, done(Op::kQuery, 0, false), kOk, P::kInstalled,
       {Fx::kTellResyncDone}},
      {"resyncing query refused", updating, done(Op::kQuery, EIO), kOk, P::kInstalled,
       {Fx::kFailResync, Fx::kTellResyncDone}, [](const State& n) { EXPECT_EQ(n.err, 0); }},
      {"resyncing written", updating, done(Op::kResync), kOk, P::kInstalled, {Fx::kCountResync, Fx::kTellResyncDone}},
      {"resyncing written, doomed", doomed, done(Op::kResync), kOk, P::kRemoving,
       {Fx::kCountResync, Fx::kTellResyncDone, Fx::kFold, Fx::kDeactivate, Fx::kQueueRemoval}},
      {"resyncing query read, doomed", doomed, done(Op::kQuery), kOk, P::kRemoving,
       {Fx::kTellResyncDone, Fx::kFold, Fx::kDeactivate, Fx::kQueueRemoval}},
      {"resyncing confirmed", updating, ev(E::kConfirmed), Illegal::kNotAsked, P::kResyncing, {}},
      {"resyncing aged", updating, ev(E::kAged), kOk, P::kResyncing, {Fx::kCountAged, Fx::kUnlink},
       [](const State& n) { EXPECT_TRUE(n.doomed); }},
      {"resyncing aged, doomed", doomed, ev(E::kAged), kOk, P::kResyncing, {}},
      {"resyncing closed", updating, why(E::kClosed, "closing"), kOk, P::kResyncing, {Fx::kUnlink}},
      {"resyncing rules swapped", updating, ok(E::kRulesSwapped, false), kOk, P::kResyncing,
       {Fx::kCountRevoked, Fx::kUnlink}},
      {"resyncing resync asked", updating, ev(E::kResyncAsked), kOk, P::kResyncing, {}},
      {"resyncing port stopped", updating, ev(E::kPortStopped), Illegal::kOpsOutstanding, P::kResyncing, {}},
      {"resyncing flush", updating, ev(E::kFlush), kOk, P::kResyncing, {Fx::kUnlink}},
  };
}

std::vector<Row> removing_rows() {
  const State flows_out = with(P::kRemoving, [](State& s) { s.pending = 2; });
  const State last_flow = with(P::kRemoving, [](State& s) { s.pending = 1, s.made = kMadeFlow1 | kMadeCt; });
  const State ct_out = with(P::kRemoving, [](State& s) { s.pending = 1, s.made = kMadeCt; });
  return {
      {"removing requested", at(P::kRemoving), ev(E::kRequested), kOk, P::kRemoving, {}},
      {"removing go", at(P::kRemoving), ev(E::kGo), kOk, P::kRemoving, {Fx::kSubmitDestroyFlows},
       [](const State& n) { EXPECT_EQ(n.pending, 2); }},
      {"removing go, object left", with(P::kRemoving, [](State& s) { s.made = kMadeCt; }), ev(E::kGo), kOk,
       P::kRemoving, {Fx::kSubmitDestroyCt}},
      {"removing go, nothing left", with(P::kRemoving, [](State& s) { s.made = 0; }), ev(E::kGo), kOk, P::kIdle,
       {Fx::kCountRemoved, Fx::kFreeSlot, Fx::kTellNotOffloaded}},
      {"removing go, operations out", flows_out, ev(E::kGo), Illegal::kNotQueued, P::kRemoving, {}},
      {"removing submitted", at(P::kRemoving), ev(E::kSubmitted), Illegal::kNotCreating, P::kRemoving, {}},
      {"removing completed, nothing out", at(P::kRemoving), done(Op::kDelFlow0), Illegal::kNothingOut, P::kRemoving,
       {}},
      {"removing one rule gone", flows_out, done(Op::kDelFlow0), kOk, P::kRemoving, {},
       [](const State& n) { EXPECT_EQ(n.made, kMadeFlow1 | kMadeCt); }},
      {"removing rules gone: the object next", last_flow, done(Op::kDelFlow1), kOk, P::kRemoving,
       {Fx::kSubmitDestroyCt}, [](const State& n) { EXPECT_EQ(n.pending, 1); }},
      {"removing a destroy refused: again", last_flow, done(Op::kDelFlow1, EBUSY), kOk, P::kRemoving,
       {Fx::kFailRemove, Fx::kRequeueRemoval}, [](const State& n) { EXPECT_EQ(n.made, kMadeFlow1 | kMadeCt); }},
      {"removing all gone", ct_out, done(Op::kDelCt), kOk, P::kIdle,
       {Fx::kCountRemoved, Fx::kFreeSlot, Fx::kTellNotOffloaded}},
      {"removing all gone, retried", with(P::kRemoving, [](State& s) {
         s.pending = 1, s.made = kMadeCt, s.retry = s.linked = true, s.was_installed = false;
       }),
       done(Op::kDelCt), kOk, P::kQueued, {Fx::kFreeSlot, Fx::kRequeueRetry}},
      {"removing confirmed", at(P::kRemoving), ev(E::kConfirmed), Illegal::kNotAsked, P::kRemoving, {}},
      {"removing aged", at(P::kRemoving), ev(E::kAged), Illegal::kNotInstalled, P::kRemoving, {}},
      {"removing closed, a retry's", with(P::kRemoving, [](State& s) { s.retry = s.linked = true; }),
       why(E::kClosed, "closing"), kOk, P::kRemoving, {Fx::kUnlink}, [](const State& n) { EXPECT_FALSE(n.linked); }},
      {"removing rules swapped", at(P::kRemoving), ok(E::kRulesSwapped, false), kOk, P::kRemoving, {}},
      {"removing resync asked", at(P::kRemoving), ev(E::kResyncAsked), kOk, P::kRemoving, {}},
      {"removing resync asked, a retry's", with(P::kRemoving, [](State& s) { s.retry = s.linked = true; }),
       ev(E::kResyncAsked), kOk, P::kRemoving, {Fx::kTellResyncDone}},
      {"removing port stopped", at(P::kRemoving), ev(E::kPortStopped), kOk, P::kIdle,
       {Fx::kForget, Fx::kCountRemoved, Fx::kFreeSlot, Fx::kTellNotOffloaded}},
      {"removing port stopped, operations out", flows_out, ev(E::kPortStopped), Illegal::kOpsOutstanding,
       P::kRemoving, {}},
      {"removing flush", at(P::kRemoving), ev(E::kFlush), kOk, P::kRemoving, {}},
  };
}

std::vector<Row> all_rows() {
  std::vector<Row> rows;
  for (auto part : {idle_queued_rows, creating_rows, installing_rows, confirming_rows, installed_rows, resyncing_rows,
                    removing_rows})
    for (Row& r : part()) rows.push_back(std::move(r));
  return rows;
}

std::vector<Fx> kinds(const Step& st) {
  std::vector<Fx> v;
  for (uint8_t i = 0; i < st.n; i++) v.push_back(st.fx[i].fx);
  return v;
}

std::string fx_list(const Step& st) {
  std::string s;
  for (uint8_t i = 0; i < st.n; i++) s += std::to_string(static_cast<int>(st.fx[i].fx)) + " ";
  return s;
}

TEST(LifecycleMachine, EveryRow) {
  for (const Row& r : all_rows()) {
    SCOPED_TRACE(r.name);
    const Step st = step(r.s, r.e);
    EXPECT_EQ(st.illegal, r.illegal) << illegal_name(st.illegal);
    EXPECT_EQ(st.next.phase, r.next) << phase_name(st.next.phase);
    EXPECT_EQ(kinds(st), r.fx) << "effects: " << fx_list(st);
    if (r.illegal != kOk) {
      EXPECT_TRUE(st.next == r.s) << "an illegal event changed the state";
    }
    if (r.check) r.check(st.next);
  }
}

// Every (phase, event) pair has a row.
TEST(LifecycleMachine, TableCoversEveryPair) {
  std::set<std::pair<int, int>> seen;
  for (const Row& r : all_rows()) seen.insert({static_cast<int>(r.s.phase), static_cast<int>(r.e.kind)});
  for (int p = 0; p < kPhases; p++)
    for (int k = 0; k < kEventKinds; k++)
      EXPECT_TRUE(seen.count({p, k})) << phase_name(static_cast<Phase>(p)) << " x "
                                      << event_name(static_cast<EventKind>(k)) << " has no row";
}

// Every illegal error has a name of its own.
TEST(LifecycleMachine, IllegalNamed) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(Illegal::kAwaitingAnswer); i++) names.insert(illegal_name(static_cast<Illegal>(i)));
  EXPECT_EQ(names.size(), static_cast<size_t>(Illegal::kAwaitingAnswer) + 1);
  EXPECT_EQ(names.count("?"), 0u);
}

// One connection through a whole life (HWS, a conntrack object), as the
// provider drives it, counting the operations the effects submit.
TEST(LifecycleMachine, WholeLife) {
  State s;
  auto go = [&](const Event& e, std::vector<Fx> want) {
    Step st = step(s, e);
    ASSERT_EQ(st.illegal, Illegal::kNone) << illegal_name(st.illegal) << " on " << event_name(e.kind) << " in "
                                          << phase_name(s.phase);
    EXPECT_EQ(kinds(st), want) << event_name(e.kind) << " in " << phase_name(s.phase);
    s = st.next;
  };
  go(ev(E::kRequested), {Fx::kEnqueue});
  s.ct_obj = true;  // its translation, when its turn comes (life::queued)
  go(ev(E::kGo), {Fx::kSubmitCtCreate});
  go(ev(E::kSubmitted), {Fx::kReserveRules});
  go(done(Op::kCtCreate), {Fx::kReleaseRules, Fx::kSubmitRules});
  go(done(Op::kFlow0), {});
  go(done(Op::kCtDir), {});
  go(done(Op::kFlow1), {Fx::kTellOffloaded});
  go(ok(E::kConfirmed, true), {Fx::kActivate});
  go(ev(E::kResyncAsked), {Fx::kSubmitQuery});
  go(done(Op::kQuery), {Fx::kSubmitResyncUpdate});
  go(done(Op::kResync), {Fx::kCountResync, Fx::kTellResyncDone});
  go(why(E::kClosed, "closing"), {Fx::kUnlink, Fx::kFold, Fx::kDeactivate, Fx::kQueueRemoval});
  go(ev(E::kGo), {Fx::kSubmitDestroyFlows});
  go(done(Op::kDelFlow1), {});
  go(done(Op::kDelFlow0), {Fx::kSubmitDestroyCt});
  go(done(Op::kDelCt), {Fx::kCountRemoved, Fx::kFreeSlot, Fx::kTellNotOffloaded});
  EXPECT_EQ(s.phase, P::kIdle);
  EXPECT_EQ(s.pending, 0);
  EXPECT_EQ(s.made, 0);
}

}  // namespace
}  // namespace dp::life
