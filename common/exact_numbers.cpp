#include "common/exact_numbers.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <charconv>
#include <cstdint>
#include <tuple>

namespace bitnet::json_numbers {

namespace {

constexpr char mark = '\xFF';

/// A decimal as (negative, significant digits without leading or trailing zeros, exponent) with
/// value 0.digits × 10^exponent: two texts are the same number exactly when these are equal.
struct decimal {
    bool negative = false;
    std::string digits;
    std::int64_t exponent = 0;
    friend bool operator==(const decimal&, const decimal&) = default;
};

decimal parse_decimal(std::string_view t) {
    decimal d;
    std::size_t i = 0;
    if (i < t.size() && t[i] == '-') {
        d.negative = true;
        ++i;
    }
    std::int64_t point = 0; // digits before the decimal point
    bool seen_point = false;
    for (; i < t.size() && t[i] != 'e' && t[i] != 'E'; ++i) {
        if (t[i] == '.') {
            seen_point = true;
            continue;
        }
        if (d.digits.empty() && t[i] == '0') {
            if (seen_point)
                --point; // leading zeros after the point shift the exponent
            continue;
        }
        d.digits += t[i];
        if (!seen_point)
            ++point;
    }
    std::int64_t exp = 0;
    if (i < t.size()) {
        ++i;
        bool neg = false;
        if (i < t.size() && (t[i] == '+' || t[i] == '-'))
            neg = t[i++] == '-';
        for (; i < t.size(); ++i)
            exp = std::min<std::int64_t>(exp * 10 + (t[i] - '0'), 1'000'000'000);
        exp = neg ? -exp : exp;
    }
    while (!d.digits.empty() && d.digits.back() == '0')
        d.digits.pop_back();
    if (d.digits.empty())
        return decimal{}; // zero, of either sign
    d.exponent = point + exp;
    return d;
}

/// What Boost.JSON makes of number text `t`, as decimal text ("" when it is no number).
std::string as_parsed(std::string_view t) {
    boost::system::error_code ec;
    const auto v = boost::json::parse(t, ec);
    if (ec)
        return {};
    return number_text(v).value_or(std::string());
}

} // namespace

std::optional<std::string> mark_inexact_numbers(std::string_view text) {
    std::string out;
    bool changed = false;
    std::size_t copied = 0;
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (c == '"') { // skip a string, escapes included
            for (++i; i < text.size() && text[i] != '"'; ++i)
                if (text[i] == '\\')
                    ++i;
            ++i;
            continue;
        }
        if (c != '-' && (c < '0' || c > '9')) {
            ++i;
            continue;
        }
        const std::size_t start = i;
        while (i < text.size() &&
               (text[i] == '-' || text[i] == '+' || text[i] == '.' || text[i] == 'e' ||
                text[i] == 'E' || (text[i] >= '0' && text[i] <= '9')))
            ++i;
        const auto num = text.substr(start, i - start);
        if (parse_decimal(num) == parse_decimal(as_parsed(num)))
            continue;
        out.append(text.substr(copied, start - copied));
        out += '"';
        out += mark;
        out.append(num);
        out += '"';
        copied = i;
        changed = true;
    }
    if (!changed)
        return std::nullopt;
    out.append(text.substr(copied));
    return out;
}

std::optional<std::string_view> exact_number_text(const boost::json::value& v) {
    if (!v.is_string())
        return std::nullopt;
    const std::string_view s = v.get_string();
    if (s.empty() || s[0] != mark)
        return std::nullopt;
    return s.substr(1);
}

std::optional<std::string> number_text(const boost::json::value& v) {
    if (auto t = exact_number_text(v))
        return std::string(*t);
    if (v.is_int64())
        return std::to_string(v.get_int64());
    if (v.is_uint64())
        return std::to_string(v.get_uint64());
    if (v.is_double()) {
        char buf[64];
        const auto r = std::to_chars(buf, buf + sizeof buf, v.get_double());
        return std::string(buf, r.ptr);
    }
    return std::nullopt;
}

wide_int scaled_integer(std::string_view t, int scale, bool ceil) {
    const auto d = parse_decimal(t);
    if (d.digits.empty())
        return 0;
    constexpr int cap_digits = 36;
    wide_int cap = 1;
    for (int k = 0; k < cap_digits; ++k)
        cap *= 10;
    // value × 10^scale = digits × 10^shift
    const std::int64_t shift = d.exponent - static_cast<std::int64_t>(d.digits.size()) + scale;
    wide_int mag = 0;
    bool inexact = false;
    if (d.exponent + scale > cap_digits) {
        mag = cap;
    } else {
        const std::int64_t keep = shift >= 0 ? static_cast<std::int64_t>(d.digits.size())
                                             : static_cast<std::int64_t>(d.digits.size()) +
                                                   shift; // digits left of the point
        for (std::int64_t k = 0; k < keep && k < static_cast<std::int64_t>(d.digits.size()); ++k)
            mag = mag * 10 + (d.digits[static_cast<std::size_t>(k)] - '0');
        for (std::int64_t k = 0; k < shift; ++k)
            mag *= 10;
        inexact = keep < static_cast<std::int64_t>(d.digits.size());
        if (mag > cap)
            mag = cap;
    }
    // Rounding toward +infinity or -infinity, on the magnitude of a signed value.
    if (inexact && (ceil != d.negative))
        ++mag;
    return d.negative ? -mag : mag;
}

bool is_integer_text(std::string_view t) {
    const auto d = parse_decimal(t);
    return d.digits.empty() || d.exponent >= static_cast<std::int64_t>(d.digits.size());
}

} // namespace bitnet::json_numbers
