#include "model/jinja/value.hpp"

#include "model/jinja/error.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace bitnet::model::jinja {

text::text(std::string str, bool from_input)
    : s(std::move(str)) {
    if (from_input && !s.empty())
        input.emplace_back(0, static_cast<std::uint32_t>(s.size()));
}

void text::append(const text& o) {
    const auto base = static_cast<std::uint32_t>(s.size());
    s += o.s;
    for (auto [b, e] : o.input) {
        if (!input.empty() && input.back().second == b + base)
            input.back().second = e + base;
        else
            input.emplace_back(b + base, e + base);
    }
}

void text::append(std::string_view template_text) {
    s += template_text;
}

text text::substr(std::size_t pos, std::size_t n) const {
    text out;
    pos = std::min(pos, s.size());
    n = std::min(n, s.size() - pos);
    out.s = s.substr(pos, n);
    const auto lo = static_cast<std::uint32_t>(pos), hi = static_cast<std::uint32_t>(pos + n);
    for (auto [b, e] : input) {
        const auto cb = std::max(b, lo), ce = std::min(e, hi);
        if (cb < ce)
            out.input.emplace_back(cb - lo, ce - lo);
    }
    return out;
}

void text::mark_all_input(bool on) {
    if (!on)
        return;
    input.clear();
    if (!s.empty())
        input.emplace_back(0, static_cast<std::uint32_t>(s.size()));
}

const value* object::find(std::string_view key) const noexcept {
    for (const auto& [k, v] : items)
        if (k == key)
            return &v;
    return nullptr;
}

value* object::find(std::string_view key) noexcept {
    for (auto& [k, v] : items)
        if (k == key)
            return &v;
    return nullptr;
}

void object::set(std::string key, value v) {
    if (auto* slot = find(key))
        *slot = std::move(v);
    else
        items.emplace_back(std::move(key), std::move(v));
}

value value::undefined(std::string what) {
    value v;
    v.name = std::move(what);
    return v;
}

value value::none() {
    value v;
    v.k = kind::none;
    return v;
}

value value::boolean(bool b) {
    value v;
    v.k = kind::boolean;
    v.b = b;
    return v;
}

value value::integer(std::int64_t i) {
    value v;
    v.k = kind::integer;
    v.i = i;
    return v;
}

value value::number(double d) {
    value v;
    v.k = kind::number;
    v.d = d;
    return v;
}

value value::string(text t) {
    value v;
    v.k = kind::string;
    v.str = std::move(t);
    return v;
}

value value::string(std::string s, bool from_input) {
    return string(text(std::move(s), from_input));
}

value value::list(array a, bool from_input) {
    value v;
    v.k = kind::list;
    for (const auto& x : a)
        v.depth = std::max(v.depth, x.depth);
    ++v.depth;
    v.arr = std::make_shared<const array>(std::move(a));
    v.input = from_input;
    return v;
}

value value::tuple_of(array a, bool from_input) {
    auto v = list(std::move(a), from_input);
    v.tuple = true;
    return v;
}

value value::dict(object o) {
    value v;
    v.k = kind::dict;
    for (const auto& [k, x] : o.items)
        v.depth = std::max(v.depth, x.depth);
    ++v.depth;
    v.input = o.input_keys;
    v.obj = std::make_shared<const object>(std::move(o));
    return v;
}

value value::callable(std::string fn, std::shared_ptr<const value> receiver) {
    value v;
    v.k = kind::callable;
    v.name = std::move(fn);
    v.self = std::move(receiver);
    return v;
}

const char* value::type_name() const noexcept {
    switch (k) {
    case kind::undefined:
        return "Undefined";
    case kind::none:
        return "NoneType";
    case kind::boolean:
        return "bool";
    case kind::integer:
        return "int";
    case kind::number:
        return "float";
    case kind::string:
        return "str";
    case kind::list:
        return "list";
    case kind::dict:
        return "dict";
    case kind::ns:
        return "Namespace";
    case kind::macro:
        return "Macro";
    case kind::callable:
        return "function";
    }
    return "?";
}

bool truthy(const value& v) {
    switch (v.k) {
    case kind::undefined:
    case kind::none:
        return false;
    case kind::boolean:
        return v.b;
    case kind::integer:
        return v.i != 0;
    case kind::number:
        return v.d != 0.0;
    case kind::string:
        return !v.str.s.empty();
    case kind::list:
        return !v.arr->empty();
    case kind::dict:
        return !v.obj->items.empty();
    default:
        return true;
    }
}

bool equal(const value& a, const value& b, std::uint32_t depth) {
    if (depth > max_walk_depth)
        throw template_error(0, "values nest too deeply to compare", failure::limit);
    if (a.is_numeric() && b.is_numeric()) {
        if (a.k == kind::number || b.k == kind::number)
            return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.k != b.k)
        return false;
    switch (a.k) {
    case kind::undefined:
    case kind::none:
        return true;
    case kind::string:
        return a.str.s == b.str.s;
    case kind::list: {
        if (a.tuple != b.tuple || a.arr->size() != b.arr->size())
            return false;
        for (std::size_t i = 0; i < a.arr->size(); ++i)
            if (!equal((*a.arr)[i], (*b.arr)[i], depth + 1))
                return false;
        return true;
    }
    case kind::dict: {
        if (a.obj->items.size() != b.obj->items.size())
            return false;
        for (const auto& [k, v] : a.obj->items) {
            const auto* other = b.obj->find(k);
            if (!other || !equal(v, *other, depth + 1))
                return false;
        }
        return true;
    }
    case kind::ns:
        return a.ns == b.ns;
    case kind::macro:
        return a.mac == b.mac;
    case kind::callable:
        return a.name == b.name && a.self == b.self;
    default:
        return false;
    }
}

bool holds_namespace(const value& v) {
    // Depth is bounded by limits::max_value_depth (values are checked as they are built).
    switch (v.k) {
    case kind::ns:
        return true;
    case kind::list:
        return std::any_of(v.arr->begin(), v.arr->end(), holds_namespace);
    case kind::dict:
        return std::any_of(v.obj->items.begin(), v.obj->items.end(),
                           [](const auto& kv) { return holds_namespace(kv.second); });
    default:
        return false;
    }
}

std::string float_repr(double d) {
    if (std::isnan(d))
        return "nan";
    if (std::isinf(d))
        return d < 0 ? "-inf" : "inf";
    // Shortest round-trip digits in scientific form: [-]D[.DDD]e(+|-)XX.
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    (void)ec;
    std::string sci(buf, end);
    const bool neg = sci[0] == '-';
    if (neg)
        sci.erase(0, 1);
    const auto e_pos = sci.find('e');
    std::string digits = sci.substr(0, e_pos);
    const int exp = std::atoi(sci.c_str() + e_pos + 1);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    std::string out = neg ? "-" : "";
    if (exp >= -4 && exp < 16) {
        // Fixed notation, with ".0" when the value is whole (Python's repr).
        if (exp < 0) {
            out += "0.";
            out.append(static_cast<std::size_t>(-exp - 1), '0');
            out += digits;
        } else if (static_cast<int>(digits.size()) <= exp + 1) {
            out += digits;
            out.append(static_cast<std::size_t>(exp + 1) - digits.size(), '0');
            out += ".0";
        } else {
            out += digits.substr(0, static_cast<std::size_t>(exp + 1));
            out += '.';
            out += digits.substr(static_cast<std::size_t>(exp + 1));
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
        out += '.';
        out += digits.substr(1);
    }
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return out + ebuf;
}

namespace {

/// Code point at `s[pos]` (valid UTF-8).
std::uint32_t decode_at(std::string_view s, std::size_t pos, std::size_t len) {
    const auto c = static_cast<unsigned char>(s[pos]);
    if (len == 1)
        return c;
    std::uint32_t cp = c & (0xFFu >> (len + 1));
    for (std::size_t k = 1; k < len; ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[pos + k]) & 0x3Fu);
    return cp;
}

/// Whether Python's str.isprintable() says no for this code point (the common cases: C0/C1
/// controls, DEL, soft hyphen, line/paragraph separators, BOM).
bool python_unprintable(std::uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || cp == 0xAD || cp == 0x2028 || cp == 0x2029 ||
           cp == 0xFEFF || (cp >= 0x200B && cp <= 0x200F);
}

} // namespace

std::string string_repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (std::size_t i = 0; i < s.size();) {
        const auto len = utf8_char_len(s, i);
        const auto cp = decode_at(s, i, len);
        char buf[16];
        if (cp == '\\')
            out += "\\\\";
        else if (cp == static_cast<std::uint32_t>(quote))
            (out += '\\') += quote;
        else if (cp == '\n')
            out += "\\n";
        else if (cp == '\r')
            out += "\\r";
        else if (cp == '\t')
            out += "\\t";
        else if (python_unprintable(cp)) {
            if (cp < 0x100)
                std::snprintf(buf, sizeof buf, "\\x%02x", cp);
            else
                std::snprintf(buf, sizeof buf, "\\u%04x", cp);
            out += buf;
        } else
            out.append(s.substr(i, len));
        i += len;
    }
    out += quote;
    return out;
}

std::size_t utf8_char_len(std::string_view s, std::size_t pos) noexcept {
    const auto c = static_cast<unsigned char>(s[pos]);
    std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    return std::min(len, s.size() - pos);
}

std::size_t utf8_length(std::string_view s) noexcept {
    std::size_t n = 0;
    for (char c : s)
        n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

std::size_t utf8_offset(std::string_view s, std::size_t index) noexcept {
    std::size_t pos = 0;
    while (index > 0 && pos < s.size()) {
        pos += utf8_char_len(s, pos);
        --index;
    }
    return pos;
}

bool utf8_valid(std::string_view s, std::size_t* bad_at) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t len = c < 0x80         ? 1
                          : (c >> 5) == 6  ? 2
                          : (c >> 4) == 14 ? 3
                          : (c >> 3) == 30 ? 4
                                           : 0;
        bool ok = len != 0 && i + len <= s.size();
        for (std::size_t k = 1; ok && k < len; ++k)
            ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
        if (ok && len > 1) {
            const auto cp = decode_at(s, i, len);
            ok = cp >= (len == 2   ? 0x80u
                        : len == 3 ? 0x800u
                                   : 0x10000u) &&
                 cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
        }
        if (!ok) {
            if (bad_at)
                *bad_at = i;
            return false;
        }
        i += len;
    }
    return true;
}

} // namespace bitnet::model::jinja
