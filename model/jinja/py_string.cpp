#include "model/jinja/py_string.hpp"

#include "model/jinja/value.hpp"

namespace bitnet::model::jinja::py {

namespace {

bool ascii_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
char to_upper(char c) {
    return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c;
}
char to_lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

/// Whether the code point `s[pos..pos+len)` is one of `chars`' code points.
bool among(std::string_view s, std::size_t pos, std::size_t len, const std::string& chars) {
    const auto cp = s.substr(pos, len);
    for (std::size_t i = 0; i < chars.size();) {
        const auto l = utf8_char_len(chars, i);
        if (std::string_view(chars).substr(i, l) == cp)
            return true;
        i += l;
    }
    return false;
}

/// Bytes of the code point that ends at `end` (exclusive).
std::size_t char_len_before(std::string_view s, std::size_t end) {
    std::size_t b = end - 1;
    while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80)
        --b;
    return end - b;
}

/// Bytes of the line boundary at `pos` (Python's str.splitlines), or 0.
std::size_t line_break_len(std::string_view s, std::size_t pos) {
    const char c = s[pos];
    if (c == '\r')
        return pos + 1 < s.size() && s[pos + 1] == '\n' ? 2 : 1;
    if (c == '\n' || c == '\x0b' || c == '\x0c' || c == '\x1c' || c == '\x1d' || c == '\x1e')
        return 1;
    const auto rest = s.substr(pos);
    if (rest.starts_with("\xC2\x85"))
        return 2;
    if (rest.starts_with("\xE2\x80\xA8") || rest.starts_with("\xE2\x80\xA9"))
        return 3;
    return 0;
}

} // namespace

std::size_t space_len(std::string_view s, std::size_t pos) noexcept {
    const auto c = static_cast<unsigned char>(s[pos]);
    if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F))
        return 1;
    if (c < 0x80)
        return 0;
    const auto rest = s.substr(pos);
    if (rest.starts_with("\xC2\x85") || rest.starts_with("\xC2\xA0"))
        return 2;
    if (rest.size() < 3)
        return 0;
    const auto b0 = static_cast<unsigned char>(rest[0]), b1 = static_cast<unsigned char>(rest[1]),
               b2 = static_cast<unsigned char>(rest[2]);
    const std::uint32_t cp = ((b0 & 0x0Fu) << 12) | ((b1 & 0x3Fu) << 6) | (b2 & 0x3Fu);
    if ((b0 & 0xF0) != 0xE0)
        return 0;
    const bool space = cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
                       cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
    return space ? 3 : 0;
}

std::size_t space_len_before(std::string_view s, std::size_t end) noexcept {
    if (end == 0)
        return 0;
    const auto len = char_len_before(s, end);
    return space_len(s, end - len) == len ? len : 0;
}

span strip(std::string_view s, const std::string* chars, bool left, bool right) {
    std::size_t b = 0, e = s.size();
    if (left)
        while (b < e) {
            const auto len = utf8_char_len(s, b);
            if (chars ? !among(s, b, len, *chars) : space_len(s, b) != len)
                break;
            b += len;
        }
    if (right)
        while (e > b) {
            const auto len = char_len_before(s, e);
            if (chars ? !among(s, e - len, len, *chars) : space_len(s, e - len) != len)
                break;
            e -= len;
        }
    return {b, e};
}

std::vector<span> split(std::string_view s, const std::string* sep, long maxsplit) {
    std::vector<span> out;
    if (sep) {
        std::size_t b = 0;
        while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
            const auto at = s.find(*sep, b);
            if (at == std::string_view::npos)
                break;
            out.push_back({b, at});
            b = at + sep->size();
        }
        out.push_back({b, s.size()});
        return out;
    }
    std::size_t i = 0;
    while (true) {
        while (i < s.size() && space_len(s, i))
            i += space_len(s, i);
        if (i >= s.size())
            break;
        if (maxsplit >= 0 && static_cast<long>(out.size()) == maxsplit) {
            // Python keeps the rest as it is, trailing whitespace stripped.
            out.push_back({i, strip(s, nullptr, false, true).end});
            break;
        }
        const auto b = i;
        while (i < s.size() && !space_len(s, i))
            i += utf8_char_len(s, i);
        out.push_back({b, i});
    }
    return out;
}

std::vector<span> rsplit(std::string_view s, const std::string* sep, long maxsplit) {
    if (maxsplit < 0)
        return split(s, sep, -1);
    std::vector<span> out;
    if (sep) {
        std::size_t e = s.size();
        while (static_cast<long>(out.size()) < maxsplit) {
            if (e < sep->size())
                break;
            const auto at = s.rfind(*sep, e - sep->size());
            if (at == std::string_view::npos)
                break;
            out.push_back({at + sep->size(), e});
            e = at;
        }
        out.push_back({0, e});
    } else {
        std::size_t i = s.size();
        while (true) {
            while (i > 0 && space_len_before(s, i))
                i -= space_len_before(s, i);
            if (i == 0)
                break;
            if (static_cast<long>(out.size()) == maxsplit) {
                out.push_back({strip(s, nullptr, true, false).begin, i});
                break;
            }
            const auto e = i;
            while (i > 0 && !space_len_before(s, i))
                i -= char_len_before(s, i);
            out.push_back({i, e});
        }
    }
    return {out.rbegin(), out.rend()};
}

std::vector<span> splitlines(std::string_view s) {
    std::vector<span> out;
    std::size_t b = 0;
    for (std::size_t i = 0; i < s.size();) {
        if (const auto len = line_break_len(s, i)) {
            out.push_back({b, i});
            i += len;
            b = i;
        } else
            i += utf8_char_len(s, i);
    }
    if (b < s.size())
        out.push_back({b, s.size()});
    return out;
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& c : out)
        c = to_upper(c);
    return out;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out)
        c = to_lower(c);
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out = lower(s);
    if (!out.empty())
        out[0] = to_upper(out[0]);
    return out;
}

std::string title(std::string_view s) {
    std::string out(s);
    bool prev_cased = false;
    for (auto& c : out) {
        const bool non_ascii = static_cast<unsigned char>(c) >= 0x80;
        if (ascii_alpha(c))
            c = prev_cased ? to_lower(c) : to_upper(c);
        prev_cased = ascii_alpha(c) || non_ascii;
    }
    return out;
}

std::string jinja_title(std::string_view s) {
    std::string out(s);
    bool word_start = true;
    for (std::size_t i = 0; i < out.size();) {
        const auto sp = space_len(out, i);
        const char c = out[i];
        const bool sep = sp > 0 || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
        const auto len = sp > 0 ? sp : utf8_char_len(out, i);
        if (sep)
            word_start = true;
        else {
            out[i] = word_start ? to_upper(c) : to_lower(c);
            word_start = false;
        }
        i += len;
    }
    return out;
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80)
        out += static_cast<char>(cp);
    else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

} // namespace bitnet::model::jinja::py
