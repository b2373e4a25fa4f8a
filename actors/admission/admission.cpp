#include "actors/admission/admission.hpp"

#include "actors/admission/admission_state.hpp"
#include "actors/cluster/stream_relay.hpp"
#include "actors/trace_spans.hpp"
#include "messages/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

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

msg::executor_info routing_info(const msg::executor_info& info) {
    msg::executor_info out;
    out.device = info.device;
    out.architecture = info.architecture;
    out.n_ctx = info.n_ctx;
    out.n_vocab = info.n_vocab;
    out.kv_block_tokens = info.kv_block_tokens;
    out.kv_blocks_total = info.kv_blocks_total;
    out.eog_ids = info.eog_ids;
    out.format = info.format;
    out.parameters = info.parameters;
    return out;
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
    BITNET_TRY(check_ids(req.stop_token_ids, lim.n_vocab, "stop_token_ids"));
    for (const auto& e : req.params.logit_bias)
        if (e.token < 0 || static_cast<std::uint32_t>(e.token) >= lim.n_vocab)
            return error{errc::invalid_argument,
                         "logit_bias names token id " + std::to_string(e.token) +
                             ", outside the model's vocabulary of " + std::to_string(lim.n_vocab) +
                             " tokens (ids 0.." + std::to_string(lim.n_vocab - 1) + ")",
                         "logit_bias"};
    return {};
}

namespace admission_detail {

/// The key's quota refuses `req` (429 with the seconds until it may send again), or nothing; a
/// request it lets through is counted.
std::optional<caf::error> quota_refusal(admission_state& st, const msg::generate_request& req) {
    if (const auto wait_s = st.quota.take(req.client_key, clock::now(), std::max(req.n, 1u));
        wait_s > 0)
        return msg::to_caf_error(errc::quota_exceeded,
                                 "quota exceeded: this key may run " +
                                     std::to_string(st.quota.limits().requests_per_minute) +
                                     " sequences per minute (bursts of " +
                                     std::to_string(st.quota.limits().burst) +
                                     "; a request with n choices counts n)",
                                 wait_s);
    return std::nullopt;
}

} // namespace admission_detail

namespace {

using namespace admission_detail;

/// The Retry-After of a request for a model that is loading: loads take seconds (the 2B shape
/// maps and checks in a few), so a client's first retry is likely to find it served.
constexpr std::uint32_t k_loading_retry_after_s = 2;

/// A text or chat prompt: tokenized by the text actor of the version it is routed to now, then
/// checked and delegated to that version's batcher, which answers the sink.
caf::result<msg::request_id> submit_text(admission_pointer self, const std::string& alias,
                                         const model_queue& q, msg::generate_request req,
                                         msg::sink_actor sink, shared_span_ptr span) {
    if (!q.text)
        return msg::to_caf_error(
            {errc::invalid_argument,
             "this server has no tokenizer for text prompts; send the prompt as token ids",
             req.text.form == msg::prompt_form::chat ? "messages" : "prompt"});
    auto prompt = std::move(req.text);
    req.text = {};
    req.model = alias;
    version_route v{q.batcher, q.limits, q.route};
    ++self->state.tokenizing[v.route];
    auto rp = self->make_response_promise<msg::request_id>();
    auto tok =
        span ? open_shared_span(req.trace.under(span->s->ctx.span), "bitnet.tokenize") : nullptr;
    self->request(q.text, std::chrono::seconds(60), msg::encode_atom_v, std::move(prompt))
        .then(
            [self, rp, v, req = std::move(req), sink = std::move(sink), span,
             tok](std::vector<msg::token_id>& ids) mutable {
                if (tok)
                    span_attr(tok->s, "bitnet.prompt_tokens",
                              static_cast<std::int64_t>(ids.size()));
                if (tok)
                    close_span(tok->s);
                req.prompt = std::move(ids);
                admit(self, std::move(rp), std::move(v), std::move(req), std::move(sink),
                      std::move(span), true);
            },
            [self, rp, v, span, tok](caf::error& e) mutable {
                if (tok) {
                    span_error(tok->s, caf::to_string(e));
                    close_span(tok->s);
                }
                if (span) {
                    span_error(span->s, caf::to_string(e));
                    close_span(span->s);
                }
                rp.deliver(std::move(e));
                handed_over(self, v.route);
            });
    return rp;
}

/// Why this node refuses `alias` although the supervisor holds it: its new version is still
/// loading (503 with a Retry-After), or its last version failed and nothing serves it (503 with
/// the failure). None for an alias the supervisor does not hold.
std::optional<caf::error> not_served_yet(const admission_state& st, const std::string& alias) {
    if (st.loading.count(alias) > 0)
        return msg::to_caf_error(errc::unavailable,
                                 "model '" + alias + "' is loading; retry in a moment",
                                 k_loading_retry_after_s);
    if (auto u = st.unserved.find(alias); u != st.unserved.end())
        return msg::to_caf_error(unserved_error(alias, u->second));
    return std::nullopt;
}

/// The text actor of the version `alias` serves, for /v1/tokenize and /v1/detokenize.
caf::expected<msg::text_actor> text_side(admission_pointer self, const std::string& alias) {
    auto it = self->state.models.find(alias);
    if (it == self->state.models.end()) {
        // Served only by other nodes: their text side (the same file tokenizes the same).
        if (auto* r = best_remote(self->state, alias); r && r->view.text)
            return caf::actor_cast<msg::text_actor>(r->view.text);
        if (auto why = not_served_yet(self->state, alias))
            return std::move(*why);
        return msg::to_caf_error(errc::not_found, "no model '" + alias + "'");
    }
    if (!it->second.text)
        return msg::to_caf_error(errc::invalid_argument, "this server has no tokenizer loaded");
    return it->second.text;
}

/// An inference request at the door: refused (draining, unknown model, the checks of
/// `refusal`), or handed to the alias's current version: token ids straight to its batcher, text
/// and chat through its text actor first.
caf::result<msg::request_id> submit(admission_pointer self, msg::generate_request& req,
                                    msg::sink_actor& sink, const shared_span_ptr& span) {
    auto& st = self->state;
    if (st.draining)
        return msg::to_caf_error(errc::draining, "draining: the server is shutting down", 5);
    const auto alias = req.model.empty() ? default_alias(st) : req.model;
    const bool text = req.text.form != msg::prompt_form::ids;
    auto it = st.models.find(alias);
    // Another node's replica when it ranks before this node's (a faster device class, or the
    // same class and less work; actors/supervisor/device_placements.hpp), or this node has none.
    // Requests with n > 1 stay on this node when it serves the alias: the stream relay follows
    // one choice per request (a moved stream resumes from the tokens it delivered).
    if (it == st.models.end() && req.n > 1 && best_remote(st, alias) != nullptr)
        return msg::to_caf_error({errc::invalid_argument,
                                  "n > 1 is served by a node that holds model '" + alias +
                                      "' itself; this node only relays it (ask with n 1, or "
                                      "ask a node that serves it)",
                                  "n"});
    if (auto* r = best_remote(st, alias);
        r &&
        (it == st.models.end() || (req.n <= 1 && ranks_before(rank_of(*r), rank_of(it->second))))) {
        if (span) {
            span_attr(span->s, "bitnet.admission.outcome", std::string("relayed"));
            span_attr(span->s, "bitnet.replica.node", r->view.node);
        }
        return submit_remote(self, *r, std::move(req), std::move(sink));
    }
    if (it == st.models.end() && st.seen_remote.count(alias) > 0)
        return msg::to_caf_error(errc::replica_lost,
                                 "no replica of model '" + alias +
                                     "' is up in the cluster: the nodes that served it are down",
                                 5);
    if (it == st.models.end())
        if (auto why = not_served_yet(st, alias))
            return std::move(*why);
    if (it == st.models.end() && text)
        return msg::to_caf_error({errc::not_found, "no model '" + alias + "'",
                                  req.text.form == msg::prompt_form::chat ? "messages" : "prompt"});
    if (it == st.models.end())
        return msg::to_caf_error(errc::not_found,
                                 "model '" + alias + "' is not loaded or not ready");
    const auto& q = it->second;
    if (text)
        return submit_text(self, alias, q, std::move(req), std::move(sink), span);
    req.model = alias;
    auto rp = self->make_response_promise<msg::request_id>();
    admit(self, rp, {q.batcher, q.limits, q.route}, std::move(req), std::move(sink), span, false);
    return rp;
}

/// The supervisor points `alias` at a version (a null batcher removes it). Answered once no
/// request routed to the replaced version is still being tokenized.
caf::result<bool> route(admission_pointer self, const std::string& alias,
                        msg::batcher_actor batcher, msg::text_actor text,
                        const msg::executor_info& info) {
    auto& st = self->state;
    std::uint64_t replaced = 0;
    if (auto it = st.models.find(alias); it != st.models.end())
        replaced = it->second.route;
    // Served again (a version that works), or unloaded: either way no longer failed or loading.
    st.unserved.erase(alias);
    st.loading.erase(alias);
    st.startup_pending.erase(alias); // served now (or unloaded): no longer waited for
    if (!batcher) {
        // The alias is being unloaded: new requests for it are refused from now on.
        st.models.erase(alias);
    } else {
        auto& q = st.models[alias];
        q.batcher = std::move(batcher);
        q.text = std::move(text);
        q.limits = limits_of(info);
        q.info = info;
        q.route = st.next_route++;
        q.polled_at = {};
        if (!st.ticking) {
            st.ticking = true;
            self->send(self, msg::tick_atom_v);
        }
    }
    // Requests routed to the replaced version and still being tokenized go to its batcher
    // first: its drain starts from this answer.
    if (replaced != 0 && st.tokenizing.count(replaced) > 0) {
        auto rp = self->make_response_promise<bool>();
        st.held_routes.emplace_back(replaced, rp);
        return rp;
    }
    return true;
}

/// A submission inside its admission span: receipt to hand-over (tokenization included), or
/// the refusal with its reason.
caf::result<msg::request_id> submit_traced(admission_pointer self, msg::generate_request& req,
                                           msg::sink_actor& sink) {
    auto span = open_shared_span(req.trace, "bitnet.admission");
    if (span)
        span_attr(span->s, "gen_ai.request.model",
                  req.model.empty() ? default_alias(self->state) : req.model);
    auto res = submit(self, req, sink, span);
    if (span && res.flag == caf::rt_error) {
        const auto err = msg::from_caf_error(res.err);
        span_attr(span->s, "bitnet.admission.outcome", std::string("refused"));
        span_attr(span->s, "bitnet.admission.reason", std::string(errc_name(err.value())));
        span_error(span->s, err.message);
    }
    return res;
}

/// Readiness: not while draining, and only while the default alias is served here or by a
/// remote replica.
std::tuple<bool, std::string> readiness(admission_state& st) {
    if (st.draining)
        return {false, "draining"};
    const auto alias = default_alias(st);
    // Every model the server starts with, not only the default: a second one still loading
    // would answer 503 model_loading to the traffic readiness lets in.
    if (!st.startup_pending.empty())
        return {false, "model '" + *st.startup_pending.begin() +
                           "' (configured at start) is not ready yet"};
    if (st.models.count(alias) == 0 && best_remote(st, alias) == nullptr)
        return {false, st.opt.default_model.empty() && alias.empty()
                           ? std::string("no model is served")
                           : "default model '" + alias + "' is not ready"};
    return {true, "ready"};
}

/// This node's replicas, as the cluster's heartbeats carry them. A draining node offers none:
/// peers stop routing to it at the next heartbeat.
std::vector<msg::replica_view> local_views(const admission_state& st) {
    std::vector<msg::replica_view> out;
    if (st.draining)
        return out;
    for (const auto& [alias, q] : st.models)
        out.push_back(local_view(st, alias, q));
    return out;
}

/// The other nodes' replicas, as the cluster actor last saw them (this node's own left out, and
/// any batcher already known to be gone).
void note_remote_views(admission_state& st, std::vector<msg::replica_view>& views) {
    st.remote.clear();
    for (auto& v : views)
        if (v.node != st.opt.node_name && v.batcher && !is_gone(st, v.batcher)) {
            st.seen_remote.insert(v.alias);
            st.remote[v.alias].push_back({std::move(v), 0, 0});
        }
}

msg::admission_actor::behavior_type admission_fn(admission_pointer self, admission_options opt) {
    self->state.quota = key_quota(opt.key_quota);
    self->state.opt = std::move(opt);
    self->state.startup_pending = {self->state.opt.startup_models.begin(),
                                   self->state.opt.startup_models.end()};
    relay_options ro;
    ro.node_name = self->state.opt.node_name;
    ro.admission = self;
    ro.on_migrated = self->state.opt.on_migrated;
    ro.on_batch = self->state.opt.on_relay_batch;
    self->state.relay = spawn_stream_relay(self->system(), std::move(ro));
    // The relay lives as long as its admission (and no longer).
    self->link_to(self->state.relay);
    return {
        [self](msg::submit_atom, msg::generate_request& req, msg::sink_actor& sink)
            -> caf::result<msg::request_id> { return submit_traced(self, req, sink); },
        [self](msg::cancel_atom, msg::request_id id) {
            // Request ids are unique across models; a batcher ignores ids it does not hold.
            for (auto& [alias, q] : self->state.models)
                self->send(q.batcher, msg::cancel_atom_v, id);
            self->send(self->state.relay, msg::cancel_atom_v, id);
        },
        [self](msg::drain_atom) { self->state.draining = true; },
        [self](msg::ready_atom) { return readiness(self->state); },
        [self](msg::route_atom, const std::string& alias, msg::batcher_actor batcher,
               msg::text_actor text, const msg::executor_info& info) -> caf::result<bool> {
            return route(self, alias, std::move(batcher), std::move(text), info);
        },
        [self](msg::fail_atom, msg::alias_failure& f) {
            // Nothing serves the alias any more: a route to a version that failed is gone too.
            self->state.models.erase(f.alias);
            self->state.loading.erase(f.alias);
            self->state.startup_pending.erase(f.alias); // failed: told so per request, not waited
            self->state.unserved[f.alias] = std::move(f.why);
        },
        [self](msg::load_atom, const std::string& alias) {
            // A new version of an alias nothing serves is loading, or the serving one restarts in
            // place after a crash (its route, to the pair that died, goes): its requests come
            // back later.
            self->state.models.erase(alias);
            self->state.unserved.erase(alias);
            self->state.loading.insert(alias);
        },
        [self](msg::tokenize_atom, const std::string& alias,
               msg::tokenize_order& order) -> caf::result<std::vector<msg::token_id>> {
            auto t = text_side(self, alias);
            if (!t)
                return t.error();
            return self->delegate(*t, msg::tokenize_atom_v, std::move(order));
        },
        [self](msg::encode_atom, const std::string& alias,
               msg::text_prompt& p) -> caf::result<std::vector<msg::token_id>> {
            // A prompt as the version would see it (a chat rendered by its template), counted
            // without running it (/v1/messages/count_tokens).
            auto t = text_side(self, alias);
            if (!t)
                return t.error();
            return self->delegate(*t, msg::encode_atom_v, std::move(p));
        },
        [self](msg::render_atom, const std::string& alias,
               msg::text_prompt& p) -> caf::result<std::string> {
            auto t = text_side(self, alias);
            if (!t)
                return t.error();
            return self->delegate(*t, msg::render_atom_v, std::move(p));
        },
        [self](msg::detokenize_atom, const std::string& alias,
               std::vector<msg::token_id>& ids) -> caf::result<std::string> {
            auto t = text_side(self, alias);
            if (!t)
                return t.error();
            return self->delegate(*t, msg::detokenize_atom_v, std::move(ids));
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
        [self](msg::replicas_atom) { return local_views(self->state); },
        [self](msg::cluster_atom, std::vector<msg::replica_view>& views) {
            note_remote_views(self->state, views);
        },
        [self](msg::place_atom, const msg::replica_query& q) -> caf::result<msg::replica_view> {
            return place(self, q.alias, q.version, q.gone);
        },
        [self](msg::down_atom, const std::string& node) {
            for (auto& [alias, rs] : self->state.remote)
                std::erase_if(rs, [&](const remote_replica& r) { return r.view.node == node; });
            restart_encodes(self, node);
            self->send(self->state.relay, msg::down_atom_v, node);
        },
    };
}

} // namespace

msg::admission_actor spawn_admission(caf::actor_system& sys, admission_options opt) {
    return sys.spawn(admission_fn, std::move(opt));
}

} // namespace bitnet::actors
