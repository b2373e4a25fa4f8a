// The schema compiler's scalar keywords (schema_compiler.hpp): enum and const (numbers as
// written), the call union, integer and number bounds (exact), multipleOf, string lengths,
// pattern and format.
#include "model/constrain/schema_compiler.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace bitnet::model::constrain::detail {

namespace json = boost::json;
using namespace bitnet::json_numbers;

bool compiler::has_type(const json::value& v, const std::set<std::string>& types) {
    if (auto t = exact_number_text(v))
        return types.count("number") || (types.count("integer") && is_integer_text(*t));
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

namespace {

/// The matcher frames writing `v` takes: one per object or array and one for the scalar inside
/// (an empty object or array is one). Walked with a work list, not the call stack.
std::uint32_t frames_of(const json::value& v) {
    std::uint32_t deepest = 0;
    std::vector<std::pair<const json::value*, std::uint32_t>> todo{{&v, 1}};
    while (!todo.empty()) {
        const auto [at, depth] = todo.back();
        todo.pop_back();
        deepest = std::max(deepest, depth);
        if (const auto* a = at->if_array())
            for (const auto& e : *a)
                todo.emplace_back(&e, depth + 1);
        else if (const auto* o = at->if_object())
            for (const auto& kv : *o)
                todo.emplace_back(&kv.value(), depth + 1);
    }
    return deepest;
}

} // namespace

std::uint32_t compiler::enumeration(const json::object& o, const std::set<std::string>& types,
                                    const std::string& path) {
    const char* kw = o.contains("enum") ? "enum" : "const";
    if (auto other = sibling(o, {"enum", "const", "type"}))
        return unsupported(kw, path, "beside \"" + *other + "\"");
    std::vector<const json::value*> values;
    if (const auto* e = o.if_contains("enum")) {
        if (!e->is_array())
            return invalid(path, "enum must be an array");
        if (e->get_array().size() > limits::max_enum_members) {
            fail(limit_error("max_enum_members", limits::max_enum_members,
                             "enum at " + (path.empty() ? std::string("the root") : path) +
                                 " has " + std::to_string(e->get_array().size()) + " members"));
            return nothing();
        }
        for (const auto& v : e->get_array())
            values.push_back(&v);
    }
    if (const auto* c = o.if_contains("const")) {
        if (o.contains("enum"))
            return unsupported("const", path, "beside \"enum\"");
        values.push_back(c);
    }
    // Scalars go into one trie (one matcher configuration however many there are); objects
    // and arrays are alternatives of their own.
    node u = of(node_kind::any_of);
    byte_trie scalars;
    bool any_scalar = false;
    for (const auto* v : values) {
        if (!has_type(*v, types))
            continue;
        if (v->is_array() || v->is_object()) {
            // Deeper than the matcher writes: refused now, not a dead end mid-stream.
            if (const auto frames = frames_of(*v); frames > limits::max_value_depth) {
                fail(limit_error("max_value_depth", limits::max_value_depth,
                                 std::string(kw) + " at " +
                                     (path.empty() ? std::string("the root") : path) +
                                     " holds a value nested " + std::to_string(frames) +
                                     " levels (objects, arrays and the scalar inside them)"));
                return nothing();
            }
            u.alts.push_back(constant(*v, path));
            continue;
        }
        scalars.insert(scalar_text(*v));
        any_scalar = true;
    }
    if (any_scalar) {
        g_.tries.push_back(std::move(scalars));
        node set = of(node_kind::literal_set);
        set.set = static_cast<std::int32_t>(g_.tries.size() - 1);
        u.alts.push_back(add(std::move(set)));
    }
    if (u.alts.size() == 1)
        return u.alts[0];
    return add(std::move(u));
}

std::uint32_t compiler::tool_union(const json::value& t, const std::string& path) {
    const auto* fns = t.if_array();
    if (!fns || fns->empty())
        return invalid(path, std::string(tool_union_keyword) + " must be a non-empty array");
    node u = of(node_kind::call_union);
    byte_trie names;
    for (std::size_t i = 0; i < fns->size(); ++i) {
        const auto* f = (*fns)[i].if_object();
        const auto* name = f ? f->if_contains("name") : nullptr;
        const auto* args = f ? f->if_contains("arguments") : nullptr;
        if (!name || !name->is_string() || !args)
            return invalid(path, std::string(tool_union_keyword) +
                                     " entries are {\"name\": string, \"arguments\": schema}");
        names.insert(canonical_json(*name), static_cast<std::uint32_t>(i));
        u.values.push_back(compile(*args, path + "/" + std::string(tool_union_keyword) + "/" +
                                              std::to_string(i) + "/arguments"));
    }
    g_.tries.push_back(std::move(names));
    u.set = static_cast<std::int32_t>(g_.tries.size() - 1);
    return add(std::move(u));
}

std::string compiler::scalar_text(const json::value& v) {
    if (auto t = exact_number_text(v))
        return std::string(*t); // as written: no double holds it
    return canonical_json(v);
}

/// The node that accepts exactly `v` (objects in any member order).
std::uint32_t compiler::constant(const json::value& v, const std::string& path) {
    if (v.is_array()) {
        node a = of(node_kind::array);
        for (const auto& e : v.get_array())
            a.prefix.push_back(constant(e, path));
        a.min_count = a.max_count = a.count_cap = static_cast<std::uint32_t>(a.prefix.size());
        return add(std::move(a));
    }
    if (v.is_object()) {
        node ob = of(node_kind::object);
        if (v.get_object().size() > limits::max_properties)
            return unsupported("const", path, "(an object of more than 64 members)");
        for (const auto& kv : v.get_object()) {
            ob.required |= 1ULL << ob.keys.size();
            ob.keys.push_back(canonical_string_body(kv.key()));
            ob.values.push_back(constant(kv.value(), path));
        }
        return add(std::move(ob));
    }
    return literal(scalar_text(v));
}

bool compiler::count(const json::object& o, const char* k, std::uint32_t& out,
                     const std::string& path) {
    if (const auto* v = o.if_contains(k)) {
        const auto t = number_text(*v);
        if (!t || (*t)[0] == '-' || !is_integer_text(*t)) {
            invalid(path, std::string(k) + " must be a non-negative integer");
            return false;
        }
        const auto n = scaled_integer(*t, 0, false);
        out = n >= static_cast<wide_int>(unbounded - 1) ? unbounded - 1
                                                        : static_cast<std::uint32_t>(n);
    }
    return true;
}

std::uint32_t compiler::cap_of(std::uint32_t a, std::uint32_t mn, std::uint32_t mx) {
    return std::max({a, mn, mx == unbounded ? 0u : mx});
}

/// minimum / exclusiveMinimum / maximum / exclusiveMaximum into `n` in units of 10^-scale:
/// exact, from the number as written. Exclusive bounds step one unit in (the grammar writes
/// no finer value).
void compiler::bounds(const json::object& o, const std::string& path, node& n, int scale) {
    auto bound = [&](const char* k, bool lower, bool exclusive) {
        const auto* v = o.if_contains(k);
        if (!v)
            return;
        const auto t = number_text(*v);
        if (!t)
            return (void)invalid(path, std::string(k) + " must be a number");
        wide_int b = scaled_integer(*t, scale, lower);
        if (exclusive && scaled_integer(*t, scale, !lower) == b)
            b += lower ? 1 : -1;
        if (lower) {
            n.lo = n.has_lo ? std::max(n.lo, b) : b;
            n.has_lo = true;
        } else {
            n.hi = n.has_hi ? std::min(n.hi, b) : b;
            n.has_hi = true;
        }
    };
    bound("minimum", true, false);
    bound("exclusiveMinimum", true, true);
    bound("maximum", false, false);
    bound("exclusiveMaximum", false, true);
}

std::uint32_t compiler::integer(const json::object& o, const std::string& path) {
    node n = of(node_kind::integer);
    bounds(o, path, n, 0);
    if (const auto* m = o.if_contains("multipleOf")) {
        const auto t = number_text(*m);
        if (!t || (*t)[0] == '-' || scaled_integer(*t, 0, true) == 0)
            return invalid(path, "multipleOf must be a number above 0");
        if (!is_integer_text(*t))
            return unsupported("multipleOf", path, "with a non-integer divisor");
        const auto d = scaled_integer(*t, 0, false);
        // A divisor past every 19-digit magnitude leaves 0 alone.
        n.multiple_of = d > static_cast<wide_int>(~0ULL) ? ~0ULL : static_cast<std::uint64_t>(d);
    }
    return add(std::move(n));
}

std::uint32_t compiler::number(const json::object& o, const std::string& path) {
    if (o.contains("multipleOf"))
        return unsupported("multipleOf", path, "on non-integer numbers");
    node n = of(node_kind::number);
    bounds(o, path, n, number_scale);
    return add(std::move(n));
}

std::int32_t compiler::regex_of(std::string_view pattern, const std::string& path, const char* kw) {
    const std::string key(pattern);
    if (auto it = regex_ids_.find(key); it != regex_ids_.end())
        return it->second;
    auto re = pattern_regex::compile(pattern);
    if (!re) {
        if (re.error().value() == errc::invalid_argument)
            fail(re.error());
        else
            unsupported(kw, path, "(" + re.error().message + ")");
        return -1;
    }
    // Each pattern's length table is the client's to size: the schema's are bounded together.
    table_bytes_ += re->table_bytes();
    if (table_bytes_ > limits::max_length_table_bytes) {
        fail(limit_error("max_length_table_bytes", limits::max_length_table_bytes,
                         "the length tables of the schema's patterns need more bytes than that"));
        return -1;
    }
    g_.regexes.push_back(std::move(*re));
    const auto id = static_cast<std::int32_t>(g_.regexes.size() - 1);
    regex_ids_.emplace(key, id);
    return id;
}

std::int32_t compiler::format_of(const std::string& name, const std::string& path,
                                 std::uint32_t& max_length) {
    const auto fg = format_grammar(name);
    if (!fg) {
        unsupported("format", path, "\"" + excerpt(name) + "\"");
        return -1;
    }
    if (!*fg) {
        fail(fg->error());
        return -1;
    }
    max_length = (*fg)->max_length;
    const std::string key = "\0format:" + name; // no pattern starts with a NUL
    if (auto it = regex_ids_.find(key); it != regex_ids_.end())
        return it->second;
    g_.regexes.push_back(*(*fg)->language); // shares the format's automaton
    const auto id = static_cast<std::int32_t>(g_.regexes.size() - 1);
    regex_ids_.emplace(key, id);
    return id;
}

std::uint32_t compiler::string(const json::object& o, const std::string& path) {
    node n = of(node_kind::string);
    if (!count(o, "minLength", n.min_count, path) || !count(o, "maxLength", n.max_count, path))
        return nothing();
    const auto* p = o.if_contains("pattern");
    const auto* f = o.if_contains("format");
    if (p && f)
        return unsupported("format", path, "beside \"pattern\"");
    std::string what;
    if (p) {
        if (!p->is_string())
            return invalid(path, "pattern must be a string");
        n.regex = regex_of(p->get_string(), path, "pattern");
        what = "pattern \"" + excerpt(std::string(p->get_string())) + "\"";
    }
    if (f) {
        if (!f->is_string())
            return invalid(path, "format must be a string");
        std::uint32_t cap = 0;
        n.regex = format_of(std::string(f->get_string()), path, cap);
        if (cap > 0)
            n.max_count = std::min(n.max_count, cap);
        what = "format \"" + excerpt(std::string(f->get_string())) + "\"";
    }
    if (err_)
        return nothing();
    n.count_cap = cap_of(0, n.min_count, n.max_count);
    // The string is written only where some completion still fits both: a pattern or format
    // that has no value within the lengths at all is the client's mistake, said now.
    if (n.regex >= 0 && n.min_count <= n.max_count) {
        const auto& re = g_.regexes[static_cast<std::size_t>(n.regex)];
        const std::uint64_t hi = n.max_count == unbounded ? pattern_regex::no_cap : n.max_count;
        if (!re.fits(re.start(), n.min_count, hi)) {
            std::string bounds;
            if (o.contains("minLength"))
                bounds += "minLength " + std::to_string(n.min_count);
            if (o.contains("maxLength"))
                bounds += (bounds.empty() ? "" : " and ") + std::string("maxLength ") +
                          std::to_string(n.max_count);
            if (bounds.empty())
                bounds = "its own length cap (" + std::to_string(n.max_count) + ")";
            return invalid(path, what + " has no value whose length fits " + bounds);
        }
    }
    return add(std::move(n));
}

} // namespace bitnet::model::constrain::detail
