#include "http/api_json.hpp"

#include "common/exact_numbers.hpp"
#include "http/api_messages.hpp"
#include "http/api_sampling.hpp"
#include "http/api_structured.hpp"
#include "http/cache_scope.hpp"
#include "http/field_policy.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace bitnet::http {
namespace {

namespace json = boost::json;

/// Reads optional fields of one object, remembering the first error.
class fields {
public:
    explicit fields(const json::object& o)
        : o_(o) {}

    [[nodiscard]] bool failed() const noexcept { return failed_; }
    [[nodiscard]] const api_error& error() const noexcept { return err_; }
    void fail(const std::string& param, const std::string& msg) {
        if (!failed_) {
            failed_ = true;
            err_ = invalid_value(param, msg);
        }
    }

    const json::value* get(std::string_view k) const {
        auto* v = o_.if_contains(k);
        return (v && !v->is_null()) ? v : nullptr;
    }

    void number(std::string_view k, double lo, double hi, float& out) {
        if (auto* v = get(k)) {
            if (!v->is_number())
                return fail(std::string(k), std::string(k) + " must be a number");
            const double d = v->to_number<double>();
            if (!(d >= lo && d <= hi))
                return fail(std::string(k), std::string(k) + " must be within " + fixed(lo, 2) +
                                                ".." + fixed(hi, 2));
            out = static_cast<float>(d);
        }
    }

    template <class Int>
    void integer(std::string_view k, std::int64_t lo, std::int64_t hi, Int& out) {
        if (auto* v = get(k)) {
            if (!v->is_int64() && !v->is_uint64())
                return fail(std::string(k), std::string(k) + " must be an integer");
            if (v->is_uint64() && v->get_uint64() > static_cast<std::uint64_t>(hi))
                return fail(std::string(k), std::string(k) + " must be within " +
                                                std::to_string(lo) + ".." + std::to_string(hi));
            const auto i =
                v->is_int64() ? v->get_int64() : static_cast<std::int64_t>(v->get_uint64());
            if (i < lo || i > hi)
                return fail(std::string(k), std::string(k) + " must be within " +
                                                std::to_string(lo) + ".." + std::to_string(hi));
            out = static_cast<Int>(i);
        }
    }

    void seed(std::string_view k, std::uint64_t& out) {
        if (auto* v = get(k)) {
            if (v->is_uint64())
                out = v->get_uint64();
            else if (v->is_int64() && v->get_int64() >= 0)
                out = static_cast<std::uint64_t>(v->get_int64());
            else
                fail(std::string(k), std::string(k) + " must be a non-negative integer");
        }
    }

    void boolean(std::string_view k, bool& out) {
        if (auto* v = get(k)) {
            if (!v->is_bool())
                return fail(std::string(k), std::string(k) + " must be true or false");
            out = v->get_bool();
        }
    }

    void string(std::string_view k, std::string& out) {
        if (auto* v = get(k)) {
            if (!v->is_string())
                return fail(std::string(k), std::string(k) + " must be a string");
            out = std::string(v->get_string());
        }
    }

    void token_ids(std::string_view k, const json::array& a, std::vector<msg::token_id>& out) {
        for (const auto& e : a) {
            if (!e.is_int64() || e.get_int64() < 0 ||
                e.get_int64() > std::numeric_limits<std::int32_t>::max())
                return fail(std::string(k),
                            std::string(k) + " must hold token ids (integers >= 0)");
            out.push_back(static_cast<msg::token_id>(e.get_int64()));
        }
    }

private:
    const json::object& o_;
    bool failed_ = false;
    api_error err_;
};

} // namespace

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

namespace {

// The parts of parse_inference, in the order it reads the body. Each returns the error that
// ends parsing at once; the errors `fields` remembers (the first wins) are returned at the end.

/// chat: "messages"; the others: "prompt" (text or token ids).
std::optional<api_error> read_prompt(fields& f, api_family kind, inference_input& in) {
    if (kind == api_family::chat) {
        const auto* m = f.get("messages");
        if (!m)
            return invalid_value("messages", "messages must be a non-empty array");
        if (auto err = read_chat_messages(*m, in.messages))
            return err;
        if (const auto* kw = f.get("chat_template_kwargs"); kw && !kw->is_null()) {
            if (!kw->is_object())
                return invalid_value("chat_template_kwargs",
                                     "chat_template_kwargs must be an object of template "
                                     "variables");
            in.template_kwargs = json::serialize(*kw);
        }
    } else {
        const auto* p = f.get("prompt");
        if (!p)
            return invalid_value("prompt", "prompt is required");
        if (p->is_string()) {
            in.prompt_text = std::string(p->get_string());
            if (in.prompt_text.empty())
                return invalid_value("prompt", "prompt must not be empty");
        } else if (p->is_array() && !p->get_array().empty()) {
            const auto& a = p->get_array();
            // OpenAI's list of prompts (what lm-evaluation-harness sends, one per batch entry):
            // a list of one prompt is that prompt; more get a clear refusal, not "not token ids".
            if (a[0].is_array() || a[0].is_string()) {
                if (a.size() > 1)
                    return invalid_value("prompt",
                                         "a list of " + std::to_string(a.size()) +
                                             " prompts: this server answers one prompt per "
                                             "request; send them as separate requests (for "
                                             "lm-evaluation-harness, batch_size=1)");
                if (a[0].is_string()) {
                    in.prompt_text = std::string(a[0].get_string());
                    if (in.prompt_text.empty())
                        return invalid_value("prompt", "prompt must not be empty");
                    return std::nullopt;
                }
                if (a[0].get_array().empty())
                    return invalid_value("prompt", "prompt must not be empty");
                in.prompt_is_ids = true;
                f.token_ids("prompt", a[0].get_array(), in.prompt_ids);
                return std::nullopt;
            }
            in.prompt_is_ids = true;
            f.token_ids("prompt", a, in.prompt_ids);
        } else {
            return invalid_value("prompt", "prompt must be a string or an array of token ids");
        }
    }
    return std::nullopt;
}

/// Completions' "echo". Chat and native have no such field: true there is refused rather than
/// silently ignored (a client that asks for the prompt back expects it).
void read_echo(fields& f, api_family kind, inference_input& in) {
    bool echo = false;
    f.boolean("echo", echo);
    if (echo && kind != api_family::completions)
        return f.fail("echo", "echo is a /v1/completions field: this route cannot echo the prompt");
    in.echo = echo;
}

/// Lengths, sampling, timeout and logprobs: every error is remembered, none ends parsing.
void read_sampling(fields& f, api_family kind, inference_input& in) {
    read_echo(f, kind, in);
    // max_tokens 0 generates nothing: only meaningful when the prompt comes back (echo).
    const std::int64_t least = in.echo ? 0 : 1;
    for (const char* k : {"max_tokens", "max_completion_tokens"}) {
        if (kind == api_family::native && k != std::string_view("max_tokens"))
            continue;
        if (const auto* v = f.get(k);
            v && !in.echo && v->is_number() && v->to_number<double>() == 0)
            f.fail(k, std::string(k) + " must be at least 1 (0 is allowed only with \"echo\": "
                                       "true on /v1/completions, to score the prompt)");
        f.integer(k, least, 1 << 20, in.max_tokens);
    }
    f.number("temperature", 0.0, 5.0, in.params.temperature);
    f.integer("top_k", 0, 1 << 20, in.params.top_k);
    f.number("top_p", 0.0, 1.0, in.params.top_p);
    if (const auto* tp = f.get("top_p"); tp && tp->is_number() && tp->to_number<double>() <= 0.0)
        f.fail("top_p", "top_p must be within 0 (exclusive)..1.00");
    f.number("min_p", 0.0, 1.0, in.params.min_p);
    f.number("repetition_penalty", 0.01, 10.0, in.params.repetition_penalty);
    f.seed("seed", in.params.seed);
    f.boolean("add_bos", in.add_bos);
    f.integer("timeout_ms", 1, 3'600'000, in.timeout_ms);

    // logprobs: native 0..20; OpenAI chat `logprobs: bool` + `top_logprobs`; completions int.
    // Chat: `logprobs` turns reporting on, `top_logprobs` asks for alternatives. Completions and
    // native: `logprobs: N` reports the chosen token and N alternatives (N = 0: none asked).
    in.params.n_logprobs = 0;
    if (const auto* lp = f.get("logprobs")) {
        if (kind == api_family::chat) {
            f.boolean("logprobs", in.want_logprobs);
        } else {
            f.integer("logprobs", 0, 20, in.params.n_logprobs);
            in.want_logprobs = lp->is_number() && in.params.n_logprobs > 0;
        }
    }
    if (kind == api_family::native)
        f.boolean("token_logprob", in.token_logprob);
    if (kind == api_family::chat) {
        f.integer("top_logprobs", 0, 20, in.params.n_logprobs);
        if (in.params.n_logprobs > 0 && !in.want_logprobs)
            f.fail("top_logprobs", "top_logprobs needs \"logprobs\": true");
    }
}

/// "stop" strings and "stop_token_ids".
std::optional<api_error> read_stops(fields& f, inference_input& in) {
    if (const auto* s = f.get("stop")) {
        if (s->is_string()) {
            in.stop.emplace_back(s->get_string());
        } else if (s->is_array() && s->get_array().size() <= 8) {
            for (const auto& e : s->get_array()) {
                if (!e.is_string() || e.get_string().empty())
                    return invalid_value("stop", "stop must hold non-empty strings");
                in.stop.emplace_back(e.get_string());
            }
        } else {
            return invalid_value("stop", "stop must be a string or an array of at most 8");
        }
    }
    if (const auto* s = f.get("stop_token_ids")) {
        if (!s->is_array())
            return invalid_value("stop_token_ids", "stop_token_ids must be an array");
        f.token_ids("stop_token_ids", s->get_array(), in.stop_token_ids);
    }
    return std::nullopt;
}

/// "priority": high, normal or low.
std::optional<api_error> read_priority(fields& f, inference_input& in) {
    if (const auto* p = f.get("priority")) {
        const std::string_view v = p->is_string() ? std::string_view(p->get_string()) : "";
        if (v == "high")
            in.prio = msg::priority::high;
        else if (v == "normal")
            in.prio = msg::priority::normal;
        else if (v == "low")
            in.prio = msg::priority::low;
        else
            return invalid_value("priority", "priority must be \"high\", \"normal\" or \"low\"");
    }
    return std::nullopt;
}

/// "speculative": auto or off (absent: the server's `speculative` setting).
std::optional<api_error> read_speculative(fields& f, inference_input& in) {
    if (const auto* p = f.get("speculative")) {
        const std::string_view v = p->is_string() ? std::string_view(p->get_string()) : "";
        if (v == "auto")
            in.speculative = msg::spec_mode::on;
        else if (v == "off")
            in.speculative = msg::spec_mode::off;
        else
            return invalid_value("speculative", "speculative must be \"auto\" or \"off\"");
    }
    return std::nullopt;
}

/// OpenAI routes: "stream", "n" (the configured max_n is checked by the session) and
/// "stream_options".
std::optional<api_error> read_stream_options(fields& f, inference_input& in) {
    f.boolean("stream", in.stream);
    f.integer("n", 1, 127, in.n);
    if (const auto* so = f.get("stream_options")) {
        if (!so->is_object())
            return invalid_value("stream_options", "stream_options must be an object");
        fields sf(so->get_object());
        sf.boolean("include_usage", in.include_usage);
        if (sf.failed())
            return sf.error();
    }
    return std::nullopt;
}

} // namespace

std::variant<json::value, api_error> parse_request_json(std::string_view text,
                                                        const std::string& param) {
    json::parse_options opt;
    opt.max_depth = max_request_nesting;
    boost::system::error_code ec;
    json::value v = json::parse(text, ec, {}, opt);
    const std::string what = param.empty() ? "the body" : param;
    if (ec == json::error::too_deep)
        return invalid_value(param, what + " nests objects and arrays deeper than " +
                                        std::to_string(max_request_nesting) +
                                        " (max_request_nesting: a schema may nest " +
                                        std::to_string(max_schema_nesting) +
                                        ", max_schema_nesting)");
    if (ec)
        return invalid_value(param, what + " is not valid JSON: " + ec.message());
    return v;
}

parse_result parse_inference(std::string_view body, api_family kind) {
    auto parsed = parse_request_json(body);
    if (auto* e = std::get_if<api_error>(&parsed))
        return *e;
    json::value root = std::move(std::get<json::value>(parsed));
    if (!root.is_object())
        return invalid_value("", "the body must be a JSON object");
    const auto& o = root.get_object();
    if (auto e = check_request_fields(kind, o))
        return *e;
    fields f(o);
    inference_input in;

    f.string("model", in.model);
    f.string("cache_salt", in.cache_salt);
    if (in.cache_salt.size() > max_cache_salt_bytes)
        f.fail("cache_salt",
               "cache_salt is at most " + std::to_string(max_cache_salt_bytes) + " bytes");
    if (auto e = read_prompt(f, kind, in))
        return *e;
    read_sampling(f, kind, in);
    if (auto e = read_logit_shaping(o, in))
        return *e;
    if (auto e = read_stops(f, in))
        return *e;
    if (auto e = read_priority(f, in))
        return *e;
    if (auto e = read_speculative(f, in))
        return *e;
    if (kind != api_family::native) {
        if (auto e = read_stream_options(f, in))
            return *e;
    } else if (const auto* n = f.get("n"); n && !(n->is_int64() && n->get_int64() == 1)) {
        // One generation per native request: its reply has one text and one token list.
        return invalid_value("n", "the native routes generate one choice (n 1); ask "
                                  "/v1/completions or /v1/chat/completions for n > 1");
    } else if (f.get("stream")) {
        bool stream = false;
        f.boolean("stream", stream); // the route decides; start_inference checks they agree
        in.native_stream = stream;
    }
    // The prompt echo is one per request; choices fork only once the first token is sampled.
    if (in.echo && in.n > 1)
        f.fail("n", "echo takes n 1 (the prompt and its logprobs come back once per request)");
    if (auto e = read_structured(o, kind, in))
        return *e;
    if (!in.json_schema.empty()) {
        // The schema again from a parse that keeps every number as written (exact_numbers.hpp):
        // the first parse turned numbers no double holds into the nearest double.
        if (auto marked = json_numbers::mark_inexact_numbers(body)) {
            json::parse_options po;
            po.allow_invalid_utf8 = true; // the marks; the body itself was valid UTF-8
            boost::system::error_code mec;
            const auto exact = json::parse(*marked, mec, {}, po);
            inference_input again;
            if (!mec && exact.is_object() && !read_structured(exact.get_object(), kind, again))
                in.json_schema = std::move(again.json_schema);
        }
    }
    // A forced tool call is rendered from one choice's text (message.tool_calls).
    if (in.tool_call && in.n > 1)
        f.fail("n", "a forced tool call (tool_choice required or a named function) takes n 1");
    if (f.failed())
        return f.error();
    if (auto e = check_logit_shaping(in))
        return *e;
    return in;
}

} // namespace bitnet::http
