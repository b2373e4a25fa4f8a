// The batcher's spans for sampled requests: per request bitnet.generate (queued to end) with
// its children bitnet.queue (to the first step), bitnet.prefill (to the first token; its chunks
// and prefix-cache hits as events) and bitnet.decode (to the end; preemptions, recomputes and a
// cluster resume as events), and per step a bitnet.step span of its own trace linked to the
// generate span of every sampled request it served, so a slow step shows from each of them.
// No span per token.
#include "actors/batcher/batcher_internal.hpp"

#include <algorithm>

namespace bitnet::actors::batcher_detail {

namespace {

trace::context generate_context(const live_request& lr) {
    auto c = lr.req.trace.context();
    c.span = lr.trace.span;
    return c;
}

std::int64_t ns_or(clock::time_point t, std::int64_t fallback) {
    return t == clock::time_point{} ? fallback : trace::unix_ns(t);
}

trace::span_record child(const trace::context& parent, const char* name, std::int64_t start,
                         std::int64_t end) {
    trace::span_record s;
    s.ctx.trace = parent.trace;
    s.ctx.flags = parent.flags;
    s.ctx.span = trace::new_span_id();
    s.parent = parent.span;
    s.name = name;
    s.start_ns = start;
    s.end_ns = std::max(end, start);
    return s;
}

} // namespace

void trace_submitted(live_request& lr) {
    if (!lr.req.trace.sampled() || !trace::recorder::process().enabled())
        return;
    lr.trace.span = trace::new_span_id();
    lr.trace.start_ns = trace::now_ns();
    lr.trace.n0 = lr.n_generated;
    if (lr.req.n_resumed > 0)
        lr.trace.decode_events.push_back(
            {"bitnet.resumed",
             trace::now_ns(),
             {{"bitnet.resumed_tokens", static_cast<std::int64_t>(lr.req.n_resumed)}}});
}

void trace_forked(const live_request& parent, live_request& child) {
    if (parent.trace.span == 0)
        return;
    child.trace = parent.trace;
    child.trace.span = trace::new_span_id();
}

void trace_step_sent(batcher_state& st, const sched::step_plan& plan) {
    st.step_sent_ns = 0;
    if (!trace::recorder::process().enabled())
        return; // no request here is traced: nothing to look up on the per-step path
    bool any = false;
    const auto now = trace::now_ns();
    for (auto seq : plan.release) {
        auto it = st.live.find(seq);
        // Released while the policy still runs it: preempted (its KV goes, it starts again).
        if (it == st.live.end() || it->second.trace.span == 0 || !st.policy->contains(seq))
            continue;
        it->second.trace.decode_events.push_back({"bitnet.preempted", now, {}});
        any = true;
    }
    for (const auto& c : plan.chunks) {
        auto it = st.live.find(c.part.seq);
        if (c.resume || it == st.live.end() || it->second.trace.span == 0)
            continue; // a deferred sample resumed is no chunk of its own
        auto& lr = it->second;
        any = true;
        const auto n = static_cast<std::int64_t>(c.part.tokens.size());
        trace::attributes a{{"bitnet.tokens", n},
                            {"bitnet.position", static_cast<std::int64_t>(c.part.pos0)}};
        if (lr.n_generated == lr.trace.n0) {
            lr.trace.prefill_events.push_back({"bitnet.prefill.chunk", now, std::move(a)});
        } else if (n > 1 || (c.part.pos0 == 0 && lr.trace.started)) {
            // A sequence started again after a preemption computes what it had: a recompute.
            lr.trace.decode_events.push_back({"bitnet.recompute", now, std::move(a)});
        }
        lr.trace.started = true;
    }
    st.step_sent_ns = any ? now : 0;
}

void trace_step_done(batcher_state& st, const sched::step_plan& plan, const msg::step_result& r) {
    if (st.step_sent_ns == 0)
        return;
    const auto now = trace::now_ns();
    for (std::size_t i = 0; i < r.hit_seqs.size() && i < r.hit_tokens.size(); ++i) {
        auto it = st.live.find(r.hit_seqs[i]);
        if (it != st.live.end() && it->second.trace.span != 0 && r.hit_tokens[i] > 0)
            it->second.trace.prefill_events.push_back(
                {"bitnet.prefix_cache",
                 now,
                 {{"bitnet.cached_tokens", static_cast<std::int64_t>(r.hit_tokens[i])}}});
    }
    trace::span_record s;
    s.ctx.trace = trace::new_trace_id();
    s.ctx.span = trace::new_span_id();
    s.ctx.flags = 1; // recorded because a sampled request is in it
    s.name = "bitnet.step";
    s.start_ns = st.step_sent_ns;
    s.end_ns = now;
    std::int64_t prompt_rows = 0;
    for (const auto& c : plan.chunks) {
        if (c.part.tokens.size() > 1)
            prompt_rows += static_cast<std::int64_t>(c.part.tokens.size());
        auto it = st.live.find(c.part.seq);
        if (it == st.live.end() || it->second.trace.span == 0)
            continue;
        const auto g = generate_context(it->second);
        s.links.push_back({g.trace,
                           g.span,
                           g.flags,
                           {{"bitnet.request_id", "req-" + std::to_string(it->second.req.id)}}});
    }
    s.attrs = {{"bitnet.step", static_cast<std::int64_t>(plan.step)},
               {"bitnet.step.sequences", static_cast<std::int64_t>(plan.chunks.size())},
               {"bitnet.step.tokens", static_cast<std::int64_t>(plan.n_tokens)},
               {"bitnet.step.prompt_tokens", prompt_rows},
               {"bitnet.step.executor_ms", static_cast<double>(r.step_us) / 1000.0},
               {"bitnet.kernel.family", r.kernels},
               {"gen_ai.request.model", st.opt.model},
               {"bitnet.model.version", st.opt.model_version}};
    st.step_sent_ns = 0;
    trace::recorder::process().submit(std::move(s));
}

void trace_finished(const batcher_state& st, live_request& lr, const sched::finished_seq& f,
                    const std::string& error) {
    if (lr.trace.span == 0)
        return;
    const auto now = trace::now_ns();
    const auto& t = f.timings;
    const auto start = lr.trace.start_ns;
    const auto end = ns_or(t.finished, now);
    const auto scheduled = std::max(ns_or(t.first_scheduled, end), start);
    const auto first_token = std::max(ns_or(t.first_token, end), scheduled);
    const auto g = generate_context(lr);

    trace::span_record gen;
    gen.ctx = g;
    gen.parent = lr.req.trace.parent;
    gen.name = "bitnet.generate";
    gen.start_ns = start;
    gen.end_ns = std::max(end, start);
    gen.attrs = {{"gen_ai.request.model", st.opt.model},
                 {"bitnet.model.version", st.opt.model_version},
                 {"bitnet.request_id", "req-" + std::to_string(lr.req.id)},
                 {"gen_ai.usage.input_tokens", static_cast<std::int64_t>(f.n_prompt)},
                 {"gen_ai.usage.output_tokens", static_cast<std::int64_t>(f.n_generated)},
                 {"gen_ai.response.finish_reasons", std::vector<std::string>{to_string(f.reason)}},
                 {"bitnet.usage.cached_tokens", static_cast<std::int64_t>(lr.cached_tokens)}};
    if (lr.req.n > 1 || lr.choice > 0)
        gen.attrs.push_back({"bitnet.choice", static_cast<std::int64_t>(lr.choice)});
    if (lr.req.n_resumed > 0)
        gen.attrs.push_back({"bitnet.resumed_tokens", static_cast<std::int64_t>(lr.req.n_resumed)});
    if (!error.empty()) {
        gen.status = trace::status_code::error;
        gen.status_message = error;
    }

    auto queue = child(g, "bitnet.queue", start, scheduled);
    auto& rec = trace::recorder::process();
    rec.submit(std::move(queue));
    if (t.first_scheduled != clock::time_point{}) {
        auto prefill = child(g, "bitnet.prefill", scheduled, first_token);
        prefill.events = std::move(lr.trace.prefill_events);
        rec.submit(std::move(prefill));
    }
    if (t.first_token != clock::time_point{}) {
        auto decode = child(g, "bitnet.decode", first_token, end);
        decode.events = std::move(lr.trace.decode_events);
        decode.attrs.push_back({"bitnet.tokens", static_cast<std::int64_t>(f.n_generated)});
        rec.submit(std::move(decode));
    }
    rec.submit(std::move(gen));
    lr.trace.span = 0; // recorded once
}

} // namespace bitnet::actors::batcher_detail
