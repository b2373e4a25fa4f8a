#include "model/constrain/canonical_json.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <cmath>

namespace bitnet::model::constrain {

namespace json = boost::json;

std::string canonical_string_body(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
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
        default:
            if (c < 0x20) {
                static const char* hex = "0123456789abcdef";
                out += "\\u00";
                out += hex[c >> 4];
                out += hex[c & 15];
            } else {
                out += ch;
            }
        }
    }
    return out;
}

namespace {

void write(const json::value& v, std::string& out) {
    switch (v.kind()) {
    case json::kind::null:
        out += "null";
        break;
    case json::kind::bool_:
        out += v.get_bool() ? "true" : "false";
        break;
    case json::kind::int64:
        out += std::to_string(v.get_int64());
        break;
    case json::kind::uint64:
        out += std::to_string(v.get_uint64());
        break;
    case json::kind::double_: {
        const double d = v.get_double();
        // Integral values within int64 are integers (JSON Schema: 1.0 is the integer 1).
        if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
            out += std::to_string(static_cast<std::int64_t>(d));
            break;
        }
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, d);
        out.append(buf, r.ptr);
        break;
    }
    case json::kind::string:
        out += '"';
        out += canonical_string_body(v.get_string());
        out += '"';
        break;
    case json::kind::array: {
        out += '[';
        bool first = true;
        for (const auto& e : v.get_array()) {
            if (!first)
                out += ',';
            first = false;
            write(e, out);
        }
        out += ']';
        break;
    }
    case json::kind::object: {
        out += '{';
        bool first = true;
        for (const auto& kv : v.get_object()) {
            if (!first)
                out += ',';
            first = false;
            out += '"';
            out += canonical_string_body(kv.key());
            out += "\":";
            write(kv.value(), out);
        }
        out += '}';
        break;
    }
    }
}

} // namespace

std::string canonical_json(const json::value& v) {
    std::string out;
    write(v, out);
    return out;
}

} // namespace bitnet::model::constrain
