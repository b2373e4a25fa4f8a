#include "actors/cluster/stream_relay.hpp"

#include "actors/cluster/wire_size.hpp"
#include "actors/trace_spans.hpp"
#include "messages/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <unordered_map>

namespace bitnet::actors {

namespace {

/// One request placed on another node, and what it has delivered.
struct relayed {
    msg::sink_actor sink;
    /// The request as the client's admission made it, without any resumed tail: its prompt is
    /// the client's prompt.
    msg::generate_request base;
    /// Every generated token id the sink has received, in order (a resume's tail included).
    std::vector<msg::token_id> delivered;
    msg::replica_view where; ///< the replica it runs on now
    std::optional<caf::typed_response_promise<msg::request_id>> answer; ///< until submitted
    std::uint32_t moves = 0;
    /// Times a replica's model stopped under this stream (moved for it, see max_stopped_moves).
    std::uint32_t stopped_under = 0;
    /// A placement for a move is asked for: another loss report (the node's down, a refused
    /// submit) waits for it instead of placing the request twice, which the new replica would
    /// refuse as "already queued or running".
    bool moving = false;
    bool echo_delivered = false; ///< generate_request::echo: the prompt echo reached the sink
    /// Sampled requests: the relay's span, from placement to the stream's end; each placement's
    /// spans on its replica are its children, and each move is one of its events.
    std::optional<trace::span_record> span;
};

struct relay_state {
    relay_options opt;
    std::unordered_map<msg::request_id, relayed> live;
    std::unordered_map<caf::actor_addr, msg::request_id> by_sink;
    static inline const char* name = "stream_relay";
};

using relay_pointer = msg::relay_actor::stateful_pointer<relay_state>;

void forget(relay_pointer self, msg::request_id id) {
    auto& st = self->state;
    auto it = st.live.find(id);
    if (it == st.live.end())
        return;
    span_attr(it->second.span, "bitnet.delivered_tokens",
              static_cast<std::int64_t>(it->second.delivered.size()));
    span_attr(it->second.span, "bitnet.moves", static_cast<std::int64_t>(it->second.moves));
    close_span(it->second.span);
    self->demonitor(it->second.sink.address());
    st.by_sink.erase(it->second.sink.address());
    st.live.erase(it);
}

/// Ends a request here: its sink hears `e` (or, before the submit was answered, the submitter).
void fail(relay_pointer self, msg::request_id id, caf::error e) {
    auto& st = self->state;
    auto it = st.live.find(id);
    if (it == st.live.end())
        return;
    span_error(it->second.span, caf::to_string(e));
    if (it->second.answer)
        it->second.answer->deliver(std::move(e));
    else
        self->send(it->second.sink, msg::fail_atom_v, id, std::move(e));
    forget(self, id);
}

/// The request as it goes to a replica: the client's prompt plus what was delivered, marked as
/// resumed, with this relay named so its output comes back here in per-step batches.
msg::generate_request placed_request(relay_pointer self, const relayed& r) {
    auto req = r.base;
    req.prompt.insert(req.prompt.end(), r.delivered.begin(), r.delivered.end());
    req.n_resumed = static_cast<std::uint32_t>(r.delivered.size());
    req.relay = caf::actor_cast<caf::actor>(self);
    if (r.span)
        req.trace = r.base.trace.under(r.span->ctx.span); // the replica's spans join the relay's
    return req;
}

/// Why a stream moves: its words for the log and the span, the placement it leaves when that
/// batcher is known to have stopped (never chosen again), and the error the client gets when no
/// replica is left (replica_lost when none is given).
struct move_cause {
    std::string why;
    caf::actor gone;
    std::optional<caf::error> if_none;
};

void move_elsewhere(relay_pointer self, msg::request_id id, move_cause cause);

/// Sends the request to its replica. A replica that is gone before it answers (its version was
/// drained, its node lost) is no answer: the request is placed again.
void submit_to(relay_pointer self, msg::request_id id) {
    auto& r = self->state.live.at(id);
    auto batcher = caf::actor_cast<msg::batcher_actor>(r.where.batcher);
    self->request(batcher, std::chrono::seconds(30), msg::submit_atom_v, placed_request(self, r),
                  r.sink)
        .then(
            [self, id](msg::request_id) {
                auto it = self->state.live.find(id);
                if (it != self->state.live.end() && it->second.answer) {
                    it->second.answer->deliver(id);
                    it->second.answer.reset();
                }
            },
            [self, id, batcher](caf::error& e) {
                auto it = self->state.live.find(id);
                if (it == self->state.live.end() ||
                    caf::actor_cast<caf::actor>(batcher) != it->second.where.batcher)
                    return; // moved meanwhile: this answer is stale
                const auto err = msg::from_caf_error(e);
                // cancelled: the batcher is gone (its model restarted, its version stopped, its
                // node lost); timeout: it did not answer.
                if (err.value() == errc::cancelled || err.value() == errc::timeout)
                    return move_elsewhere(self, id,
                                          {"its replica did not take it (" + err.message + ")",
                                           err.value() == errc::cancelled
                                               ? caf::actor_cast<caf::actor>(batcher)
                                               : caf::actor{},
                                           std::nullopt});
                fail(self, id, std::move(e)); // the replica refused it: the client's answer
            });
}

/// Moves before a request gives up: a replica chosen just before its loss is known fails at
/// once and is chosen again only until the cluster actor reports the loss (a few moves).
constexpr std::uint32_t max_moves = 32;
/// Moves after a replica's model stopped under the stream. One: a crash is a bug, and it may be
/// this request's own; moved without bound, a request that crashes its executor would crash
/// the model on every replica in turn and use up their restarts. A second stop ends it.
constexpr std::uint32_t max_stopped_moves = 1;

/// The stream goes on on another replica of the same version (or ends with replica_lost, or the
/// cause's own error).
void move_elsewhere(relay_pointer self, msg::request_id id, move_cause cause) {
    auto& st = self->state;
    auto it = st.live.find(id);
    if (it == st.live.end())
        return;
    auto& r = it->second;
    if (r.delivered.size() >= r.base.max_tokens && (!r.base.echo || r.echo_delivered)) {
        // Everything was delivered but the end was lost with the node: end it here.
        msg::completion c;
        c.id = id;
        c.finish = msg::finish_reason::length;
        c.model = r.where.alias;
        c.model_version = r.where.version;
        c.prompt_tokens = static_cast<std::uint32_t>(r.base.prompt.size());
        c.completion_tokens = static_cast<std::uint32_t>(r.delivered.size());
        self->send(r.sink, msg::done_atom_v, std::move(c));
        return forget(self, id);
    }
    const auto old = r.where;
    const auto& why = cause.why;
    if (r.moves >= max_moves) {
        spdlog::warn("request req-{}: {}; moved {} times already: ended", id, why, r.moves);
        return fail(self, id,
                    msg::to_caf_error(errc::replica_lost,
                                      "the request was moved " + std::to_string(r.moves) +
                                          " times between lost replicas of model '" + old.alias +
                                          "'",
                                      5));
    }
    if (r.moving)
        return;
    r.moving = true;
    // The version that started the stream continues it: only it computes the same tokens.
    self->request(st.opt.admission, std::chrono::seconds(10), msg::place_atom_v,
                  msg::replica_query{old.alias, old.version, cause.gone})
        .then(
            [self, id, old, why](msg::replica_view& to) {
                auto jt = self->state.live.find(id);
                if (jt == self->state.live.end())
                    return;
                auto& rr = jt->second;
                rr.moving = false;
                // The old placement may still be running (a hung node that wakes up): cancel it
                // there, and drop whatever it still sends (stream_batch checks the sender).
                self->send(caf::actor_cast<msg::batcher_actor>(old.batcher), msg::cancel_atom_v,
                           id);
                ++rr.moves;
                if (rr.span)
                    rr.span->events.push_back({"bitnet.migrate",
                                               trace::now_ns(),
                                               {{"bitnet.from_node", old.node},
                                                {"bitnet.to_node", to.node},
                                                {"bitnet.delivered_tokens",
                                                 static_cast<std::int64_t>(rr.delivered.size())},
                                                {"bitnet.reason", why}}});
                spdlog::info("request req-{}: {}; the stream continues on node '{}' after {} "
                             "token(s) (move {})",
                             id, why, to.node, rr.delivered.size(), rr.moves);
                rr.where = std::move(to);
                if (self->state.opt.on_migrated)
                    self->state.opt.on_migrated();
                submit_to(self, id);
            },
            [self, id, old, why, if_none = std::move(cause.if_none)](caf::error& e) {
                spdlog::warn("request req-{}: {}; no replica of '{}' version {} is left: {}", id,
                             why, old.alias, old.version, caf::to_string(e));
                if (if_none)
                    return fail(self, id, *if_none);
                fail(self, id,
                     msg::to_caf_error(errc::replica_lost,
                                       "the node running this request was lost and no replica "
                                       "of model '" +
                                           old.alias + "' version " + old.version +
                                           " is left in the cluster",
                                       5));
            });
}

/// A batcher's step output: each event to its request's sink, unless it comes from a placement
/// the request has left, or repeats a token already delivered.
void on_batch(relay_pointer self, msg::stream_batch& b) {
    auto& st = self->state;
    const auto sender = caf::actor_cast<caf::actor>(self->current_sender());
    std::string peer;
    auto current = [&](msg::request_id id) -> relayed* {
        auto it = st.live.find(id);
        if (it == st.live.end() || it->second.where.batcher != sender)
            return nullptr;
        peer = it->second.where.node;
        return &it->second;
    };
    for (auto& ev : b.tokens) {
        auto* r = current(ev.id);
        if (!r)
            continue;
        if (ev.token >= 0) {
            if (ev.index < r->delivered.size())
                continue; // delivered before the move
            r->delivered.push_back(ev.token);
        } else if (!ev.echo.tokens.empty()) {
            if (r->echo_delivered)
                continue; // a placement after a move echoes the prompt again
            r->echo_delivered = true;
        }
        self->send(r->sink, msg::token_atom_v, std::move(ev));
    }
    for (auto& c : b.done) {
        if (auto* r = current(c.id)) {
            self->send(r->sink, msg::done_atom_v, std::move(c));
            forget(self, c.id);
        }
    }
    for (auto& f : b.failed) {
        auto* r = current(f.id);
        if (!r)
            continue;
        // Its replica's batcher or executor stopped under it (a crash and its restart, the
        // version unloaded or rolled back there): the same version may run elsewhere, and the
        // stream goes on there (once); when none is left the client gets this error (503
        // worker_stopped). Any other failure is the request's own.
        if (auto err = msg::from_caf_error(f.error);
            err.value() == errc::cancelled && r->stopped_under < max_stopped_moves) {
            ++r->stopped_under;
            move_elsewhere(
                self, f.id,
                {"its replica stopped it (" + err.message + ")", sender, std::move(f.error)});
        } else {
            fail(self, f.id, std::move(f.error));
        }
    }
    if (st.opt.on_batch && !peer.empty())
        st.opt.on_batch(peer, wire_size(self->system(), b));
}

msg::relay_actor::behavior_type relay_fn(relay_pointer self, relay_options opt) {
    self->state.opt = std::move(opt);
    self->set_down_handler([self](caf::down_msg& dm) {
        // A sink died (its client is gone): the batcher cancels on its own (it monitors the
        // sink too); nothing more is relayed for it.
        auto it = self->state.by_sink.find(dm.source);
        if (it != self->state.by_sink.end())
            forget(self, it->second);
    });
    return {
        [self](msg::submit_atom, msg::generate_request& req, msg::sink_actor& sink,
               msg::replica_view& where) -> caf::result<msg::request_id> {
            auto& st = self->state;
            const auto id = req.id;
            if (st.live.count(id) > 0)
                return msg::to_caf_error(errc::invalid_argument,
                                         "request id " + std::to_string(id) + " is already live");
            relayed r;
            r.sink = sink;
            const auto n_base =
                req.prompt.size() - std::min<std::size_t>(req.n_resumed, req.prompt.size());
            r.delivered.assign(req.prompt.begin() + static_cast<std::ptrdiff_t>(n_base),
                               req.prompt.end());
            req.prompt.resize(n_base);
            req.n_resumed = 0;
            req.relay = nullptr;
            r.span = open_span(req.trace, "bitnet.relay");
            span_attr(r.span, "bitnet.replica.node", where.node);
            span_attr(r.span, "gen_ai.request.model", where.alias);
            span_attr(r.span, "bitnet.model.version", where.version);
            r.base = std::move(req);
            r.where = std::move(where);
            auto rp = self->make_response_promise<msg::request_id>();
            r.answer = rp;
            self->monitor(sink);
            st.by_sink[sink.address()] = id;
            st.live.emplace(id, std::move(r));
            submit_to(self, id);
            return rp;
        },
        [self](msg::stream_atom, msg::stream_batch& b) { on_batch(self, b); },
        [self](msg::down_atom, const std::string& node) {
            std::vector<msg::request_id> lost;
            for (const auto& [id, r] : self->state.live)
                if (r.where.node == node)
                    lost.push_back(id);
            for (auto id : lost)
                move_elsewhere(self, id, {"node '" + node + "' was lost", {}, std::nullopt});
        },
        [self](msg::cancel_atom, msg::request_id id) {
            auto it = self->state.live.find(id);
            if (it == self->state.live.end())
                return;
            self->send(caf::actor_cast<msg::batcher_actor>(it->second.where.batcher),
                       msg::cancel_atom_v, id);
        },
    };
}

} // namespace

msg::relay_actor spawn_stream_relay(caf::actor_system& sys, relay_options opt) {
    return sys.spawn(relay_fn, std::move(opt));
}

} // namespace bitnet::actors
