#include "http/anthropic/api_anthropic.hpp"

#include "http/api_render.hpp"
#include "http/field_policy.hpp"
#include "http/reply_id.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace bitnet::http {

namespace json = boost::json;

namespace {

api_error bad(std::string param, std::string message) {
    return invalid_value(std::move(param), std::move(message));
}

/// Text blocks ([{"type":"text","text":..}]) joined with a newline; false when a block is not
/// text (`type` gets its type).
bool join_text(const json::array& blocks, std::string& out, std::string& type) {
    bool first = true;
    for (const auto& b : blocks) {
        const auto* bo = b.if_object();
        const auto* t = bo ? bo->if_contains("type") : nullptr;
        const auto* text = bo ? bo->if_contains("text") : nullptr;
        if (!t || !t->is_string() || t->get_string() != "text" || !text || !text->is_string()) {
            type = t && t->is_string() ? std::string(t->get_string()) : std::string("?");
            return false;
        }
        if (!first)
            out += '\n';
        out += text->get_string();
        first = false;
    }
    return true;
}

/// One Messages turn as chat messages: a user turn's tool_result blocks become tool messages
/// (before its text), an assistant turn's tool_use blocks its tool_calls.
std::optional<api_error> translate_turn(const json::value& m, std::size_t i, json::array& out) {
    const auto where = "messages[" + std::to_string(i) + "]";
    const auto* mo = m.if_object();
    const auto* role = mo ? mo->if_contains("role") : nullptr;
    const auto* content = mo ? mo->if_contains("content") : nullptr;
    if (!role || !role->is_string() ||
        (role->get_string() != "user" && role->get_string() != "assistant"))
        return bad("messages", where + ": role must be \"user\" or \"assistant\"");
    const bool user = role->get_string() == "user";
    if (content && content->is_string()) {
        out.push_back(
            json::object{{"role", role->get_string()}, {"content", content->get_string()}});
        return std::nullopt;
    }
    if (!content || !content->is_array())
        return bad("messages", where + ": content must be a string or an array of blocks");
    std::string text;
    bool any_text = false;
    json::array calls;
    std::size_t k = 0;
    for (const auto& b : content->get_array()) {
        const auto block = where + ".content[" + std::to_string(k++) + "]";
        const auto* bo = b.if_object();
        const auto* t = bo ? bo->if_contains("type") : nullptr;
        const std::string_view type = t && t->is_string() ? std::string_view(t->get_string()) : "";
        if (type == "text") {
            const auto* tx = bo->if_contains("text");
            if (!tx || !tx->is_string())
                return bad("messages", block + ": a text block needs a string \"text\"");
            if (any_text)
                text += '\n';
            text += tx->get_string();
            any_text = true;
        } else if (type == "tool_use" && !user) {
            const auto* id = bo->if_contains("id");
            const auto* name = bo->if_contains("name");
            const auto* input = bo->if_contains("input");
            if (!id || !id->is_string() || !name || !name->is_string())
                return bad("messages", block + ": a tool_use block needs \"id\", \"name\" and "
                                               "\"input\"");
            calls.push_back(json::object{
                {"id", id->get_string()},
                {"type", "function"},
                {"function", json::object{{"name", name->get_string()},
                                          {"arguments", input ? json::serialize(*input) : "{}"}}}});
        } else if (type == "tool_result" && user) {
            const auto* id = bo->if_contains("tool_use_id");
            if (!id || !id->is_string())
                return bad("messages", block + ": a tool_result block needs \"tool_use_id\"");
            std::string result;
            const auto* rc = bo->if_contains("content");
            if (rc && rc->is_string()) {
                result = std::string(rc->get_string());
            } else if (rc && rc->is_array()) {
                std::string other;
                if (!join_text(rc->get_array(), result, other))
                    return bad("messages", block + ": tool_result content block type '" + other +
                                               "' is not supported (text only)");
            } else if (rc && !rc->is_null()) {
                return bad("messages", block + ": tool_result content must be a string or "
                                               "text blocks");
            }
            if (const auto* err = bo->if_contains("is_error");
                err && err->is_bool() && err->get_bool())
                result = "Error: " + result;
            out.push_back(json::object{
                {"role", "tool"}, {"tool_call_id", id->get_string()}, {"content", result}});
        } else {
            return bad(
                "messages",
                block + ": content block type '" + std::string(type) + "' is not " +
                    (type == "tool_use" || type == "tool_result"
                         ? std::string("allowed in a ") + (user ? "user" : "assistant") + " turn"
                         : std::string("supported (text, tool_use, tool_result)")));
        }
    }
    if (!user) {
        json::object a{{"role", "assistant"}};
        a["content"] = any_text ? json::value(text) : json::value(nullptr);
        if (!calls.empty())
            a["tool_calls"] = std::move(calls);
        else if (!any_text)
            a["content"] = "";
        out.push_back(std::move(a));
    } else if (any_text) {
        out.push_back(json::object{{"role", "user"}, {"content", text}});
    }
    return std::nullopt;
}

std::optional<api_error> translate_tools(const json::object& body, json::object& out) {
    if (const auto* tools = body.if_contains("tools"); tools && !tools->is_null()) {
        if (!tools->is_array())
            return bad("tools", "tools must be an array of {name, description, input_schema}");
        json::array fns;
        for (const auto& t : tools->get_array()) {
            const auto* to = t.if_object();
            const auto* name = to ? to->if_contains("name") : nullptr;
            if (!name || !name->is_string())
                return bad("tools", "each tool needs a \"name\" and an \"input_schema\"");
            if (const auto* type = to->if_contains("type");
                type && !(type->is_string() && type->get_string() == "custom"))
                return bad("tools", "tool types other than custom (server tools) are not "
                                    "supported");
            json::object fn{{"name", name->get_string()}};
            if (const auto* d = to->if_contains("description"); d && d->is_string())
                fn["description"] = d->get_string();
            if (const auto* s = to->if_contains("input_schema"))
                fn["parameters"] = *s;
            fns.push_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
        }
        out["tools"] = std::move(fns);
    }
    if (const auto* tc = body.if_contains("tool_choice"); tc && !tc->is_null()) {
        const auto* tco = tc->if_object();
        const auto* type = tco ? tco->if_contains("type") : nullptr;
        const std::string_view t =
            type && type->is_string() ? std::string_view(type->get_string()) : "";
        if (t == "auto" || t == "none") {
            out["tool_choice"] = t;
        } else if (t == "any") {
            out["tool_choice"] = "required";
        } else if (t == "tool") {
            const auto* name = tco->if_contains("name");
            if (!name || !name->is_string())
                return bad("tool_choice", "tool_choice {\"type\": \"tool\"} needs a \"name\"");
            out["tool_choice"] = json::object{
                {"type", "function"}, {"function", json::object{{"name", name->get_string()}}}};
        } else {
            return bad("tool_choice", "tool_choice type must be auto, any, tool or none");
        }
        if (const auto* d = tco->if_contains("disable_parallel_tool_use"); d && !d->is_null()) {
            if (!d->is_bool())
                return bad("tool_choice", "disable_parallel_tool_use must be a boolean");
            out["parallel_tool_calls"] = !d->get_bool();
        }
    }
    return std::nullopt;
}

std::string number_of(const std::string& req_id) {
    return req_id.substr(req_id.find('-') + 1);
}

/// Anthropic's structured output: `output_config.format` (or the beta's `output_format`), a
/// {"type":"json_schema","schema":{...}}, as the chat route's response_format; `effort` (how
/// much a thinking model spends) and anything else in output_config is refused.
std::optional<api_error> translate_output_format(const json::object& body, json::object& out,
                                                 std::string& param) {
    const json::value* format = nullptr;
    param = "output_format";
    if (const auto* oc = body.if_contains("output_config"); oc && !oc->is_null()) {
        const auto* o = oc->if_object();
        if (!o)
            return bad("output_config", "output_config must be an object");
        for (const auto& m : *o) {
            if (m.value().is_null())
                continue;
            if (m.key() != "format")
                return bad("output_config." + std::string(m.key()),
                           "output_config." + std::string(m.key()) +
                               " is not served: the model does not think (only format is)");
            format = &m.value();
            param = "output_config.format";
        }
    }
    if (const auto* of = body.if_contains("output_format"); of && !of->is_null()) {
        if (format)
            return bad("output_format", "output_format and output_config.format: send one");
        format = of;
    }
    if (!format)
        return std::nullopt;
    const auto* fo = format->if_object();
    const auto* type = fo ? fo->if_contains("type") : nullptr;
    const auto* schema = fo ? fo->if_contains("schema") : nullptr;
    if (!type || !type->is_string() || type->get_string() != "json_schema" || !schema ||
        !(schema->is_object() || schema->is_bool()))
        return bad(param, param + " must be {\"type\": \"json_schema\", \"schema\": {...}}");
    out["response_format"] =
        json::object{{"type", "json_schema"},
                     {"json_schema", json::object{{"name", "output"}, {"schema", *schema}}}};
    return std::nullopt;
}

/// temperature, top_p and top_k as the chat route reads them: Anthropic's clients (LangChain's
/// ChatAnthropic by default) send -1 for "not set", which Anthropic's API takes as such.
void translate_sampling(const json::object& body, json::object& out) {
    for (const char* k : {"temperature", "top_p", "top_k"})
        if (const auto* v = body.if_contains(k);
            v && !(v->is_number() && v->to_number<double>() == -1.0))
            out[k] = *v;
}

} // namespace

std::variant<std::string, api_error> messages_as_chat(std::string_view body,
                                                      std::string* format_param) {
    auto parsed = parse_request_json(body);
    if (auto* e = std::get_if<api_error>(&parsed))
        return *e;
    const auto root = std::move(std::get<json::value>(parsed));
    const auto* o = root.if_object();
    if (!o)
        return invalid_value("", "the body must be a JSON object");
    if (auto e = check_request_fields(api_family::messages, *o))
        return *e;
    json::object out;
    for (const char* k : {"model", "stream", "cache_salt", "speculative", "timeout_ms", "priority"})
        if (const auto* v = o->if_contains(k))
            out[k] = *v;
    translate_sampling(*o, out);
    const auto* max = o->if_contains("max_tokens");
    if (!max || max->is_null()) // null means absent, as Anthropic's API reads it
        return bad("max_tokens", "max_tokens is required: the most tokens to generate");
    out["max_tokens"] = *max;
    if (const auto* s = o->if_contains("stop_sequences"); s && !s->is_null())
        out["stop"] = *s;
    json::array msgs;
    if (const auto* sys = o->if_contains("system"); sys && !sys->is_null()) {
        std::string text, type;
        if (sys->is_string())
            text = std::string(sys->get_string());
        else if (!sys->is_array() || !join_text(sys->get_array(), text, type))
            return bad("system", "system must be a string or an array of text blocks");
        msgs.push_back(json::object{{"role", "system"}, {"content", text}});
    }
    const auto* ms = o->if_contains("messages");
    if (!ms || !ms->is_array() || ms->get_array().empty())
        return bad("messages", "messages must be a non-empty array");
    std::size_t i = 0;
    for (const auto& m : ms->get_array())
        if (auto e = translate_turn(m, i++, msgs))
            return *e;
    out["messages"] = std::move(msgs);
    if (auto e = translate_tools(*o, out))
        return *e;
    std::string format_field;
    if (auto e = translate_output_format(*o, out, format_field))
        return *e;
    if (format_param)
        *format_param = std::move(format_field);
    return json::serialize(out);
}

parse_result parse_messages(std::string_view body) {
    // The structured output came from output_config.format (or the beta's output_format):
    // errors, the schema compiler's too, name that field.
    std::string format_param;
    auto chat = messages_as_chat(body, &format_param);
    if (auto* e = std::get_if<api_error>(&chat))
        return *e;
    auto r = parse_inference(std::get<std::string>(chat), api_family::chat);
    if (auto* e = std::get_if<api_error>(&r); e && e->param == "stop")
        e->param = "stop_sequences";
    else if (e && e->param == "response_format")
        e->param = format_param;
    else if (auto* in = std::get_if<inference_input>(&r);
             in && in->schema_param == "response_format")
        in->schema_param = format_param;
    return r;
}

std::string anthropic_stop_reason(msg::finish_reason finish, bool whole_call, bool stops) {
    if (whole_call)
        return "tool_use";
    switch (finish) {
    case msg::finish_reason::eos:
        return "end_turn";
    case msg::finish_reason::stop:
        return stops ? "stop_sequence" : "end_turn";
    default:
        return "max_tokens"; // length, deadline, a drain cut
    }
}

std::string anthropic_usage(const msg::completion& c) {
    const auto cached = std::min(c.cached_tokens, c.prompt_tokens);
    return R"({"input_tokens":)" + std::to_string(c.prompt_tokens - cached) +
           R"(,"output_tokens":)" + std::to_string(c.completion_tokens) +
           R"(,"cache_read_input_tokens":)" + std::to_string(cached) +
           R"(,"cache_creation_input_tokens":0})";
}

std::string anthropic_text_block(const std::string& text) {
    return R"({"type":"text","text":)" + quoted(text) + "}";
}

std::vector<json::object> anthropic_tool_use_blocks(const std::vector<forced_call>& calls,
                                                    const std::string& req_id) {
    std::vector<json::object> blocks;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        boost::system::error_code ec;
        auto input = json::parse(calls[i].arguments, ec);
        if (ec || !input.is_object())
            return {}; // not a call's arguments (whole calls always are)
        const auto id = tool_call_id(req_id, i);
        blocks.push_back(json::object{{"type", "tool_use"},
                                      {"id", "toolu_" + id.substr(id.find('_') + 1)},
                                      {"name", calls[i].name},
                                      {"input", std::move(input)}});
    }
    return blocks;
}

std::string anthropic_message_body(const std::string& req_id, const std::string& model,
                                   const std::string& content, const std::string& stop_reason,
                                   const msg::completion& c) {
    return R"({"id":)" + quoted(anthropic_message_id(req_id)) +
           R"(,"type":"message","role":"assistant","model":)" + quoted(model) + R"(,"content":)" +
           content + R"(,"stop_reason":)" + quoted(stop_reason) + R"(,"stop_sequence":)" +
           anthropic_stop_sequence(stop_reason, c) + R"(,"usage":)" + anthropic_usage(c) + "}";
}

std::string anthropic_stop_sequence(const std::string& stop_reason, const msg::completion& c) {
    return stop_reason == "stop_sequence" && !c.stop_sequence.empty() ? quoted(c.stop_sequence)
                                                                      : "null";
}

std::string anthropic_message_start(const std::string& req_id, const std::string& model,
                                    std::uint32_t prompt_tokens) {
    return R"({"type":"message_start","message":{"id":)" + quoted(anthropic_message_id(req_id)) +
           R"(,"type":"message","role":"assistant","model":)" + quoted(model) +
           R"(,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":)" +
           std::to_string(prompt_tokens) + R"(,"output_tokens":0}}})";
}

std::string anthropic_error_body(const api_error& e, std::string_view request_id) {
    const char* type = "api_error";
    switch (e.status) {
    case 400:
    case 415:
        type = "invalid_request_error";
        break;
    case 401:
        type = "authentication_error";
        break;
    case 403:
        type = "permission_error";
        break;
    case 404:
        type = "not_found_error";
        break;
    case 405:
    case 409: // a message thread already continued, or being continued
        type = "invalid_request_error";
        break;
    case 413:
        type = "request_too_large";
        break;
    case 429:
        type = "rate_limit_error";
        break;
    case 503:
        type = "overloaded_error";
        break;
    default:
        break;
    }
    // Cut as error_body cuts: a value the client sent is never echoed whole.
    std::string message = excerpt(e.message, max_error_message_bytes);
    if (!e.param.empty() && e.message.find(e.param) == std::string::npos)
        message = excerpt(e.param, max_error_param_bytes) + ": " + message;
    const auto details = e.details.empty() ? std::string() : R"(,"details":)" + e.details;
    return R"({"type":"error","error":{"type":")" + std::string(type) + R"(","message":)" +
           quoted(message) + details + R"(},"request_id":)" + quoted(request_id) + "}";
}

std::string anthropic_message_id(const std::string& req_id) {
    return "msg_" + reply_id_of(req_id);
}

std::string anthropic_tool_use_id(const std::string& req_id) {
    return "toolu_" + number_of(req_id);
}

} // namespace bitnet::http
