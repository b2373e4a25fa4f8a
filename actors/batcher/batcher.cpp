#include "actors/batcher/batcher.hpp"

#include "actors/batcher/batcher_internal.hpp"
#include "actors/cluster/peer_gate.hpp"
#include "messages/errors.hpp"
#include "model/constrain/mask_cache.hpp"
#include "model/constrain/token_constraint.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace bitnet::actors {

namespace batcher_detail {

/// The batch bound for `relay`, opened on first use.
msg::stream_batch& batch_for(batcher_state& st, const caf::actor& relay) {
    for (auto& [r, b] : st.outbox)
        if (r == relay)
            return b;
    return st.outbox.emplace_back(relay, msg::stream_batch{}).second;
}

/// A request's events go to its sink, or into its relay's batch when another node placed it.
void emit_token(batcher_pointer self, const live_request& lr, msg::token_event ev) {
    if (lr.req.relay)
        batch_for(self->state, lr.req.relay).tokens.push_back(std::move(ev));
    else
        self->send(lr.sink, msg::token_atom_v, std::move(ev));
}

} // namespace batcher_detail

namespace {

using namespace batcher_detail;

std::int64_t us_between(clock::time_point a, clock::time_point b) {
    if (a == clock::time_point{} || b == clock::time_point{} || b < a)
        return 0;
    return std::chrono::duration_cast<std::chrono::microseconds>(b - a).count();
}

void emit_done(batcher_pointer self, const live_request& lr, msg::completion c) {
    if (lr.req.relay)
        batch_for(self->state, lr.req.relay).done.push_back(std::move(c));
    else
        self->send(lr.sink, msg::done_atom_v, std::move(c));
}

void emit_fail(batcher_pointer self, const live_request& lr, msg::request_id id, caf::error e) {
    if (lr.req.relay)
        batch_for(self->state, lr.req.relay).failed.push_back({id, std::move(e)});
    else
        self->send(lr.sink, msg::fail_atom_v, id, std::move(e));
}

/// Sends every relay its batch: one message per relay per pass, however many tokens.
void flush(batcher_pointer self) {
    auto& st = self->state;
    for (auto& [relay, batch] : st.outbox)
        if (!batch.empty())
            self->send(caf::actor_cast<msg::relay_actor>(relay), msg::stream_atom_v,
                       std::move(batch));
    st.outbox.clear();
}

void fail_request(batcher_pointer self, msg::request_id rid);

/// One choice of request `rid` is over: the sink's entry goes with the last.
void close_choice(batcher_state& st, msg::request_id rid, const caf::actor_addr& sink) {
    if (auto oc = st.open_choices.find(rid); oc == st.open_choices.end() || --oc->second == 0) {
        st.by_sink.erase(sink);
        st.open_choices.erase(rid);
    }
}

/// Reports an ended sequence to its sink and forgets the request.
void report(batcher_pointer self, const sched::finished_seq& f) {
    auto& st = self->state;
    auto it = st.live.find(f.id);
    if (it == st.live.end())
        return;
    auto& lr = it->second;
    ++st.finished;
    const auto rid = lr.req.id; // the request's id, whichever choice this is
    if (f.reason == sched::finish_reason::deadline) {
        // The request's own deadline is its failure, never a finish a client would read as a
        // length cut: a plain reply is a 504, a stream ends with an error event after what it
        // sent (http/ answers both from this one error).
        const auto why = f.never_scheduled
                             ? std::string("the deadline passed while the request was queued")
                             : "the deadline passed after " + std::to_string(f.n_generated) +
                                   " generated tokens";
        trace_finished(st, lr, f, why);
        emit_fail(self, lr, rid, msg::to_caf_error(errc::timeout, why + " (timeout_ms)"));
        return fail_request(self, rid);
    } else if (f.reason == sched::finish_reason::error) {
        trace_finished(st, lr, f,
                       lr.failure ? lr.failure->message : "the model step failed for this request");
        emit_fail(self, lr, rid,
                  lr.failure ? msg::to_caf_error(*lr.failure)
                             : msg::to_caf_error(errc::internal,
                                                 "the model step failed for this request"));
        return fail_request(self, rid);
    } else {
        if (auto tail = lr.flush_parts(); !tail.reply.empty() || !tail.call.empty()) {
            msg::token_event ev;
            ev.id = rid;
            ev.choice = lr.choice;
            ev.index = f.n_generated;
            ev.token = -1; // text only: the held-back end of the output
            ev.text = std::move(tail.reply);
            ev.call_text = std::move(tail.call);
            emit_token(self, lr, std::move(ev));
        }
        msg::completion c;
        c.id = rid;
        c.choice = lr.choice;
        c.finish = f.reason;
        c.model = st.opt.model;
        c.model_version = st.opt.model_version;
        c.prompt_tokens = f.n_prompt;
        c.completion_tokens = f.n_generated;
        c.cached_tokens = std::min(lr.cached_tokens, f.n_prompt);
        if (lr.stops && f.reason == sched::finish_reason::stop)
            c.stop_sequence = lr.stops->matched_stop();
        const auto& t = f.timings;
        c.queue_us = us_between(lr.received, t.first_scheduled);
        c.prefill_us = us_between(t.first_scheduled, t.first_token);
        c.ttft_us = us_between(lr.received, t.first_token);
        c.decode_us = us_between(t.first_token, t.finished);
        c.total_us = us_between(lr.received, t.finished);
        if (lr.req.relay)
            // The node the client talks to logs the request; this line ties it to this replica.
            spdlog::info("req-{} (placed here by another node) finish={} prompt_tokens={} "
                         "completion_tokens={} resumed={}",
                         f.id, to_string(c.finish), c.prompt_tokens, c.completion_tokens,
                         lr.req.n_resumed);
        trace_finished(st, lr, f, {});
        emit_done(self, lr, std::move(c));
    }
    const auto sink = lr.sink.address();
    st.live.erase(it);
    close_choice(st, rid, sink);
}

/// The request failed (one of its choices did, or it never started): its other choices end
/// without a word (the sink has the failure and quits).
void fail_request(batcher_pointer self, msg::request_id rid) {
    auto& st = self->state;
    for (std::uint32_t i = 0; i < sched::max_choices; ++i) {
        const auto seq = sched::choice_id(rid, i);
        if (auto it = st.live.find(seq); it != st.live.end()) {
            st.by_sink.erase(it->second.sink.address());
            st.live.erase(it);
        }
        (void)st.policy->finish(seq, sched::finish_reason::cancelled, clock::now());
    }
    st.open_choices.erase(rid);
    // Their finished_seq entries find no live request when reported: nothing is sent.
}

/// Ends every choice of request `rid` (client gone, explicit cancel).
void cancel_request(batcher_pointer self, msg::request_id rid) {
    auto& st = self->state;
    for (std::uint32_t i = 0; i < sched::max_choices; ++i)
        (void)st.policy->finish(sched::choice_id(rid, i), sched::finish_reason::cancelled,
                                clock::now());
}

void report_all(batcher_pointer self, const std::vector<sched::finished_seq>& fs) {
    for (const auto& f : fs)
        report(self, f);
}

/// Ends the sequences the executor failed on their own (their batch-mates' samples are valid);
/// each sink gets the executor's reason.
void end_failed(batcher_pointer self, const msg::step_result& r, clock::time_point now,
                bool choices) {
    auto& st = self->state;
    for (const auto& f : r.failed) {
        if ((sched::choice_of(f.seq) != 0) != choices)
            continue;
        if (auto it = st.live.find(f.seq); it != st.live.end())
            it->second.failure.emplace(static_cast<errc>(f.code), f.message, f.param);
        (void)st.policy->finish(f.seq, sched::finish_reason::error, now);
    }
}

/// n > 1: the live entries of the choices forked in `plan` (the policy births them when it
/// applies the step): same sink and request, the choice's own seed, text and stop state.
std::vector<msg::request_id> add_choices(batcher_state& st, const sched::step_plan& plan) {
    std::vector<msg::request_id> added;
    for (const auto& c : plan.chunks) {
        auto parent = st.live.find(c.part.seq);
        if (c.forks.empty() || parent == st.live.end())
            continue;
        for (auto child : c.forks) {
            if (st.live.count(child))
                continue;
            const auto& p = parent->second;
            live_request lr;
            lr.sink = p.sink;
            lr.req = p.req;
            lr.req.n = 1;
            lr.choice = sched::choice_of(child);
            lr.req.params.seed = p.req.params.seed + lr.choice;
            if (st.tokenizer)
                lr.text.emplace(*st.tokenizer);
            if (p.stops) {
                std::vector<std::string> stops;
                for (const auto& s : p.req.stop)
                    if (!s.empty())
                        stops.push_back(s);
                if (auto m = model::stop_string_matcher::create(std::move(stops)))
                    lr.stops.emplace(std::move(*m));
            }
            lr.received = p.received;
            lr.n_generated = p.n_generated;
            lr.prefix_tokens = p.prefix_tokens;
            trace_forked(p, lr);
            st.live.emplace(child, std::move(lr));
            added.push_back(child);
        }
    }
    return added;
}

/// Each request's prompt tokens from the prefix cache, as of its latest start (a sequence
/// preempted and started again counts the hits of its new start only).
void count_cached(batcher_state& st, const sched::step_plan& plan, const msg::step_result& r) {
    for (const auto& c : plan.chunks)
        if (c.part.pos0 == 0)
            if (auto it = st.live.find(c.part.seq); it != st.live.end())
                it->second.cached_tokens = 0;
    for (std::size_t i = 0; i < r.hit_seqs.size() && i < r.hit_tokens.size(); ++i)
        if (auto it = st.live.find(r.hit_seqs[i]); it != st.live.end())
            it->second.cached_tokens += r.hit_tokens[i];
}

void on_result(batcher_pointer self, const sched::step_plan& plan, const msg::step_result& r) {
    auto& st = self->state;
    const auto now = clock::now();
    trace_step_done(st, plan, r);
    const auto choices = add_choices(st, plan);
    end_failed(self, r, now, false);
    // Prompt echoes first: they precede the request's generated tokens and its end.
    for (const auto& p : r.prompt_scores)
        take_prompt_score(st, p);
    for (const auto& c : plan.chunks)
        send_echo_when_ready(self, c.part.seq);
    std::vector<sched::sample> samples;
    samples.reserve(r.samples.size());
    for (const auto& s : r.samples)
        samples.push_back({s.seq, s.token, s.logprob});
    st.prefix_hit_tokens += r.prefix_hit_tokens;
    count_cached(st, plan, r);
    for (std::size_t i = 0; i < r.extended.size() && i < r.extended_to.size(); ++i)
        st.policy->prefix_attached(r.extended[i], r.extended_to[i]);
    st.prompt_tokens_computed += r.prompt_tokens_computed;
    st.greedy_screened_tokens += r.greedy_screened_tokens;
    auto out = st.policy->update_from_output(plan, samples, now);
    st.policy->sample_deferred(r.deferred); // after births: a choice may be deferred too
    for (const auto& d : r.drafts)
        st.policy->offer_drafts(d.seq, d.tokens);
    if (st.opt.step_observer && !plan.chunks.empty())
        caf::anon_send(st.opt.step_observer, msg::step_atom_v,
                       static_cast<std::uint32_t>(plan.chunks.size()), r.step_us);
    for (const auto& ev : out.tokens) {
        auto it = st.live.find(ev.id);
        if (it == st.live.end())
            continue;
        auto& lr = it->second;
        // A stop string found in an earlier token of this step (several come at once when drafts
        // are accepted) ended the request: nothing after it reaches the client.
        if (lr.stopped())
            continue;
        const auto& smp = r.samples[ev.sample_index];
        msg::token_event te;
        te.id = lr.req.id;
        te.choice = lr.choice;
        te.index = ev.index;
        te.token = ev.token;
        te.logprob = ev.logprob;
        te.top_tokens = smp.top_tokens;
        te.top_logprobs = smp.top_logprobs;
        if (ev.index == 0) {
            te.prompt_tokens = static_cast<std::uint32_t>(lr.req.prompt.size());
            te.model = st.opt.model;
        }
        if (lr.req.token_pieces && st.tokenizer) {
            te.piece = piece_of(*st.tokenizer, ev.token);
            for (auto t : te.top_tokens)
                te.top_pieces.push_back(piece_of(*st.tokenizer, t));
        }
        auto parts = lr.push_parts(ev.token);
        te.text = std::move(parts.reply);
        te.call_text = std::move(parts.call);
        ++lr.n_generated;
        const bool stop_hit = lr.stopped();
        emit_token(self, lr, std::move(te));
        if (stop_hit)
            (void)st.policy->finish(ev.id, sched::finish_reason::stop, now);
    }
    end_failed(self, r, now, true); // choices that could not sample: born just now
    report_all(self, out.finished);
    report_all(self, st.policy->take_finished());
    for (auto child : choices) {
        auto it = st.live.find(child);
        if (it == st.live.end() || st.policy->contains(child))
            continue;
        // Never born (the request ended meanwhile): nothing to report for it.
        const auto sink = it->second.sink.address();
        st.live.erase(it);
        close_choice(st, sched::request_of(child), sink);
    }
    st.policy->sync_kv_free(r.kv_blocks_free);
}

/// Prefix caching on the chunk that starts (or restarts, after a preemption) a sequence: the
/// blocks the executor may offer to the cache, and how many it may take from it. The last known
/// token is always computed (its logits are sampled), and so is the token before it when it is a
/// prompt token: a lone prompt token would be computed as a one-token decode and differ from an
/// uncached run. Requests that need every prompt position computed (reuse_prefix false) only
/// offer their blocks.
void add_prefix(batcher_state& st, live_request& lr, msg::step_chunk& sc) {
    if (!st.opt.policy.prefix_caching || sc.part.pos0 != 0 || lr.prefix_tokens.empty())
        return;
    sc.prefix_tokens = lr.prefix_tokens;
    sc.prefix_scope = lr.req.cache_scope;
    // Prompt logprobs need every prompt position's logits row: nothing may come from the cache.
    if (!lr.req.reuse_prefix || lr.req.prompt_logprobs)
        return;
    const std::uint32_t bt = std::max(st.opt.policy.kv_block_tokens, 1u);
    const auto n_prompt = static_cast<std::uint32_t>(lr.req.prompt.size()) - lr.req.n_resumed;
    const std::uint32_t n_known = n_prompt + lr.n_generated; // n_generated counts resumed ones
    const auto whole = static_cast<std::uint32_t>(lr.prefix_tokens.size()) / bt;
    sc.reuse_blocks = n_known > n_prompt ? whole : std::min(whole, (n_known - 2) / bt);
    st.prefix_query_tokens += n_known;
}

/// The watchdog: the executor did not answer step `plan` within step_timeout_ms. It is stuck (a
/// step that cannot end, or one far past any budget): the log names the requests the step
/// carried, the supervisor replaces the executor and this batcher as for a crash (readiness of
/// the alias is 503 until the new pair is warm), and no step goes to the stuck one again.
void on_stall(batcher_pointer self, const sched::step_plan& plan) {
    auto& st = self->state;
    st.stalled = true;
    std::string reqs;
    for (const auto& c : plan.chunks)
        reqs += (reqs.empty() ? "req-" : ", req-") + std::to_string(c.part.seq);
    const auto why = "a step of model '" + st.opt.model + "' (version " + st.opt.model_version +
                     ") ran past step_timeout_ms (" + std::to_string(st.opt.step_timeout_ms) +
                     " ms) with " + (reqs.empty() ? std::string("no request") : reqs);
    spdlog::error("{}: the executor is stuck and will be replaced", why);
    if (st.opt.watchdog)
        self->send(caf::actor_cast<msg::supervisor_actor>(st.opt.watchdog), msg::stalled_atom_v,
                   st.executor, why);
}

void kick_step(batcher_pointer self) {
    auto& st = self->state;
    if (st.in_flight || st.stalled)
        return;
    auto plan = st.policy->schedule(clock::now());
    report_all(self, st.policy->take_finished());
    if (plan.empty() && plan.release.empty()) {
        // Work that cannot run now (nothing fits) or nothing at all: look again shortly so
        // deadlines of queued requests still fire.
        if (st.policy->has_unfinished() && !st.tick_pending) {
            st.tick_pending = true;
            self->delayed_send(self, std::chrono::milliseconds(10), msg::tick_atom_v);
        }
        return;
    }
    msg::step_batch batch;
    batch.step = plan.step;
    batch.release = plan.release;
    batch.chunks.reserve(plan.chunks.size());
    for (const auto& c : plan.chunks) {
        msg::step_chunk sc;
        sc.part = c.part;
        sc.n_draft = c.n_draft;
        sc.draft_next = c.draft_next;
        sc.resume_sample = c.resume;
        if (auto it = st.live.find(c.part.seq); it != st.live.end()) {
            sc.params = it->second.req.params;
            sc.n_sampled = it->second.n_generated;
            mark_prompt_rows(it->second, sc);
            if (c.part.pos0 == 0) {
                sc.json_schema = it->second.req.json_schema;
                if (!sc.json_schema.empty())
                    sc.tenant = it->second.req.client_key;
                if (const auto& calls = it->second.calls) {
                    sc.schema_opener = calls->opener().text;
                    sc.opener_at_start = calls->opener().at_start;
                }
            }
            add_prefix(st, it->second, sc);
            for (auto child : c.forks) {
                sc.fork_to.push_back(child);
                auto p = sc.params;
                p.seed += sched::choice_of(child); // choice i samples with seed + i
                sc.fork_params.push_back(p);
            }
        }
        batch.chunks.push_back(std::move(sc));
    }
    trace_step_sent(st, plan);
    st.in_flight = true;
    ++st.steps;
    self->request(st.executor, std::chrono::milliseconds(st.opt.step_timeout_ms), msg::step_atom_v,
                  std::move(batch))
        .then(
            [self, plan](const msg::step_result& r) {
                self->state.in_flight = false;
                on_result(self, plan, r);
                kick(self);
            },
            [self, plan](const caf::error& err) {
                self->state.in_flight = false;
                if (err == caf::sec::request_timeout)
                    on_stall(self, plan);
                auto& s = self->state;
                s.policy->step_failed(plan, clock::now());
                const auto finished = s.policy->take_finished();
                if (err == caf::sec::request_receiver_down)
                    // The executor is gone (crashed, or stopped with its version): its sequences
                    // failed with it, not by anything of their own, and are the client's to retry
                    // (503 worker_stopped) where the model serves now; any other failed step is
                    // the server's fault (500).
                    for (const auto& f : finished)
                        if (auto it = s.live.find(f.id); f.reason == sched::finish_reason::error &&
                                                         it != s.live.end() && !it->second.failure)
                            it->second.failure = bitnet::error{
                                errc::cancelled,
                                "the model's executor stopped before this request finished"};
                report_all(self, finished);
                kick(self);
            });
}

} // namespace

namespace batcher_detail {

/// Plans and sends the next step when none is in flight. Every handler ends here, so this is
/// also where the relays' batches of the handler's output go out.
void kick(batcher_pointer self) {
    kick_step(self);
    flush(self);
}

} // namespace batcher_detail

namespace {

/// Stopped with its version (a crash's restart, an unload, a rollback; the supervisor's reason is
/// `cancelled`): every request it still holds, running or waiting, is told, so a retry can go
/// where the model serves now; a relay on another node does not watch this batcher and would
/// otherwise wait for ever. At the node's shutdown (user_shutdown) the requests other nodes placed
/// here move on when their relays see the node go, so nothing is said. A normal exit reason is
/// ignored, as CAF's default handler does.
void stop_with_version(batcher_pointer self, caf::exit_msg& em) {
    if (!em.reason || em.reason == caf::exit_reason::normal)
        return;
    if (msg::from_caf_error(em.reason).value() != errc::cancelled) {
        self->quit(std::move(em.reason));
        return;
    }
    auto& st = self->state;
    const auto why = "the model's batcher stopped (" + caf::to_string(em.reason) +
                     ") before this request finished";
    std::unordered_set<msg::request_id> told;
    for (const auto& [seq, lr] : st.live)
        if (told.insert(lr.req.id).second)
            emit_fail(self, lr, lr.req.id, msg::to_caf_error(errc::cancelled, why));
    flush(self);
    self->quit(std::move(em.reason));
}

/// The batcher's counters for admission's poll (and /v1/stats, /metrics).
msg::batcher_stats stats_of(const batcher_state& st) {
    const auto ps = st.policy->stats();
    msg::batcher_stats out;
    out.model = st.opt.model;
    out.waiting = ps.waiting;
    out.waiting_prompt_tokens = ps.waiting_prompt_tokens;
    out.running = ps.running;
    out.kv_blocks_used = ps.kv_blocks_used;
    out.kv_blocks_total = ps.kv_blocks_total;
    out.steps = st.steps;
    out.preemptions = ps.preemptions;
    out.finished = st.finished;
    out.model_version = st.opt.model_version;
    out.outstanding_tokens = ps.outstanding_tokens;
    out.schema_compilations = model::constrain::schema_cache::shared().compilations();
    const auto mc = model::constrain::mask_cache::shared().snapshot();
    out.mask_cache_budget_bytes = mc.budget_bytes;
    out.mask_cache_bytes = mc.bytes;
    out.mask_cache_masks = mc.masks;
    out.mask_cache_schemas = mc.schemas;
    out.mask_cache_hits = mc.hits;
    out.mask_cache_misses = mc.misses;
    out.mask_cache_evictions = mc.evictions;
    out.prefix_query_tokens = st.prefix_query_tokens;
    out.prefix_hit_tokens = st.prefix_hit_tokens;
    out.prompt_tokens_computed = st.prompt_tokens_computed;
    out.greedy_screened_tokens = st.greedy_screened_tokens;
    out.spec_drafted_tokens = ps.spec_drafted;
    out.spec_accepted_tokens = ps.spec_accepted;
    out.spec_grammar_drafted_tokens = ps.spec_grammar_drafted;
    out.spec_grammar_accepted_tokens = ps.spec_grammar_accepted;
    out.spec_model_drafted_tokens = ps.spec_model_drafted;
    out.spec_model_accepted_tokens = ps.spec_model_accepted;
    return out;
}

msg::batcher_actor::behavior_type batcher_fn(batcher_pointer self, msg::batcher_order order,
                                             msg::executor_actor executor,
                                             std::shared_ptr<const model::tokenizer> tokenizer) {
    auto& init = self->state;
    init.policy = std::make_unique<sched::policy>(order.policy);
    init.opt = std::move(order);
    init.tokenizer = std::move(tokenizer);
    init.executor = std::move(executor);
    self->set_exit_handler([self](caf::exit_msg& em) { stop_with_version(self, em); });
    self->set_down_handler([self](caf::down_msg& dm) {
        // A sink died (the HTTP session is gone): cancel its request wherever it is.
        auto& st = self->state;
        auto it = st.by_sink.find(dm.source);
        if (it == st.by_sink.end())
            return;
        const auto id = it->second;
        st.by_sink.erase(it);
        cancel_request(self, id);
        report_all(self, st.policy->take_finished());
        kick(self); // releases its KV now even when no step is running
    });
    return {
        [self](msg::submit_atom, msg::generate_request req,
               msg::sink_actor sink) -> caf::result<msg::request_id> {
            std::string who;
            if (!peer_gate::process().allows(self->current_sender(), self->node(), role_router,
                                             &who)) {
                spdlog::warn("batcher '{}': refused a request placed by {}: it is not a member "
                             "with the router role",
                             self->state.opt.model, who);
                peer_gate::process().refused();
                return msg::to_caf_error(errc::forbidden,
                                         "this replica takes requests only from its own node and "
                                         "from cluster members with the router role");
            }
            return submit(self, std::move(req), std::move(sink));
        },
        [self](msg::cancel_atom, msg::request_id id) {
            if (!peer_gate::process().allows(self->current_sender(), self->node(), role_router))
                return; // only who may place requests may cancel them
            auto& st = self->state;
            cancel_request(self, id);
            report_all(self, st.policy->take_finished());
            kick(self);
        },
        [self](msg::tick_atom) {
            self->state.tick_pending = false;
            kick(self);
        },
        [self](msg::stats_atom) { return stats_of(self->state); },
    };
}

} // namespace

msg::batcher_actor spawn_batcher(caf::actor_system& sys, msg::batcher_order order,
                                 msg::executor_actor executor,
                                 std::shared_ptr<const model::tokenizer> tokenizer) {
    return sys.spawn(batcher_fn, std::move(order), std::move(executor), std::move(tokenizer));
}

} // namespace bitnet::actors
