#include "actors/supervisor.hpp"

#include "messages/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <map>

namespace bitnet::actors {
namespace {

enum class model_state { loading, ready, failed };

struct model_slot {
    model_spec spec;
    model_state state = model_state::loading;
    std::string failure; ///< why it failed, for lookups and /health
    std::uint32_t restarts = 0;
    std::uint64_t generation = 0; ///< bumps on every (re)start; stale replies are ignored
    msg::executor_actor executor;
    msg::batcher_actor batcher;
    msg::executor_info info;
    std::int64_t loaded_at = 0; ///< unix seconds
};

const char* state_name(model_state s) {
    switch (s) {
    case model_state::loading:
        return "loading";
    case model_state::ready:
        return "ready";
    case model_state::failed:
        return "failed";
    }
    return "?";
}

struct supervisor_state {
    supervisor_options opt;
    std::map<std::string, model_slot> models;
    bool stopping = false;
    static inline const char* name = "supervisor";
};

using supervisor_pointer = msg::supervisor_actor::stateful_pointer<supervisor_state>;

void start_model(supervisor_pointer self, const std::string& alias);

void stop_pair(supervisor_pointer self, model_slot& m) {
    if (m.batcher) {
        self->demonitor(m.batcher.address());
        self->send_exit(m.batcher, caf::exit_reason::user_shutdown);
        m.batcher = nullptr;
    }
    if (m.executor) {
        self->demonitor(m.executor.address());
        self->send_exit(m.executor, caf::exit_reason::user_shutdown);
        m.executor = nullptr;
    }
}

void on_failure(supervisor_pointer self, const std::string& alias, std::string why) {
    auto& m = self->state.models.at(alias);
    stop_pair(self, m);
    m.failure = std::move(why);
    if (self->state.stopping)
        return;
    if (m.restarts >= self->state.opt.max_restarts) {
        m.state = model_state::failed;
        return;
    }
    ++m.restarts;
    start_model(self, alias);
}

void start_model(supervisor_pointer self, const std::string& alias) {
    auto& m = self->state.models.at(alias);
    m.state = model_state::loading;
    const auto gen = ++m.generation;
    // Loading runs on the executor's own thread; the supervisor only waits for its info.
    m.executor = spawn_executor(self->system(), m.spec.executor);
    self->monitor(m.executor);
    self->request(m.executor, caf::infinite, msg::info_atom_v)
        .then(
            [self, alias, gen](const msg::executor_info& info) {
                auto& slot = self->state.models.at(alias);
                if (slot.generation != gen || !slot.executor)
                    return;
                slot.info = info;
                auto bo = slot.spec.batcher;
                bo.model = alias;
                bo.model_version = slot.spec.version;
                bo.policy.n_ctx = info.n_ctx;
                bo.policy.kv_block_tokens = info.kv_block_tokens;
                bo.policy.kv_blocks_total = info.kv_blocks_total;
                bo.policy.eog_ids = info.eog_ids;
                slot.batcher = spawn_batcher(self->system(), bo, slot.executor);
                self->monitor(slot.batcher);
                slot.state = model_state::ready;
                slot.loaded_at = std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
                if (self->state.opt.admission)
                    self->send(self->state.opt.admission, msg::route_atom_v, alias, slot.batcher);
            },
            [self, alias, gen](const caf::error& err) {
                // The executor died while loading: the down message carries the reason; handle
                // it here only when no down message will come (it is already demonitored).
                auto& slot = self->state.models.at(alias);
                if (slot.generation == gen && slot.executor)
                    slot.failure = msg::from_caf_error(err).to_string();
            });
}

msg::supervisor_actor::behavior_type supervisor_fn(supervisor_pointer self,
                                                   supervisor_options opt) {
    self->state.opt = std::move(opt);
    for (auto& spec : self->state.opt.models) {
        auto& slot = self->state.models[spec.alias];
        slot.spec = spec;
    }
    self->set_down_handler([self](caf::down_msg& dm) {
        for (auto& [alias, m] : self->state.models) {
            const bool exec = m.executor && m.executor.address() == dm.source;
            const bool batch = m.batcher && m.batcher.address() == dm.source;
            if (!exec && !batch)
                continue;
            if (exec)
                m.executor = nullptr;
            else
                m.batcher = nullptr;
            auto why = std::string(exec ? "executor" : "batcher") + " of '" + alias +
                       "' stopped: " + msg::from_caf_error(dm.reason).to_string();
            on_failure(self, alias, std::move(why));
            return;
        }
    });
    self->set_exit_handler([self](caf::exit_msg& em) {
        // Ordered shutdown: children first, so the actor system can end.
        self->state.stopping = true;
        for (auto& [alias, m] : self->state.models)
            stop_pair(self, m);
        self->quit(em.reason);
    });
    for (auto& [alias, slot] : self->state.models)
        start_model(self, alias);
    return {
        [self](msg::route_atom, const std::string& alias) -> caf::result<msg::batcher_actor> {
            auto it = self->state.models.find(alias);
            if (it == self->state.models.end())
                return msg::to_caf_error(errc::not_found, "no model '" + alias + "'");
            const auto& m = it->second;
            if (m.state != model_state::ready)
                return msg::to_caf_error(
                    errc::not_found,
                    "model '" + alias + "' is " +
                        (m.state == model_state::loading ? "loading" : "failed: " + m.failure));
            return m.batcher;
        },
        [self](msg::info_atom, const std::string& alias) -> caf::result<msg::executor_info> {
            auto it = self->state.models.find(alias);
            if (it == self->state.models.end() || it->second.state != model_state::ready)
                return msg::to_caf_error(errc::not_found, "model '" + alias + "' is not ready");
            return it->second.info;
        },
        [self](msg::models_atom) {
            std::vector<msg::model_status> out;
            for (const auto& [alias, m] : self->state.models) {
                msg::model_status s;
                s.alias = alias;
                s.version = m.spec.version;
                s.state = state_name(m.state);
                s.failure = m.failure;
                s.path = m.spec.path;
                s.restarts = m.restarts;
                s.loaded_at = m.loaded_at;
                if (m.state == model_state::ready)
                    s.info = m.info;
                out.push_back(std::move(s));
            }
            return out;
        },
    };
}

} // namespace

msg::supervisor_actor spawn_supervisor(caf::actor_system& sys, supervisor_options opt) {
    return sys.spawn(supervisor_fn, std::move(opt));
}

} // namespace bitnet::actors
