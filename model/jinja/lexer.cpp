#include "model/jinja/lexer.hpp"

#include "model/jinja/py_string.hpp"

#include <array>
#include <charconv>
#include <cstdlib>

namespace bitnet::model::jinja {

std::string normalise_source(std::string_view src) {
    std::string out;
    out.reserve(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) {
        if (src[i] == '\r') {
            out += '\n';
            if (i + 1 < src.size() && src[i + 1] == '\n')
                ++i;
        } else
            out += src[i];
    }
    if (!out.empty() && out.back() == '\n')
        out.pop_back();
    return out;
}

std::string describe_position(std::string_view src, std::size_t pos) {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < pos && i < src.size(); ++i) {
        if (src[i] == '\n') {
            ++line;
            col = 1;
        } else if ((static_cast<unsigned char>(src[i]) & 0xC0) != 0x80)
            ++col;
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

namespace {

bool name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool name_char(char c) {
    return name_start(c) || (c >= '0' && c <= '9');
}
bool digit(char c) {
    return c >= '0' && c <= '9';
}

class lexer {
public:
    explicit lexer(std::string_view src)
        : src_(src) {}

    std::vector<token> run() {
        while (pos_ < src_.size())
            data_and_tag();
        out_.push_back({tok::eof, {}, 0, 0, src_.size()});
        return std::move(out_);
    }

private:
    std::string_view src_;
    std::size_t pos_ = 0;
    bool line_starting_ = true;
    std::vector<token> out_;

    [[noreturn]] void fail(std::size_t at, const std::string& what) const {
        throw template_error(at, what);
    }

    /// Template text up to the next tag, then the tag.
    void data_and_tag() {
        std::size_t at = pos_;
        char kind = 0;
        while ((at = src_.find('{', at)) != std::string_view::npos) {
            if (at + 1 < src_.size() &&
                (src_[at + 1] == '{' || src_[at + 1] == '%' || src_[at + 1] == '#')) {
                kind = src_[at + 1];
                break;
            }
            ++at;
        }
        if (at == std::string_view::npos) {
            emit_data(std::string(src_.substr(pos_)), src_.size());
            pos_ = src_.size();
            return;
        }
        const char sign = at + 2 < src_.size() ? src_[at + 2] : 0;
        std::string text(src_.substr(pos_, at - pos_));
        strip_before(text, sign, kind != '{');
        const std::size_t text_pos = pos_;
        pos_ = at + 2 + (sign == '-' || sign == '+' ? 1 : 0);
        line_starting_ = false;
        if (!text.empty())
            out_.push_back({tok::data, std::move(text), 0, 0, text_pos});
        if (kind == '#')
            comment(at);
        else if (kind == '%' && raw_begins())
            raw(at);
        else
            tag(kind == '%' ? tok::block_begin : tok::var_begin, at);
    }

    void emit_data(std::string text, std::size_t at) {
        if (!text.empty())
            out_.push_back({tok::data, std::move(text), 0, 0, at});
    }

    /// A tag's left whitespace control: `-` strips all whitespace before it; lstrip_blocks
    /// strips the blanks that begin its line (block and comment tags, unless `+`).
    void strip_before(std::string& text, char sign, bool block_or_comment) const {
        if (sign == '-') {
            text.resize(py::strip(text, nullptr, false, true).end);
        } else if (sign != '+' && block_or_comment) {
            const auto nl = text.rfind('\n');
            const std::size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
            if ((l_pos > 0 || line_starting_) && l_pos < text.size() &&
                py::strip(std::string_view(text).substr(l_pos), nullptr, true, false).begin ==
                    text.size() - l_pos)
                text.resize(l_pos);
        }
    }

    /// After a tag's end: `-` eats all following whitespace; else trim_blocks eats one newline
    /// after block and comment tags (not after `+`).
    void strip_after(char sign, bool trim_newline) {
        if (sign == '-') {
            while (pos_ < src_.size() && py::space_len(src_, pos_))
                pos_ += py::space_len(src_, pos_);
        } else if (sign != '+' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n')
            ++pos_;
        line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    }

    void comment(std::size_t at) {
        const auto end = src_.find("#}", pos_);
        if (end == std::string_view::npos)
            fail(at, "a comment {# is never closed with #}");
        const char sign =
            end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
        pos_ = end + 2;
        strip_after(sign, true);
    }

    /// Whether the block tag starting at pos_ is `raw`.
    bool raw_begins() const {
        std::size_t p = pos_;
        while (p < src_.size() && py::space_len(src_, p))
            p += py::space_len(src_, p);
        if (src_.substr(p, 3) != "raw")
            return false;
        p += 3;
        while (p < src_.size() && py::space_len(src_, p))
            p += py::space_len(src_, p);
        return src_.substr(p, 2) == "%}" || src_.substr(p, 3) == "-%}";
    }

    /// {% raw %}...{% endraw %}: the text between is data, tags and all.
    void raw(std::size_t at) {
        const auto close = src_.find("%}", pos_);
        const char begin_sign = src_[close - 1] == '-' ? '-' : 0;
        pos_ = close + 2;
        if (begin_sign == '-')
            strip_after('-', false);
        std::size_t p = pos_;
        while (true) {
            p = src_.find("{%", p);
            if (p == std::string_view::npos)
                fail(at, "{% raw %} is never closed with {% endraw %}");
            std::size_t q = p + 2;
            const char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : 0;
            q += sign ? 1 : 0;
            while (q < src_.size() && py::space_len(src_, q))
                q += py::space_len(src_, q);
            if (src_.substr(q, 6) != "endraw") {
                p += 2;
                continue;
            }
            q += 6;
            while (q < src_.size() && py::space_len(src_, q))
                q += py::space_len(src_, q);
            const char end_sign = src_[q] == '-' || src_[q] == '+' ? src_[q] : 0;
            if (src_.substr(q + (end_sign ? 1 : 0), 2) != "%}")
                fail(q, "expected %} after endraw");
            std::string text(src_.substr(pos_, p - pos_));
            strip_before(text, sign, true);
            emit_data(std::move(text), pos_);
            pos_ = q + (end_sign ? 1 : 0) + 2;
            strip_after(end_sign, true);
            return;
        }
    }

    /// The tokens inside {% %} or {{ }}, up to the matching end (brackets balanced).
    void tag(tok begin, std::size_t at) {
        out_.push_back({begin, {}, 0, 0, at});
        const bool block = begin == tok::block_begin;
        const char closer = block ? '%' : '}';
        std::vector<char> balance;
        while (true) {
            while (pos_ < src_.size() && py::space_len(src_, pos_))
                pos_ += py::space_len(src_, pos_);
            if (pos_ >= src_.size())
                fail(at, block ? "a block tag {% is never closed with %}"
                               : "an expression {{ is never closed with }}");
            if (balance.empty()) {
                const char sign = src_[pos_] == '-' || src_[pos_] == '+' ? src_[pos_] : 0;
                const auto p = pos_ + (sign ? 1 : 0);
                if (p + 1 < src_.size() && src_[p] == closer && src_[p + 1] == '}') {
                    if (sign == '+' && !block)
                        fail(pos_, "'+' whitespace control is for block tags only");
                    out_.push_back({block ? tok::block_end : tok::var_end, {}, 0, 0, pos_});
                    pos_ = p + 2;
                    strip_after(sign, block);
                    return;
                }
            }
            inner_token(balance);
        }
    }

    void inner_token(std::vector<char>& balance) {
        const std::size_t at = pos_;
        const char c = src_[pos_];
        if (name_start(c)) {
            while (pos_ < src_.size() && name_char(src_[pos_]))
                ++pos_;
            out_.push_back({tok::name, std::string(src_.substr(at, pos_ - at)), 0, 0, at});
        } else if (digit(c))
            number(at);
        else if (c == '\'' || c == '"')
            string_literal(at);
        else
            operator_token(at, balance);
    }

    void number(std::size_t at) {
        auto digits = [&] {
            while (pos_ < src_.size() && (digit(src_[pos_]) || src_[pos_] == '_'))
                ++pos_;
        };
        digits();
        // After a '.', digits are an attribute index (foo.0), never a float (Jinja's lexer).
        const bool after_dot = at > 0 && src_[at - 1] == '.';
        bool is_float = false;
        if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && digit(src_[pos_ + 1])) {
            ++pos_;
            digits();
            is_float = true;
        }
        if (!after_dot && pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
            auto p = pos_ + 1;
            if (p < src_.size() && (src_[p] == '+' || src_[p] == '-'))
                ++p;
            if (p < src_.size() && digit(src_[p])) {
                pos_ = p;
                digits();
                is_float = true;
            }
        }
        std::string lit;
        for (char ch : src_.substr(at, pos_ - at))
            if (ch != '_')
                lit += ch;
        token t{is_float ? tok::number : tok::integer, lit, 0, 0, at};
        if (is_float)
            t.d = std::strtod(lit.c_str(), nullptr);
        else {
            auto [p, ec] = std::from_chars(lit.data(), lit.data() + lit.size(), t.i);
            if (ec != std::errc() || p != lit.data() + lit.size())
                throw template_error(at, "integer literal " + lit + " does not fit 64 bits",
                                     failure::unsupported);
        }
        out_.push_back(std::move(t));
    }

    void string_literal(std::size_t at) {
        const char q = src_[pos_++];
        std::string v;
        while (true) {
            if (pos_ >= src_.size())
                fail(at, "a string literal is never closed");
            const char c = src_[pos_++];
            if (c == q)
                break;
            if (c != '\\') {
                v += c;
                continue;
            }
            if (pos_ >= src_.size())
                fail(at, "a string literal is never closed");
            escape(v, at);
        }
        out_.push_back({tok::string, std::move(v), 0, 0, at});
    }

    /// One backslash escape as Python's unicode-escape decodes it; unknown ones stay as written.
    void escape(std::string& v, std::size_t at) {
        const char e = src_[pos_++];
        switch (e) {
        case 'n':
            v += '\n';
            return;
        case 't':
            v += '\t';
            return;
        case 'r':
            v += '\r';
            return;
        case '\\':
            v += '\\';
            return;
        case '\'':
            v += '\'';
            return;
        case '"':
            v += '"';
            return;
        case 'a':
            v += '\a';
            return;
        case 'b':
            v += '\b';
            return;
        case 'f':
            v += '\f';
            return;
        case 'v':
            v += '\v';
            return;
        case '\n':
            return;
        case 'x':
        case 'u':
        case 'U': {
            const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            std::uint32_t cp = 0;
            auto [p, ec] = std::from_chars(
                src_.data() + pos_, src_.data() + pos_ + std::min(n, src_.size() - pos_), cp, 16);
            if (ec != std::errc() || p != src_.data() + pos_ + n || cp > 0x10FFFF)
                fail(at, std::string("bad \\") + e + " escape in a string literal");
            pos_ += n;
            py::append_utf8(v, cp);
            return;
        }
        case 'N':
            throw template_error(at, "the \\N{...} escape in a string literal is not supported",
                                 failure::unsupported);
        default:
            if (e >= '0' && e <= '7') {
                std::uint32_t cp = static_cast<std::uint32_t>(e - '0');
                for (int k = 0;
                     k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k)
                    cp = cp * 8 + static_cast<std::uint32_t>(src_[pos_++] - '0');
                py::append_utf8(v, cp);
                return;
            }
            v += '\\';
            v += e;
        }
    }

    void operator_token(std::size_t at, std::vector<char>& balance) {
        static constexpr std::array<std::string_view, 6> two{"//", "**", "==", "!=", ">=", "<="};
        std::string op;
        for (auto t : two)
            if (src_.substr(pos_, 2) == t)
                op = t;
        if (op.empty()) {
            const char c = src_[pos_];
            if (std::string_view("+-/*%~[](){}><=.:|,").find(c) == std::string_view::npos)
                fail(at, std::string("unexpected character '") + c + "'");
            op = c;
        }
        pos_ += op.size();
        if (op == "(" || op == "[" || op == "{")
            balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
        else if (op == ")" || op == "]" || op == "}") {
            if (balance.empty() || balance.back() != op[0])
                fail(at, "unexpected '" + op + "'");
            balance.pop_back();
        }
        out_.push_back({tok::op, std::move(op), 0, 0, at});
    }
};

} // namespace

std::vector<token> tokenize(std::string_view src) {
    return lexer(src).run();
}

} // namespace bitnet::model::jinja
