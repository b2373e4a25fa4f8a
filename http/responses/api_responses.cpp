#include "http/responses/api_responses.hpp"

#include "http/api_render.hpp"
#include "http/api_structured.hpp"
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

/// The part of a response's ids after their prefix ("resp_", "msg_", "fc_"): every id of one
/// request is the same whenever it is asked for, none can be guessed from another
/// (http/reply_id.hpp).
std::string id_of(const std::string& req_id) {
    return reply_id_of(req_id);
}

/// A message item's content: a string, or parts of type input_text, output_text or text
/// (joined with a newline); anything else (images, files) is refused, naming its type.
std::optional<api_error> item_text(const json::value& content, const std::string& where,
                                   std::string& out) {
    if (content.is_string()) {
        out = std::string(content.get_string());
        return std::nullopt;
    }
    if (!content.is_array())
        return bad("input", where + ": content must be a string or an array of parts");
    bool first = true;
    for (const auto& p : content.get_array()) {
        const auto* po = p.if_object();
        const auto* type = po ? po->if_contains("type") : nullptr;
        const auto* text = po ? po->if_contains("text") : nullptr;
        const std::string_view t =
            type && type->is_string() ? std::string_view(type->get_string()) : "";
        if (t != "input_text" && t != "output_text" && t != "text")
            return bad("input", where + ": content part type '" + std::string(t) +
                                    "' is not supported (text parts only)");
        if (!text || !text->is_string())
            return bad("input", where + ": a text part needs a string \"text\"");
        if (!first)
            out += '\n';
        out += text->get_string();
        first = false;
    }
    return std::nullopt;
}

/// `input` as chat messages; an assistant message and the function_call items after it become one
/// assistant turn.
std::optional<api_error> translate_input(const json::value& input, json::array& msgs) {
    if (input.is_string()) {
        msgs.push_back(json::object{{"role", "user"}, {"content", input.get_string()}});
        return std::nullopt;
    }
    if (!input.is_array() || input.get_array().empty())
        return bad("input", "input must be a string or a non-empty array of items");
    std::size_t i = 0;
    for (const auto& it : input.get_array()) {
        const auto where = "input[" + std::to_string(i++) + "]";
        const auto* io = it.if_object();
        if (!io)
            return bad("input", where + ": each item must be an object");
        const auto* type = io->if_contains("type");
        const std::string_view t =
            type && type->is_string() ? std::string_view(type->get_string()) : "message";
        if (t == "message") {
            const auto* role = io->if_contains("role");
            const auto* content = io->if_contains("content");
            if (!role || !role->is_string() || !content)
                return bad("input", where + ": a message needs \"role\" and \"content\"");
            std::string text;
            if (auto e = item_text(*content, where, text))
                return e;
            msgs.push_back(json::object{{"role", role->get_string()}, {"content", text}});
        } else if (t == "function_call") {
            const auto* call_id = io->if_contains("call_id");
            const auto* name = io->if_contains("name");
            const auto* args = io->if_contains("arguments");
            if (!call_id || !call_id->is_string() || !name || !name->is_string() || !args ||
                !args->is_string())
                return bad("input", where + ": a function_call needs \"call_id\", \"name\" and "
                                            "\"arguments\" (a JSON string)");
            json::object call{{"id", call_id->get_string()},
                              {"type", "function"},
                              {"function", json::object{{"name", name->get_string()},
                                                        {"arguments", args->get_string()}}}};
            // Calls in a row are one assistant turn (parallel calls), and so are a reply's
            // message and the calls after it (one reply's output items: one turn, as on chat).
            auto* last = msgs.empty() ? nullptr : msgs.back().if_object();
            if (last && last->at("role") == "assistant" && last->contains("tool_calls"))
                last->at("tool_calls").as_array().push_back(std::move(call));
            else if (last && last->at("role") == "assistant")
                (*last)["tool_calls"] = json::array{std::move(call)};
            else
                msgs.push_back(json::object{{"role", "assistant"},
                                            {"content", nullptr},
                                            {"tool_calls", json::array{std::move(call)}}});
        } else if (t == "function_call_output") {
            const auto* call_id = io->if_contains("call_id");
            const auto* output = io->if_contains("output");
            if (!call_id || !call_id->is_string() || !output)
                return bad("input", where + ": a function_call_output needs \"call_id\" and "
                                            "\"output\"");
            std::string text;
            if (auto e = item_text(*output, where, text))
                return e;
            msgs.push_back(json::object{
                {"role", "tool"}, {"tool_call_id", call_id->get_string()}, {"content", text}});
        } else {
            return bad("input", where + ": item type '" + std::string(t) +
                                    "' is not supported (message, function_call, "
                                    "function_call_output)");
        }
    }
    return std::nullopt;
}

std::optional<api_error> translate_tools(const json::object& body, json::object& out) {
    if (const auto* tools = body.if_contains("tools"); tools && !tools->is_null()) {
        if (!tools->is_array())
            return bad("tools", "tools must be an array of functions");
        json::array fns;
        for (const auto& t : tools->get_array()) {
            const auto* to = t.if_object();
            const auto* type = to ? to->if_contains("type") : nullptr;
            if (!type || !type->is_string() || type->get_string() != "function")
                return bad("tools", "only function tools are supported ({\"type\": \"function\", "
                                    "\"name\", \"parameters\"})");
            json::object fn;
            for (const char* k : {"name", "description", "parameters"})
                if (const auto* v = to->if_contains(k))
                    fn[k] = *v;
            fns.push_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
        }
        out["tools"] = std::move(fns);
    }
    if (const auto* p = body.if_contains("parallel_tool_calls"); p && !p->is_null())
        out["parallel_tool_calls"] = *p; // checked where chat's is
    if (const auto* tc = body.if_contains("tool_choice"); tc && !tc->is_null()) {
        if (tc->is_string()) {
            out["tool_choice"] = *tc;
        } else if (const auto* o = tc->if_object();
                   o && o->contains("type") && o->at("type") == "function" && o->contains("name")) {
            out["tool_choice"] = json::object{{"type", "function"},
                                              {"function", json::object{{"name", o->at("name")}}}};
        } else {
            return bad("tool_choice", "tool_choice must be auto, none, required or {\"type\": "
                                      "\"function\", \"name\"}");
        }
    }
    return std::nullopt;
}

std::optional<api_error> translate_format(const json::object& body, json::object& out) {
    const auto* text = body.if_contains("text");
    const auto* to = text ? text->if_object() : nullptr;
    const auto* format = to ? to->if_contains("format") : nullptr;
    if (const auto* v = to ? to->if_contains("verbosity") : nullptr;
        v && !v->is_null() && !(v->is_string() && v->get_string() == "medium"))
        return bad("text.verbosity", "text.verbosity is not served: the model has one verbosity "
                                     "(send \"medium\" or leave it out)");
    if (!format || format->is_null())
        return std::nullopt;
    const auto* fo = format->if_object();
    const auto* type = fo ? fo->if_contains("type") : nullptr;
    const std::string_view t =
        type && type->is_string() ? std::string_view(type->get_string()) : "";
    if (t == "text")
        return std::nullopt;
    if (t == "json_object") {
        out["response_format"] = json::object{{"type", "json_object"}};
        return std::nullopt;
    }
    if (t == "json_schema") {
        json::object js;
        for (const char* k : {"name", "schema", "strict"})
            if (const auto* v = fo->if_contains(k))
                js[k] = *v;
        out["response_format"] = json::object{{"type", "json_schema"}, {"json_schema", js}};
        return std::nullopt;
    }
    return bad("text.format", "text.format type must be text, json_object or json_schema");
}

} // namespace

std::variant<std::string, api_error> responses_as_chat(std::string_view body) {
    auto parsed = parse_request_json(body);
    if (auto* e = std::get_if<api_error>(&parsed))
        return *e;
    const auto root = std::move(std::get<json::value>(parsed));
    const auto* o = root.if_object();
    if (!o)
        return invalid_value("", "the body must be a JSON object");
    if (auto e = check_request_fields(api_family::responses, *o))
        return *e;
    if (const auto* prev = o->if_contains("previous_response_id"); prev && !prev->is_null())
        return bad("previous_response_id",
                   "this server keeps no responses (store is not supported): send the whole "
                   "conversation in \"input\" instead of previous_response_id");
    json::object out;
    for (const char* k : {"model", "temperature", "top_p", "stream", "cache_salt", "speculative",
                          "timeout_ms", "priority"})
        if (const auto* v = o->if_contains(k))
            out[k] = *v;
    if (const auto* max = o->if_contains("max_output_tokens"); max && !max->is_null())
        out["max_tokens"] = *max;
    json::array msgs;
    if (const auto* ins = o->if_contains("instructions"); ins && !ins->is_null()) {
        if (!ins->is_string())
            return bad("instructions", "instructions must be a string");
        msgs.push_back(json::object{{"role", "system"}, {"content", ins->get_string()}});
    }
    const auto* input = o->if_contains("input");
    if (!input)
        return bad("input", "input is required: a string or an array of items");
    if (auto e = translate_input(*input, msgs))
        return *e;
    out["messages"] = std::move(msgs);
    if (auto e = translate_tools(*o, out))
        return *e;
    if (auto e = translate_format(*o, out))
        return *e;
    return json::serialize(out);
}

parse_result parse_responses(std::string_view body) {
    auto chat = responses_as_chat(body);
    if (auto* e = std::get_if<api_error>(&chat))
        return *e;
    auto r = parse_inference(std::get<std::string>(chat), api_family::chat);
    if (auto* e = std::get_if<api_error>(&r)) {
        if (e->param == "max_tokens")
            e->param = "max_output_tokens";
        else if (e->param == "response_format")
            e->param = "text.format";
        else if (e->param == "messages")
            e->param = "input";
    } else if (auto& in = std::get<inference_input>(r); in.schema_param == "response_format") {
        in.schema_param = "text.format"; // what the schema compiler's errors name
    }
    return r;
}

namespace {

/// A number as a client wrote it would read (Boost.JSON prints doubles in exponent form).
std::string number_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return buf;
}

/// A setting in effect (a float: seven significant digits say it whole).
std::string float_text(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.7g", static_cast<double>(v));
    return buf;
}

/// A value's JSON text, a top-level number in plain decimal.
std::string echo_text(const json::value& v) {
    return v.is_double() ? number_text(v.get_double()) : json::serialize(v);
}

} // namespace

std::string responses_request_echo(std::string_view body, float temperature, float top_p) {
    boost::system::error_code ec;
    const auto root = json::parse(body, ec);
    const json::object none;
    const auto& o = !ec && root.is_object() ? root.get_object() : none;
    auto given = [&](const char* k) -> const json::value* {
        const auto* v = o.if_contains(k);
        return v && !v->is_null() ? v : nullptr;
    };
    std::string out;
    // Each member: the request's value when it sent one, else what this server did.
    auto member = [&](const char* k, const std::string& fallback) {
        const auto* v = given(k);
        out += ",\"" + std::string(k) + "\":" + (v ? echo_text(*v) : fallback);
    };
    member("background", "false");
    member("instructions", "null");
    member("max_output_tokens", "null");
    member("max_tool_calls", "null");
    member("metadata", "{}");
    member("parallel_tool_calls", "true");
    member("previous_response_id", "null");
    out += R"(,"reasoning":{"effort":null,"summary":null})";
    member("service_tier", R"("default")");
    member("temperature", float_text(temperature));
    const auto* text = given("text");
    const auto* format =
        text && text->is_object() ? text->get_object().if_contains("format") : nullptr;
    out += R"(,"text":{"format":)" +
           (format && !format->is_null() ? json::serialize(*format) : R"({"type":"text"})") + "}";
    member("tool_choice", R"("auto")");
    member("tools", "[]");
    member("top_logprobs", "0");
    member("top_p", float_text(top_p));
    member("truncation", R"("disabled")");
    member("user", "null");
    return out;
}

std::string response_id(const std::string& req_id) {
    return "resp_" + id_of(req_id);
}

std::string response_message_id(const std::string& req_id) {
    return "msg_" + id_of(req_id);
}

std::string response_call_item_id(const std::string& req_id, std::size_t i) {
    return "fc_" + id_of(req_id) + (i == 0 ? "" : "_" + std::to_string(i));
}

std::string response_message_item(const std::string& req_id, const std::string& text, bool done,
                                  bool incomplete) {
    return R"({"id":)" + quoted(response_message_id(req_id)) + R"(,"type":"message","status":)" +
           (!done        ? R"("in_progress")"
            : incomplete ? R"("incomplete")"
                         : R"("completed")") +
           R"(,"role":"assistant","content":)" +
           (done ? R"([{"type":"output_text","text":)" + quoted(text) + R"(,"annotations":[]}])"
                 : std::string("[]")) +
           "}";
}

std::string response_call_item(const std::string& req_id, const std::string& name,
                               const std::string& arguments, bool done, std::size_t i,
                               bool incomplete) {
    return R"({"id":)" + quoted(response_call_item_id(req_id, i)) +
           R"(,"type":"function_call","status":)" +
           (!done        ? R"("in_progress")"
            : incomplete ? R"("incomplete")"
                         : R"("completed")") +
           R"(,"call_id":)" + quoted(tool_call_id(req_id, i)) + R"(,"name":)" + quoted(name) +
           R"(,"arguments":)" + quoted(arguments) + "}";
}

std::string response_object(const std::string& req_id, std::int64_t created,
                            const std::string& model, const std::string& status,
                            const std::string& output, const msg::completion* c,
                            const std::string& error, bool stored, const std::string& echo) {
    std::string usage = "null";
    if (c) {
        const auto cached = std::min(c->cached_tokens, c->prompt_tokens);
        usage = R"({"input_tokens":)" + std::to_string(c->prompt_tokens) +
                R"(,"input_tokens_details":{"cached_tokens":)" + std::to_string(cached) +
                R"(},"output_tokens":)" + std::to_string(c->completion_tokens) +
                R"(,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":)" +
                std::to_string(c->prompt_tokens + c->completion_tokens) + "}";
    }
    return R"({"id":)" + quoted(response_id(req_id)) + R"(,"object":"response","created_at":)" +
           std::to_string(created) + R"(,"status":)" + quoted(status) + R"(,"error":)" + error +
           R"(,"incomplete_details":)" +
           (status == "incomplete" ? R"({"reason":"max_output_tokens"})" : std::string("null")) +
           R"(,"model":)" + quoted(model) + R"(,"output":)" + output + echo + R"(,"store":)" +
           (stored ? "true" : "false") + R"(,"usage":)" + usage + "}";
}

} // namespace bitnet::http
