// Internal to the supervisor's files (supervisor.cpp: the behaviour; supervisor_loader.cpp: the
// load pipeline up to a spawned pair; supervisor_swaps.cpp: flips, drains, rollbacks, crashes):
// the actor's state and the steps its handlers call. Each step runs on the supervisor's own
// thread, mutating its version_table and messaging its children, admission and itself.
#pragma once

#include "actors/supervisor/memory_budget.hpp"
#include "actors/supervisor/supervisor.hpp"
#include "actors/supervisor/version_table.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <string>

namespace bitnet::actors {

struct supervisor_state {
    supervisor_options opt;
    version_table table;
    bool ticking = false;
    bool stopping = false;
    static inline const char* name = "supervisor";
};

using supervisor_pointer = msg::supervisor_actor::stateful_pointer<supervisor_state>;

inline version_rec* find_version(supervisor_pointer self, std::uint64_t serial) {
    return self->state.table.find(serial);
}

/// Ends operation `op` and reports it to on_swap when the API counts it.
void end_op(supervisor_pointer self, std::uint64_t op, const std::string& state,
            std::string failure = {});
/// An ended version keeps only what the listing shows; a loader still working for it stops.
void drop_spec(version_rec& v);
/// Whether a failed request only saw its receiver go away (its down message says why).
[[nodiscard]] bool receiver_down(const caf::error& e);

// ---- supervisor_loader.cpp: bringing a version in -------------------------------------------

/// A new version record for `order` (as operation `op`), started at once; `prebuilt`: a spec
/// built by the caller (start-up models); `expect_sha`: a rollback by reload needs this file.
std::uint64_t new_version(supervisor_pointer self, const msg::load_order& order, std::uint64_t op,
                          const model_spec* prebuilt = nullptr, std::string expect_sha = {});
/// (Re)starts version `serial`: its loader thread, or straight its executor and batcher.
void start_version(supervisor_pointer self, std::uint64_t serial);
/// Spawns the executor, checks its real memory figures, warms it up, spawns the batcher and the
/// text actor and flips the alias to it.
void spawn_pair(supervisor_pointer self, version_rec& v);
/// The loader thread's "prepared" stage: the file's identity checked, room made, pair spawned.
void on_prepared(supervisor_pointer self, version_rec& v);
/// Stops the version's executor, batcher and text actor (no down message follows).
void stop_pair(supervisor_pointer self, version_rec& v);
/// A version that will not serve: the alias keeps what it serves; the operation ends failed.
/// Start-up versions try again (bounded).
void fail_version(supervisor_pointer self, version_rec& v, std::string why);
/// "model 'alias'", with " version id" once it has one: how the supervisor's log lines name a
/// version.
std::string log_name(const version_rec& v);
/// Unloads `v` (what it holds goes; its record stays listed), with `note` as its failure text.
void unload_version(supervisor_pointer self, version_rec& v, std::string note = {});
/// Ends an unload of `alias` once nothing of it is resident.
void finish_unload_if_done(supervisor_pointer self, const std::string& alias);

// ---- supervisor_devices.cpp: device fallback -------------------------------------------------

/// Moves `v`'s executor order to the next placement of its device list after `why` (its failure
/// on the current one, classed `reason_class`), counting and reporting the fallback. False when
/// there is none (the current placement is the CPU, or `v` has no spec).
bool advance_placement(supervisor_pointer self, version_rec& v, const std::string& why,
                       const std::string& reason_class);
/// The executor of `v` failed on its placement before serving (load, warm-up, a restart's load):
/// it starts again on the next placement. False when there is none (the caller fails `v`).
bool fall_back(supervisor_pointer self, version_rec& v, const std::string& why,
               const std::string& reason_class);
/// fall_back, else fail_version.
void fail_on_device(supervisor_pointer self, version_rec& v, const std::string& why,
                    const std::string& reason_class);

// ---- supervisor_swaps.cpp: serving, replacing, recovering -----------------------------------

/// Points admission at version `serial` for its alias, then marks it ready and retires the
/// version it replaces.
void flip(supervisor_pointer self, std::uint64_t serial);
/// Back to the alias's resident previous version, as operation `op`.
void flip_back(supervisor_pointer self, const std::string& alias, std::uint64_t op);
/// Tells admission that `alias` is unknown from now on (the table forgot it): the failure it may
/// hold for the alias goes too.
void forget_in_admission(supervisor_pointer self, const std::string& alias);
/// Removes `alias` from admission, then drains what serves it and unloads the rest.
void unroute_and_unload(supervisor_pointer self, const std::string& alias);
/// The periodic check of draining versions (tick).
void poll_drains(supervisor_pointer self);
/// A child of `v` stopped unasked: fail, restart in place, or auto-rollback in probation.
/// `executor`: the child was its executor (a crash on a non-CPU placement restarts on the next
/// placement of its device list).
void on_child_down(supervisor_pointer self, version_rec& v, const std::string& why,
                   bool executor = false);

} // namespace bitnet::actors
