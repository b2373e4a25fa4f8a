#include "http/routes/families.hpp"

#include "http/anthropic/api_anthropic.hpp"
#include "http/anthropic/message_thread.hpp"
#include "http/anthropic/messages_turn.hpp"
#include "http/api_render.hpp"
#include "http/native_turn.hpp"
#include "http/openai/openai_turn.hpp"
#include "http/responses/api_responses.hpp"
#include "http/responses/response_store.hpp"
#include "http/responses/responses_turn.hpp"
#include "http/routes/routes.hpp"
#include "http/transport/request_errors.hpp"

#include <boost/json.hpp>

#include <array>
#include <map>
#include <mutex>

namespace bitnet::http {

namespace json = boost::json;

namespace {

using start_result = std::variant<api_error, started_turn>;

/// POST /v1/inference and /v1/inference/stream: the native shapes; `stream` is the route's.
start_result start_native(std::string_view body, bool stream) {
    auto parsed = parse_inference(body, api_family::native);
    if (auto* e = std::get_if<api_error>(&parsed))
        return *e;
    started_turn s;
    s.in = std::move(std::get<inference_input>(parsed));
    if (s.in.native_stream && *s.in.native_stream != stream)
        return invalid_value("stream", "stream must agree with the route: POST "
                                       "/v1/inference/stream streams, POST "
                                       "/v1/inference answers once");
    s.in.stream = stream;
    const bool listed = s.in.want_logprobs && !stream; // a plain reply's logprobs list
    s.turn = std::make_unique<native_turn>(s.in.token_logprob, listed);
    s.report_logprob = listed || (stream && s.in.token_logprob);
    return s;
}

/// POST /v1/completions and /v1/chat/completions.
start_result start_openai(std::string_view body, bool chat) {
    auto parsed = parse_inference(body, chat ? api_family::chat : api_family::completions);
    if (auto* e = std::get_if<api_error>(&parsed))
        return *e;
    started_turn s;
    s.in = std::move(std::get<inference_input>(parsed));
    auto& in = s.in;
    std::optional<std::string> echo_text; // a text prompt comes back as it was sent
    if (in.echo && !in.prompt_is_ids)
        echo_text = in.prompt_text;
    s.turn = std::make_unique<openai_turn>(
        openai_options{chat, in.include_usage, in.want_logprobs, in.n, std::move(echo_text)});
    s.chat_prompt = chat;
    s.token_pieces = s.report_logprob = in.want_logprobs;
    return s;
}

/// A Messages request's `thread`: a continue claimed from the key's stored replies and made
/// whole into `expanded` (left empty when the request is not threaded), `keep` set to what
/// stores its reply for the next continue; or the error that refuses it. Threads live in the
/// Responses store: this registry joins the two families.
std::optional<api_error> expand_thread(std::string_view body, const family_context& ctx,
                                       std::string& expanded, messages_turn::thread_keeper& keep) {
    auto parsed = parse_request_json(body);
    auto* root = std::get_if<json::value>(&parsed);
    auto* o = root ? root->if_object() : nullptr;
    if (!o)
        return std::nullopt; // the parser names what is wrong with it
    auto thread = read_message_thread(*o);
    if (auto* e = std::get_if<api_error>(&thread))
        return *e;
    const auto& t = std::get<message_thread>(thread);
    if (t.type == message_thread::kind::none)
        return std::nullopt;
    if (!ctx.store.enabled())
        return thread_error(thread_refusal::unsupported, t.previous_message_id);
    std::string record;
    std::string previous; // a continue: the stored reply it continues
    // A continue's hold on that reply (response_store::claim_thread): going with the request's
    // family turn, it lets another continue have it, unless this one stored its reply first.
    std::shared_ptr<const std::string> hold;
    if (t.type == message_thread::kind::resume) {
        auto claim = ctx.store.claim_thread(ctx.key, t.previous_message_id);
        using state = response_store::thread_state;
        if (claim.state != state::claimed)
            return thread_error(claim.state == state::not_found ? thread_refusal::not_found
                                : claim.state == state::in_flight
                                    ? thread_refusal::in_flight
                                    : thread_refusal::already_continued,
                                t.previous_message_id);
        record = std::move(claim.record);
        hold = std::move(claim.hold);
        previous = t.previous_message_id;
    }
    auto x = expand_message_thread(std::move(*o), record, ctx.max_body_bytes);
    if (auto* e = std::get_if<api_error>(&x))
        return *e;
    auto& ex = std::get<thread_expansion>(x);
    expanded = std::move(ex.body);
    keep = [&store = ctx.store, key = ctx.key, id = anthropic_message_id(ctx.req_id),
            head = std::move(ex.head), previous = std::move(previous),
            hold = std::move(hold)](const std::string& content) {
        (void)hold; // held for as long as the turn that may continue the thread
        store.put_thread(key, id, thread_record(head, content), previous);
    };
    return std::nullopt;
}

/// POST /v1/messages (Anthropic's Messages API).
start_result start_messages(std::string_view body, const family_context& ctx) {
    std::string expanded;
    messages_turn::thread_keeper keep;
    if (auto e = expand_thread(body, ctx, expanded, keep))
        return *e;
    auto parsed = parse_messages(expanded.empty() ? body : std::string_view(expanded));
    if (auto* e = std::get_if<api_error>(&parsed))
        return *e;
    started_turn s;
    s.in = std::move(std::get<inference_input>(parsed));
    s.turn = std::make_unique<messages_turn>(std::move(keep));
    s.chat_prompt = true;
    s.token_pieces = s.report_logprob = s.in.want_logprobs;
    return s;
}

/// POST /v1/responses (OpenAI's Responses API), its stored parts filled in first.
start_result start_responses(std::string_view body, const family_context& ctx) {
    auto x = expand_responses_request(body, ctx.store, ctx.key, ctx.max_body_bytes);
    if (auto* e = std::get_if<api_error>(&x))
        return *e;
    auto stored = std::move(std::get<responses_expansion>(x));
    auto parsed = parse_responses(stored.body);
    if (auto* e = std::get_if<api_error>(&parsed))
        return *e;
    started_turn s;
    s.in = std::move(std::get<inference_input>(parsed));
    stored.body.clear(); // parsed: the turn keeps what the reply stores
    s.turn = std::make_unique<responses_turn>(
        ctx.store, ctx.key, std::move(stored),
        responses_request_echo(body, s.in.params.temperature, s.in.params.top_p));
    s.chat_prompt = true;
    s.token_pieces = s.report_logprob = s.in.want_logprobs;
    return s;
}

using start_fn = start_result (*)(std::string_view, const family_context&);

/// One inference route's family.
struct family_entry {
    std::string_view pattern; ///< the POST route of the table (routes.cpp) it serves
    start_fn start;
};

// The registry: one line per inference route.
constexpr std::array k_families{
    family_entry{"/v1/inference",
                 [](std::string_view b, const family_context&) { return start_native(b, false); }},
    family_entry{"/v1/inference/stream",
                 [](std::string_view b, const family_context&) { return start_native(b, true); }},
    family_entry{"/v1/completions",
                 [](std::string_view b, const family_context&) { return start_openai(b, false); }},
    family_entry{"/v1/chat/completions",
                 [](std::string_view b, const family_context&) { return start_openai(b, true); }},
    family_entry{"/v1/messages", start_messages},
    family_entry{"/v1/responses", start_responses},
};

/// Families added at startup (add_family), by route.
struct added_families {
    std::mutex mu;
    std::map<std::string, family_start, std::less<>> by_route;
};

added_families& added() {
    static added_families a;
    return a;
}

/// Whether route `label` answers in Anthropic's shapes (its error body, its request-id header).
bool anthropic_shaped(std::string_view label) {
    const auto* r = route_of_label(label);
    return r && r->family == api_family::messages;
}

api_error no_stored_response(const std::string& id) {
    auto e = status_error(404, "no stored response '" + id + "' for this key");
    e.param = "response_id";
    e.suggestion = "replies are kept for the API key that made them, bounded "
                   "(responses_store_max, responses_store_ttl_s, responses_store_bytes), and "
                   "only when the request did not say \"store\": false";
    return e;
}

} // namespace

std::optional<std::variant<api_error, started_turn>>
start_family_turn(std::string_view pattern, std::string_view body, const family_context& ctx) {
    for (const auto& f : k_families)
        if (f.pattern == pattern)
            return f.start(body, ctx);
    family_start start;
    {
        std::lock_guard lk(added().mu);
        if (auto it = added().by_route.find(pattern); it != added().by_route.end())
            start = it->second;
    }
    if (!start)
        return std::nullopt;
    return start(body, ctx);
}

void add_family(std::string pattern, family_start start) {
    std::lock_guard lk(added().mu);
    added().by_route.insert_or_assign(std::move(pattern), std::move(start));
}

bool serves_added_family(std::string_view path) {
    std::lock_guard lk(added().mu);
    return added().by_route.find(path) != added().by_route.end();
}

std::string family_error_body(std::string_view label, const api_error& e, const std::string& id) {
    return anthropic_shaped(label) ? anthropic_error_body(e, id) : error_body(e, id);
}

std::vector<std::pair<std::string, std::string>> family_headers(std::string_view label,
                                                                const std::string& req_id) {
    // Anthropic's SDK reads its own header name (err.requestID, message._request_id).
    if (anthropic_shaped(label))
        return {{"request-id", req_id}};
    return {};
}

parse_result parse_count_tokens(std::string_view body) {
    // max_tokens is not needed to count: the parser gets one when the client left it out.
    auto parsed = parse_request_json(body);
    auto* o = std::get_if<json::value>(&parsed);
    if (!o || !o->is_object())
        return parse_messages(body); // the parser names what is wrong with it
    auto& obj = o->get_object();
    // A continue's count would be its new messages' alone: the thread is not counted here.
    if (obj.contains("thread") && !obj.at("thread").is_null())
        return invalid_value("thread", "count_tokens counts the messages it is sent: "
                                       "send the whole conversation without thread");
    if (!obj.contains("max_tokens") || obj.at("max_tokens").is_null())
        obj["max_tokens"] = 1;
    return parse_messages(json::serialize(*o));
}

std::variant<api_error, std::string> stored_response(response_store& store, const std::string& key,
                                                     const std::string& id) {
    auto object = store.response(key, id);
    if (!object)
        return no_stored_response(id);
    return std::move(*object);
}

std::variant<api_error, std::string>
delete_stored_response(response_store& store, const std::string& key, const std::string& id) {
    if (!store.erase(key, id))
        return no_stored_response(id);
    return R"({"id":)" + quoted(id) + R"(,"object":"response","deleted":true})";
}

std::variant<api_error, std::string>
stored_response_items(response_store& store, const std::string& key, const std::string& id,
                      const std::string& order, const std::string& limit,
                      const std::string& after) {
    const auto items = store.input_items(key, id);
    if (!items)
        return no_stored_response(id);
    auto page = input_items_page(*items, order, limit, after);
    if (auto* e = std::get_if<api_error>(&page))
        return *e;
    return std::move(std::get<std::string>(page));
}

} // namespace bitnet::http
