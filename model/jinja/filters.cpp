// Jinja2's built-in filters and tests that chat templates use, with Transformers' tojson.
#include "model/jinja/builtins.hpp"
#include "model/jinja/interpreter.hpp"
#include "model/jinja/py_string.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace bitnet::model::jinja {

namespace {

constexpr std::string_view filter_names[] = {
    "abs",     "attr",    "capitalize", "count",  "d",      "default",    "dictsort", "e",
    "escape",  "first",   "float",      "indent", "int",    "items",      "join",     "last",
    "length",  "list",    "lower",      "map",    "max",    "min",        "reject",   "rejectattr",
    "replace", "reverse", "round",      "safe",   "select", "selectattr", "sort",     "string",
    "sum",     "title",   "tojson",     "trim",   "unique", "upper",      "wordcount"};

constexpr std::string_view test_names[] = {
    "defined", "undefined", "none",   "boolean", "false",       "true",     "integer",
    "float",   "number",    "string", "mapping", "iterable",    "sequence", "callable",
    "sameas",  "escaped",   "lower",  "upper",   "odd",         "even",     "divisibleby",
    "eq",      "equalto",   "==",     "ne",      "!=",          "lt",       "lessthan",
    "<",       "le",        "<=",     "gt",      "greaterthan", ">",        "ge",
    ">=",      "in"};

std::string as_string(const value& v) {
    return to_text(v).s;
}

/// Jinja's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
value attribute_of(const interpreter& in, const value& v, const std::string& path) {
    value cur = v;
    std::size_t b = 0;
    while (b <= path.size()) {
        auto e = path.find('.', b);
        if (e == std::string::npos)
            e = path.size();
        const auto part = path.substr(b, e - b);
        const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
        cur = digits ? in.get_item(cur, value::integer(std::atoll(part.c_str())))
                     : in.get_item(cur, value::string(part));
        b = e + 1;
    }
    return cur;
}

/// Same-length ASCII case change of `t`, keeping its provenance.
text recase(const text& t, std::string (*fn)(std::string_view)) {
    text out = t;
    out.s = fn(t.s);
    return out;
}

text stripped(const text& t, const std::string* chars) {
    const auto sp = py::strip(t.s, chars, true, true);
    return t.substr(sp.begin, sp.end - sp.begin);
}

value sorted(interpreter& in, array items, bool reverse, bool case_sensitive,
             const value* attribute) {
    auto key = [&](const value& v) {
        auto k =
            attribute && !attribute->is_none() ? attribute_of(in, v, as_string(*attribute)) : v;
        if (!case_sensitive && k.is_string())
            k = value::string(py::lower(k.str.s));
        return k;
    };
    std::stable_sort(items.begin(), items.end(), [&](const value& a, const value& b) {
        return reverse ? less_than(in, key(b), key(a)) : less_than(in, key(a), key(b));
    });
    return value::list(std::move(items));
}

value select_like(interpreter& in, const value& input, const call_args& args, bool by_attr,
                  bool keep_when) {
    array out;
    std::size_t first_test_arg = by_attr ? 1 : 0;
    const value* attr = by_attr ? args.get(0, "attribute") : nullptr;
    std::string test;
    call_args test_args;
    if (args.pos.size() > first_test_arg) {
        test = as_string(args.pos[first_test_arg]);
        test_args.pos.assign(args.pos.begin() + static_cast<long>(first_test_arg) + 1,
                             args.pos.end());
        if (!known_test(test))
            in.fail("the test '" + test + "' is not supported", failure::unsupported);
    }
    for (const auto& item : in.iterate(input)) {
        const auto subject = attr ? attribute_of(in, item, as_string(*attr)) : item;
        const bool ok = test.empty() ? truthy(subject) : apply_test(in, test, subject, test_args);
        if (ok == keep_when)
            out.push_back(item);
    }
    return value::list(std::move(out), input.input);
}

value map_filter(interpreter& in, const value& input, const call_args& args) {
    array out;
    if (const auto* attr = args.get(99, "attribute")) {
        const auto* dflt = args.get(99, "default");
        for (const auto& item : in.iterate(input)) {
            auto v = attribute_of(in, item, as_string(*attr));
            out.push_back(v.is_undefined() && dflt ? *dflt : v);
        }
        return value::list(std::move(out), input.input);
    }
    if (args.pos.empty())
        in.fail("map needs a filter name or attribute=");
    const auto name = as_string(args.pos[0]);
    if (!known_filter(name))
        in.fail("the filter '" + name + "' is not supported", failure::unsupported);
    call_args rest;
    rest.pos.assign(args.pos.begin() + 1, args.pos.end());
    rest.kw = args.kw;
    for (const auto& item : in.iterate(input))
        out.push_back(apply_filter(in, name, item, rest));
    return value::list(std::move(out), input.input);
}

value tojson_filter(interpreter& in, const value& input, const call_args& args) {
    const auto* ascii = args.get(0, "ensure_ascii");
    const auto* indent = args.get(1, "indent");
    const auto* seps = args.get(2, "separators");
    const auto* sort = args.get(3, "sort_keys");
    int width = -1;
    if (indent && !indent->is_none()) {
        if (!indent->is_int())
            in.fail("tojson's indent must be an integer", failure::unsupported);
        width = static_cast<int>(std::clamp<std::int64_t>(indent->as_int(), 0, 64));
    }
    std::string item_sep, key_sep;
    if (seps && !seps->is_none()) {
        const auto parts = in.iterate(*seps);
        if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string())
            in.fail("tojson's separators must be two strings");
        item_sep = parts[0].str.s;
        key_sep = parts[1].str.s;
    }
    std::string out;
    try {
        out = to_json(input, width, sort && truthy(*sort),
                      seps && !seps->is_none() ? &item_sep : nullptr,
                      seps && !seps->is_none() ? &key_sep : nullptr);
    } catch (const template_error& e) {
        in.fail(e.what(), e.why);
    }
    if (ascii && truthy(*ascii)) {
        std::string escaped;
        for (std::size_t i = 0; i < out.size();) {
            const auto len = utf8_char_len(out, i);
            if (len == 1) {
                escaped += out[i++];
                continue;
            }
            std::uint32_t cp = static_cast<unsigned char>(out[i]) & (0xFFu >> (len + 1));
            for (std::size_t k = 1; k < len; ++k)
                cp = (cp << 6) | (static_cast<unsigned char>(out[i + k]) & 0x3Fu);
            char buf[16];
            if (cp >= 0x10000) {
                cp -= 0x10000;
                std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                              0xDC00 + (cp & 0x3FF));
            } else
                std::snprintf(buf, sizeof buf, "\\u%04x", cp);
            escaped += buf;
            i += len;
        }
        out = std::move(escaped);
    }
    in.check_size(out.size());
    return value::string(std::move(out), value_holds_input(input));
}

value join_filter(interpreter& in, const value& input, const call_args& args) {
    const auto* sep = args.get(0, "d");
    const auto* attr = args.get(1, "attribute");
    const text separator = sep ? to_text(*sep) : text();
    text out;
    bool first = true;
    for (const auto& item : in.iterate(input)) {
        if (!first)
            out.append(separator);
        first = false;
        out.append(
            to_text(attr && !attr->is_none() ? attribute_of(in, item, as_string(*attr)) : item));
        in.check_size(out.s.size());
    }
    return value::string(std::move(out));
}

value indent_filter(const interpreter& in, const value& input, const call_args& args) {
    const auto* w = args.get(0, "width");
    const auto* first = args.get(1, "first");
    const auto* blank = args.get(2, "blank");
    std::string pad =
        !w ? "    "
        : w->is_string()
            ? w->str.s
            : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(w->as_int(), 0, 256)),
                          ' ');
    auto src = to_text(input);
    const std::string s = src.s + "\n";
    const auto lines = py::splitlines(s);
    std::string rv;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto line = s.substr(lines[i].begin, lines[i].end - lines[i].begin);
        if (i > 0) {
            rv += '\n';
            if (!line.empty() || (blank && truthy(*blank)))
                rv += pad;
        }
        rv += line;
    }
    if (first && truthy(*first))
        rv = pad + rv;
    in.check_size(rv.size());
    return value::string(std::move(rv), src.any_input());
}

value number_filter(const value& input, const call_args& args, bool integer) {
    const auto* dflt = args.get(0, "default");
    const value fallback = dflt ? *dflt : integer ? value::integer(0) : value::number(0.0);
    if (input.is_numeric())
        return integer ? value::integer(input.k == kind::number
                                            ? static_cast<std::int64_t>(std::trunc(input.d))
                                            : input.as_int())
                       : value::number(input.as_double());
    if (!input.is_string())
        return fallback;
    const auto sp = py::strip(input.str.s, nullptr, true, true);
    const std::string s = input.str.s.substr(sp.begin, sp.end - sp.begin);
    char* end = nullptr;
    if (integer) {
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (!s.empty() && end == s.c_str() + s.size())
            return value::integer(v);
    }
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || std::isnan(d))
        return fallback;
    return integer ? value::integer(static_cast<std::int64_t>(std::trunc(d))) : value::number(d);
}

value html_escape(const value& input) {
    const auto t = to_text(input);
    std::string out;
    for (char c : t.s) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&#34;";
            break;
        case '\'':
            out += "&#39;";
            break;
        default:
            out += c;
        }
    }
    return value::string(std::move(out), t.any_input());
}

value min_max(interpreter& in, const value& input, const call_args& args, bool want_max) {
    const auto items = in.iterate(input);
    if (items.empty())
        return value::undefined("No aggregated item, sequence was empty.");
    const auto* cs = args.get(0, "case_sensitive");
    const auto* attr = args.get(1, "attribute");
    auto sorted_items = sorted(in, items, false, cs && truthy(*cs), attr);
    return want_max ? sorted_items.arr->back() : sorted_items.arr->front();
}

value sequence_end(interpreter& in, const value& input, bool last) {
    const auto items = in.iterate(input);
    if (items.empty())
        return value::undefined(std::string("No ") + (last ? "last" : "first") +
                                " item, sequence was empty.");
    return last ? items.back() : items.front();
}

std::optional<value> string_filter(interpreter& in, std::string_view name, const value& input,
                                   const call_args& args) {
    if (name == "trim") {
        const auto* chars = args.get(0, "chars");
        const std::string set = chars && !chars->is_none() ? as_string(*chars) : std::string();
        return value::string(stripped(to_text(input), chars && !chars->is_none() ? &set : nullptr));
    }
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
        const auto fn = name == "upper"        ? py::upper
                        : name == "lower"      ? py::lower
                        : name == "capitalize" ? py::capitalize
                                               : py::jinja_title;
        return value::string(recase(to_text(input), fn));
    }
    if (name == "string" || name == "safe")
        return value::string(to_text(input));
    if (name == "e" || name == "escape")
        return html_escape(input);
    if (name == "replace") {
        if (args.pos.size() < 2)
            in.fail("replace needs the old and the new text");
        const auto t = to_text(input);
        const auto from = as_string(args.pos[0]), to = as_string(args.pos[1]);
        const auto* cnt = args.get(2, "count");
        std::int64_t left = cnt && !cnt->is_none() ? cnt->as_int() : -1;
        if (from.empty())
            in.fail("replace with an empty old text is not supported", failure::unsupported);
        std::string out;
        std::size_t b = 0;
        for (auto at = t.s.find(from); left != 0 && at != std::string::npos;
             at = t.s.find(from, b), --left) {
            out.append(t.s, b, at - b);
            out += to;
            in.check_size(out.size());
            b = at + from.size();
        }
        out.append(t.s, b);
        return value::string(std::move(out), t.any_input());
    }
    if (name == "indent")
        return indent_filter(in, input, args);
    if (name == "wordcount") {
        const auto s = as_string(input);
        std::int64_t n = 0;
        bool in_word = false;
        for (char c : s) {
            const bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                           static_cast<unsigned char>(c) >= 0x80;
            n += w && !in_word;
            in_word = w;
        }
        return value::integer(n);
    }
    return std::nullopt;
}

std::optional<value> sequence_filter(interpreter& in, std::string_view name, const value& input,
                                     const call_args& args) {
    if (name == "length" || name == "count") {
        if (input.is_string())
            return value::integer(static_cast<std::int64_t>(utf8_length(input.str.s)));
        if (input.k == kind::list || input.k == kind::dict || input.is_undefined())
            return value::integer(static_cast<std::int64_t>(in.iterate(input).size()));
        in.fail("object of type '" + std::string(input.type_name()) + "' has no len()");
    }
    if (name == "join")
        return join_filter(in, input, args);
    if (name == "items") {
        if (input.is_undefined())
            return value::list({});
        if (input.k != kind::dict)
            in.fail("Can only get item pairs from a mapping.");
        array pairs;
        for (const auto& [k, v] : input.obj->items)
            pairs.push_back(value::tuple_of({value::string(k, input.obj->input_keys), v}));
        return value::list(std::move(pairs), input.input);
    }
    if (name == "list")
        return value::list(in.iterate(input), input.input);
    if (name == "first" || name == "last")
        return sequence_end(in, input, name == "last");
    if (name == "map")
        return map_filter(in, input, args);
    if (name == "select" || name == "reject")
        return select_like(in, input, args, false, name == "select");
    if (name == "selectattr" || name == "rejectattr")
        return select_like(in, input, args, true, name == "selectattr");
    if (name == "reverse") {
        if (input.is_string()) {
            text out;
            auto chars = in.iterate(input);
            for (auto it = chars.rbegin(); it != chars.rend(); ++it)
                out.append(it->str);
            return value::string(std::move(out));
        }
        auto items = in.iterate(input);
        std::reverse(items.begin(), items.end());
        return value::list(std::move(items), input.input);
    }
    if (name == "sort") {
        const auto* rev = args.get(0, "reverse");
        const auto* cs = args.get(1, "case_sensitive");
        return sorted(in, in.iterate(input), rev && truthy(*rev), cs && truthy(*cs),
                      args.get(2, "attribute"));
    }
    if (name == "unique") {
        array out;
        const auto* cs = args.get(0, "case_sensitive");
        const auto* attr = args.get(1, "attribute");
        std::vector<value> seen;
        for (const auto& item : in.iterate(input)) {
            auto k = attr ? attribute_of(in, item, as_string(*attr)) : item;
            if (!(cs && truthy(*cs)) && k.is_string())
                k = value::string(py::lower(k.str.s));
            if (std::none_of(seen.begin(), seen.end(),
                             [&](const value& s) { return equal(s, k); })) {
                seen.push_back(k);
                out.push_back(item);
            }
        }
        return value::list(std::move(out), input.input);
    }
    if (name == "dictsort") {
        if (input.k != kind::dict)
            in.fail("dictsort needs a mapping");
        const auto* cs = args.get(0, "case_sensitive");
        const auto* by = args.get(1, "by");
        const auto* rev = args.get(2, "reverse");
        const bool by_value = by && as_string(*by) == "value";
        array pairs;
        for (const auto& [k, v] : input.obj->items)
            pairs.push_back(value::tuple_of({value::string(k, input.obj->input_keys), v}));
        const auto idx = value::string(by_value ? "1" : "0");
        return sorted(in, std::move(pairs), rev && truthy(*rev), cs && truthy(*cs), &idx);
    }
    return std::nullopt;
}

std::optional<value> number_filter_group(interpreter& in, std::string_view name, const value& input,
                                         const call_args& args) {
    if (name == "int" || name == "float")
        return number_filter(input, args, name == "int");
    if (name == "abs") {
        if (!input.is_numeric())
            in.fail("bad operand type for abs(): '" + std::string(input.type_name()) + "'");
        return input.k == kind::number
                   ? value::number(std::fabs(input.d))
                   : arithmetic(in, "*", value::integer(input.as_int() < 0 ? -1 : 1),
                                value::integer(input.as_int()));
    }
    if (name == "round") {
        const auto* prec = args.get(0, "precision");
        const auto* method = args.get(1, "method");
        const double scale = std::pow(10.0, prec ? static_cast<double>(prec->as_int()) : 0.0);
        const auto m = method ? as_string(*method) : std::string("common");
        const double x = input.as_double() * scale;
        const double r = m == "ceil"    ? std::ceil(x)
                         : m == "floor" ? std::floor(x)
                                        : std::nearbyint(x);
        return value::number(r / scale);
    }
    if (name == "sum") {
        const auto* attr = args.get(0, "attribute");
        const auto* start = args.get(1, "start");
        value total = start ? *start : value::integer(0);
        for (const auto& item : in.iterate(input))
            total = arithmetic(in, "+", total,
                               attr && !attr->is_none() ? attribute_of(in, item, as_string(*attr))
                                                        : item);
        return total;
    }
    if (name == "min" || name == "max")
        return min_max(in, input, args, name == "max");
    return std::nullopt;
}

} // namespace

const value* call_args::get(std::size_t index, std::string_view key) const {
    if (index < pos.size())
        return &pos[index];
    for (const auto& [k, v] : kw)
        if (k == key)
            return &v;
    return nullptr;
}

bool known_filter(std::string_view name) {
    return std::find(std::begin(filter_names), std::end(filter_names), name) !=
           std::end(filter_names);
}

bool known_test(std::string_view name) {
    return std::find(std::begin(test_names), std::end(test_names), name) != std::end(test_names);
}

value apply_filter(interpreter& in, std::string_view name, const value& input,
                   const call_args& args) {
    if (name == "default" || name == "d") {
        const auto* dflt = args.get(0, "default_value");
        const auto* boolean = args.get(1, "boolean");
        const bool use = input.is_undefined() || (boolean && truthy(*boolean) && !truthy(input));
        return use ? (dflt ? *dflt : value::string("")) : input;
    }
    if (name == "tojson")
        return tojson_filter(in, input, args);
    if (name == "attr") {
        if (args.pos.empty())
            in.fail("attr needs an attribute name");
        return in.get_attr(input, as_string(args.pos[0]));
    }
    for (auto* group : {string_filter, sequence_filter, number_filter_group})
        if (auto v = group(in, name, input, args))
            return std::move(*v);
    in.fail("the filter '" + std::string(name) + "' is not supported", failure::unsupported);
}

bool apply_test(interpreter& in, std::string_view name, const value& v, const call_args& args) {
    const value* arg = args.get(0, "value");
    auto need_arg = [&] {
        if (!arg)
            in.fail("the test '" + std::string(name) + "' needs an argument");
        return *arg;
    };
    if (name == "defined")
        return !v.is_undefined();
    if (name == "undefined")
        return v.is_undefined();
    if (name == "none")
        return v.is_none();
    if (name == "boolean")
        return v.k == kind::boolean;
    if (name == "true")
        return v.k == kind::boolean && v.b;
    if (name == "false")
        return v.k == kind::boolean && !v.b;
    if (name == "integer")
        return v.k == kind::integer;
    if (name == "float")
        return v.k == kind::number;
    if (name == "number")
        return v.is_numeric();
    if (name == "string")
        return v.is_string();
    if (name == "mapping")
        return v.k == kind::dict;
    if (name == "iterable")
        return v.is_undefined() || v.is_string() || v.k == kind::list || v.k == kind::dict;
    if (name == "sequence")
        return v.is_undefined() || v.is_string() || v.k == kind::list || v.k == kind::dict;
    if (name == "callable")
        return v.k == kind::macro || v.k == kind::callable;
    if (name == "escaped")
        return false;
    if (name == "lower" || name == "upper") {
        const auto s = as_string(v);
        const bool any_cased = std::any_of(
            s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
        return any_cased && s == (name == "lower" ? py::lower(s) : py::upper(s));
    }
    if (name == "odd" || name == "even") {
        if (!v.is_int())
            in.fail("the test '" + std::string(name) + "' needs an integer");
        return (v.as_int() % 2 != 0) == (name == "odd");
    }
    if (name == "divisibleby") {
        const auto d = need_arg();
        if (!v.is_int() || !d.is_int() || d.as_int() == 0)
            in.fail("divisibleby needs two integers, the divisor not zero");
        return v.as_int() % d.as_int() == 0;
    }
    if (name == "sameas")
        return equal(v, need_arg()) && v.k == need_arg().k;
    if (name == "eq" || name == "equalto" || name == "==")
        return equal(v, need_arg());
    if (name == "ne" || name == "!=")
        return !equal(v, need_arg());
    if (name == "lt" || name == "lessthan" || name == "<")
        return less_than(in, v, need_arg());
    if (name == "le" || name == "<=")
        return !less_than(in, need_arg(), v);
    if (name == "gt" || name == "greaterthan" || name == ">")
        return less_than(in, need_arg(), v);
    if (name == "ge" || name == ">=")
        return !less_than(in, v, need_arg());
    if (name == "in")
        return contains(in, need_arg(), v);
    in.fail("the test '" + std::string(name) + "' is not supported", failure::unsupported);
}

} // namespace bitnet::model::jinja
