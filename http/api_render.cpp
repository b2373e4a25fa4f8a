// Response rendering (see api_render.hpp): OpenAI and native bodies, SSE payloads, logprobs,
// the operational routes' JSON. Streamed and latency-bearing shapes are built as text (exact
// bytes, plain decimals); the larger operational objects with Boost.JSON.
#include "http/api_render.hpp"

#include "http/api_json.hpp"
#include "http/observe/build_info.hpp"

#include <boost/json.hpp>

#include <chrono>
#include <cmath>

namespace bitnet::http {

namespace json = boost::json;

namespace {

json::array bytes_of(std::string_view s) {
    json::array a;
    for (unsigned char c : s)
        a.push_back(c);
    return a;
}

/// `"token","logprob","bytes"` of one token (no braces).
std::string logprob_fields(msg::token_id id, float lp, const piece_lookup& piece) {
    const auto p = piece(id);
    return R"("token":)" + quoted(utf8_or_replacement(p)) + R"(,"logprob":)" + fixed(lp, 6) +
           R"(,"bytes":)" + json::serialize(bytes_of(p));
}

json::object stats_json(const msg::batcher_stats& x) {
    return {{"model", x.model},
            {"waiting", {{"high", x.waiting[0]}, {"normal", x.waiting[1]}, {"low", x.waiting[2]}}},
            {"waiting_prompt_tokens", x.waiting_prompt_tokens},
            {"running", x.running},
            {"kv_blocks_used", x.kv_blocks_used},
            {"kv_blocks_total", x.kv_blocks_total},
            {"steps", x.steps},
            {"preemptions", x.preemptions},
            {"finished", x.finished},
            {"schema_compilations", x.schema_compilations},
            {"prefix_cache_query_tokens", x.prefix_query_tokens},
            {"prefix_cache_hit_tokens", x.prefix_hit_tokens},
            {"prompt_tokens_computed", x.prompt_tokens_computed},
            {"spec_draft_tokens", x.spec_drafted_tokens},
            {"spec_accepted_tokens", x.spec_accepted_tokens},
            {"spec_grammar_draft_tokens", x.spec_grammar_drafted_tokens},
            {"spec_grammar_accepted_tokens", x.spec_grammar_accepted_tokens},
            {"spec_model_draft_tokens", x.spec_model_drafted_tokens},
            {"spec_model_accepted_tokens", x.spec_model_accepted_tokens},
            {"greedy_screened_tokens", x.greedy_screened_tokens}};
}

// The kernel family of each op and how it was chosen; times in whole nanoseconds (Boost.JSON
// would print fractional microseconds in exponent form).
json::array kernels_json(const std::vector<bitnet::model::kernel_choice>& choices) {
    json::array out;
    for (const auto& c : choices) {
        json::object timings;
        for (const auto& t : c.timings)
            timings[t.family] = static_cast<std::int64_t>(std::llround(t.micros * 1000.0));
        out.push_back({{"op", c.op},
                       {"family", c.family},
                       {"source", c.source},
                       {"tokens", c.tokens},
                       {"timings_ns", std::move(timings)}});
    }
    return out;
}

/// The OpenAI model entry plus the contract's extras.
json::object model_json(const msg::model_status& m) {
    const auto& i = m.info;
    const bool ready = m.state == "ready";
    json::object o{
        {"id", m.alias},
        {"object", "model"},
        {"created", m.loaded_at > 0 ? m.loaded_at : unix_now()},
        {"owned_by", "bitnet-serve"},
        {"version", m.version},
        {"state", m.state},
        {"format", ready ? json::value(i.format) : json::value(nullptr)},
        {"architecture", ready ? json::value(i.architecture) : json::value(nullptr)},
        {"parameters", ready ? json::value(i.parameters) : json::value(nullptr)},
        {"context_length", ready ? json::value(i.n_ctx) : json::value(nullptr)},
        {"device", ready ? json::value(i.device) : json::value(nullptr)},
        {"file_sha256", m.file_sha256.empty() ? json::value(nullptr) : json::value(m.file_sha256)},
        {"path", m.path.empty() ? json::value(nullptr) : json::value(m.path)},
        {"loaded_at", m.loaded_at > 0 ? json::value(m.loaded_at) : json::value(nullptr)},
        {"previous_version",
         m.previous_version.empty() ? json::value(nullptr) : json::value(m.previous_version)}};
    if (!m.failure.empty())
        o["failure"] = m.failure;
    return o;
}

json::object version_json(const msg::version_status& v) {
    const bool known = !v.info.format.empty();
    json::object o{
        {"version", v.version},
        {"state", v.state},
        {"path", v.path},
        {"file_sha256", v.file_sha256.empty() ? json::value(nullptr) : json::value(v.file_sha256)},
        {"loaded_at", v.loaded_at > 0 ? json::value(v.loaded_at) : json::value(nullptr)},
        {"format", known ? json::value(v.info.format) : json::value(nullptr)},
        {"device", known ? json::value(v.info.device) : json::value(nullptr)},
        {"weight_bytes", known ? json::value(v.info.weight_bytes) : json::value(nullptr)},
        {"kv_pool_bytes", known ? json::value(v.info.kv_pool_bytes) : json::value(nullptr)},
        {"device_fallbacks", v.device_fallbacks}};
    if (!v.failure.empty())
        o["failure"] = v.failure;
    return o;
}

json::object operation_json(const msg::operation_status& op) {
    json::object o{
        {"id", op.id},
        {"kind", op.kind},
        {"version", op.version.empty() ? json::value(nullptr) : json::value(op.version)},
        {"state", op.state},
        {"started_ms", op.started_ms},
        {"finished_ms", op.finished_ms > 0 ? json::value(op.finished_ms) : json::value(nullptr)},
        // Request to flip, in milliseconds (formatted: Boost.JSON prints doubles in exponent
        // form).
        {"swap_ms",
         op.swap_us > 0 ? json::value(json::string(ms_of(op.swap_us))) : json::value(nullptr)}};
    if (!op.failure.empty())
        o["failure"] = op.failure;
    return o;
}

} // namespace

// ---- small pieces ------------------------------------------------------------------------

std::string quoted(std::string_view s) {
    return json::serialize(json::value(json::string(s)));
}

std::string ms_of(std::int64_t us) {
    return fixed(static_cast<double>(us) / 1000.0, 3);
}

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string openai_finish(msg::finish_reason reason) {
    // A drain-cut ("cancelled") output is cut short too: OpenAI has no other word for it, and
    // the stream's error event says why.
    return msg::ran_out(reason) || reason == msg::finish_reason::cancelled ? "length" : "stop";
}

std::string utf8_or_replacement(std::string_view s) {
    std::string out;
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = c < 0x80           ? 1
                        : (c >> 5) == 0x6  ? 2
                        : (c >> 4) == 0xE  ? 3
                        : (c >> 3) == 0x1E ? 4
                                           : 0;
        bool ok = n > 0 && i + n <= s.size() && !(n == 2 && c < 0xC2);
        for (std::size_t k = 1; ok && k < n; ++k)
            ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
        if (ok) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

std::string json_list(const std::vector<std::string>& xs) {
    std::string out = "[";
    for (std::size_t i = 0; i < xs.size(); ++i)
        out += (i ? "," : "") + xs[i];
    return out + "]";
}

piece_lookup pieces_of(const msg::token_event& ev) {
    return [&ev](msg::token_id id) {
        if (id == ev.token)
            return ev.piece;
        for (std::size_t i = 0; i < ev.top_tokens.size() && i < ev.top_pieces.size(); ++i)
            if (ev.top_tokens[i] == id)
                return ev.top_pieces[i];
        return std::string{};
    };
}

std::string usage_json(const msg::completion& c) {
    // cached_tokens: this request's own prompt tokens from the prefix cache (the cache is scoped
    // per API key, so it tells a client nothing of other keys' traffic).
    return R"({"prompt_tokens":)" + std::to_string(c.prompt_tokens) + R"(,"completion_tokens":)" +
           std::to_string(c.completion_tokens) + R"(,"total_tokens":)" +
           std::to_string(c.prompt_tokens + c.completion_tokens) +
           R"(,"prompt_tokens_details":{"cached_tokens":)" + std::to_string(c.cached_tokens) + "}}";
}

std::string timings_json(const msg::completion& c) {
    const double tps = c.decode_us > 0 && c.completion_tokens > 1
                           ? (c.completion_tokens - 1) * 1e6 / static_cast<double>(c.decode_us)
                           : 0.0;
    return R"({"queue_ms":)" + ms_of(c.queue_us) + R"(,"prefill_ms":)" + ms_of(c.prefill_us) +
           R"(,"ttft_ms":)" + ms_of(c.ttft_us) + R"(,"decode_ms":)" + ms_of(c.decode_us) +
           R"(,"total_ms":)" + ms_of(c.total_us) + R"(,"tokens_per_second":)" + fixed(tps, 2) + "}";
}

std::string server_timing(const msg::completion& c) {
    return "queue;dur=" + ms_of(c.queue_us) + ", prefill;dur=" + ms_of(c.prefill_us) +
           ", decode;dur=" + ms_of(c.decode_us) + ", total;dur=" + ms_of(c.total_us);
}

// ---- logprobs ----------------------------------------------------------------------------

std::string chat_logprob(const msg::token_event& ev, const piece_lookup& piece) {
    std::string out = "{" + logprob_fields(ev.token, ev.logprob, piece) + R"(,"top_logprobs":[)";
    for (std::size_t i = 0; i < ev.top_tokens.size() && i < ev.top_logprobs.size(); ++i)
        out += (i ? ",{" : "{") + logprob_fields(ev.top_tokens[i], ev.top_logprobs[i], piece) + "}";
    return out + "]}";
}

std::string chat_logprobs_object(const std::vector<std::string>& entries) {
    return R"({"content":)" + json_list(entries) + "}";
}

std::array<std::string, 4> completion_logprob_columns(const msg::token_event& ev,
                                                      const piece_lookup& piece,
                                                      std::size_t text_offset) {
    const auto p = piece(ev.token);
    std::string top = "{";
    bool sampled_listed = false;
    for (std::size_t i = 0; i < ev.top_tokens.size() && i < ev.top_logprobs.size(); ++i) {
        top += (i ? "," : "") + quoted(utf8_or_replacement(piece(ev.top_tokens[i]))) + ":" +
               fixed(ev.top_logprobs[i], 6);
        sampled_listed = sampled_listed || ev.top_tokens[i] == ev.token;
    }
    // OpenAI's legacy completions list the sampled token among the alternatives even when it
    // is not one of the top ones (then logprobs + 1 entries).
    if (!sampled_listed && !ev.top_tokens.empty())
        top += "," + quoted(utf8_or_replacement(p)) + ":" + fixed(ev.logprob, 6);
    top += "}";
    return {quoted(utf8_or_replacement(p)), fixed(ev.logprob, 6), top, std::to_string(text_offset)};
}

std::string completion_logprobs_object(const std::array<std::vector<std::string>, 4>& cols) {
    return R"({"tokens":)" + json_list(cols[0]) + R"(,"token_logprobs":)" + json_list(cols[1]) +
           R"(,"top_logprobs":)" + json_list(cols[2]) + R"(,"text_offset":)" + json_list(cols[3]) +
           "}";
}

// ---- inference: streams ------------------------------------------------------------------

std::string chat_chunk(const chunk_head& h, const std::string& delta, const std::string& finish,
                       const std::string& logprobs, std::uint32_t index) {
    return R"({"id":"chatcmpl-)" + std::string(h.req_id.substr(4)) +
           R"(","object":"chat.completion.chunk","created":)" + std::to_string(h.created) +
           R"(,"model":)" + quoted(h.model) +
           R"(,"system_fingerprint":"bitnet-serve","choices":[{"index":)" + std::to_string(index) +
           R"(,"delta":)" + delta + R"(,"logprobs":)" + logprobs + R"(,"finish_reason":)" + finish +
           R"(}],"usage":null})";
}

std::string completion_chunk(const chunk_head& h, const std::string& text,
                             const std::string& finish, const std::string& logprobs,
                             std::uint32_t index) {
    return R"({"id":"cmpl-)" + std::string(h.req_id.substr(4)) +
           R"(","object":"text_completion","created":)" + std::to_string(h.created) +
           R"(,"model":)" + quoted(h.model) +
           R"(,"system_fingerprint":"bitnet-serve","choices":[{"text":)" + quoted(text) +
           R"(,"index":)" + std::to_string(index) + R"(,"logprobs":)" + logprobs +
           R"(,"finish_reason":)" + finish + R"(}],"usage":null})";
}

std::string chat_usage_chunk(const chunk_head& h, const msg::completion& c) {
    return R"({"id":"chatcmpl-)" + std::string(h.req_id.substr(4)) +
           R"(","object":"chat.completion.chunk","created":)" + std::to_string(h.created) +
           R"(,"model":)" + quoted(h.model) +
           R"(,"system_fingerprint":"bitnet-serve","choices":[],"usage":)" + usage_json(c) + "}";
}

std::string completion_usage_chunk(const chunk_head& h, const msg::completion& c) {
    return R"({"id":"cmpl-)" + std::string(h.req_id.substr(4)) +
           R"(","object":"text_completion","created":)" + std::to_string(h.created) +
           R"(,"model":)" + quoted(h.model) +
           R"(,"system_fingerprint":"bitnet-serve","choices":[],"usage":)" + usage_json(c) + "}";
}

std::string native_token_event(const msg::token_event& ev, bool with_logprob) {
    const bool real_token = ev.token >= 0;
    return R"({"index":)" + std::to_string(ev.index) + R"(,"token_id":)" +
           (real_token ? std::to_string(ev.token) : "null") + R"(,"text":)" + quoted(ev.text) +
           (real_token && with_logprob ? R"(,"logprob":)" + fixed(ev.logprob, 6) : "") + "}";
}

std::string native_done_event(const msg::completion& c) {
    return R"({"finish_reason":)" + quoted(to_string(c.finish)) + R"(,"usage":)" + usage_json(c) +
           R"(,"timings":)" + timings_json(c) + R"(,"model_version":)" + quoted(c.model_version) +
           "}";
}

// ---- inference: plain replies ------------------------------------------------------------

std::string native_body(const std::string& req_id, const msg::completion& c,
                        const std::string& text, const std::vector<msg::token_event>& tokens,
                        bool with_logprobs) {
    std::string toks = "[";
    for (std::size_t i = 0; i < tokens.size(); ++i)
        toks += (i ? "," : "") + std::to_string(tokens[i].token);
    toks += "]";
    std::string lps;
    if (with_logprobs) {
        // One entry per returned token, as the stream's token events carry them, with the
        // alternatives `logprobs: N` asked for.
        lps = R"(,"logprobs":[)";
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            const auto& t = tokens[i];
            lps += std::string(i ? "," : "") + R"({"token_id":)" + std::to_string(t.token) +
                   R"(,"logprob":)" + fixed(t.logprob, 6) + R"(,"top_logprobs":[)";
            for (std::size_t k = 0; k < t.top_tokens.size() && k < t.top_logprobs.size(); ++k)
                lps += std::string(k ? "," : "") + R"({"token_id":)" +
                       std::to_string(t.top_tokens[k]) + R"(,"logprob":)" +
                       fixed(t.top_logprobs[k], 6) + "}";
            lps += "]}";
        }
        lps += "]";
    }
    return R"({"id":)" + quoted(req_id) + R"(,"model":)" + quoted(c.model) +
           R"(,"model_version":)" + quoted(c.model_version) + R"(,"text":)" + quoted(text) +
           R"(,"tokens":)" + toks + lps + R"(,"finish_reason":)" + quoted(to_string(c.finish)) +
           R"(,"usage":)" + usage_json(c) + R"(,"timings":)" + timings_json(c) + "}";
}

std::string chat_body(const std::string& req_id, std::int64_t created, const msg::completion& c,
                      const std::string& text, const std::string& logprobs) {
    return R"({"id":"chatcmpl-)" + req_id.substr(4) + R"(","object":"chat.completion","created":)" +
           std::to_string(created) + R"(,"model":)" + quoted(c.model) +
           R"(,"system_fingerprint":"bitnet-serve","choices":[{"index":0,"message":{"role":"assistant","content":)" +
           quoted(text) + R"(,"refusal":null},"logprobs":)" + logprobs + R"(,"finish_reason":)" +
           quoted(openai_finish(c.finish)) + R"(}],"usage":)" + usage_json(c) + "}";
}

std::string chat_tool_call_body(const std::string& req_id, std::int64_t created,
                                const msg::completion& c,
                                const std::optional<std::string>& tool_calls,
                                const std::string* content) {
    const bool whole = tool_calls.has_value();
    // A call cut short (max_tokens, the deadline) is no call and no content: the partial
    // arguments are internal text, never an answer a client could take for one.
    const std::string head = R"({"role":"assistant","content":)" +
                             (content ? quoted(*content) : "null") + R"(,"refusal":null)";
    const std::string message = whole ? head + R"(,"tool_calls":)" + *tool_calls + "}" : head + "}";
    return R"({"id":"chatcmpl-)" + req_id.substr(4) + R"(","object":"chat.completion","created":)" +
           std::to_string(created) + R"(,"model":)" + quoted(c.model) +
           R"(,"system_fingerprint":"bitnet-serve","choices":[{"index":0,"message":)" + message +
           R"(,"logprobs":null,"finish_reason":)" +
           quoted(whole ? std::string("tool_calls") : openai_finish(c.finish)) + R"(}],"usage":)" +
           usage_json(c) + "}";
}

std::string completion_body(const std::string& req_id, std::int64_t created,
                            const msg::completion& c, const std::string& text,
                            const std::string& logprobs) {
    return R"({"id":"cmpl-)" + req_id.substr(4) + R"(","object":"text_completion","created":)" +
           std::to_string(created) + R"(,"model":)" + quoted(c.model) +
           R"(,"system_fingerprint":"bitnet-serve","choices":[{"text":)" + quoted(text) +
           R"(,"index":0,"logprobs":)" + logprobs + R"(,"finish_reason":)" +
           quoted(openai_finish(c.finish)) + R"(}],"usage":)" + usage_json(c) + "}";
}

// ---- operational routes ------------------------------------------------------------------

namespace {

/// /health's "devices": the placement list and what the CUDA runtime reported at start-up.
json::object devices_json(const device_inventory& d) {
    json::array placements, cuda_devices;
    for (const auto& p : d.placements)
        placements.emplace_back(p);
    for (const auto& c : d.cuda_devices)
        cuda_devices.push_back(
            {{"index", c.index}, {"name", c.name}, {"sm", c.sm}, {"total_bytes", c.total_bytes}});
    return {{"placements", std::move(placements)},
            {"cpu", true},
            {"cuda",
             {{"built", d.cuda_built},
              {"driver_version", d.cuda_driver_version},
              {"runtime_version", d.cuda_runtime_version},
              {"devices", std::move(cuda_devices)},
              {"error", d.cuda_error.empty() ? json::value(nullptr) : json::value(d.cuda_error)}}}};
}

} // namespace

std::string health_body(const status_snapshot& snap, const build_info& b, bool has_supervisor,
                        std::int64_t uptime_s) {
    json::object build{{"git_sha", b.git_sha},
                       {"compiler", b.compiler},
                       {"flags", b.flags},
                       {"cpu_features", b.cpu_features},
                       {"test_hooks", b.test_hooks}};
    json::array models, executors;
    for (const auto& m : snap.models) {
        const bool known = !m.info.device.empty();
        json::object mo{
            {"alias", m.alias},
            {"version", m.version},
            {"state", m.state},
            {"restarts", m.restarts},
            {"device", known ? json::value(m.info.device) : json::value(nullptr)},
            {"device_reason", known ? json::value(m.info.device_reason) : json::value(nullptr)},
            {"device_fallbacks", m.device_fallbacks}};
        if (!m.failure.empty())
            mo["failure"] = m.failure;
        models.push_back(std::move(mo));
        if (m.state == "ready")
            executors.push_back({{"model", m.alias},
                                 {"device", m.info.device},
                                 {"device_reason", m.info.device_reason},
                                 {"engine", m.info.describe}});
    }
    json::object components{
        {"admission",
         {{"status", snap.admission_up ? (snap.ready ? "ready" : "not_ready") : "down"},
          {"reason", snap.ready_reason}}},
        {"supervisor",
         {{"status", has_supervisor ? (snap.supervisor_up ? "up" : "down") : "absent"}}},
        {"models", std::move(models)},
        {"executors", std::move(executors)}};
    json::object root{{"status", snap.ready ? "ok" : "unavailable"},
                      {"reason", snap.ready_reason},
                      {"version", b.version},
                      {"build", std::move(build)},
                      {"uptime_s", uptime_s},
                      {"components", std::move(components)},
                      {"devices", devices_json(b.devices)},
                      {"compute",
                       {{"threads", b.compute.threads},
                        {"threads_from", b.compute.threads_from},
                        {"spin_count", b.compute.spin_count}}}};
    return json::serialize(root);
}

std::string key_stats_body(std::uint64_t requests, std::uint64_t prompt_tokens,
                           std::uint64_t completion_tokens) {
    json::object key{{"requests", requests},
                     {"prompt_tokens", prompt_tokens},
                     {"completion_tokens", completion_tokens}};
    return json::serialize(json::object{{"key", std::move(key)}});
}

namespace {

json::object memory_json(const std::vector<memory::table_figures>& tables) {
    json::object t;
    for (const auto& f : tables)
        t[f.name] = {{"bytes", f.bytes},
                     {"budget_bytes", f.budget_bytes},
                     {"entries", f.entries},
                     {"evictions", f.evictions}};
    json::object live;
    for (std::size_t k = 0; k < memory::live_kinds; ++k) {
        const auto kind = static_cast<memory::live_kind>(k);
        live[memory::live_kind_name(kind)] = memory::live_count(kind);
    }
    return {{"tables", std::move(t)}, {"live_objects", std::move(live)}};
}

} // namespace

std::string stats_body(const std::vector<msg::batcher_stats>& stats, const live_stats& live,
                       const process_figures& process) {
    json::array models;
    std::uint64_t queried = 0, hit = 0;
    for (const auto& x : stats) {
        models.push_back(stats_json(x));
        queried += x.prefix_query_tokens;
        hit += x.prefix_hit_tokens;
    }
    json::object rejects;
    for (const auto& [reason, n] : live.rejects)
        rejects[reason] = n;
    json::object root;
    root["models"] = std::move(models);
    root["rejects"] = std::move(rejects);
    root["memory"] = memory_json(process.tables);
    root["connections"] = {{"open", process.connections_open},
                           {"reclaimed", process.connections_reclaimed}};
    // Process-wide: every model reports the same figures, so the first one's are shown.
    if (!stats.empty()) {
        const auto& x = stats.front();
        root["mask_cache"] = {{"budget_bytes", x.mask_cache_budget_bytes},
                              {"bytes", x.mask_cache_bytes},
                              {"masks", x.mask_cache_masks},
                              {"schemas", x.mask_cache_schemas},
                              {"hits", x.mask_cache_hits},
                              {"misses", x.mask_cache_misses},
                              {"evictions", x.mask_cache_evictions}};
    }
    // Rates and the mean as plain decimals (Boost.JSON would print 2.5E-1).
    auto body = json::serialize(root);
    body.pop_back();
    body += R"(,"batch_size":{"steps":)" + std::to_string(live.steps) + R"(,"mean":)" +
            fixed(live.batch_mean, 2) + R"(,"p50":)" + std::to_string(live.batch_p50) +
            R"(,"p90":)" + std::to_string(live.batch_p90) + R"(,"p99":)" +
            std::to_string(live.batch_p99) + R"(,"max":)" + std::to_string(live.batch_max) +
            R"(},"tokens_per_second":{"prompt":{"10s":)" + fixed(live.prompt_tps_10s, 2) +
            R"(,"60s":)" + fixed(live.prompt_tps_60s, 2) + R"(},"generated":{"10s":)" +
            fixed(live.generated_tps_10s, 2) + R"(,"60s":)" + fixed(live.generated_tps_60s, 2) +
            R"(}},"prefix_cache":{"query_tokens":)" + std::to_string(queried) +
            R"(,"hit_tokens":)" + std::to_string(hit) + R"(,"hit_rate":)" +
            fixed(queried > 0 ? static_cast<double>(hit) / static_cast<double>(queried) : 0.0, 4) +
            "}}";
    return body;
}

std::string models_list_body(const std::vector<msg::model_status>& models) {
    json::array data;
    for (const auto& m : models)
        if (m.state != "unloaded") // gone; GET /v1/models/{alias} still tells how
            data.push_back(model_json(m));
    json::object root{{"object", "list"}, {"data", std::move(data)}};
    return json::serialize(root);
}

std::string model_detail_body(const msg::model_status& m,
                              const std::vector<msg::batcher_stats>& stats) {
    auto o = model_json(m);
    if (m.state == "ready") {
        o["device_reason"] = m.info.device_reason;
        o["engine"] = m.info.describe;
        o["weight_bytes"] = m.info.weight_bytes;
        o["kv_pool_bytes"] = m.info.kv_pool_bytes;
        o["kernels"] = kernels_json(m.info.kernels);
    }
    o["restarts"] = m.restarts;
    o["device_fallbacks"] = m.device_fallbacks;
    o["failure"] = m.failure.empty() ? json::value(nullptr) : json::value(m.failure);
    json::array versions, ops;
    for (const auto& v : m.versions)
        versions.push_back(version_json(v));
    for (const auto& op : m.operations)
        ops.push_back(operation_json(op));
    o["versions"] = std::move(versions);
    o["operations"] = std::move(ops);
    for (const auto& x : stats)
        if (x.model == m.alias)
            o["performance"] = stats_json(x);
    return json::serialize(o);
}

// ---- model management and text -----------------------------------------------------------

std::string ticket_body(const msg::operation_ticket& t) {
    json::object o{{"alias", t.alias},
                   {"version", t.version.empty() ? json::value(nullptr) : json::value(t.version)},
                   {"state", t.state},
                   {"operation_id", t.operation_id}};
    return json::serialize(o);
}

std::string ticket_error_body(const api_error& e, const std::string& req_id,
                              const std::string& operation_id) {
    auto body = json::parse(error_body(e, req_id)).as_object();
    if (!operation_id.empty())
        body["operation_id"] = operation_id;
    return json::serialize(body);
}

std::string alias_body(const std::string& alias) {
    return json::serialize(json::object{{"alias", alias}});
}

std::string tokenize_body(const std::vector<std::int32_t>& ids, const std::string& model) {
    json::array a;
    for (auto t : ids)
        a.push_back(t);
    return json::serialize(json::object{{"tokens", std::move(a)}, {"model", model}});
}

std::string detokenize_body(const std::string& text, const std::string& model) {
    return json::serialize(json::object{{"text", utf8_or_replacement(text)}, {"model", model}});
}

} // namespace bitnet::http
