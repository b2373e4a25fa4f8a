#include "model/constrain/json_schema.hpp"

#include "model/constrain/canonical_json.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace bitnet::model::constrain {

namespace {

namespace json = boost::json;

/// Keywords that annotate and constrain nothing: accepted and ignored.
const std::set<std::string_view> annotations{"title",    "description", "$comment", "default",
                                             "examples", "deprecated",  "readOnly", "writeOnly",
                                             "$schema",  "definitions", "$defs"};
/// The constraints the grammar enforces.
const std::set<std::string_view> constraints{"type",
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
                                             "minimum",
                                             "maximum",
                                             "exclusiveMinimum",
                                             "exclusiveMaximum",
                                             "multipleOf"};
const char* numeric_keywords[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                  "multipleOf"};

void byte_trie_insert(byte_trie& t, const std::string& s) {
    t.insert(s);
}

node of(node_kind k) {
    node n;
    n.kind = k;
    return n;
}

class compiler {
public:
    explicit compiler(const json::value& root)
        : root_(root) {}

    result<grammar> run() {
        g_.root = compile(root_, "");
        if (err_)
            return *err_;
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

private:
    const json::value& root_;
    grammar g_;
    std::map<std::string, std::uint32_t> refs_;
    std::uint32_t any_ = no_node;
    std::uint32_t nothing_ = no_node;
    std::uint32_t plain_string_ = no_node;
    std::optional<error> err_;

    std::uint32_t add(node n) {
        g_.nodes.push_back(std::move(n));
        return static_cast<std::uint32_t>(g_.nodes.size() - 1);
    }
    std::uint32_t literal(std::string bytes) {
        node n = of(node_kind::literal);
        n.bytes = std::move(bytes);
        return add(std::move(n));
    }
    std::uint32_t nothing() {
        if (nothing_ == no_node)
            nothing_ = add(of(node_kind::nothing));
        return nothing_;
    }
    std::uint32_t plain_string() {
        if (plain_string_ == no_node)
            plain_string_ = add(of(node_kind::string));
        return plain_string_;
    }

    std::uint32_t unsupported(const std::string& keyword, const std::string& path,
                              const std::string& why = "") {
        if (!err_)
            err_ =
                error{errc::unsupported,
                      "JSON Schema keyword \"" + keyword + "\"" + (why.empty() ? "" : " " + why) +
                          " at " + (path.empty() ? std::string("the schema's root") : path) +
                          " is not supported by constrained decoding",
                      keyword};
        return nothing();
    }
    std::uint32_t invalid(const std::string& path, const std::string& what) {
        if (!err_)
            err_ = error{errc::invalid_argument,
                         "invalid JSON Schema at " +
                             (path.empty() ? std::string("the root") : path) + ": " + what};
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
        if (types.count("number")) {
            for (const char* k : numeric_keywords)
                if (o.contains(k))
                    return unsupported(k, path, "on non-integer numbers");
            u.alts.push_back(add(of(node_kind::number)));
        } else if (types.count("integer")) {
            u.alts.push_back(integer(o, path));
        }
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
            return unsupported("$ref", path, "to another document (\"" + ref + "\")");
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
            return unsupported("$ref", path, "to an anchor (\"" + ref + "\")");
        boost::system::error_code ec;
        const json::value* target = ptr.empty() ? &root_ : root_.find_pointer(ptr, ec);
        if (!target || ec)
            return invalid(path, "$ref \"" + ref + "\" points nowhere in the schema");
        // Reserved before compiling the target, so a recursive reference finds it.
        const auto id = add(of(node_kind::any_of));
        refs_[ptr] = id;
        const auto body = compile(*target, ptr.empty() ? std::string("#") : ptr);
        g_.nodes[id].alts = {body};
        return id;
    }

    static bool has_type(const json::value& v, const std::set<std::string>& types) {
        switch (v.kind()) {
        case json::kind::null:
            return types.count("null") > 0;
        case json::kind::bool_:
            return types.count("boolean") > 0;
        case json::kind::int64:
        case json::kind::uint64:
            return types.count("integer") || types.count("number");
        case json::kind::double_:
            return types.count("number") ||
                   (types.count("integer") && v.get_double() == std::floor(v.get_double()));
        case json::kind::string:
            return types.count("string") > 0;
        case json::kind::array:
            return types.count("array") > 0;
        case json::kind::object:
            return types.count("object") > 0;
        }
        return false;
    }

    std::uint32_t enumeration(const json::object& o, const std::set<std::string>& types,
                              const std::string& path) {
        const char* kw = o.contains("enum") ? "enum" : "const";
        if (auto other = sibling(o, {"enum", "const", "type"}))
            return unsupported(kw, path, "beside \"" + *other + "\"");
        std::vector<const json::value*> values;
        if (const auto* e = o.if_contains("enum")) {
            if (!e->is_array())
                return invalid(path, "enum must be an array");
            for (const auto& v : e->get_array())
                values.push_back(&v);
        }
        if (const auto* c = o.if_contains("const")) {
            if (o.contains("enum"))
                return unsupported("const", path, "beside \"enum\"");
            values.push_back(c);
        }
        node u = of(node_kind::any_of);
        for (const auto* v : values)
            if (has_type(*v, types))
                u.alts.push_back(constant(*v, path));
        return add(std::move(u));
    }

    /// The node that accepts exactly `v` (objects in any member order).
    std::uint32_t constant(const json::value& v, const std::string& path) {
        if (v.is_array()) {
            node a = of(node_kind::array);
            for (const auto& e : v.get_array())
                a.prefix.push_back(constant(e, path));
            a.min_count = a.max_count = a.count_cap = static_cast<std::uint32_t>(a.prefix.size());
            return add(std::move(a));
        }
        if (v.is_object()) {
            node ob = of(node_kind::object);
            if (v.get_object().size() > 64)
                return unsupported("const", path, "(an object of more than 64 members)");
            for (const auto& kv : v.get_object()) {
                ob.required |= 1ULL << ob.keys.size();
                ob.keys.push_back(canonical_string_body(kv.key()));
                ob.values.push_back(constant(kv.value(), path));
            }
            return add(std::move(ob));
        }
        return literal(canonical_json(v));
    }

    bool count(const json::object& o, const char* k, std::uint32_t& out, const std::string& path) {
        if (const auto* v = o.if_contains(k)) {
            double d = v->is_number() ? v->to_number<double>() : -1.0;
            if (d < 0 || d != std::floor(d)) {
                invalid(path, std::string(k) + " must be a non-negative integer");
                return false;
            }
            out = d >= 4e9 ? unbounded - 1 : static_cast<std::uint32_t>(d);
        }
        return true;
    }

    static std::uint32_t cap_of(std::uint32_t a, std::uint32_t mn, std::uint32_t mx) {
        return std::max({a, mn, mx == unbounded ? 0u : mx});
    }

    std::uint32_t integer(const json::object& o, const std::string& path) {
        node n = of(node_kind::integer);
        auto bound = [&](const char* k, bool lower, bool exclusive) {
            const auto* v = o.if_contains(k);
            if (!v)
                return;
            if (!v->is_number())
                return (void)invalid(path, std::string(k) + " must be a number");
            double d = v->to_number<double>();
            double b = lower ? std::ceil(d) : std::floor(d);
            if (exclusive && b == d)
                b += lower ? 1 : -1;
            const double lim = 9.2e18;
            const auto i = static_cast<std::int64_t>(std::clamp(b, -lim, lim));
            if (lower)
                n.lo = std::max(n.lo, i);
            else
                n.hi = std::min(n.hi, i);
        };
        bound("minimum", true, false);
        bound("exclusiveMinimum", true, true);
        bound("maximum", false, false);
        bound("exclusiveMaximum", false, true);
        if (const auto* m = o.if_contains("multipleOf")) {
            if (!m->is_number() || m->to_number<double>() <= 0)
                return invalid(path, "multipleOf must be a number above 0");
            const double d = m->to_number<double>();
            if (d != std::floor(d) || d > 1e15)
                return unsupported("multipleOf", path, "with a non-integer divisor");
            if (n.lo != of(node_kind::integer).lo || n.hi != of(node_kind::integer).hi)
                return unsupported("multipleOf", path, "beside minimum/maximum");
            n.multiple_of = static_cast<std::uint64_t>(d);
        }
        return add(std::move(n));
    }

    std::uint32_t string(const json::object& o, const std::string& path) {
        node n = of(node_kind::string);
        if (!count(o, "minLength", n.min_count, path) || !count(o, "maxLength", n.max_count, path))
            return nothing();
        n.count_cap = cap_of(0, n.min_count, n.max_count);
        if (const auto* p = o.if_contains("pattern")) {
            if (!p->is_string())
                return invalid(path, "pattern must be a string");
            auto re = pattern_regex::compile(p->get_string());
            if (!re)
                return unsupported("pattern", path, "(" + re.error().message + ")");
            g_.regexes.push_back(std::move(*re));
            n.regex = static_cast<std::int32_t>(g_.regexes.size() - 1);
        }
        return add(std::move(n));
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
        if (props)
            for (const auto& kv : props->get_object()) {
                n.keys.push_back(canonical_string_body(kv.key()));
                n.values.push_back(
                    compile(kv.value(), path + "/properties/" + std::string(kv.key())));
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
                    // Required but not declared: it comes as an "additional" name, or never.
                    n.keys.push_back(key);
                    n.values.push_back(n.additional == no_node ? nothing() : n.additional);
                    it = n.keys.end() - 1;
                }
                if (n.keys.size() <= 64)
                    n.required |= 1ULL << (it - n.keys.begin());
            }
        }
        if (n.keys.size() > 64)
            return unsupported("properties", path, "(more than 64 names)");
        if (!count(o, "minProperties", n.min_count, path) ||
            !count(o, "maxProperties", n.max_count, path))
            return nothing();
        n.count_cap = cap_of(0, n.min_count, n.max_count);
        if (n.additional != no_node) {
            byte_trie t;
            for (const auto& k : n.keys)
                byte_trie_insert(t, k);
            g_.tries.push_back(std::move(t));
            node key = of(node_kind::string);
            key.exclude = static_cast<std::int32_t>(g_.tries.size() - 1);
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

} // namespace

void byte_trie::insert(const std::string& s) {
    std::uint16_t at = 0;
    for (char ch : s) {
        const auto b = static_cast<std::uint8_t>(ch);
        auto& nx = nodes[at].next;
        auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, std::uint16_t{0}));
        if (it != nx.end() && it->first == b) {
            at = it->second;
            continue;
        }
        const auto id = static_cast<std::uint16_t>(nodes.size());
        nx.insert(it, {b, id});
        nodes.emplace_back();
        at = id;
    }
    nodes[at].terminal = true;
}

std::uint16_t byte_trie::step(std::uint16_t at, std::uint8_t b) const noexcept {
    if (at == dead)
        return dead;
    const auto& nx = nodes[at].next;
    auto it = std::lower_bound(nx.begin(), nx.end(), std::make_pair(b, std::uint16_t{0}));
    return it != nx.end() && it->first == b ? it->second : dead;
}

result<grammar> compile_json_schema(std::string_view schema_json) {
    boost::system::error_code ec;
    const json::value root = json::parse(schema_json, ec);
    if (ec)
        return error{errc::invalid_argument, "the schema is not valid JSON: " + ec.message()};
    return compiler(root).run();
}

grammar any_object_grammar() {
    const json::value none;
    compiler c(none);
    const auto root = c.any_object();
    auto g = c.take();
    g.root = root;
    return g;
}

} // namespace bitnet::model::constrain
