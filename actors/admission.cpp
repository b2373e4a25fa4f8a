#include "actors/admission.hpp"

#include "messages/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace bitnet::actors {

std::uint32_t retry_after_seconds(std::uint64_t waiting, double drain_per_s) {
    if (drain_per_s <= 0.0)
        return 1;
    const double s = std::ceil(static_cast<double>(waiting) / drain_per_s);
    return static_cast<std::uint32_t>(std::clamp(s, 1.0, 60.0));
}

request_limits limits_of(const msg::executor_info& info) {
    return {info.n_vocab, info.n_ctx, info.kv_block_tokens, info.kv_blocks_total};
}

namespace {

/// The first id of `ids` outside [0, n_vocab), as an error naming `field`.
result<void> check_ids(const std::vector<msg::token_id>& ids, std::uint32_t n_vocab,
                       const char* field) {
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || static_cast<std::uint32_t>(ids[i]) >= n_vocab)
            return error{errc::invalid_argument,
                         std::string(field) + " token id " + std::to_string(ids[i]) +
                             " at position " + std::to_string(i) +
                             " is outside the model's vocabulary of " + std::to_string(n_vocab) +
                             " tokens (ids 0.." + std::to_string(n_vocab - 1) + ")",
                         field};
    return {};
}

/// The prompt must leave room for one generated token; a longer max_tokens is not refused: the
/// generation stops at the context's end with finish_reason "length".
result<void> check_length(const request_limits& lim, std::size_t n_prompt) {
    const auto n = std::to_string(n_prompt);
    if (lim.n_ctx > 0 && n_prompt >= lim.n_ctx)
        return error{errc::prompt_too_long,
                     "the prompt has " + n + " tokens; the model's context length is " +
                         std::to_string(lim.n_ctx) +
                         " tokens, which must also hold at least one generated token",
                     "prompt"};
    const std::uint64_t pool = std::uint64_t{lim.kv_blocks_total} * lim.kv_block_tokens;
    if (pool > 0 && n_prompt + 1 > pool)
        return error{errc::prompt_too_long,
                     "the prompt has " + n + " tokens; the KV cache pool holds " +
                         std::to_string(pool) + " tokens (" + std::to_string(lim.kv_blocks_total) +
                         " blocks of " + std::to_string(lim.kv_block_tokens) +
                         "), which must also hold at least one generated token",
                     "prompt"};
    return {};
}

} // namespace

result<void> check_request(const request_limits& lim, const msg::generate_request& req) {
    BITNET_TRY(check_length(lim, req.prompt.size()));
    if (lim.n_vocab == 0)
        return {};
    BITNET_TRY(check_ids(req.prompt, lim.n_vocab, "prompt"));
    return check_ids(req.stop_token_ids, lim.n_vocab, "stop_token_ids");
}

namespace {

using clock = std::chrono::steady_clock;

/// Admission's view of one model's queue.
struct model_queue {
    msg::batcher_actor batcher;
    request_limits limits;            ///< of the version `batcher` serves
    msg::batcher_stats last;          ///< as last polled
    std::uint32_t admitted_since = 0; ///< requests delegated since that poll
    std::uint64_t prompt_tokens_since = 0;
    double drain_per_s = 0.0; ///< finished requests per second, smoothed
    clock::time_point polled_at{};
};

struct admission_state {
    admission_options opt;
    key_quota quota{{}};
    std::map<std::string, model_queue> models;
    bool draining = false;
    bool ticking = false;
    static inline const char* name = "admission";
};

using admission_pointer = msg::admission_actor::stateful_pointer<admission_state>;

void poll(admission_pointer self) {
    for (auto& [alias, q] : self->state.models) {
        self->request(q.batcher, std::chrono::seconds(1), msg::stats_atom_v)
            .then(
                [self, name = alias](const msg::batcher_stats& s) {
                    auto it = self->state.models.find(name);
                    if (it == self->state.models.end())
                        return;
                    auto& mq = it->second;
                    const auto now = clock::now();
                    if (mq.polled_at != clock::time_point{} && s.finished >= mq.last.finished) {
                        const double dt = std::chrono::duration<double>(now - mq.polled_at).count();
                        if (dt > 0) {
                            const double rate =
                                static_cast<double>(s.finished - mq.last.finished) / dt;
                            mq.drain_per_s =
                                mq.drain_per_s == 0.0 ? rate : 0.8 * mq.drain_per_s + 0.2 * rate;
                        }
                    }
                    mq.last = s;
                    mq.polled_at = now;
                    mq.admitted_since = 0;
                    mq.prompt_tokens_since = 0;
                },
                [](const caf::error&) {
                    // A batcher that does not answer keeps its last figures; the supervisor
                    // handles its failure.
                });
    }
}

msg::admission_actor::behavior_type admission_fn(admission_pointer self, admission_options opt) {
    self->state.quota = key_quota(opt.key_quota);
    self->state.opt = std::move(opt);
    return {
        [self](msg::submit_atom, msg::generate_request& req,
               msg::sink_actor& sink) -> caf::result<msg::request_id> {
            auto& st = self->state;
            if (st.draining)
                return msg::to_caf_error(errc::queue_full, "draining: the server is shutting down",
                                         5);
            const auto alias = req.model.empty() ? st.opt.default_model : req.model;
            auto it = st.models.find(alias);
            if (it == st.models.end())
                return msg::to_caf_error(errc::not_found,
                                         "model '" + alias + "' is not loaded or not ready");
            auto& q = it->second;
            // The caller's errors first: no queue state makes them acceptable later.
            if (auto valid = check_request(q.limits, req); !valid)
                return msg::to_caf_error(valid.error());
            const std::uint64_t waiting =
                q.last.waiting[0] + q.last.waiting[1] + q.last.waiting[2] + q.admitted_since;
            const std::uint64_t waiting_tokens =
                q.last.waiting_prompt_tokens + q.prompt_tokens_since;
            if (waiting >= st.opt.max_waiting_requests ||
                waiting_tokens + req.prompt.size() > st.opt.max_waiting_prompt_tokens) {
                const auto ra = retry_after_seconds(waiting, q.drain_per_s);
                return msg::to_caf_error(errc::queue_full,
                                         "queue full: " + std::to_string(waiting) +
                                             " requests and " + std::to_string(waiting_tokens) +
                                             " prompt tokens waiting (caps " +
                                             std::to_string(st.opt.max_waiting_requests) + ", " +
                                             std::to_string(st.opt.max_waiting_prompt_tokens) + ")",
                                         ra);
            }
            // Counted only for requests the queue takes (a 503 does not use up the quota).
            if (const auto wait_s = st.quota.take(req.client_key, clock::now()); wait_s > 0)
                return msg::to_caf_error(errc::quota_exceeded,
                                         "quota exceeded: this key may send " +
                                             std::to_string(st.quota.limits().requests_per_minute) +
                                             " requests per minute (bursts of " +
                                             std::to_string(st.quota.limits().burst) + ")",
                                         wait_s);
            ++q.admitted_since;
            q.prompt_tokens_since += req.prompt.size();
            req.model = alias;
            return self->delegate(q.batcher, msg::submit_atom_v, std::move(req), std::move(sink));
        },
        [self](msg::cancel_atom, msg::request_id id) {
            // Request ids are unique across models; a batcher ignores ids it does not hold.
            for (auto& [alias, q] : self->state.models)
                self->send(q.batcher, msg::cancel_atom_v, id);
        },
        [self](msg::drain_atom) { self->state.draining = true; },
        [self](msg::ready_atom) -> std::tuple<bool, std::string> {
            const auto& st = self->state;
            if (st.draining)
                return {false, "draining"};
            if (!st.models.count(st.opt.default_model))
                return {false, "default model '" + st.opt.default_model + "' is not ready"};
            return {true, "ready"};
        },
        [self](msg::route_atom, const std::string& alias, msg::batcher_actor batcher,
               const msg::executor_info& info) {
            if (!batcher) {
                // The alias is being unloaded: new requests for it are refused from now on.
                self->state.models.erase(alias);
                return true;
            }
            auto& q = self->state.models[alias];
            q.batcher = std::move(batcher);
            q.limits = limits_of(info);
            q.polled_at = {};
            if (!self->state.ticking) {
                self->state.ticking = true;
                self->send(self, msg::tick_atom_v);
            }
            return true;
        },
        [self](msg::tick_atom) {
            poll(self);
            self->delayed_send(self, self->state.opt.poll_interval, msg::tick_atom_v);
        },
        [self](msg::stats_atom) {
            std::vector<msg::batcher_stats> out;
            for (const auto& [alias, q] : self->state.models)
                out.push_back(q.last);
            return out;
        },
    };
}

} // namespace

msg::admission_actor spawn_admission(caf::actor_system& sys, admission_options opt) {
    return sys.spawn(admission_fn, std::move(opt));
}

} // namespace bitnet::actors
