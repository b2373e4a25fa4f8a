#include "model/constrain/text_grammar.hpp"

#include "model/constrain/schema_errors.hpp"

#include <boost/json.hpp>

#include <string>

namespace bitnet::model::constrain {

namespace json = boost::json;

namespace {

error bad_spec(const std::string& what) {
    return error{errc::invalid_argument, "structured text: " + what};
}

/// A reply that is exactly one of `choices`: one literal set of their raw bytes.
result<grammar> choice_grammar(const json::array& choices) {
    if (choices.empty())
        return bad_spec("the choice list is empty");
    if (choices.size() > limits::max_enum_members)
        return limit_error("max_enum_members", limits::max_enum_members,
                           "the choice list has " + std::to_string(choices.size()) + " entries");
    grammar g;
    byte_trie trie;
    for (std::size_t i = 0; i < choices.size(); ++i) {
        const auto* s = choices[i].if_string();
        if (!s || s->empty())
            return bad_spec("choice " + std::to_string(i) + " is not a non-empty string");
        trie.insert(std::string(*s), static_cast<std::uint32_t>(i));
    }
    g.tries.push_back(std::move(trie));
    node n;
    n.kind = node_kind::literal_set;
    n.set = 0;
    g.nodes.push_back(std::move(n));
    g.root = 0;
    return g;
}

/// `p` without a leading `^` and a trailing unescaped `$`: the match is whole either way.
std::string unanchored(std::string_view p) {
    if (!p.empty() && p.front() == '^')
        p.remove_prefix(1);
    if (!p.empty() && p.back() == '$') {
        std::size_t slashes = 0;
        for (auto i = p.size() - 1; i > 0 && p[i - 1] == '\\'; --i)
            ++slashes;
        if (slashes % 2 == 0)
            p.remove_suffix(1);
    }
    return std::string(p);
}

/// A reply whose whole text matches `pattern`: one `text` node.
result<grammar> regex_grammar(std::string_view pattern) {
    if (pattern.size() > limits::max_pattern_bytes)
        return limit_error("max_pattern_bytes", limits::max_pattern_bytes,
                           "the regex is " + std::to_string(pattern.size()) + " bytes");
    auto re = pattern_regex::compile("^(?:" + unanchored(pattern) + ")$");
    if (!re)
        return re.error();
    grammar g;
    g.regexes.push_back(std::move(*re));
    node n;
    n.kind = node_kind::text;
    n.regex = 0;
    g.nodes.push_back(std::move(n));
    g.root = 0;
    return g;
}

} // namespace

bool is_text_spec(const json::value& root) {
    const auto* o = root.if_object();
    return o && o->size() == 1 && o->contains(text_spec_keyword);
}

result<grammar> compile_text_grammar(const json::value& root) {
    const auto* spec =
        is_text_spec(root) ? root.get_object().at(text_spec_keyword).if_object() : nullptr;
    if (!spec || spec->size() != 1)
        return bad_spec("the spec must be an object with one of \"choice\" or \"regex\"");
    if (const auto* c = spec->if_contains("choice")) {
        if (!c->is_array())
            return bad_spec("\"choice\" must be an array of strings");
        return choice_grammar(c->get_array());
    }
    if (const auto* r = spec->if_contains("regex")) {
        if (!r->is_string() || r->get_string().empty())
            return bad_spec("\"regex\" must be a non-empty string");
        return regex_grammar(r->get_string());
    }
    return bad_spec("the spec must be an object with one of \"choice\" or \"regex\"");
}

} // namespace bitnet::model::constrain
