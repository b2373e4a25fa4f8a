#include "model/constrain/tool_call_opener.hpp"

#include "model/constrain/schema_compiler.hpp" // tool_union_keyword

#include <boost/json.hpp>

#include <algorithm>

namespace bitnet::model::constrain {

namespace json = boost::json;

namespace {

constexpr std::string_view whitespace = " \t\r\n";

/// Llama 3.1's call: {"name": N, "parameters": S}, one alternative per function.
json::object parameters_union(const json::array& calls) {
    json::array alts;
    for (const auto& c : calls) {
        const auto& o = c.as_object();
        json::object props{{"name", json::object{{"const", o.at("name")}}},
                           {"parameters", o.at("arguments")}};
        alts.push_back(json::object{{"type", "object"},
                                    {"properties", std::move(props)},
                                    {"required", json::array{"name", "parameters"}},
                                    {"additionalProperties", false}});
    }
    return json::object{{"anyOf", std::move(alts)}};
}

} // namespace

std::optional<auto_call_grammar>
auto_call_grammar_for(tool_call_syntax syntax, std::string_view tool_union, std::size_t max_calls) {
    if (syntax == tool_call_syntax::none)
        return std::nullopt;
    boost::system::error_code ec;
    auto v = json::parse(tool_union, ec);
    const auto* u = ec ? nullptr : v.if_object();
    const auto* calls = u ? u->if_contains("calls") : nullptr;
    if (!calls || !calls->is_array() || calls->get_array().empty())
        return std::nullopt;
    for (const auto& c : calls->get_array()) {
        const auto* o = c.if_object();
        if (!o || !o->contains("name") || !o->at("name").is_string() || !o->contains("arguments"))
            return std::nullopt;
    }
    const auto* parallel = u->if_contains("parallel");
    const bool several = parallel && parallel->is_bool() && parallel->get_bool();
    json::object root;
    auto_call_grammar g;
    switch (syntax) {
    case tool_call_syntax::hermes:
        root[detail::tool_union_keyword] = calls->get_array();
        g.opener = {"<tool_call>", false};
        break;
    case tool_call_syntax::hermes_list:
        root["type"] = "array";
        root["minItems"] = 1;
        root["maxItems"] = several ? std::max<std::size_t>(max_calls, 1) : 1;
        root["items"] = json::object{{detail::tool_union_keyword, calls->get_array()}};
        g.opener = {"<tool_call>", false};
        break;
    case tool_call_syntax::llama3_json:
        root = parameters_union(calls->get_array());
        g.opener = {"{", true};
        break;
    case tool_call_syntax::none:
        return std::nullopt;
    }
    if (const auto* defs = u->if_contains("$defs"); defs && defs->is_object())
        root["$defs"] = *defs;
    g.schema = json::serialize(root);
    return g;
}

call_splitter::parts call_splitter::feed(std::string_view bytes) {
    parts out;
    if (state_ == state::opened) {
        out.call.assign(bytes);
        return out;
    }
    if (state_ == state::never || opener_.text.empty()) {
        state_ = state::never;
        out.reply = held_;
        held_.clear();
        out.reply.append(bytes);
        return out;
    }
    std::string buf = std::move(held_);
    held_.clear();
    buf.append(bytes);
    const std::string_view op = opener_.text;
    if (opener_.at_start) {
        const auto first = buf.find_first_not_of(whitespace);
        if (first == std::string::npos) {
            held_ = std::move(buf); // only whitespace so far
            return out;
        }
        const std::string_view rest = std::string_view(buf).substr(first);
        const auto n = std::min(rest.size(), op.size());
        if (rest.substr(0, n) != op.substr(0, n)) {
            state_ = state::never;
            out.reply = std::move(buf);
        } else if (rest.size() < op.size()) {
            held_ = std::move(buf);
        } else {
            // The whitespace before the call belongs to neither part.
            state_ = state::opened;
            out.call.assign(rest);
        }
        return out;
    }
    if (const auto at = buf.find(op); at != std::string::npos) {
        state_ = state::opened;
        out.reply = buf.substr(0, at);
        out.call = buf.substr(at);
        return out;
    }
    // Hold back the longest end of the text that may still grow into the opener.
    std::size_t keep = std::min(buf.size(), op.size() - 1);
    while (keep > 0 && !std::string_view(buf).ends_with(op.substr(0, keep)))
        --keep;
    held_ = buf.substr(buf.size() - keep);
    buf.resize(buf.size() - keep);
    out.reply = std::move(buf);
    return out;
}

call_splitter::parts call_splitter::flush() {
    parts out;
    if (state_ != state::opened) {
        out.reply = std::move(held_);
        held_.clear();
        state_ = state::never;
    }
    return out;
}

} // namespace bitnet::model::constrain
