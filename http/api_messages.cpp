#include "http/api_messages.hpp"

#include <boost/json.hpp>

#include <string>

namespace bitnet::http {

namespace json = boost::json;

namespace {

api_error bad(std::size_t i, const std::string& what) {
    return invalid_value("messages", "messages[" + std::to_string(i) + "]: " + what);
}

/// A message's content: a string, or text parts joined with a newline (as vLLM joins them).
/// `null_ok`: null (or no content) reads as empty.
std::optional<api_error> read_content(const json::object& m, std::size_t i, bool null_ok,
                                      std::string& out) {
    const auto* c = m.if_contains("content");
    if (!c || c->is_null()) {
        if (null_ok)
            return std::nullopt;
        return bad(i, "needs \"content\" (a string or an array of text parts)");
    }
    if (c->is_string()) {
        out = std::string(c->get_string());
        return std::nullopt;
    }
    if (!c->is_array())
        return bad(i, "content must be a string or an array of text parts");
    std::size_t part = 0;
    for (const auto& p : c->get_array()) {
        const auto* po = p.if_object();
        const auto* type = po ? po->if_contains("type") : nullptr;
        if (!type || !type->is_string())
            return bad(i, "content[" + std::to_string(part) + "] needs a string \"type\"");
        if (type->get_string() != "text")
            return bad(i, "content part type '" + std::string(type->get_string()) +
                              "' is not supported (this server reads text parts only)");
        const auto* text = po->if_contains("text");
        if (!text || !text->is_string())
            return bad(i, "content[" + std::to_string(part) + "] needs a string \"text\"");
        if (part > 0)
            out += '\n';
        out += text->get_string();
        ++part;
    }
    return std::nullopt;
}

/// An assistant message's `tool_calls`: [{id, type: "function", function: {name, arguments}}].
std::optional<api_error> read_tool_calls(const json::value& v, std::size_t i,
                                         std::vector<msg::chat_tool_call>& out) {
    if (!v.is_array())
        return bad(i, "tool_calls must be an array");
    if (v.get_array().size() > max_tool_calls_per_message)
        return bad(i, "has " + std::to_string(v.get_array().size()) + " tool calls (at most " +
                          std::to_string(max_tool_calls_per_message) + ")");
    for (const auto& c : v.get_array()) {
        const auto* co = c.if_object();
        const auto* fn = co ? co->if_contains("function") : nullptr;
        const auto* fo = fn ? fn->if_object() : nullptr;
        const auto* name = fo ? fo->if_contains("name") : nullptr;
        if (!name || !name->is_string() || name->get_string().empty())
            return bad(i, "each tool call needs {\"id\", \"type\": \"function\", \"function\": "
                          "{\"name\", \"arguments\"}}");
        msg::chat_tool_call call;
        call.name = std::string(name->get_string());
        if (const auto* id = co->if_contains("id"); id && id->is_string())
            call.id = std::string(id->get_string());
        // OpenAI sends the arguments as a JSON string; an object is taken as it is.
        if (const auto* args = fo->if_contains("arguments"); args && args->is_string())
            call.arguments = std::string(args->get_string());
        else if (args && args->is_object())
            call.arguments = json::serialize(*args);
        else if (args && !args->is_null())
            return bad(i, "a tool call's arguments must be a JSON string");
        out.push_back(std::move(call));
    }
    return std::nullopt;
}

} // namespace

std::optional<api_error> read_chat_messages(const json::value& messages,
                                            std::vector<msg::chat_message>& out) {
    if (!messages.is_array() || messages.get_array().empty())
        return invalid_value("messages", "messages must be a non-empty array");
    std::size_t i = 0;
    for (const auto& e : messages.get_array()) {
        const auto* mo = e.if_object();
        const auto* role = mo ? mo->if_contains("role") : nullptr;
        if (!role || !role->is_string())
            return bad(i, "each message needs a string \"role\"");
        msg::chat_message m;
        const std::string_view r = role->get_string();
        if (r == "system" || r == "developer" || r == "user") {
            m.role = r == "user" ? "user" : "system";
            if (auto err = read_content(*mo, i, false, m.content))
                return err;
        } else if (r == "assistant") {
            m.role = "assistant";
            const auto* calls = mo->if_contains("tool_calls");
            const bool has_calls = calls && !calls->is_null();
            if (has_calls)
                if (auto err = read_tool_calls(*calls, i, m.tool_calls))
                    return err;
            if (auto err = read_content(*mo, i, has_calls, m.content))
                return err;
        } else if (r == "tool") {
            m.role = "tool";
            const auto* id = mo->if_contains("tool_call_id");
            if (!id || !id->is_string())
                return bad(i, "a tool message needs a string \"tool_call_id\"");
            m.tool_call_id = std::string(id->get_string());
            if (auto err = read_content(*mo, i, false, m.content))
                return err;
            // The function it answers: the earlier call with that id, else its own "name".
            for (auto it = out.rbegin(); it != out.rend() && m.name.empty(); ++it)
                for (const auto& c : it->tool_calls)
                    if (!c.id.empty() && c.id == m.tool_call_id)
                        m.name = c.name;
            if (const auto* n = mo->if_contains("name"); m.name.empty() && n && n->is_string())
                m.name = std::string(n->get_string());
        } else {
            return bad(i, "unknown role '" + std::string(r) +
                              "' (system, developer, user, assistant or tool)");
        }
        out.push_back(std::move(m));
        ++i;
    }
    return std::nullopt;
}

} // namespace bitnet::http
