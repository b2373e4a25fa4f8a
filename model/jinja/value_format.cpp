// Values as text: Python's str() and repr(), and json.dumps as Transformers' tojson calls it.
#include "model/jinja/ast.hpp"
#include "model/jinja/builtins.hpp"
#include "model/jinja/error.hpp"

#include <algorithm>
#include <cstdio>

namespace bitnet::model::jinja {

namespace {

void check_depth(std::uint32_t depth) {
    if (depth > max_walk_depth)
        throw template_error(
            0, "a value nests deeper than " + std::to_string(max_walk_depth) + " levels",
            failure::limit);
}

bool holds_input(const value& v, std::uint32_t depth) {
    check_depth(depth);
    switch (v.k) {
    case kind::string:
        return v.str.any_input();
    case kind::list:
        if (v.input)
            return true;
        return std::any_of(v.arr->begin(), v.arr->end(),
                           [&](const value& x) { return holds_input(x, depth + 1); });
    case kind::dict:
        if (v.input || v.obj->input_keys)
            return true;
        return std::any_of(v.obj->items.begin(), v.obj->items.end(),
                           [&](const auto& kv) { return holds_input(kv.second, depth + 1); });
    case kind::ns:
        return std::any_of(v.ns->items.begin(), v.ns->items.end(),
                           [&](const auto& kv) { return holds_input(kv.second, depth + 1); });
    default:
        return false;
    }
}

void repr_into(std::string& out, const value& v, std::uint32_t depth) {
    check_depth(depth);
    switch (v.k) {
    case kind::string:
        out += string_repr(v.str.s);
        return;
    case kind::list: {
        out += v.tuple ? '(' : '[';
        for (std::size_t i = 0; i < v.arr->size(); ++i) {
            if (i)
                out += ", ";
            repr_into(out, (*v.arr)[i], depth + 1);
        }
        if (v.tuple && v.arr->size() == 1)
            out += ',';
        out += v.tuple ? ')' : ']';
        return;
    }
    case kind::dict:
    case kind::ns: {
        const auto& items = v.k == kind::ns ? v.ns->items : v.obj->items;
        out += v.k == kind::ns ? "<Namespace {" : "{";
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (i)
                out += ", ";
            out += string_repr(items[i].first);
            out += ": ";
            repr_into(out, items[i].second, depth + 1);
        }
        out += v.k == kind::ns ? "}>" : "}";
        return;
    }
    default:
        out += to_text(v).s;
    }
}

void json_string(std::string& out, std::string_view s) {
    out += '"';
    for (char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                out += buf;
            } else
                out += c;
        }
    }
    out += '"';
}

struct json_writer {
    int indent;
    bool sort_keys;
    std::string item_sep, key_sep;
    std::string out;

    void newline(std::uint32_t level) {
        out += '\n';
        out.append(static_cast<std::size_t>(indent) * level, ' ');
    }

    void write(const value& v, std::uint32_t level) {
        check_depth(level);
        switch (v.k) {
        case kind::none:
            out += "null";
            return;
        case kind::boolean:
            out += v.b ? "true" : "false";
            return;
        case kind::integer:
            out += std::to_string(v.i);
            return;
        case kind::number: {
            const auto r = float_repr(v.d);
            out += r == "nan" ? "NaN" : r == "inf" ? "Infinity" : r == "-inf" ? "-Infinity" : r;
            return;
        }
        case kind::string:
            json_string(out, v.str.s);
            return;
        case kind::list:
            write_array(*v.arr, level);
            return;
        case kind::dict:
        case kind::ns:
            if (v.k == kind::ns)
                throw template_error(0, "Object of type Namespace is not JSON serializable");
            write_object(*v.obj, level);
            return;
        default:
            throw template_error(0, "Object of type " + std::string(v.type_name()) +
                                        " is not JSON serializable");
        }
    }

    void write_array(const array& a, std::uint32_t level) {
        if (a.empty()) {
            out += "[]";
            return;
        }
        out += '[';
        for (std::size_t i = 0; i < a.size(); ++i) {
            if (i)
                out += item_sep;
            if (indent >= 0)
                newline(level + 1);
            write(a[i], level + 1);
        }
        if (indent >= 0)
            newline(level);
        out += ']';
    }

    void write_object(const object& o, std::uint32_t level) {
        if (o.items.empty()) {
            out += "{}";
            return;
        }
        std::vector<const std::pair<std::string, value>*> items;
        for (const auto& kv : o.items)
            items.push_back(&kv);
        if (sort_keys)
            std::stable_sort(items.begin(), items.end(),
                             [](auto* a, auto* b) { return a->first < b->first; });
        out += '{';
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (i)
                out += item_sep;
            if (indent >= 0)
                newline(level + 1);
            json_string(out, items[i]->first);
            out += key_sep;
            write(items[i]->second, level + 1);
        }
        if (indent >= 0)
            newline(level);
        out += '}';
    }
};

} // namespace

text to_text(const value& v) {
    switch (v.k) {
    case kind::undefined:
        return {};
    case kind::none:
        return text("None");
    case kind::boolean:
        return text(v.b ? "True" : "False");
    case kind::integer:
        return text(std::to_string(v.i));
    case kind::number:
        return text(float_repr(v.d));
    case kind::string:
        return v.str;
    case kind::list:
    case kind::dict:
    case kind::ns: {
        std::string s;
        repr_into(s, v, 0);
        return text(std::move(s), holds_input(v, 0));
    }
    case kind::macro:
        return text("<Macro '" + v.mac->name + "'>");
    case kind::callable:
        return text("<built-in function " + v.name + ">");
    }
    return {};
}

std::string repr(const value& v) {
    std::string s;
    repr_into(s, v, 0);
    return s;
}

std::string to_json(const value& v, int indent, bool sort_keys, const std::string* item_sep,
                    const std::string* key_sep) {
    json_writer w{indent,
                  sort_keys,
                  item_sep      ? *item_sep
                  : indent >= 0 ? ","
                                : ", ",
                  key_sep ? *key_sep : ": ",
                  {}};
    w.write(v, 0);
    return std::move(w.out);
}

/// Whether any string inside `v` came from input (tojson's result is input text then).
bool value_holds_input(const value& v) {
    return holds_input(v, 0);
}

} // namespace bitnet::model::jinja
