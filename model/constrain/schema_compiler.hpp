// The schema compiler's class (internal to model/constrain/): json_schema.cpp drives it, its
// walk of the schema document and its objects and arrays are here, its scalar keywords (enum,
// const, numbers, strings, formats, the call union) in schema_scalars.cpp.
#pragma once

#include "common/exact_numbers.hpp"
#include "model/constrain/canonical_json.hpp"
#include "model/constrain/grammar_passes.hpp"
#include "model/constrain/schema_errors.hpp"
#include "model/constrain/string_formats.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model::constrain::detail {

namespace json = boost::json;
using namespace bitnet::json_numbers;

/// This server's own keyword for a forced call of one of several functions (http/ writes it for
/// `tool_choice`): `[{"name": "...", "arguments": <schema>}, ...]`, compiled to a call_union.
inline constexpr std::string_view tool_union_keyword = "x-bitnet-tool-union";

/// Keywords that annotate and constrain nothing: accepted and ignored.
inline const std::set<std::string_view> annotations{
    "title",    "description", "$comment", "default",     "examples", "deprecated",
    "readOnly", "writeOnly",   "$schema",  "definitions", "$defs"};
/// The constraints the grammar enforces.
inline const std::set<std::string_view> constraints{"type",
                                                    "enum",
                                                    "const",
                                                    "anyOf",
                                                    "$ref",
                                                    "properties",
                                                    "required",
                                                    "additionalProperties",
                                                    "minProperties",
                                                    "maxProperties",
                                                    "items",
                                                    "prefixItems",
                                                    "additionalItems",
                                                    "minItems",
                                                    "maxItems",
                                                    "minLength",
                                                    "maxLength",
                                                    "pattern",
                                                    "format",
                                                    "minimum",
                                                    "maximum",
                                                    "exclusiveMinimum",
                                                    "exclusiveMaximum",
                                                    "multipleOf",
                                                    tool_union_keyword};

inline node of(node_kind k) {
    node n;
    n.kind = k;
    return n;
}

/// The units of a grammar number: 10^-number_fraction_digits.
inline constexpr int number_scale = static_cast<int>(limits::number_fraction_digits);

class compiler {
public:
    compiler(const json::value& root, const compile_budget& budget)
        : root_(root)
        , budget_(budget) {}

    result<grammar> run() {
        g_.root = compile(root_, "");
        // $ref targets are compiled here, one after another, not inside the reference: a chain
        // of references costs no stack.
        while (!pending_.empty() && !err_) {
            const auto p = pending_.back();
            pending_.pop_back();
            const auto body = compile(*p.target, p.path);
            g_.nodes[p.id].alts = {body};
        }
        if (err_)
            return *err_;
        if (auto r = finish_grammar(g_, origin_, budget_); !r)
            return r.error();
        return std::move(g_);
    }

    std::uint32_t any_value() {
        if (any_ != no_node)
            return any_;
        any_ = add(of(node_kind::any_of));
        node obj = of(node_kind::object);
        obj.additional = any_;
        obj.other_key = plain_string();
        node arr = of(node_kind::array);
        arr.items = any_;
        const auto o = add(std::move(obj));
        const auto a = add(std::move(arr));
        std::vector<std::uint32_t> alts{o,
                                        a,
                                        plain_string(),
                                        add(of(node_kind::number)),
                                        literal("true"),
                                        literal("false"),
                                        literal("null")};
        g_.nodes[any_].alts = std::move(alts);
        return any_;
    }

    std::uint32_t any_object() {
        any_value();
        return g_.nodes[any_].alts[0];
    }

    grammar take() { return std::move(g_); }
    const std::vector<std::string>& origin() const { return origin_; }

private:
    struct pending_ref {
        std::uint32_t id;
        const json::value* target;
        std::string path;
    };
    const json::value& root_;
    const compile_budget& budget_;
    grammar g_;
    std::vector<std::string> origin_; ///< per node: the $ref it stands for, if any
    std::map<std::string, std::uint32_t> refs_;
    std::vector<pending_ref> pending_;
    std::map<std::string, std::int32_t> regex_ids_; ///< a pattern is compiled once
    std::size_t table_bytes_ = 0;                   ///< of the patterns' length tables
    std::map<std::string, std::int32_t> trie_ids_;  ///< one exclusion trie per name list
    std::uint32_t any_ = no_node;
    std::uint32_t nothing_ = no_node;
    std::uint32_t plain_string_ = no_node;
    std::optional<error> err_;

    std::uint32_t add(node n) {
        if (g_.nodes.size() >= limits::max_nodes) {
            fail(limit_error("max_nodes", limits::max_nodes,
                             "it compiles to more grammar nodes than that"));
            return 0;
        }
        if ((g_.nodes.size() & 255) == 0)
            if (auto e = budget_.spent())
                fail(*e);
        g_.nodes.push_back(std::move(n));
        origin_.emplace_back();
        return static_cast<std::uint32_t>(g_.nodes.size() - 1);
    }
    std::uint32_t literal(std::string bytes) {
        node n = of(node_kind::literal);
        n.bytes = std::move(bytes);
        return add(std::move(n));
    }
    std::uint32_t nothing() {
        if (nothing_ == no_node && g_.nodes.size() < limits::max_nodes) {
            g_.nodes.push_back(of(node_kind::nothing));
            origin_.emplace_back();
            nothing_ = static_cast<std::uint32_t>(g_.nodes.size() - 1);
        }
        return nothing_ == no_node ? 0 : nothing_;
    }
    std::uint32_t plain_string() {
        if (plain_string_ == no_node)
            plain_string_ = add(of(node_kind::string));
        return plain_string_;
    }

    void fail(error e) {
        if (!err_)
            err_ = std::move(e);
    }
    std::uint32_t unsupported(const std::string& keyword, const std::string& path,
                              const std::string& why = "") {
        fail(error{errc::unsupported,
                   "JSON Schema keyword \"" + excerpt(keyword) + "\"" +
                       (why.empty() ? "" : " " + why) + " at " +
                       (path.empty() ? std::string("the schema's root") : path) +
                       " is not supported by constrained decoding",
                   excerpt(keyword)});
        return nothing();
    }
    std::uint32_t invalid(const std::string& path, const std::string& what) {
        fail(error{errc::invalid_argument, "invalid JSON Schema at " +
                                               (path.empty() ? std::string("the root") : path) +
                                               ": " + what});
        return nothing();
    }

    /// The other constraint keyword of `o` besides `allowed` (a combinator refuses siblings).
    static std::optional<std::string> sibling(const json::object& o,
                                              std::initializer_list<std::string_view> allowed) {
        for (const auto& kv : o)
            if (constraints.count(kv.key()) &&
                std::find(allowed.begin(), allowed.end(), kv.key()) == allowed.end())
                return std::string(kv.key());
        return std::nullopt;
    }

    /// Recursion here follows the schema document's own nesting, which the parser bounds
    /// (limits::max_schema_nesting); $ref targets are queued, not compiled in place.
    std::uint32_t compile(const json::value& s, const std::string& path) {
        if (err_)
            return nothing();
        if (s.is_bool())
            return s.get_bool() ? any_value() : nothing();
        if (!s.is_object())
            return invalid(path, "a schema must be an object or a boolean");
        const auto& o = s.get_object();
        for (const auto& kv : o) {
            const std::string_view k = kv.key();
            if (annotations.count(k) || constraints.count(k))
                continue;
            if (k == "$id" && path.empty())
                continue;
            return unsupported(std::string(k), path);
        }
        if (const auto* r = o.if_contains("$ref")) {
            if (auto other = sibling(o, {"$ref"}))
                return unsupported("$ref", path, "beside \"" + *other + "\"");
            return reference(*r, path);
        }
        if (const auto* t = o.if_contains(tool_union_keyword)) {
            if (auto other = sibling(o, {tool_union_keyword}))
                return unsupported(std::string(tool_union_keyword), path,
                                   "beside \"" + *other + "\"");
            return tool_union(*t, path);
        }
        if (const auto* a = o.if_contains("anyOf")) {
            if (auto other = sibling(o, {"anyOf"}))
                return unsupported("anyOf", path, "beside \"" + *other + "\"");
            if (!a->is_array() || a->get_array().empty())
                return invalid(path, "anyOf must be a non-empty array");
            node u = of(node_kind::any_of);
            std::size_t i = 0;
            for (const auto& sub : a->get_array())
                u.alts.push_back(compile(sub, path + "/anyOf/" + std::to_string(i++)));
            return add(std::move(u));
        }
        auto types = type_set(o, path);
        if (err_)
            return nothing();
        if (o.contains("enum") || o.contains("const"))
            return enumeration(o, types, path);
        node u = of(node_kind::any_of);
        if (types.count("null"))
            u.alts.push_back(literal("null"));
        if (types.count("boolean")) {
            u.alts.push_back(literal("true"));
            u.alts.push_back(literal("false"));
        }
        if (types.count("number"))
            u.alts.push_back(number(o, path));
        else if (types.count("integer"))
            u.alts.push_back(integer(o, path));
        if (types.count("string"))
            u.alts.push_back(string(o, path));
        if (types.count("object"))
            u.alts.push_back(object(o, path));
        if (types.count("array"))
            u.alts.push_back(array(o, path));
        if (u.alts.size() == 1)
            return u.alts[0];
        return add(std::move(u));
    }

    std::set<std::string> type_set(const json::object& o, const std::string& path) {
        static const std::set<std::string> all{"null",   "boolean", "integer", "number",
                                               "string", "object",  "array"};
        const auto* t = o.if_contains("type");
        if (!t)
            return all;
        std::set<std::string> out;
        auto one = [&](const json::value& v) {
            if (!v.is_string() || !all.count(std::string(v.get_string())))
                return (void)invalid(path + "/type", "\"type\" must name JSON Schema types");
            out.insert(std::string(v.get_string()));
        };
        if (t->is_array())
            for (const auto& v : t->get_array())
                one(v);
        else
            one(*t);
        return out;
    }

    std::uint32_t reference(const json::value& r, const std::string& path) {
        if (!r.is_string())
            return invalid(path, "$ref must be a string");
        const std::string ref(r.get_string());
        if (ref.empty() || ref[0] != '#')
            return unsupported("$ref", path, "to another document (\"" + excerpt(ref) + "\")");
        // Percent-decoding, then a JSON pointer with ~1 and ~0.
        std::string ptr;
        for (std::size_t i = 1; i < ref.size(); ++i) {
            auto hex = [](char c) {
                return c >= '0' && c <= '9'   ? c - '0'
                       : c >= 'a' && c <= 'f' ? c - 'a' + 10
                       : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                              : -1;
            };
            if (ref[i] == '%' && i + 2 < ref.size() && hex(ref[i + 1]) >= 0 &&
                hex(ref[i + 2]) >= 0) {
                ptr += static_cast<char>(hex(ref[i + 1]) * 16 + hex(ref[i + 2]));
                i += 2;
            } else {
                ptr += ref[i];
            }
        }
        if (auto it = refs_.find(ptr); it != refs_.end())
            return it->second;
        if (!ptr.empty() && ptr[0] != '/')
            return unsupported("$ref", path, "to an anchor (\"" + excerpt(ref) + "\")");
        boost::system::error_code ec;
        const json::value* target = ptr.empty() ? &root_ : root_.find_pointer(ptr, ec);
        if (!target || ec)
            return invalid(path, "$ref \"" + excerpt(ref) + "\" points nowhere in the schema");
        // The reference's node now; its target is compiled later (run()), so a recursive
        // reference finds this node and a chain of them uses no stack.
        const auto id = add(of(node_kind::any_of));
        if (err_)
            return nothing();
        refs_[ptr] = id;
        origin_[id] = "$ref \"" + excerpt(ref) + "\" at " + (path.empty() ? "the root" : path);
        pending_.push_back({id, target, ptr.empty() ? std::string("#") : ptr});
        return id;
    }

    static std::string excerpt(const std::string& s) { return cut_utf8(s, 60); }

    static bool has_type(const json::value& v, const std::set<std::string>& types);

    std::uint32_t enumeration(const json::object& o, const std::set<std::string>& types,
                              const std::string& path);

    std::uint32_t tool_union(const json::value& t, const std::string& path);

    static std::string scalar_text(const json::value& v);

    /// The node that accepts exactly `v` (objects in any member order).
    std::uint32_t constant(const json::value& v, const std::string& path);

    bool count(const json::object& o, const char* k, std::uint32_t& out, const std::string& path);

    static std::uint32_t cap_of(std::uint32_t a, std::uint32_t mn, std::uint32_t mx);

    /// minimum / exclusiveMinimum / maximum / exclusiveMaximum into `n` in units of 10^-scale:
    /// exact, from the number as written. Exclusive bounds step one unit in (the grammar writes
    /// no finer value).
    void bounds(const json::object& o, const std::string& path, node& n, int scale);

    std::uint32_t integer(const json::object& o, const std::string& path);

    std::uint32_t number(const json::object& o, const std::string& path);

    std::int32_t regex_of(std::string_view pattern, const std::string& path, const char* kw);
    /// Format `name`'s automaton in the grammar, and the length cap it implies.
    std::int32_t format_of(const std::string& name, const std::string& path,
                           std::uint32_t& max_length);

    std::uint32_t string(const json::object& o, const std::string& path);

    std::int32_t exclusion_trie(const std::vector<std::string>& keys) {
        std::string id;
        for (const auto& k : keys) {
            id += k;
            id += '\0';
        }
        if (auto it = trie_ids_.find(id); it != trie_ids_.end())
            return it->second;
        byte_trie t;
        for (const auto& k : keys)
            t.insert(k);
        g_.tries.push_back(std::move(t));
        const auto tid = static_cast<std::int32_t>(g_.tries.size() - 1);
        trie_ids_.emplace(std::move(id), tid);
        return tid;
    }

    std::uint32_t object(const json::object& o, const std::string& path) {
        node n = of(node_kind::object);
        const auto* props = o.if_contains("properties");
        if (props && !props->is_object())
            return invalid(path, "properties must be an object");
        // The value node of names not in `properties`.
        n.additional = any_value();
        if (const auto* ap = o.if_contains("additionalProperties")) {
            if (ap->is_bool() && !ap->get_bool())
                n.additional = no_node;
            else
                n.additional = compile(*ap, path + "/additionalProperties");
        }
        if (props) {
            if (props->get_object().size() > limits::max_properties)
                return unsupported("properties", path, "(more than 64 names)");
            for (const auto& kv : props->get_object()) {
                n.keys.push_back(canonical_string_body(kv.key()));
                n.values.push_back(
                    compile(kv.value(), path + "/properties/" + excerpt(std::string(kv.key()))));
            }
        }
        if (const auto* req = o.if_contains("required")) {
            if (!req->is_array())
                return invalid(path, "required must be an array of names");
            for (const auto& r : req->get_array()) {
                if (!r.is_string())
                    return invalid(path, "required must be an array of names");
                const auto key = canonical_string_body(r.get_string());
                auto it = std::find(n.keys.begin(), n.keys.end(), key);
                if (it == n.keys.end()) {
                    if (n.keys.size() >= limits::max_properties)
                        return unsupported("properties", path, "(more than 64 names)");
                    // Required but not declared: it comes as an "additional" name, or never.
                    n.keys.push_back(key);
                    n.values.push_back(n.additional == no_node ? nothing() : n.additional);
                    it = n.keys.end() - 1;
                }
                n.required |= 1ULL << (it - n.keys.begin());
            }
        }
        if (!count(o, "minProperties", n.min_count, path) ||
            !count(o, "maxProperties", n.max_count, path))
            return nothing();
        n.count_cap = cap_of(0, n.min_count, n.max_count);
        if (n.additional != no_node) {
            node key = of(node_kind::string);
            key.exclude = exclusion_trie(n.keys);
            n.other_key = add(std::move(key));
        }
        return add(std::move(n));
    }

    std::uint32_t array(const json::object& o, const std::string& path) {
        node n = of(node_kind::array);
        n.items = any_value();
        const auto* items = o.if_contains("items");
        const auto* prefix = o.if_contains("prefixItems");
        if (items && items->is_array()) { // draft 7 tuples: items [...], then additionalItems
            std::size_t i = 0;
            for (const auto& s : items->get_array())
                n.prefix.push_back(compile(s, path + "/items/" + std::to_string(i++)));
            if (const auto* ai = o.if_contains("additionalItems"))
                n.items = ai->is_bool() && !ai->get_bool()
                              ? no_node
                              : compile(*ai, path + "/additionalItems");
        } else {
            if (prefix) {
                if (!prefix->is_array())
                    return invalid(path, "prefixItems must be an array");
                std::size_t i = 0;
                for (const auto& s : prefix->get_array())
                    n.prefix.push_back(compile(s, path + "/prefixItems/" + std::to_string(i++)));
            }
            if (items)
                n.items = items->is_bool() && !items->get_bool() ? no_node
                                                                 : compile(*items, path + "/items");
        }
        if (!count(o, "minItems", n.min_count, path) || !count(o, "maxItems", n.max_count, path))
            return nothing();
        n.count_cap = cap_of(static_cast<std::uint32_t>(n.prefix.size()), n.min_count, n.max_count);
        return add(std::move(n));
    }
};

} // namespace bitnet::model::constrain::detail
