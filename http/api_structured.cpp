#include "http/api_structured.hpp"

#include "http/api_guided.hpp"

#include <boost/json.hpp>

namespace bitnet::http {

namespace json = boost::json;

namespace {

/// Keywords whose values are data, not subschemas: a "$ref" inside them is not a reference.
bool holds_data(std::string_view key) {
    return key == "enum" || key == "const" || key == "default" || key == "examples";
}

/// Rewrites every `$ref` in schema `v` from the parameters' own root to `base` (a JSON pointer
/// fragment such as "#/$defs/bitnet_tool_0"), so "#" and "#/$defs/..." keep meaning what they
/// meant inside the parameters once these sit under the wrapper. The recursion follows the
/// request's JSON nesting, which the parser bounds.
void rebase_refs(json::value& v, const std::string& base) {
    if (auto* a = v.if_array()) {
        for (auto& e : *a)
            rebase_refs(e, base);
        return;
    }
    auto* o = v.if_object();
    if (!o)
        return;
    for (auto& kv : *o) {
        if (kv.key() == "$ref" && kv.value().is_string()) {
            const std::string_view r = kv.value().get_string();
            if (!r.empty() && r[0] == '#')
                kv.value() = base + std::string(r.substr(1));
            continue;
        }
        if (!holds_data(kv.key()))
            rebase_refs(kv.value(), base);
    }
}

/// One function of a forced call: its name, and arguments valid for its parameters, as an entry of
/// the compiler's call union (`x-bitnet-tool-union`: `{"name":...,"arguments":...}` written in
/// that order, one matcher configuration however many functions). The parameters are compiled as
/// their own root: they go under the wrapper's `$defs` (`defs`) with their references rebased, so
/// `$ref: "#"` and `#/$defs/...` (what Pydantic writes) resolve inside them.
json::value call_schema(const std::string& name, const json::value* parameters, std::size_t i,
                        json::object& defs) {
    json::object call;
    call["name"] = name;
    if (parameters) {
        const std::string key = "bitnet_tool_" + std::to_string(i);
        json::value p = *parameters;
        if (auto* po = p.if_object()) {
            po->erase("$id"); // the root's identity and dialect: annotations of the root
            po->erase("$schema");
        }
        rebase_refs(p, "#/$defs/" + key);
        defs[key] = std::move(p);
        call["arguments"] = json::object{{"$ref", "#/$defs/" + key}};
    } else {
        call["arguments"] = json::object{{"type", "object"}};
    }
    return call;
}

/// Keywords whose value maps names to subschemas: the names are data, the values schemas.
bool maps_names(std::string_view key) {
    return key == "properties" || key == "patternProperties" || key == "$defs" ||
           key == "definitions" || key == "dependentSchemas";
}

/// At most 64 bytes of a key, cut on a UTF-8 boundary, for an error message.
std::string key_excerpt(std::string_view key) {
    if (key.size() <= 64)
        return std::string(key);
    std::size_t n = 64;
    while (n > 0 && (static_cast<unsigned char>(key[n]) & 0xC0u) == 0x80u)
        --n;
    return std::string(key.substr(0, n)) + "...";
}

std::optional<api_error> read_response_format(const json::value& rf, inference_input& in) {
    const auto* o = rf.if_object();
    const auto* type = o ? o->if_contains("type") : nullptr;
    if (!type || !type->is_string())
        return invalid_value("response_format",
                             "response_format must be an object with a \"type\": text, "
                             "json_object or json_schema");
    const std::string_view t = type->get_string();
    if (t == "text")
        return std::nullopt;
    if (t == "json_object") {
        in.json_schema = R"({"type":"object"})";
    } else if (t == "json_schema") {
        const auto* js = o->if_contains("json_schema");
        const auto* schema =
            js && js->is_object() ? js->get_object().if_contains("schema") : nullptr;
        if (!schema || !(schema->is_object() || schema->is_bool()))
            return invalid_value("response_format",
                                 "response_format json_schema needs \"json_schema\": {\"name\", "
                                 "\"schema\": {...}, \"strict\"}");
        if (auto e = check_client_schema(*schema, "response_format"))
            return e;
        in.json_schema = json::serialize(*schema);
    } else {
        return invalid_value("response_format",
                             "response_format type must be text, json_object or json_schema");
    }
    in.schema_param = "response_format";
    return std::nullopt;
}

/// The functions of a `tools` array: each name with its parameters schema (null: none).
using tool_functions = std::vector<std::pair<std::string, const json::value*>>;

std::optional<api_error> read_functions(const json::array& tools, tool_functions& fns) {
    for (const auto& t : tools) {
        const auto* to = t.if_object();
        const auto* fn = to ? to->if_contains("function") : nullptr;
        const auto* fo = fn ? fn->if_object() : nullptr;
        const auto* name = fo ? fo->if_contains("name") : nullptr;
        if (!to || !to->contains("type") || to->at("type") != "function" || !name ||
            !name->is_string() || name->get_string().empty())
            return invalid_value("tools", "each tool must be {\"type\":\"function\",\"function\":"
                                          "{\"name\",\"description\",\"parameters\"}}");
        const auto* params = fo->if_contains("parameters");
        if (params && !params->is_object())
            return invalid_value("tools", "a function's parameters must be a JSON Schema object");
        if (params)
            if (auto e = check_client_schema(*params, "tools"))
                return e;
        fns.emplace_back(std::string(name->get_string()), params);
    }
    return std::nullopt;
}

/// The schema a forced call decodes under: `only` one function's arguments (its name is known),
/// or one of the call shapes in `alts` (several in an array when calls may run in parallel).
void force_call(inference_input& in, const tool_functions& fns, std::optional<std::size_t> only,
                json::array alts, json::object defs) {
    in.schema_param = "tools";
    in.tool_call = true;
    if (only) {
        // One function: its name is known, so only the arguments are generated, under its
        // parameters as the root (their "#" references mean what they meant). No parameters:
        // the empty object.
        in.tool_name = fns[*only].first;
        if (const auto* params = fns[*only].second) {
            json::value p = *params;
            if (auto* po = p.if_object())
                po->erase("$id");
            in.json_schema = json::serialize(p);
        } else {
            in.json_schema = R"({"type":"object","maxProperties":0})";
        }
        return;
    }
    json::object root;
    if (in.parallel_tool_calls) {
        // Several calls in one turn: an array of them, the first call's shape as before.
        root["type"] = "array";
        root["minItems"] = 1;
        root["maxItems"] = max_parallel_tool_calls;
        root["items"] = json::object{{"x-bitnet-tool-union", std::move(alts)}};
    } else {
        root["x-bitnet-tool-union"] = std::move(alts);
    }
    if (!defs.empty())
        root["$defs"] = std::move(defs);
    in.json_schema = json::serialize(root);
}

std::optional<api_error> read_tools(const json::object& body, inference_input& in) {
    const auto* tools = body.if_contains("tools");
    const auto* choice = body.if_contains("tool_choice");
    if (tools && !tools->is_null() && !tools->is_array())
        return invalid_value("tools", "tools must be an array of functions");
    // No tools, or `tools: []` (what the Agents SDK sends for an agent without tools, as the
    // upstream APIs take it): plain generation; only "none" and "auto" can be chosen then.
    if (!tools || tools->is_null() || tools->get_array().empty())
        return choice && !choice->is_null() &&
                       !(choice->is_string() &&
                         (choice->get_string() == "none" || choice->get_string() == "auto"))
                   ? std::optional<api_error>(
                         invalid_value("tool_choice", "tool_choice needs \"tools\""))
                   : std::nullopt;
    tool_functions fns;
    if (auto e = read_functions(tools->get_array(), fns))
        return e;
    // A template that renders tools shows them to the model, unless the client chose "none".
    if (!(choice && choice->is_string() && choice->get_string() == "none"))
        in.template_tools = json::serialize(*tools);
    bool parallel = true; // OpenAI's default
    if (const auto* p = body.if_contains("parallel_tool_calls"); p && !p->is_null()) {
        if (!p->is_bool())
            return invalid_value("parallel_tool_calls", "parallel_tool_calls must be a boolean");
        parallel = p->get_bool();
    }
    in.parallel_tool_calls = parallel;
    json::array alts;
    json::object defs;
    // "auto" (the default with tools): the model may open a call itself, in its template's
    // syntax, and is held to the call grammar from there (README, "Tool calls"); a template
    // that writes no calls leaves the turn plain. With response_format the reply is that
    // schema's value, no call.
    const bool auto_choice =
        !choice || choice->is_null() || (choice->is_string() && choice->get_string() == "auto");
    if (auto_choice) {
        if (!in.json_schema.empty())
            return std::nullopt;
        for (std::size_t i = 0; i < fns.size(); ++i)
            alts.push_back(call_schema(fns[i].first, fns[i].second, i, defs));
        json::object u{{"calls", std::move(alts)}, {"parallel", parallel}};
        if (!defs.empty())
            u["$defs"] = std::move(defs);
        in.tool_union = json::serialize(u);
        in.schema_param = "tools"; // what names the call grammar made of it (the batcher's)
        return std::nullopt;
    }
    std::optional<std::size_t> only; ///< the one function forced, when it is one
    if (choice->is_string()) {
        const std::string_view c = choice->get_string();
        if (c == "none")
            return std::nullopt;
        if (c != "required")
            return invalid_value("tool_choice", "tool_choice must be none, auto, required or "
                                                "{\"type\":\"function\",\"function\":{\"name\"}}");
        for (std::size_t i = 0; i < fns.size(); ++i)
            alts.push_back(call_schema(fns[i].first, fns[i].second, i, defs));
        if (fns.size() == 1)
            only = 0;
    } else {
        const auto* co = choice->if_object();
        const auto* fn = co ? co->if_contains("function") : nullptr;
        const auto* name = fn && fn->is_object() ? fn->get_object().if_contains("name") : nullptr;
        if (!name || !name->is_string())
            return invalid_value("tool_choice", "tool_choice must be none, auto, required or "
                                                "{\"type\":\"function\",\"function\":{\"name\"}}");
        for (std::size_t i = 0; i < fns.size(); ++i)
            if (fns[i].first == name->get_string()) {
                alts.push_back(call_schema(fns[i].first, fns[i].second, i, defs));
                only = i;
            }
        if (alts.empty())
            return invalid_value("tool_choice", "tool_choice names the function \"" +
                                                    std::string(name->get_string()) +
                                                    "\", which is not among the tools");
    }
    if (!in.json_schema.empty())
        return invalid_value("tool_choice",
                             "a forced tool call and response_format cannot be used together");
    force_call(in, fns, only, std::move(alts), std::move(defs));
    return std::nullopt;
}

} // namespace

std::optional<api_error> check_client_schema(const json::value& schema, const std::string& param) {
    struct pending {
        const json::value* v;
        std::size_t depth;    ///< containers from the schema's root, this one included
        bool schema_position; ///< its keys are keywords (else data, walked for depth only)
    };
    std::vector<pending> todo{{&schema, 1, true}};
    while (!todo.empty()) {
        const auto [v, depth, at_schema] = todo.back();
        todo.pop_back();
        if (!v->is_object() && !v->is_array())
            continue;
        if (depth > max_schema_nesting)
            return invalid_value(param,
                                 param + ": the schema nests objects and arrays deeper than " +
                                     std::to_string(max_schema_nesting) + " (max_schema_nesting)");
        if (const auto* a = v->if_array()) {
            for (const auto& e : *a)
                todo.push_back({&e, depth + 1, at_schema});
            continue;
        }
        for (const auto& kv : v->get_object()) {
            const std::string_view key = kv.key();
            if (!at_schema) {
                todo.push_back({&kv.value(), depth + 1, false});
                continue;
            }
            if (key.starts_with("x-bitnet-"))
                return invalid_value(param, param + ": \"" + key_excerpt(key) +
                                                "\" is this server's own keyword (x-bitnet-*), "
                                                "not accepted in a request's schema");
            if (maps_names(key) && kv.value().is_object()) {
                // The map itself is one level; each named subschema is a schema position.
                if (depth + 1 > max_schema_nesting)
                    return invalid_value(param, param +
                                                    ": the schema nests objects and arrays deeper "
                                                    "than " +
                                                    std::to_string(max_schema_nesting) +
                                                    " (max_schema_nesting)");
                for (const auto& named : kv.value().get_object())
                    todo.push_back({&named.value(), depth + 2, true});
            } else {
                todo.push_back({&kv.value(), depth + 1, !holds_data(key)});
            }
        }
    }
    return std::nullopt;
}

std::optional<api_error> read_structured(const json::object& body, api_family kind,
                                         inference_input& in) {
    if (kind == api_family::native) {
        if (const auto* s = body.if_contains("json_schema"); s && !s->is_null()) {
            if (!s->is_object() && !s->is_bool())
                return invalid_value("json_schema", "json_schema must be a JSON Schema object");
            if (auto e = check_client_schema(*s, "json_schema"))
                return e;
            in.json_schema = json::serialize(*s);
            in.schema_param = "json_schema";
        }
    } else {
        if (const auto* rf = body.if_contains("response_format"); rf && !rf->is_null())
            if (auto e = read_response_format(*rf, in))
                return e;
        if (kind == api_family::chat)
            if (auto e = read_tools(body, in))
                return e;
    }
    return read_guided(body, in);
}

std::string tool_call_id(const std::string& req_id, std::size_t i) {
    auto id = "call_" + req_id.substr(req_id.find('-') + 1);
    return i == 0 ? id : id + "_" + std::to_string(i);
}

namespace {

std::optional<forced_call> one_call(const json::value& v) {
    const auto* o = v.if_object();
    const auto* name = o ? o->if_contains("name") : nullptr;
    const auto* args = o ? o->if_contains("arguments") : nullptr;
    if (o && !args)
        args = o->if_contains("parameters"); // Llama 3.1's calls
    if (!name || !name->is_string() || !args)
        return std::nullopt;
    return forced_call{std::string(name->get_string()), json::serialize(*args)};
}

} // namespace

std::optional<std::vector<forced_call>> parse_forced_calls(const std::string& text,
                                                           const std::string& tool_name) {
    boost::system::error_code ec;
    const auto v = json::parse(text, ec);
    if (ec)
        return std::nullopt;
    // Only the arguments were generated: the name is the one the request forced.
    if (!tool_name.empty())
        return std::vector<forced_call>{forced_call{tool_name, json::serialize(v)}};
    std::vector<forced_call> calls;
    if (const auto* a = v.if_array()) {
        for (const auto& e : *a) {
            auto c = one_call(e);
            if (!c)
                return std::nullopt;
            calls.push_back(std::move(*c));
        }
        if (calls.empty())
            return std::nullopt;
        return calls;
    }
    auto c = one_call(v);
    if (!c)
        return std::nullopt;
    calls.push_back(std::move(*c));
    return calls;
}

std::optional<std::vector<forced_call>> parse_auto_calls(std::string_view call_text) {
    // The call's value starts at its first bracket (past an opener such as <tool_call>) and may
    // be followed by the closing tag, when the model wrote one.
    const auto from = call_text.find_first_of("{[");
    if (from == std::string_view::npos)
        return std::nullopt;
    std::string_view value = call_text.substr(from);
    while (!value.empty() &&
           std::string_view(" \t\r\n").find(value.back()) != std::string_view::npos)
        value.remove_suffix(1);
    if (value.ends_with("</tool_call>"))
        value.remove_suffix(std::string_view("</tool_call>").size());
    return parse_forced_calls(std::string(value));
}

std::optional<std::string> tool_calls_json(const std::string& text, const std::string& req_id,
                                           bool with_index, const std::string& tool_name) {
    const auto parsed = parse_forced_calls(text, tool_name);
    if (!parsed)
        return std::nullopt;
    return tool_calls_json(*parsed, req_id, with_index);
}

std::string tool_calls_json(const std::vector<forced_call>& calls, const std::string& req_id,
                            bool with_index) {
    json::array out;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const auto& c = calls[i];
        json::object call;
        if (with_index)
            call["index"] = i;
        call["id"] = tool_call_id(req_id, i);
        call["type"] = "function";
        call["function"] = json::object{{"name", c.name}, {"arguments", c.arguments}};
        out.push_back(std::move(call));
    }
    return json::serialize(out);
}

} // namespace bitnet::http
