// The batcher's submit path (batcher.cpp has the rest of the actor): a request's schema compiled
// (on the batcher's own compiler thread when it is new), then the request queued.
#include "actors/batcher/batcher_internal.hpp"
#include "actors/trace_spans.hpp"
#include "messages/errors.hpp"
#include "model/constrain/token_constraint.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace bitnet::actors::batcher_detail {

namespace {

/// The most calls one auto turn may hold in a list syntax (http/'s max_parallel_tool_calls).
constexpr std::size_t max_auto_calls = 8;

/// The test hook (batcher_order::opener_bias): the opener's token, when it is one, raised by
/// the bias in `p` (kept in ascending id order, as sampling_params asks), unless the request
/// biased that token itself.
void steer_opener(const batcher_state& st, const model::constrain::call_opener& opener,
                  msg::sampling& p) {
    if (st.opt.opener_bias == 0.0f || !st.tokenizer)
        return;
    const auto id = st.tokenizer->find_token(opener.text);
    if (!id)
        return;
    auto& lb = p.logit_bias;
    auto it = std::lower_bound(lb.begin(), lb.end(), *id,
                               [](const auto& e, std::int32_t t) { return e.token < t; });
    if (it == lb.end() || it->token != *id)
        lb.insert(it, {*id, st.opt.opener_bias});
}

/// Queues request `req` (its schema, if any, compiled already): its live state, its sink
/// monitored, its prompt blocks offered to the prefix cache. `received` and `timeout` as the
/// submit handler read them.
caf::expected<msg::request_id> accept_request(batcher_pointer self, msg::generate_request req,
                                              msg::sink_actor sink, clock::time_point received,
                                              std::int64_t timeout,
                                              std::optional<model::constrain::call_opener> opener) {
    auto& st = self->state;
    // min_tokens and ignore_eos act on ids no client sends: the model's end-of-generation ids
    // and the request's stop ids (model/sampling/sampling_params.hpp).
    if (req.params.min_tokens > 0 || req.params.ignore_eos) {
        req.params.eog_ids = st.opt.policy.eog_ids;
        req.params.stop_ids = req.stop_token_ids;
    }
    sched::seq_request sr;
    sr.id = req.id;
    sr.prompt = req.prompt;
    sr.max_tokens = req.max_tokens;
    sr.stop_token_ids = req.stop_token_ids;
    sr.prio = req.prio;
    sr.deadline = received + std::chrono::milliseconds(timeout);
    sr.n_resumed = req.n_resumed;
    if (req.prompt_logprobs)
        sr.max_chunk_tokens = echo_chunk_tokens;
    sr.n_choices = std::max(req.n, 1u);
    sr.tenant = req.client_key;
    const auto& pol = st.opt.policy;
    // An auto tool call's grammar starts wherever the model opens the call, which drafts made
    // ahead of the executor's own view of the output would not know: no speculation for it.
    sr.speculate = pol.spec_max_draft > 0 && !opener &&
                   (req.speculative == msg::spec_mode::on ||
                    (req.speculative == msg::spec_mode::server_default && pol.spec_by_default));
    // Jump-forward drafts need the schema the submit path compiled (a cache hit here).
    if (sr.speculate && !req.json_schema.empty() && st.tokenizer)
        if (auto known =
                model::constrain::schema_cache::shared().lookup(req.json_schema, *st.tokenizer);
            known && *known)
            sr.schema = **known;
    live_request lr;
    // A resumed stream's first run sent the echo already.
    lr.echo_sent = req.n_resumed > 0;
    if (st.tokenizer)
        lr.text.emplace(*st.tokenizer);
    if (opener)
        lr.calls.emplace(std::move(*opener));
    // Stop strings never cut a constrained value: a schema's output ends when the value
    // is whole (README, "Structured output"), so they are not applied to it at all. An auto
    // tool-call turn is free text until it opens a call: its stop strings apply.
    if (!req.stop.empty() && (req.json_schema.empty() || lr.calls)) {
        // http/ refuses empty stop strings; drop any a direct caller sends.
        std::vector<std::string> stops;
        for (auto& s : req.stop)
            if (!s.empty())
                stops.push_back(s);
        if (auto m = model::stop_string_matcher::create(std::move(stops)))
            lr.stops.emplace(std::move(*m));
    }
    // A resumed stream: the client already has the text of its first n_resumed tokens.
    // Pushing them again (text dropped) leaves the detokenizer and the stop-string
    // matcher as the first run left them (a split character, text held back for a
    // possible stop string), so the text goes on exactly where it stopped; the sampler
    // resumes its draws from n_generated (step_chunk::n_sampled).
    if (req.n_resumed > 0 && req.n_resumed < req.prompt.size()) {
        for (auto it = req.prompt.end() - req.n_resumed; it != req.prompt.end(); ++it)
            (void)lr.push_parts(*it);
        if (lr.stopped())
            return caf::expected<msg::request_id>(msg::to_caf_error(
                bitnet::error{errc::invalid_argument,
                              "the resumed tokens already contain a stop string", "n_resumed"}));
        lr.n_generated = req.n_resumed;
    }
    const auto sr_choices = sr.n_choices;
    if (auto added = st.policy->add(std::move(sr), received); !added)
        return caf::expected<msg::request_id>(msg::to_caf_error(added.error()));
    const auto id = req.id;
    self->monitor(sink);
    st.by_sink[sink.address()] = id;
    st.open_choices[id] = sr_choices;
    if (st.opt.policy.prefix_caching) {
        // Whole blocks of the original prompt (resumed tokens were decoded); a one-token
        // prompt is itself computed as a decode (seq_chunk::decoded_from 0).
        const std::size_t n_prompt = req.prompt.size() - req.n_resumed;
        const std::size_t bt = std::max(st.opt.policy.kv_block_tokens, 1u);
        const std::size_t n = n_prompt > 1 ? n_prompt / bt * bt : 0;
        lr.prefix_tokens.assign(req.prompt.begin(),
                                req.prompt.begin() + static_cast<std::ptrdiff_t>(n));
    }
    lr.sink = std::move(sink);
    lr.received = received;
    lr.req = std::move(req);
    trace_submitted(lr);
    st.live.emplace(id, std::move(lr));
    kick(self);
    return id;
}

/// An auto tool-call turn whose call grammar cannot be compiled (a function's parameters use a
/// keyword the compiler refuses): the turn runs as plain generation, as it would on a template
/// that writes no calls, rather than failing a request that did not ask for a call.
caf::expected<msg::request_id> accept_plain(batcher_pointer self, msg::generate_request req,
                                            msg::sink_actor sink, clock::time_point received,
                                            std::int64_t timeout, const std::string& why) {
    spdlog::debug("model '{}': request {}: no grammar for tool calls the model may open ({}); "
                  "the turn is plain generation",
                  self->state.opt.model, req.id, why);
    req.json_schema.clear();
    req.schema_param.clear();
    return accept_request(self, std::move(req), std::move(sink), received, timeout, std::nullopt);
}

/// The schema's compile error as the request's error (a 400 naming the field it came in).
caf::error schema_error(const msg::generate_request& req, const std::string& message) {
    return msg::to_caf_error(
        bitnet::error{errc::invalid_argument, message,
                      req.schema_param.empty() ? "response_format" : req.schema_param});
}

/// The batcher's schema compiler: a detached actor of its own, so a schema that takes its whole
/// compile budget (limits::max_compile_ms) delays only the request that sent it, never the steps
/// of the streams this batcher runs. Answers once the schema is compiled (now in the schema
/// cache), or with the error that refuses it.
caf::behavior schema_compiler_fn(caf::event_based_actor*,
                                 std::shared_ptr<const model::tokenizer> tok) {
    return {
        [tok](msg::compile_atom, const std::string& schema) -> caf::result<void> {
            try {
                auto compiled = model::constrain::schema_cache::shared().get(schema, *tok);
                if (!compiled)
                    return msg::to_caf_error(compiled.error());
                return {};
            } catch (const std::exception& e) {
                // Out of memory and the like: this request's refusal, not the batcher's end
                // (the two are linked).
                return msg::to_caf_error(
                    bitnet::error{errc::invalid_argument,
                                  std::string("the schema could not be compiled: ") + e.what()});
            }
        },
    };
}

/// A request waiting for its schema's compile on the compiler thread.
struct compile_wait {
    msg::generate_request req;
    msg::sink_actor sink;
    clock::time_point received;
    std::int64_t timeout = 0;
    std::optional<model::constrain::call_opener> opener;
};

/// The request's answer once its schema compiled (`refusal` empty) or was refused: queued, run
/// as plain generation (an auto tool-call turn whose call grammar cannot be compiled), or the
/// 400 naming the field the schema came in.
void after_compile(batcher_pointer self, caf::typed_response_promise<msg::request_id>& rp,
                   compile_wait& w, const std::optional<bitnet::error>& refusal) {
    auto answer = [&](caf::expected<msg::request_id> id) {
        if (id)
            rp.deliver(*id);
        else
            rp.deliver(id.error());
    };
    if (refusal && w.opener)
        return answer(accept_plain(self, std::move(w.req), std::move(w.sink), w.received, w.timeout,
                                   refusal->message));
    if (refusal)
        return (void)rp.deliver(schema_error(w.req, refusal->message));
    answer(accept_request(self, std::move(w.req), std::move(w.sink), w.received, w.timeout,
                          std::move(w.opener)));
}

} // namespace

caf::result<msg::request_id> submit(batcher_pointer self, msg::generate_request req,
                                    msg::sink_actor sink) {
    auto& st = self->state;
    const auto now = clock::now();
    const auto received = req.t_received_us > 0
                              ? clock::time_point{std::chrono::microseconds(req.t_received_us)}
                              : now;
    const auto timeout = req.timeout_ms > 0 ? req.timeout_ms : st.opt.default_timeout_ms;
    // Tool calls the model chooses: decoded under the call grammar of the template's syntax
    // once the model opens a call; a template that writes no calls leaves the turn plain.
    std::optional<model::constrain::call_opener> opener;
    if (!req.tool_union.empty() && req.json_schema.empty() && req.n <= 1 && st.tokenizer)
        if (auto g = model::constrain::auto_call_grammar_for(
                static_cast<model::tool_call_syntax>(st.opt.tool_syntax), req.tool_union,
                max_auto_calls)) {
            req.json_schema = std::move(g->schema); // schema_param: http/ named the field
            opener = std::move(g->opener);
            steer_opener(st, *opener, req.params);
        }
    auto accept = [&]() -> caf::result<msg::request_id> {
        auto id = accept_request(self, std::move(req), std::move(sink), received, timeout, opener);
        if (!id)
            return id.error();
        return *id;
    };
    if (req.json_schema.empty())
        return accept();
    // A schema is compiled (once per schema, cached) before the request is queued, so one
    // that cannot be enforced is a 400 before any stream starts. A schema not compiled yet
    // is compiled on this batcher's compiler thread, the request waiting for it alone.
    if (!st.tokenizer)
        return msg::to_caf_error(
            bitnet::error{errc::invalid_argument,
                          "structured output needs the model's tokenizer, and this server has none",
                          req.schema_param});
    if (auto known =
            model::constrain::schema_cache::shared().lookup(req.json_schema, *st.tokenizer)) {
        if (!*known && opener)
            return accept_plain(self, std::move(req), std::move(sink), received, timeout,
                                known->error().message);
        if (!*known)
            return schema_error(req, known->error().message);
        return accept();
    }
    // Tracing: a compile is a span of its own (a cached schema costs nothing to trace).
    auto span = open_shared_span(req.trace, "bitnet.schema_compile");
    if (span) {
        span_attr(span->s, "bitnet.schema_param", req.schema_param);
        span_attr(span->s, "bitnet.schema_bytes",
                  static_cast<std::int64_t>(req.json_schema.size()));
    }
    if (!st.compiler)
        st.compiler = self->spawn<caf::detached + caf::linked>(schema_compiler_fn, st.tokenizer);
    auto rp = self->make_response_promise<msg::request_id>();
    const auto schema = req.json_schema;
    auto wait = std::make_shared<compile_wait>(
        compile_wait{std::move(req), std::move(sink), received, timeout, std::move(opener)});
    auto close = [span](const caf::error* e) {
        if (!span)
            return;
        if (e)
            span_error(span->s, msg::from_caf_error(*e).message);
        close_span(span->s);
    };
    self->request(st.compiler, caf::infinite, msg::compile_atom_v, schema)
        .then(
            [self, rp, wait, close]() mutable {
                close(nullptr);
                after_compile(self, rp, *wait, std::nullopt);
            },
            [self, rp, wait, close](caf::error& e) mutable {
                close(&e);
                if (e.category() != msg::error_category())
                    return (void)rp.deliver(std::move(e)); // the compiler itself is gone
                after_compile(self, rp, *wait, msg::from_caf_error(e));
            });
    return rp;
}

} // namespace bitnet::actors::batcher_detail
