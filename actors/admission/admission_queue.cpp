// Admission's view of this node's queues (admission_state.hpp): the batchers' stats as polled,
// the queue caps checked against them, and the hand-over of an admitted request. What was
// admitted since the last poll counts as waiting, so a burst between two polls cannot pass the
// caps; but those requests may have finished since (sequential requests finish between polls),
// so a request that the caps would refuse only on their account asks the batcher for its figures
// first and is decided on what is waiting now.
#include "actors/admission/admission_state.hpp"
#include "actors/trace_spans.hpp"
#include "messages/errors.hpp"

#include <algorithm>
#include <utility>

namespace bitnet::actors::admission_detail {

namespace {

/// What was ever admitted to a queue, at the time a stats request went out.
struct admitted_snapshot {
    std::uint64_t requests = 0;
    std::uint64_t prompt_tokens = 0;
    std::uint64_t work = 0;
};

admitted_snapshot snapshot_of(const model_queue& q) {
    return {q.admitted_total, q.prompt_tokens_total, q.work_total};
}

/// The batcher's figures `s`, answered to a request sent at `asked`: the requests admitted
/// before it are in them (a batcher takes one sender's messages in order), the ones since not.
void note_stats(model_queue& mq, const msg::batcher_stats& s, const admitted_snapshot& asked) {
    // An answer older than one applied already (a timed-out request's late answer) says less.
    if (asked.requests < mq.counted_total)
        return;
    const auto now = clock::now();
    if (mq.polled_at != clock::time_point{} && s.finished >= mq.last.finished) {
        const double dt = std::chrono::duration<double>(now - mq.polled_at).count();
        if (dt > 0) {
            const double rate = static_cast<double>(s.finished - mq.last.finished) / dt;
            mq.drain_per_s = mq.drain_per_s == 0.0 ? rate : 0.8 * mq.drain_per_s + 0.2 * rate;
        }
    }
    mq.last = s;
    mq.polled_at = now;
    // Admitted after the request went out: not in these figures yet.
    mq.counted_total = asked.requests;
    mq.admitted_since = static_cast<std::uint32_t>(mq.admitted_total - asked.requests);
    mq.prompt_tokens_since = mq.prompt_tokens_total - asked.prompt_tokens;
    mq.work_since = mq.work_total - asked.work;
}

/// Asks `alias`'s batcher for its figures, notes them, then runs `then` (also when it does not
/// answer: its last figures stay).
template <class F>
void refresh(admission_pointer self, const std::string& alias, const model_queue& q, F then) {
    self->request(q.batcher, std::chrono::seconds(1), msg::stats_atom_v)
        .then(
            [self, alias, asked = snapshot_of(q), then](const msg::batcher_stats& s) mutable {
                if (auto it = self->state.models.find(alias); it != self->state.models.end())
                    note_stats(it->second, s, asked);
                then();
            },
            [then](const caf::error&) mutable { then(); });
}

/// What `q` counts as waiting: the batcher's last figures plus what was admitted since.
std::uint64_t waiting_of(const model_queue& q) {
    return q.last.waiting[0] + q.last.waiting[1] + q.last.waiting[2] + q.admitted_since;
}

bool over_caps(const admission_state& st, const model_queue& q, const msg::generate_request& req) {
    const std::uint64_t waiting_tokens = q.last.waiting_prompt_tokens + q.prompt_tokens_since;
    return waiting_of(q) >= st.opt.max_waiting_requests ||
           waiting_tokens + req.prompt.size() > st.opt.max_waiting_prompt_tokens;
}

} // namespace

void poll(admission_pointer self) {
    for (auto& [alias, q] : self->state.models)
        refresh(self, alias, q, [] {});
}

std::optional<caf::error> refusal(admission_pointer self, const std::string& alias,
                                  const version_route& v, const msg::generate_request& req) {
    auto& st = self->state;
    if (auto valid = check_request(v.limits, req); !valid)
        return msg::to_caf_error(valid.error());
    if (st.draining)
        return msg::to_caf_error(errc::draining, "draining: the server is shutting down", 5);
    // The alias's queue; gone when it was unloaded while this request was tokenized (it still
    // runs on the version it was routed to, which drains).
    auto it = st.models.find(alias);
    if (it != st.models.end() && over_caps(st, it->second, req)) {
        const auto& q = it->second;
        const auto waiting = waiting_of(q);
        const std::uint64_t waiting_tokens = q.last.waiting_prompt_tokens + q.prompt_tokens_since;
        return msg::to_caf_error(errc::queue_full,
                                 "queue full: " + std::to_string(waiting) + " requests and " +
                                     std::to_string(waiting_tokens) +
                                     " prompt tokens waiting (caps " +
                                     std::to_string(st.opt.max_waiting_requests) + ", " +
                                     std::to_string(st.opt.max_waiting_prompt_tokens) + ")",
                                 retry_after_seconds(waiting, q.drain_per_s));
    }
    // Counted only for requests the queue takes (a 503 does not use up the quota).
    if (auto no = quota_refusal(st, req))
        return no;
    if (it != st.models.end()) {
        auto& q = it->second;
        ++q.admitted_since;
        ++q.admitted_total;
        q.prompt_tokens_since += req.prompt.size();
        q.prompt_tokens_total += req.prompt.size();
        q.work_since += req.prompt.size() + req.max_tokens;
        q.work_total += req.prompt.size() + req.max_tokens;
    }
    return std::nullopt;
}

void handed_over(admission_pointer self, std::uint64_t route) {
    auto& st = self->state;
    auto it = st.tokenizing.find(route);
    if (it == st.tokenizing.end() || --it->second > 0)
        return;
    st.tokenizing.erase(it);
    auto& held = st.held_routes;
    for (auto h = held.begin(); h != held.end();) {
        if (h->first == route) {
            h->second.deliver(true);
            h = held.erase(h);
        } else {
            ++h;
        }
    }
}

void admit(admission_pointer self, caf::typed_response_promise<msg::request_id> rp, version_route v,
           msg::generate_request req, msg::sink_actor sink, shared_span_ptr span, bool tokenized,
           bool asked) {
    auto& st = self->state;
    if (auto it = st.models.find(req.model); !asked && it != st.models.end() &&
                                             it->second.admitted_since > 0 &&
                                             over_caps(st, it->second, req)) {
        // Full only by the estimate: what was admitted since the last poll may be done.
        refresh(self, req.model, it->second, [self, rp, v, req, sink, span, tokenized]() mutable {
            admit(self, std::move(rp), std::move(v), std::move(req), std::move(sink),
                  std::move(span), tokenized, true);
        });
        return;
    }
    if (auto no = refusal(self, req.model, v, req)) {
        if (span) {
            const auto err = msg::from_caf_error(*no);
            span_attr(span->s, "bitnet.admission.outcome", std::string("refused"));
            span_attr(span->s, "bitnet.admission.reason", std::string(errc_name(err.value())));
            span_error(span->s, err.message);
        }
        rp.deliver(std::move(*no));
    } else {
        if (span)
            span_attr(span->s, "bitnet.admission.outcome", std::string("queued"));
        rp.delegate(v.batcher, msg::submit_atom_v, std::move(req), std::move(sink));
    }
    if (span)
        close_span(span->s);
    if (tokenized)
        handed_over(self, v.route);
}

} // namespace bitnet::actors::admission_detail
