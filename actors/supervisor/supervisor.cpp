// The supervisor actor: its behaviour is the list of messages it answers, each a short handler
// over the version table (version_table.hpp) and the lifecycle steps (supervisor_loader.cpp,
// supervisor_swaps.cpp).
#include "actors/supervisor/device_placements.hpp"
#include "actors/supervisor/supervisor_internal.hpp"
#include "messages/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <vector>

namespace bitnet::actors {
namespace {

caf::result<msg::batcher_actor> route_of(supervisor_pointer self, const std::string& alias) {
    auto& table = self->state.table;
    auto* a = table.find_alias(alias);
    if (a == nullptr || a->versions.empty())
        return msg::to_caf_error(errc::not_found, "no model '" + alias + "'");
    if (auto* v = find_version(self, a->active); v && v->state == vstate::ready && v->batcher)
        return v->batcher;
    const auto m = table.alias_view(alias, *a);
    return msg::to_caf_error(errc::not_found, "model '" + alias + "' is " + m.state +
                                                  (m.failure.empty() ? "" : ": " + m.failure));
}

caf::result<msg::executor_info> info_of(supervisor_pointer self, const std::string& alias) {
    auto* a = self->state.table.find_alias(alias);
    auto* v = a == nullptr ? nullptr : find_version(self, a->active);
    if (!v || v->state != vstate::ready || !v->has_info)
        return msg::to_caf_error(errc::not_found, "model '" + alias + "' is not ready");
    return v->info;
}

std::vector<msg::model_status> list_models(supervisor_pointer self) {
    std::vector<msg::model_status> out;
    for (const auto& [alias, a] : self->state.table.aliases())
        if (!a.versions.empty())
            out.push_back(self->state.table.alias_view(alias, a));
    return out;
}

msg::operation_ticket load(supervisor_pointer self, const msg::load_order& order) {
    if (order.alias.empty() || order.path.empty())
        return refuse("invalid", "a load needs an alias and a path", order.alias);
    // The OS would read the path only up to the NUL: another file than the one named.
    if (order.path.find('\0') != std::string::npos)
        return refuse("invalid", "path must not contain a NUL byte", order.alias);
    if (!self->state.opt.make_spec)
        return refuse("invalid", "this server cannot load models at run time", order.alias);
    if (auto b = self->state.table.busy(order.alias))
        return *b;
    const auto op = self->state.table.begin_op(order.alias, "load", order.version);
    new_version(self, order, op);
    return self->state.table.ticket(op);
}

msg::operation_ticket rollback(supervisor_pointer self, const std::string& alias) {
    auto& table = self->state.table;
    auto* a = table.find_alias(alias);
    if (a == nullptr || !table.has_resident(*a))
        return refuse("not_found", "no model '" + alias + "'", alias);
    if (auto b = table.busy(alias))
        return *b;
    auto* prev = find_version(self, a->previous);
    const bool resident_prev = prev && prev->batcher && prev->executor &&
                               (prev->state == vstate::draining || prev->state == vstate::standby);
    if (!resident_prev && a->prev_path.empty())
        return refuse("invalid", "'" + alias + "' has no previous version to roll back to", alias);
    const auto op = table.begin_op(alias, "rollback", a->prev_id);
    if (resident_prev) {
        flip_back(self, alias, op);
    } else {
        msg::load_order o;
        o.alias = alias;
        o.path = a->prev_path;
        o.version = a->prev_id;
        o.warmup = a->prev_warmup;
        new_version(self, o, op, nullptr, a->prev_sha);
    }
    return table.ticket(op);
}

msg::operation_ticket unload(supervisor_pointer self, const std::string& alias) {
    auto& table = self->state.table;
    auto* a = table.find_alias(alias);
    if (a != nullptr && table.only_failed(*a)) {
        // Nothing to drain: the alias and its history go at once (the ticket's operation has
        // ended "unloaded"; the alias is no longer listed).
        const auto op = table.begin_op(alias, "unload", {});
        end_op(self, op, "unloaded");
        auto t = table.ticket(op);
        table.forget_alias(alias);
        forget_in_admission(self, alias);
        return t;
    }
    if (a == nullptr || !table.has_resident(*a))
        return refuse("not_found", "no model '" + alias + "'", alias);
    if (auto b = table.busy(alias))
        return *b;
    const auto* act = find_version(self, a->active);
    const auto op = table.begin_op(alias, "unload", act ? act->id : std::string{});
    a->unloading = true;
    unroute_and_unload(self, alias);
    return table.ticket(op);
}

/// The test hook: kills the serving executor of `alias` as a crash would.
void inject_crash(supervisor_pointer self, const std::string& alias) {
    auto* a = self->state.table.find_alias(alias);
    if (a == nullptr)
        return;
    if (auto* v = find_version(self, a->active); v && v->executor)
        self->send_exit(v->executor, caf::make_error(caf::sec::runtime_error,
                                                     "crash injected by the test hook"));
}

/// The watchdog: a batcher saw `exec` run past step_timeout_ms. Its version is replaced as if the
/// executor had crashed (a restart in place, or the probation's rollback, or an unload when it was
/// only draining or standing by), without waiting for a down message the stuck thread would send
/// only when its step ends: stop_pair demonitors it and sets its cancel flag, so the stuck
/// executor is never kept, neither serving nor as a rollback target.
void on_stall(supervisor_pointer self, const msg::executor_actor& exec, const std::string& why) {
    for (auto& [serial, v] : self->state.table.versions()) {
        if (!v.executor || v.executor != exec || ended(v.state))
            continue;
        ++v.stalls;
        if (self->state.opt.on_stall)
            self->state.opt.on_stall(v.alias);
        spdlog::error("model '{}' version {}: {}; replacing its executor", v.alias, v.id, why);
        on_child_down(self, v, why, true);
        return;
    }
}

/// A loader thread's progress report for version `serial`.
void on_stage(supervisor_pointer self, std::uint64_t serial, const std::string& stage,
              const std::string& failure) {
    auto* v = find_version(self, serial);
    if (!v || ended(v->state) || !v->prep)
        return;
    if (stage == "validating")
        self->state.table.set_state(*v, vstate::validating);
    else if (stage == "failed")
        fail_version(self, *v, failure);
    else if (stage == "prepared")
        on_prepared(self, *v);
}

void on_down(supervisor_pointer self, const caf::down_msg& dm) {
    for (auto& [serial, v] : self->state.table.versions()) {
        const bool exec = v.executor && v.executor.address() == dm.source;
        const bool batch = v.batcher && v.batcher.address() == dm.source;
        if (!exec && !batch)
            continue;
        if (exec)
            v.executor = nullptr;
        else
            v.batcher = nullptr;
        const auto reason = msg::from_caf_error(dm.reason);
        // An executor that ends before it serves failed on its placement (its load, or a
        // restart's): the next placement of the version's device list takes over, if any.
        const bool before_serving = v.state == vstate::loading || v.state == vstate::validating ||
                                    v.state == vstate::warming || v.restarting;
        if (exec && before_serving &&
            fall_back(self, v, reason.message, fallback_reason_class(reason.message)))
            return;
        auto why = std::string(exec ? "executor" : "batcher") + " of '" + v.alias + "' (" +
                   (v.id.empty() ? "new version" : "version " + v.id) +
                   ") stopped: " + reason.to_string();
        on_child_down(self, v, why, exec);
        return;
    }
}

/// Ordered shutdown: children first, so the actor system can end.
void on_exit(supervisor_pointer self, const caf::exit_msg& em) {
    self->state.stopping = true;
    for (auto& [serial, v] : self->state.table.versions()) {
        if (v.cancel)
            v.cancel->store(true); // a loader thread would hold up the actor system's end
        stop_pair(self, v);
    }
    self->quit(em.reason);
}

/// The versions configured at start-up: restarted (bounded) after a failure or a crash.
void load_initial(supervisor_pointer self) {
    auto& table = self->state.table;
    for (const auto& spec : self->state.opt.models) {
        msg::load_order o;
        o.alias = spec.alias;
        o.path = spec.path;
        o.version = spec.version;
        new_version(self, o, table.begin_op(spec.alias, "load", spec.version, false), &spec);
    }
    for (const auto& order : self->state.opt.initial) {
        const auto serial =
            new_version(self, order, table.begin_op(order.alias, "load", order.version, false));
        table.find(serial)->restartable = true;
    }
}

msg::supervisor_actor::behavior_type supervisor_fn(supervisor_pointer self,
                                                   supervisor_options opt) {
    self->state.opt = std::move(opt);
    self->set_down_handler([self](caf::down_msg& dm) { on_down(self, dm); });
    self->set_exit_handler([self](caf::exit_msg& em) { on_exit(self, em); });
    load_initial(self);
    return {
        [self](msg::route_atom, const std::string& alias) { return route_of(self, alias); },
        [self](msg::info_atom, const std::string& alias) { return info_of(self, alias); },
        [self](msg::models_atom) { return list_models(self); },
        [self](msg::load_atom, msg::load_order order) { return load(self, order); },
        [self](msg::rollback_atom, const std::string& alias) { return rollback(self, alias); },
        [self](msg::unload_atom, const std::string& alias) { return unload(self, alias); },
        [self](msg::crash_atom, const std::string& alias) { inject_crash(self, alias); },
        [self](msg::stalled_atom, msg::executor_actor exec, const std::string& why) {
            on_stall(self, exec, why);
        },
        [self](msg::stage_atom, const msg::load_progress& p) {
            on_stage(self, p.serial, p.stage, p.failure);
        },
        [self](msg::tick_atom) { poll_drains(self); },
    };
}

} // namespace

msg::supervisor_actor spawn_supervisor(caf::actor_system& sys, supervisor_options opt) {
    return sys.spawn(supervisor_fn, std::move(opt));
}

} // namespace bitnet::actors
