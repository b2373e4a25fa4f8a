#include "model/jinja/template.hpp"

#include "model/jinja/ast.hpp"
#include "model/jinja/interpreter.hpp"
#include "model/jinja/lexer.hpp"
#include "model/jinja/parser.hpp"
#include "model/jinja/py_string.hpp"

namespace bitnet::model::jinja {

struct compiled_template::state {
    std::string source;
    body statements;
    limits lim;
};

namespace {

error to_error(const template_error& e, std::string_view source, const char* stage) {
    const auto where = describe_position(source, e.pos);
    switch (e.why) {
    case failure::syntax:
        return error{errc::bad_format,
                     std::string("chat template syntax error at ") + where + ": " + e.what()};
    case failure::unsupported:
        return error{errc::unsupported, std::string("chat template uses a construct this server "
                                                    "does not implement, at ") +
                                            where + ": " + e.what()};
    case failure::raised:
        return error{errc::invalid_argument, std::string("raise_exception: ") + e.what()};
    case failure::limit:
        return error{errc::invalid_argument, std::string("chat template ") + stage +
                                                 " stopped at a limit, at " + where + ": " +
                                                 e.what()};
    case failure::render:
        break;
    }
    return error{errc::invalid_argument,
                 std::string("chat template error at ") + where + ": " + e.what()};
}

} // namespace

result<compiled_template> compiled_template::compile(std::string_view source, const limits& lim) {
    if (source.size() > lim.max_template_bytes)
        return error{errc::invalid_argument, "chat template is " + std::to_string(source.size()) +
                                                 " bytes, more than the limit of " +
                                                 std::to_string(lim.max_template_bytes)};
    std::size_t bad = 0;
    if (!utf8_valid(source, &bad))
        return error{errc::bad_format,
                     "chat template is not valid UTF-8 at byte " + std::to_string(bad)};
    auto st = std::make_shared<state>();
    st->source = normalise_source(source);
    st->lim = lim;
    try {
        st->statements = parse(tokenize(st->source), lim);
    } catch (const template_error& e) {
        return to_error(e, st->source, "parsing");
    }
    compiled_template t;
    t.s_ = std::move(st);
    return t;
}

result<text> compiled_template::render(object vars, std::time_t now) const {
    try {
        interpreter in(s_->lim, now);
        return in.render(s_->statements, std::move(vars));
    } catch (const template_error& e) {
        return to_error(e, s_->source, "rendering");
    }
}

const std::string& compiled_template::source() const noexcept {
    return s_->source;
}

const limits& compiled_template::bounds() const noexcept {
    return s_->lim;
}

namespace {

class json_reader {
public:
    json_reader(std::string_view s, const limits& lim, bool input)
        : s_(s)
        , lim_(lim)
        , input_(input) {}

    value read() {
        auto v = parse(0);
        skip_ws();
        if (p_ != s_.size())
            fail("unexpected text after the JSON value");
        return v;
    }

private:
    std::string_view s_;
    const limits& lim_;
    bool input_;
    std::size_t p_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw template_error(p_, "invalid JSON at byte " + std::to_string(p_) + ": " + what);
    }
    void skip_ws() {
        while (p_ < s_.size() &&
               (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\n' || s_[p_] == '\r'))
            ++p_;
    }
    bool literal(std::string_view word) {
        if (s_.substr(p_, word.size()) != word)
            return false;
        p_ += word.size();
        return true;
    }

    value parse(std::uint32_t depth) {
        skip_ws();
        if (p_ >= s_.size())
            fail("unexpected end");
        const char c = s_[p_];
        if (c == '{' || c == '[') {
            if (depth >= lim_.max_input_depth)
                fail("nested deeper than " + std::to_string(lim_.max_input_depth) + " levels");
            return c == '{' ? parse_object(depth) : parse_array(depth);
        }
        if (c == '"')
            return value::string(parse_string(), input_);
        if (literal("true"))
            return value::boolean(true);
        if (literal("false"))
            return value::boolean(false);
        if (literal("null"))
            return value::none();
        return parse_number();
    }

    value parse_object(std::uint32_t depth) {
        ++p_;
        object o;
        o.input_keys = input_;
        skip_ws();
        if (p_ < s_.size() && s_[p_] == '}') {
            ++p_;
            return value::dict(std::move(o));
        }
        while (true) {
            skip_ws();
            if (p_ >= s_.size() || s_[p_] != '"')
                fail("expected a key");
            auto key = parse_string();
            skip_ws();
            if (p_ >= s_.size() || s_[p_++] != ':')
                fail("expected ':'");
            o.set(std::move(key), parse(depth + 1));
            skip_ws();
            if (p_ < s_.size() && s_[p_] == ',') {
                ++p_;
                continue;
            }
            if (p_ < s_.size() && s_[p_] == '}') {
                ++p_;
                auto v = value::dict(std::move(o));
                v.input = input_;
                return v;
            }
            fail("expected ',' or '}'");
        }
    }

    value parse_array(std::uint32_t depth) {
        ++p_;
        array a;
        skip_ws();
        if (p_ < s_.size() && s_[p_] == ']') {
            ++p_;
            return value::list(std::move(a), input_);
        }
        while (true) {
            a.push_back(parse(depth + 1));
            skip_ws();
            if (p_ < s_.size() && s_[p_] == ',') {
                ++p_;
                continue;
            }
            if (p_ < s_.size() && s_[p_] == ']') {
                ++p_;
                return value::list(std::move(a), input_);
            }
            fail("expected ',' or ']'");
        }
    }

    std::uint32_t hex4() {
        if (p_ + 4 > s_.size())
            fail("short \\u escape");
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const char h = s_[p_++];
            v <<= 4;
            if (h >= '0' && h <= '9')
                v |= static_cast<std::uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f')
                v |= static_cast<std::uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                v |= static_cast<std::uint32_t>(h - 'A' + 10);
            else
                fail("bad \\u escape");
        }
        return v;
    }

    std::string parse_string() {
        ++p_;
        std::string out;
        while (true) {
            if (p_ >= s_.size())
                fail("unterminated string");
            const char c = s_[p_++];
            if (c == '"')
                return out;
            if (static_cast<unsigned char>(c) < 0x20)
                fail("control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (p_ >= s_.size())
                fail("unterminated string");
            const char e = s_[p_++];
            switch (e) {
            case '"':
                out += '"';
                break;
            case '\\':
                out += '\\';
                break;
            case '/':
                out += '/';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                auto cp = hex4();
                if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(p_, 2) == "\\u") {
                    p_ += 2;
                    const auto lo = hex4();
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        fail("bad surrogate pair");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xD800 && cp <= 0xDFFF)
                    fail("lone surrogate");
                py::append_utf8(out, cp);
                break;
            }
            default:
                fail("bad escape");
            }
        }
    }

    value parse_number() {
        const auto b = p_;
        if (p_ < s_.size() && s_[p_] == '-')
            ++p_;
        bool is_float = false;
        while (p_ < s_.size() &&
               ((s_[p_] >= '0' && s_[p_] <= '9') || s_[p_] == '.' || s_[p_] == 'e' ||
                s_[p_] == 'E' || s_[p_] == '+' || s_[p_] == '-')) {
            is_float |= s_[p_] == '.' || s_[p_] == 'e' || s_[p_] == 'E';
            ++p_;
        }
        const std::string lit(s_.substr(b, p_ - b));
        if (lit.empty() || lit == "-")
            fail("expected a value");
        char* end = nullptr;
        if (!is_float) {
            errno = 0;
            const long long v = std::strtoll(lit.c_str(), &end, 10);
            if (end == lit.c_str() + lit.size() && errno == 0)
                return value::integer(v);
        }
        const double d = std::strtod(lit.c_str(), &end);
        if (end != lit.c_str() + lit.size())
            fail("bad number " + lit);
        return value::number(d);
    }
};

} // namespace

result<value> parse_json(std::string_view json, const limits& lim, bool from_input) {
    if (json.size() > lim.max_input_bytes)
        return error{errc::invalid_argument, "JSON input is " + std::to_string(json.size()) +
                                                 " bytes, more than the limit of " +
                                                 std::to_string(lim.max_input_bytes)};
    std::size_t bad = 0;
    if (!utf8_valid(json, &bad))
        return error{errc::invalid_argument,
                     "JSON input is not valid UTF-8 at byte " + std::to_string(bad)};
    try {
        return json_reader(json, lim, from_input).read();
    } catch (const template_error& e) {
        return error{errc::invalid_argument, e.what()};
    }
}

} // namespace bitnet::model::jinja
