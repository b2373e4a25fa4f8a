// How the supervisor serves, replaces and recovers versions: flips (admission routed to a
// version, the one it replaces retired to drain and then kept as the rollback target), rollback
// flips, unloads, drain polling, and what a crashed child leads to (restart in place, or back to
// the previous version within its probation).
#include "actors/supervisor/supervisor_internal.hpp"
#include "messages/errors.hpp"

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include <vector>

namespace bitnet::actors {

namespace {

void start_ticking(supervisor_pointer self) {
    if (!self->state.ticking) {
        self->state.ticking = true;
        self->send(self, msg::tick_atom_v);
    }
}

/// Points admission at `batcher` and `text` for `alias` (null: removes the alias), with the
/// version's `info` (admission checks requests against its vocabulary and context), then runs
/// `then` once admission has it (every request admission handed to the old batcher is queued there
/// by then).
template <class F>
void route_then(supervisor_pointer self, const std::string& alias, msg::batcher_actor batcher,
                msg::text_actor text, const msg::executor_info& info, F then) {
    auto adm = self->state.opt.admission;
    if (!adm)
        return then();
    self->request(adm, std::chrono::seconds(30), msg::route_atom_v, alias, std::move(batcher),
                  std::move(text), info)
        .then([then](bool) mutable { then(); },
              [then](const caf::error&) mutable {
                  // Admission is gone (shutdown): nothing routes anywhere any more.
                  then();
              });
}

/// Removes `alias` from admission, then runs `then` (as route_then).
template <class F>
void unroute_then(supervisor_pointer self, const std::string& alias, F then) {
    route_then(self, alias, msg::batcher_actor{}, msg::text_actor{}, msg::executor_info{},
               std::move(then));
}

/// The version that was serving `alias` is replaced: it drains, then stays as the rollback
/// target (its predecessor in that role is unloaded).
void retire(supervisor_pointer self, alias_rec& a, std::uint64_t old_serial,
            std::uint64_t new_serial) {
    auto* old = find_version(self, old_serial);
    if (a.previous && a.previous != new_serial && a.previous != old_serial)
        if (auto* p = find_version(self, a.previous)) {
            // No longer the rollback target: unloaded, once what still runs there is done.
            if (p->state == vstate::draining)
                p->unload_after_drain = true;
            else
                unload_version(self, *p);
        }
    a.previous = 0;
    if (!old || ended(old->state))
        return;
    a.previous = old_serial;
    a.prev_id = old->id;
    a.prev_path = old->order.path;
    a.prev_sha = old->sha256;
    a.prev_warmup = old->order.warmup;
    self->state.table.set_state(*old, vstate::draining);
    old->drain_deadline = sup_clock::now() + self->state.opt.drain_timeout;
    old->unload_after_drain = false;
    start_ticking(self);
}

void drained(supervisor_pointer self, version_rec& v) {
    auto& a = self->state.table.alias(v.alias);
    if (v.unload_after_drain || a.previous != v.serial)
        return unload_version(self, v);
    self->state.table.set_state(v, vstate::standby);
}

} // namespace

void flip(supervisor_pointer self, std::uint64_t serial) {
    auto* v = find_version(self, serial);
    route_then(self, v->alias, v->batcher, v->text, v->info, [self, serial] {
        auto* ver = find_version(self, serial);
        if (!ver || ended(ver->state))
            return;
        auto& a = self->state.table.alias(ver->alias);
        const auto old = a.active;
        const auto now = sup_clock::now();
        a.active = serial;
        a.served = true;
        const bool restarted = ver->restarting;
        ver->restarting = false;
        self->state.table.set_state(*ver, vstate::ready);
        if (!restarted) {
            ver->loaded_at = unix_ms() / 1000;
            ver->flipped_at = now;
            ver->probation_until = old ? now + self->state.opt.probation : sup_clock::time_point{};
        }
        if (old && old != serial)
            retire(self, a, old, serial);
        if (auto* op = self->state.table.find_op(ver->op)) {
            op->st.swap_us =
                std::chrono::duration_cast<std::chrono::microseconds>(now - op->t0).count();
            end_op(self, ver->op, "ready");
        }
        ver->op = 0;
        if (self->state.opt.on_serving)
            self->state.opt.on_serving(ver->alias, &ver->spec);
    });
}

void flip_back(supervisor_pointer self, const std::string& alias, std::uint64_t op) {
    auto& a = self->state.table.alias(alias);
    auto* prev = find_version(self, a.previous);
    prev->op = op;
    flip(self, prev->serial);
}

namespace {

/// Without keep_standby, a standby version is the rollback target only while its successor is
/// in probation; past it, `v` is unloaded here. True: still kept, to be looked at again (its
/// successor is in probation, or an operation of the alias is under way: a rollback that is
/// flipping to it, a load that will retire it).
bool standby_kept(supervisor_pointer self, version_rec& v, sup_clock::time_point now) {
    if (self->state.opt.keep_standby)
        return false;
    const auto& a = self->state.table.alias(v.alias);
    if (v.op != 0 || a.running_op != 0)
        return true;
    const auto* successor = a.previous == v.serial ? find_version(self, a.active) : nullptr;
    if (successor && now < successor->probation_until)
        return true;
    // Its path and checksum stay with the alias: a rollback loads it again.
    unload_version(self, v);
    return false;
}

} // namespace

void poll_drains(supervisor_pointer self) {
    bool any = false;
    const auto now = sup_clock::now();
    for (auto& [serial, v] : self->state.table.versions()) {
        if (v.state == vstate::standby) {
            any = standby_kept(self, v, now) || any;
            continue;
        }
        if (v.state != vstate::draining)
            continue;
        any = true;
        if (now > v.drain_deadline) {
            unload_version(self, v, "drain timeout: requests still running there were failed");
            continue;
        }
        if (v.drain_poll || !v.batcher)
            continue;
        v.drain_poll = true;
        const auto s = serial;
        self->request(v.batcher, std::chrono::seconds(5), msg::stats_atom_v)
            .then(
                [self, s](const msg::batcher_stats& bs) {
                    auto* ver = find_version(self, s);
                    if (!ver)
                        return;
                    ver->drain_poll = false;
                    if (ver->state == vstate::draining &&
                        bs.running + bs.waiting[0] + bs.waiting[1] + bs.waiting[2] == 0)
                        drained(self, *ver);
                },
                [self, s](const caf::error&) {
                    if (auto* ver = find_version(self, s))
                        ver->drain_poll = false;
                });
    }
    self->state.ticking = any;
    if (any)
        self->delayed_send(self, std::chrono::milliseconds(20), msg::tick_atom_v);
}

void on_child_down(supervisor_pointer self, version_rec& v, const std::string& why, bool executor) {
    auto& st = self->state;
    auto& a = st.table.alias(v.alias);
    switch (v.state) {
    case vstate::loading:
    case vstate::validating:
    case vstate::warming:
        return fail_version(self, v, why);
    case vstate::draining:
    case vstate::standby:
        return unload_version(self, v, why);
    case vstate::unloaded:
    case vstate::failed:
        return;
    case vstate::ready:
        break;
    }
    if (v.restarting)
        return fail_version(self, v, why);
    const auto now = sup_clock::now();
    auto* prev = find_version(self, a.previous);
    const bool prev_ok = prev && prev->batcher && prev->executor &&
                         (prev->state == vstate::draining || prev->state == vstate::standby);
    if (a.active == v.serial && now < v.probation_until && prev_ok && !a.unloading) {
        // Probation: the new version failed soon after its flip; the previous one takes over.
        const auto in_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - v.flipped_at).count();
        const auto reason = "version " + v.id + " crashed " + std::to_string(in_ms) +
                            " ms after its flip (probation): " + why + "; back to version " +
                            prev->id;
        spdlog::error("model '{}': {}", v.alias, reason);
        stop_pair(self, v);
        drop_spec(v);
        v.state = vstate::failed;
        v.failure = reason;
        a.previous = 0;
        a.prev_id.clear();
        a.prev_path.clear();
        a.prev_sha.clear();
        const auto op = st.table.begin_op(v.alias, "auto_rollback", prev->id, true, false);
        st.table.find_op(op)->st.failure = reason;
        const auto prev_serial = prev->serial;
        prev->op = op;
        flip(self, prev_serial);
        // The op ends "ready" in flip; keep the reason on it.
        return;
    }
    // Outside probation: the version restarts in place (bounded), as at start-up.
    if (v.restarts >= st.opt.max_restarts) {
        v.restartable = false;
        return fail_version(self, v, why);
    }
    ++v.restarts;
    v.failure = why;
    spdlog::warn("{}: {}; restarting it ({} of {})", log_name(v), why, v.restarts,
                 st.opt.max_restarts);
    stop_pair(self, v);
    // A crashed executor on a CUDA placement restarts on the next one (the CPU last): the
    // device that crashed is the likeliest cause, and the CPU can serve the same version.
    if (executor)
        advance_placement(self, v, why, "crashed");
    v.restarting = true;
    v.has_info = false;
    self->state.table.set_state(v, vstate::loading);
    if (a.active == v.serial && st.opt.admission)
        // Its route points at the pair that died: until the new pair routes, requests for the
        // alias are told to come back (503 model_loading), not sent to a dead batcher.
        self->send(st.opt.admission, msg::load_atom_v, v.alias);
    spawn_pair(self, v);
}

void forget_in_admission(supervisor_pointer self, const std::string& alias) {
    unroute_then(self, alias, [] {});
}

void unroute_and_unload(supervisor_pointer self, const std::string& alias) {
    unroute_then(self, alias, [self, alias] {
        auto& al = self->state.table.alias(alias);
        const auto active = al.active;
        al.active = 0;
        al.previous = 0;
        al.prev_path.clear();
        for (auto s : std::vector<std::uint64_t>(al.versions.begin(), al.versions.end())) {
            auto* v = find_version(self, s);
            if (!v || ended(v->state))
                continue;
            if (s == active || v->state == vstate::draining) {
                self->state.table.set_state(*v, vstate::draining);
                v->unload_after_drain = true;
                v->drain_deadline = sup_clock::now() + self->state.opt.drain_timeout;
                start_ticking(self);
            } else {
                // Standby, or still loading: nothing runs there.
                if (v->op && v->op != al.running_op)
                    end_op(self, v->op, "failed", "the alias was unloaded");
                v->op = 0;
                unload_version(self, *v);
            }
        }
        finish_unload_if_done(self, alias);
    });
}

} // namespace bitnet::actors
