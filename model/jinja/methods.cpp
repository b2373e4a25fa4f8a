// Python methods of str, list and dict that templates call, and Jinja's global functions plus
// the two Transformers adds (raise_exception, strftime_now). Methods that mutate a list or dict
// fail as Transformers' ImmutableSandboxedEnvironment makes them fail.
#include "model/jinja/builtins.hpp"
#include "model/jinja/interpreter.hpp"
#include "model/jinja/py_string.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>

namespace bitnet::model::jinja {

namespace {

constexpr std::string_view str_methods[] = {
    "strip", "lstrip", "rstrip",  "split",      "rsplit",  "splitlines", "startswith", "endswith",
    "upper", "lower",  "title",   "capitalize", "replace", "find",       "rfind",      "index",
    "count", "join",   "isdigit", "isalpha",    "isalnum", "isspace",    "islower",    "isupper"};
constexpr std::string_view list_methods[] = {"index",  "count",   "copy", "append",
                                             "extend", "insert",  "pop",  "remove",
                                             "sort",   "reverse", "clear"};
constexpr std::string_view dict_methods[] = {"items", "keys",    "values", "get",        "copy",
                                             "pop",   "popitem", "update", "setdefault", "clear"};
/// Methods the immutable sandbox refuses (they would change a list or dict).
constexpr std::string_view mutating[] = {"append",  "extend", "insert",    "pop",
                                         "remove",  "sort",   "reverse",   "clear",
                                         "popitem", "update", "setdefault"};
constexpr std::string_view globals[] = {"range", "namespace", "dict", "raise_exception",
                                        "strftime_now"};

template <std::size_t N>
bool among(const std::string_view (&names)[N], std::string_view n) {
    return std::find(std::begin(names), std::end(names), n) != std::end(names);
}

std::string arg_string(interpreter& in, const call_args& args, std::size_t i, std::string_view key,
                       std::string_view method) {
    const auto* v = args.get(i, key);
    if (!v || !v->is_string())
        in.fail(std::string(method) + "() needs a string argument");
    return v->str.s;
}

value split_method(interpreter& in, const text& s, std::string_view name, const call_args& args) {
    const auto* sep = args.get(0, "sep");
    const auto* maxsplit = args.get(1, "maxsplit");
    std::string sep_text;
    const bool by_sep = sep && !sep->is_none();
    if (by_sep) {
        sep_text = arg_string(in, args, 0, "sep", name);
        if (sep_text.empty())
            in.fail("empty separator");
    }
    const long max = maxsplit ? static_cast<long>(maxsplit->as_int()) : -1;
    const auto spans = name == "splitlines" ? py::splitlines(s.s)
                       : name == "rsplit"   ? py::rsplit(s.s, by_sep ? &sep_text : nullptr, max)
                                            : py::split(s.s, by_sep ? &sep_text : nullptr, max);
    in.check_size(spans.size());
    array parts;
    for (const auto& sp : spans)
        parts.push_back(value::string(s.substr(sp.begin, sp.end - sp.begin)));
    return value::list(std::move(parts));
}

value affix_method(interpreter& in, const text& s, bool prefix, const call_args& args) {
    const auto* what = args.get(0, "prefix");
    if (!what)
        in.fail("startswith/endswith need an argument");
    auto test = [&](const value& a) {
        if (!a.is_string())
            in.fail("startswith/endswith take a string or a tuple of strings");
        return prefix ? s.s.starts_with(a.str.s) : s.s.ends_with(a.str.s);
    };
    if (args.pos.size() > 1)
        in.fail("start/end arguments of startswith/endswith are not supported",
                failure::unsupported);
    if (what->k == kind::list)
        return value::boolean(std::any_of(what->arr->begin(), what->arr->end(), test));
    return value::boolean(test(*what));
}

value find_method(interpreter& in, const text& s, std::string_view name, const call_args& args) {
    const auto sub = arg_string(in, args, 0, "sub", name);
    if (name == "count") {
        if (sub.empty())
            return value::integer(static_cast<std::int64_t>(utf8_length(s.s) + 1));
        std::int64_t n = 0;
        for (auto at = s.s.find(sub); at != std::string::npos; at = s.s.find(sub, at + sub.size()))
            ++n;
        return value::integer(n);
    }
    const auto at = name == "rfind" ? s.s.rfind(sub) : s.s.find(sub);
    if (at == std::string::npos) {
        if (name == "index")
            in.fail("substring not found");
        return value::integer(-1);
    }
    return value::integer(
        static_cast<std::int64_t>(utf8_length(std::string_view(s.s).substr(0, at))));
}

value char_class(const text& s, std::string_view name) {
    const auto& t = s.s;
    if (t.empty())
        return value::boolean(false);
    auto all = [&](auto pred) {
        return std::all_of(t.begin(), t.end(),
                           [&](char c) { return pred(static_cast<unsigned char>(c)); });
    };
    if (name == "isdigit")
        return value::boolean(all([](unsigned char c) { return std::isdigit(c) != 0; }));
    if (name == "isalpha")
        return value::boolean(
            all([](unsigned char c) { return std::isalpha(c) != 0 || c >= 0x80; }));
    if (name == "isalnum")
        return value::boolean(
            all([](unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; }));
    if (name == "isspace")
        return value::boolean(py::strip(t, nullptr, true, false).begin == t.size());
    const bool cased = std::any_of(t.begin(), t.end(), [](char c) {
        return std::isalpha(static_cast<unsigned char>(c)) != 0;
    });
    return value::boolean(cased && t == (name == "islower" ? py::lower(t) : py::upper(t)));
}

value string_method(interpreter& in, const text& s, std::string_view name, const call_args& args) {
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const auto* chars = args.get(0, "chars");
        const std::string set =
            chars && !chars->is_none() ? arg_string(in, args, 0, "chars", name) : "";
        const auto sp = py::strip(s.s, chars && !chars->is_none() ? &set : nullptr,
                                  name != "rstrip", name != "lstrip");
        return value::string(s.substr(sp.begin, sp.end - sp.begin));
    }
    if (name == "split" || name == "rsplit" || name == "splitlines")
        return split_method(in, s, name, args);
    if (name == "startswith" || name == "endswith")
        return affix_method(in, s, name == "startswith", args);
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
        text out = s;
        out.s = name == "upper"   ? py::upper(s.s)
                : name == "lower" ? py::lower(s.s)
                : name == "title" ? py::title(s.s)
                                  : py::capitalize(s.s);
        return value::string(std::move(out));
    }
    if (name == "replace") {
        call_args fwd = args;
        return apply_filter(in, "replace", value::string(s), fwd);
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "count")
        return find_method(in, s, name, args);
    if (name == "join") {
        if (args.pos.empty())
            in.fail("join() needs an iterable");
        text out;
        bool first = true;
        for (const auto& item : in.iterate(args.pos[0])) {
            if (!item.is_string())
                in.fail("sequence item: expected str instance, " + std::string(item.type_name()) +
                        " found");
            if (!first)
                out.append(s);
            first = false;
            out.append(item.str);
            in.check_size(out.s.size());
        }
        return value::string(std::move(out));
    }
    return char_class(s, name);
}

value collection_method(interpreter& in, const value& self, std::string_view name,
                        const call_args& args) {
    if (among(mutating, name))
        in.fail("access to attribute '" + std::string(name) + "' of '" + self.type_name() +
                "' object is unsafe (templates may not change lists or dicts)");
    if (name == "copy")
        return self;
    if (self.k == kind::list) {
        const auto* x = args.get(0, "value");
        if (!x)
            in.fail(std::string(name) + "() needs an argument");
        std::int64_t count = 0;
        for (std::size_t i = 0; i < self.arr->size(); ++i)
            if (equal((*self.arr)[i], *x)) {
                if (name == "index")
                    return value::integer(static_cast<std::int64_t>(i));
                ++count;
            }
        if (name == "index")
            in.fail(repr(*x) + " is not in list");
        return value::integer(count);
    }
    const auto& o = *self.obj;
    if (name == "get") {
        const auto* key = args.get(0, "key");
        const auto* dflt = args.get(1, "default");
        const value* found = key && key->is_string() ? o.find(key->str.s) : nullptr;
        return found ? *found : dflt ? *dflt : value::none();
    }
    array out;
    for (const auto& [k, v] : o.items) {
        auto key = value::string(k, o.input_keys);
        out.push_back(name == "keys" ? key : name == "values" ? v : value::tuple_of({key, v}));
    }
    return value::list(std::move(out), self.input);
}

value strftime_now(interpreter& in, const call_args& args) {
    const auto fmt = arg_string(in, args, 0, "format", "strftime_now");
    if (fmt.size() > 256)
        in.fail("strftime_now's format is longer than 256 bytes", failure::limit);
    const std::time_t now = in.now();
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[1024];
    const auto n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    if (n == 0 && !fmt.empty())
        in.fail("strftime_now's result does not fit 1 KiB");
    return value::string(std::string(buf, n));
}

value range_of(interpreter& in, const call_args& args) {
    if (args.pos.empty() || args.pos.size() > 3)
        in.fail("range() takes 1 to 3 integers");
    for (const auto& a : args.pos)
        if (!a.is_int())
            in.fail("range() takes integers, not " + std::string(a.type_name()));
    std::int64_t start = 0, stop, stride = 1;
    if (args.pos.size() == 1)
        stop = args.pos[0].as_int();
    else {
        start = args.pos[0].as_int();
        stop = args.pos[1].as_int();
        if (args.pos.size() == 3)
            stride = args.pos[2].as_int();
    }
    if (stride == 0)
        in.fail("range() arg 3 must not be zero");
    const long double span = (static_cast<long double>(stop) - start) / stride;
    const auto n = span > 0 ? static_cast<std::uint64_t>(std::ceil(static_cast<double>(span))) : 0;
    in.count_iterations(n);
    array out;
    for (std::uint64_t i = 0; i < n; ++i)
        out.push_back(value::integer(start + static_cast<std::int64_t>(i) * stride));
    return value::list(std::move(out));
}

} // namespace

bool is_method_of(kind k, std::string_view name) {
    return k == kind::string ? among(str_methods, name)
           : k == kind::list ? among(list_methods, name)
                             : k == kind::dict && among(dict_methods, name);
}

bool known_method(std::string_view name) {
    return among(str_methods, name) || among(list_methods, name) || among(dict_methods, name);
}

bool known_global(std::string_view name) {
    return among(globals, name);
}

value call_method(interpreter& in, const value& self, std::string_view name,
                  const call_args& args) {
    if (self.is_string())
        return string_method(in, self.str, name, args);
    return collection_method(in, self, name, args);
}

value call_global(interpreter& in, std::string_view name, const call_args& args) {
    if (name == "range")
        return range_of(in, args);
    if (name == "raise_exception") {
        const auto* msg = args.get(0, "message");
        in.fail(msg ? to_text(*msg).s : std::string(), failure::raised);
    }
    if (name == "strftime_now")
        return strftime_now(in, args);
    object o;
    if (!args.pos.empty()) {
        if (args.pos.size() > 1 || args.pos[0].k != kind::dict)
            in.fail(std::string(name) + "() takes a dict and keyword arguments");
        o = *args.pos[0].obj;
    }
    for (const auto& [k, v] : args.kw)
        o.set(k, v);
    if (name == "dict")
        return value::dict(std::move(o));
    if (std::any_of(o.items.begin(), o.items.end(),
                    [](const auto& kv) { return holds_namespace(kv.second); }))
        in.fail("a namespace cannot hold a namespace", failure::unsupported);
    value ns;
    ns.k = kind::ns;
    for (const auto& [k, x] : o.items)
        ns.depth = std::max(ns.depth, x.depth);
    ++ns.depth;
    ns.ns = std::make_shared<object>(std::move(o));
    return ns;
}

} // namespace bitnet::model::jinja
