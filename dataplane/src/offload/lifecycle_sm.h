// The lifecycle of one offloaded connection, as a pure function:
// step(state, event) -> (next state, effects). It decides; it does nothing.
// The rte_flow provider (lifecycle.cc) finds the connection, observes the
// facts an event carries (the rules' translation, the tracker's snapshot,
// the conntrack queue's room, the driver's errno), calls step(), and
// carries the effects out in order: operations through Submission
// (submission.h), answers to the tracker, its queues and its counters.
// Each operation an effect submits completes exactly once (Submission's
// rule), so the machine counts the operations out itself.
//
// Phases:
//   kIdle        the provider holds nothing of it (no slot, not queued)
//   kQueued      asked for, waiting for room in the flow queue (no slot)
//   kCreatingCt  its conntrack object's create is out (HWS: the rules
//                follow its completion; DV: the create's answer)
//   kInstalling  its rules (and the direction update) are out
//   kConfirming  all made: the tracker is asked to take it (it may have
//                dropped the connection meanwhile)
//   kInstalled   in the NIC, counted, aged, folded
//   kResyncing   in the NIC; its context's query or update is out
//   kRemoving    its destroys are out or queued
// A slot (a provider Job) holds the state from kCreatingCt/kInstalling to
// kRemoving's end (back to kIdle, or kQueued again for a retry).
//
// An event the provider never sends in a phase (a completion with nothing
// out, a tracker's answer it was not asked for, ...) is refused with a
// named error (`Illegal`) and the state is left as it was.
#pragma once

#include <cstdint>

namespace dp::life {

enum class Phase : uint8_t {
  kIdle,
  kQueued,
  kCreatingCt,
  kInstalling,
  kConfirming,
  kInstalled,
  kResyncing,
  kRemoving,
};
constexpr int kPhases = 8;

// The operations of a connection, as their completions name them.
enum class Op : uint8_t {
  kCtCreate,
  kFlow0,
  kCtDir,
  kFlow1,
  kDelFlow0,
  kDelFlow1,
  kDelCt,
  kQuery,
  kResync,
};

enum class EventKind : uint8_t {
  kRequested,     // the tracker: established (why: the provider refused it, or null)
  kGo,            // the flow queue has room: submit what comes next (why: refused on a second look)
  kSubmitted,     // the conntrack object's create was handed over (ok: the driver took it at once)
  kCompleted,     // an operation completed (op, err: 0 or the driver's errno; tracked: query's snapshot)
  kConfirmed,     // the tracker's answer to kTellOffloaded (ok: it took it)
  kAged,          // idle age_s in the NIC (its rules' AGE or counters)
  kClosed,        // the tracker: closing or destroyed (why)
  kRulesSwapped,  // a new rule set (ok: the connection's path is the same under it)
  kResyncAsked,   // the tracker: a segment the NIC refused (ok: the conntrack queue has room)
  kPortStopped,   // a port it uses stopped: what the NIC held of it went with it
  kFlush,         // shutdown: everything leaves the NIC
};
constexpr int kEventKinds = 11;

struct Event {
  EventKind kind;
  const char* why = nullptr;
  bool ok = true;
  Op op = Op::kCtCreate;
  int err = 0;
  bool tracked = true;
};

// Refusal reasons the machine itself names.
inline constexpr const char kWhyGone[] = "gone";        // the tracker has no snapshot of it: nothing to tell
inline constexpr const char kWhyBacklog[] = "backlog";  // the queue is full

// Installs tried for a connection refused for a resource that frees by
// itself (EAGAIN, EBUSY).
constexpr uint8_t kBusyTries = 10;
enum Made : uint8_t { kMadeCt = 1, kMadeFlow0 = 2, kMadeFlow1 = 4, kMadeFlows = kMadeFlow0 | kMadeFlow1 };

struct State {
  Phase phase = Phase::kIdle;
  bool ct_obj = false;          // a conntrack object tracks it (aso)
  bool sws = false;             // DV software steering: operations complete at once
  bool linked = false;          // the provider's live entry names this slot
  bool doomed = false;          // remove once the operations out complete
  bool retry = false;           // offered again once removed (a resource that frees by itself)
  bool rules_reserved = false;  // HWS: queue room held for its rules until its object is ready
  bool was_installed = false;   // reached kInstalled (its removal is counted)
  uint8_t pending = 0;          // operations out
  uint8_t made = 0;             // Made bits: what exists in the NIC
  uint8_t tries = 0;            // installs tried
  int err = 0;                  // first failure of the operations out
  const char* why_removed = "";

  bool operator==(const State&) const = default;
};

enum class Fx : uint8_t {
  kEnqueue,             // into the install queue (and the live entries)
  kUnlink,              // out of the live entries
  kRequeueRetry,        // back into the retry queue, with its tries
  kRefuse,              // count refused_<why>
  kCountBacklog,        // count backlog_drops
  kTellNoOffload,       // tracker: keep it in software
  kTellOffloaded,       // tracker: it is in the NIC (answers with kConfirmed)
  kTellNotOffloaded,    // tracker: it left the NIC
  kTellResyncDone,      // tracker: the resync asked for is over
  kSubmitCtCreate,      // its conntrack object (answers with kSubmitted)
  kReserveRules,        // hold the queue room of its rules
  kReleaseRules,        // give it back
  kSubmitRules,         // both directions' rules (and the direction update)
  kSubmitDestroyFlows,  // destroy the rules in `made`
  kSubmitDestroyCt,     // destroy the conntrack object
  kSubmitQuery,         // read the object's context
  kSubmitResyncUpdate,  // write the merged context back
  kQueueRemoval,        // into the removal queue, then submit what has room (answers with kGo)
  kRequeueRemoval,      // into the removal queue again (a destruction failed; answers with kGo)
  kHoldInstalls,        // pause installs (a transient refusal)
  kCountRetry,
  kFailInstall,  // count failed_<errno reason> (err)
  kFailRemove,   // count failed_remove_<errno reason> (err)
  kFailResync,   // count failed_resync_<errno reason> (err)
  kCountResync,
  kCountResyncDeferred,
  kActivate,    // counted installed (installed, offloads, offloads_aso), aged and folded from now on
  kFold,        // fold its counters into the tracker one last time
  kDeactivate,  // no longer installed
  kCountAged,
  kCountRevoked,
  kCountRemoved,
  kForget,    // the NIC freed it with the port: drop the handles, destroy nothing
  kFreeSlot,  // the slot is free again
};

struct Effect {
  Fx fx;
  const char* why = nullptr;  // kRefuse
  int err = 0;                // kFail*
  uint8_t made = 0;           // kSubmitDestroyFlows: which rules
};

enum class Illegal : uint8_t {
  kNone,
  kNothingOut,       // a completion with no operation out
  kNotQueued,        // kGo for a connection neither queued nor being removed
  kNotCreating,      // kSubmitted outside the conntrack object's create
  kNotAsked,         // kConfirmed outside kConfirming
  kNotInstalled,     // kAged outside kInstalled/kResyncing
  kOpsOutstanding,   // kPortStopped with operations out (the provider drains first)
  kAwaitingAnswer,   // anything but kConfirmed in kConfirming
};
const char* illegal_name(Illegal e);
const char* phase_name(Phase p);
const char* event_name(EventKind k);

struct Step {
  State next;
  Illegal illegal = Illegal::kNone;
  uint8_t n = 0;
  Effect fx[12];

  void add(Effect e) { fx[n++] = e; }
  bool has(Fx f) const {
    for (uint8_t i = 0; i < n; i++)
      if (fx[i].fx == f) return true;
    return false;
  }
};

// A connection asked for, about to be queued or given a slot: `tries`
// installs tried before, `ct_obj` from its translation.
State queued(uint8_t tries, bool ct_obj, bool sws);

Step step(const State& s, const Event& e);

// It counts as installed (aged, folded, resynced).
inline bool installed(const State& s) { return s.phase == Phase::kInstalled || s.phase == Phase::kResyncing; }
// Its aged report is for it (not a stale one of a connection before).
inline bool ageable(const State& s) { return installed(s) && !s.doomed; }

}  // namespace dp::life
