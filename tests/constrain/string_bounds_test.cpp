// model/constrain: strings whose length bounds meet a pattern or a format, and formats that write
// only real values. Each case walks 20 seeds of uniformly random allowed tokens (the widest
// temperature-1 sampling can be) through both real tokenizers: every walk must end with an
// end-of-generation token (finish `stop`) and its value must be valid by a checker written here
// from the RFCs, independent of the grammar.
#include "model/constrain/json_schema.hpp"
#include "model/constrain/token_constraint.hpp"
#include "vocab_fixtures.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <regex>
#include <string>

using namespace bitnet;
using namespace bitnet::model::constrain;

namespace {

/// One walk's end: whether it stopped with an end-of-generation token, and the text written.
struct walk_end {
    bool stopped = false;
    std::string text;
    std::string why; ///< what went wrong, for the failure message
};

walk_end random_walk(const std::shared_ptr<const compiled_constraint>& c,
                     const model::tokenizer& tok, std::uint64_t seed, int max_tokens) {
    std::mt19937_64 rng(seed);
    walk_end out;
    token_constraint tc(c);
    for (int step = 0; step < max_tokens; ++step) {
        auto mask = tc.allowed();
        if (!mask) {
            out.why = mask.error().message;
            return out;
        }
        std::vector<std::int32_t> allowed;
        for (std::int32_t id = 0; id < tok.n_vocab(); ++id)
            if (mask_has(**mask, id))
                allowed.push_back(id);
        if (allowed.empty()) {
            out.why = "no token can continue";
            return out;
        }
        const auto id = allowed[rng() % allowed.size()];
        if (tok.is_eog(id)) {
            out.stopped = tc.complete();
            return out;
        }
        REQUIRE(tc.accept(id));
        out.text += tok.token_to_piece(id, false);
    }
    out.why = "no end within " + std::to_string(max_tokens) + " tokens";
    return out;
}

/// The string value of a JSON string literal without escapes (formats write none).
std::string unquote(const std::string& s) {
    return s.size() >= 2 && s.front() == '"' && s.back() == '"' ? s.substr(1, s.size() - 2) : "";
}

bool leap(int y) {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/// RFC 3339 full-date, with the days of each month and leap years (year 0000 is outside what
/// common validators take, and is never written).
bool valid_date(const std::string& s) {
    static const std::regex shape(R"(^(\d{4})-(\d{2})-(\d{2})$)");
    std::smatch m;
    if (!std::regex_match(s, m, shape))
        return false;
    const int y = std::stoi(m[1]), mo = std::stoi(m[2]), d = std::stoi(m[3]);
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || mo < 1 || mo > 12 || d < 1)
        return false;
    return d <= days[mo - 1] + (mo == 2 && leap(y) ? 1 : 0);
}

/// RFC 3339 full-time with its offset; second 60 is never written (documented).
bool valid_time(const std::string& s) {
    static const std::regex shape(
        R"(^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$)");
    return std::regex_match(s, shape);
}

/// RFC 1123 host name: labels of 1-63 letters, digits and hyphens, no hyphen first or last,
/// 253 bytes at most.
bool valid_hostname(const std::string& s, bool need_dot = false) {
    if (s.empty() || s.size() > 253)
        return false;
    static const std::regex label(R"(^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$)");
    std::size_t from = 0, labels = 0;
    for (;;) {
        const auto dot = s.find('.', from);
        const auto l = s.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
        if (l.size() > 63 || !std::regex_match(l, label))
            return false;
        ++labels;
        if (dot == std::string::npos)
            break;
        from = dot + 1;
    }
    return !need_dot || labels >= 2;
}

/// RFC 5321 Mailbox with a Dot-string local part: atoms of atext joined by single dots, at most
/// 64 bytes; a domain of host-name labels with at least one dot; 254 bytes in all.
bool valid_email(const std::string& s) {
    const auto at = s.rfind('@');
    if (at == std::string::npos || s.size() > 254)
        return false;
    const auto local = s.substr(0, at);
    static const std::regex dot_string(
        R"(^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$)");
    return local.size() <= 64 && std::regex_match(local, dot_string) &&
           valid_hostname(s.substr(at + 1), true);
}

/// Walks `seeds` random walks of `schema` through `tok`; each must stop and pass `valid`.
void check_walks(const model::tokenizer& tok, const std::string& schema,
                 const std::function<bool(const std::string&)>& valid, int seeds = 20,
                 int max_tokens = 600) {
    auto c = schema_cache::shared().get(schema, tok);
    REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
    int good = 0;
    for (int seed = 1; seed <= seeds; ++seed) {
        const auto w = random_walk(*c, tok, static_cast<std::uint64_t>(seed), max_tokens);
        CHECK_MESSAGE(w.stopped,
                      schema << " seed " << seed << ": " << w.why << " after " << w.text);
        if (!w.stopped)
            continue;
        const auto v = unquote(w.text);
        CHECK_MESSAGE(valid(v), schema << " seed " << seed << ": invalid value " << w.text);
        good += valid(v) ? 1 : 0;
    }
    CHECK(good == seeds);
}

const model::tokenizer& tokenizer_of(int which) {
    return which == 0 ? test::default_tokenizer() : test::llama3_tokenizer();
}

const char* tokenizer_name(int which) {
    return which == 0 ? "default" : "llama3";
}

} // namespace

TEST_CASE("string bounds: pattern + maxLength, every walk stops within the cap and matches") {
    static const std::regex pat(R"(^[a-z]+@x\.io$)");
    for (int which = 0; which < 2; ++which) {
        CAPTURE(tokenizer_name(which));
        check_walks(
            tokenizer_of(which), R"({"type":"string","pattern":"^[a-z]+@x\\.io$","maxLength":10})",
            [](const std::string& v) { return v.size() <= 10 && std::regex_match(v, pat); });
        check_walks(tokenizer_of(which),
                    R"({"type":"string","pattern":"^(ab)+$","minLength":5,"maxLength":9})",
                    [](const std::string& v) {
                        return v.size() >= 5 && v.size() <= 9 &&
                               std::regex_match(v, std::regex("^(ab)+$"));
                    });
    }
}

TEST_CASE("string bounds: email with maxLength, and email alone, stop and are RFC 5321 mailboxes") {
    for (int which = 0; which < 2; ++which) {
        CAPTURE(tokenizer_name(which));
        check_walks(tokenizer_of(which), R"({"type":"string","format":"email","maxLength":20})",
                    [](const std::string& v) { return v.size() <= 20 && valid_email(v); });
        check_walks(tokenizer_of(which), R"({"type":"string","format":"email"})", valid_email);
    }
}

TEST_CASE("string formats: dates have real days (Feb 29 in leap years only, 31 in 31-day months)") {
    for (int which = 0; which < 2; ++which) {
        CAPTURE(tokenizer_name(which));
        check_walks(tokenizer_of(which), R"({"type":"string","format":"date"})", valid_date);
        check_walks(tokenizer_of(which), R"({"type":"string","format":"date-time"})",
                    [](const std::string& v) {
                        return v.size() > 11 && (v[10] == 'T' || v[10] == 't') &&
                               valid_date(v.substr(0, 10)) && valid_time(v.substr(11));
                    });
        check_walks(tokenizer_of(which), R"({"type":"string","format":"time"})", valid_time);
    }
    auto g = compile_json_schema(R"({"type":"string","format":"date"})");
    REQUIRE(g);
    auto takes = [&](const std::string& v) {
        auto m = byte_matcher::start(*g);
        return m.feed(*g, "\"" + v + "\"") && m.complete(*g);
    };
    CHECK(takes("2024-02-29"));
    CHECK(takes("2000-02-29"));
    CHECK(takes("0004-02-29"));
    CHECK_FALSE(takes("2023-02-29"));
    CHECK_FALSE(takes("2100-02-29"));
    CHECK_FALSE(takes("1900-02-29"));
    CHECK_FALSE(takes("2026-04-31"));
    CHECK_FALSE(takes("2026-02-30"));
    CHECK(takes("2026-12-31"));
    CHECK_FALSE(takes("0000-01-01"));
    auto t = compile_json_schema(R"({"type":"string","format":"time"})");
    REQUIRE(t);
    auto m = byte_matcher::start(*t);
    CHECK_FALSE((m.feed(*t, "\"23:59:60Z\"") && m.complete(*t))); // leap seconds: never written
}

TEST_CASE("string formats: hostname labels are at most 63 bytes, names at most 253") {
    for (int which = 0; which < 2; ++which) {
        CAPTURE(tokenizer_name(which));
        check_walks(tokenizer_of(which), R"({"type":"string","format":"hostname"})",
                    [](const std::string& v) { return valid_hostname(v); });
        check_walks(tokenizer_of(which), R"({"type":"string","format":"hostname","minLength":70})",
                    [](const std::string& v) { return v.size() >= 70 && valid_hostname(v); });
    }
    auto g = compile_json_schema(R"({"type":"string","format":"hostname"})");
    REQUIRE(g);
    auto takes = [&](const std::string& v) {
        auto m = byte_matcher::start(*g);
        return m.feed(*g, "\"" + v + "\"") && m.complete(*g);
    };
    CHECK(takes(std::string(63, 'a') + ".org"));
    CHECK_FALSE(takes(std::string(64, 'a') + ".org"));
    CHECK_FALSE(takes("a-.org"));
}

TEST_CASE("string bounds: a pattern or format that cannot fit its length bounds is refused") {
    struct bad {
        const char* schema;
        const char* keyword;
    };
    for (const auto& b : {
             bad{R"({"type":"string","pattern":"^[a-z]{5}$","maxLength":3})", "pattern"},
             bad{R"({"type":"string","pattern":"^(ab)+$","minLength":3,"maxLength":3})", "pattern"},
             bad{R"({"type":"string","format":"date","maxLength":9})", "format"},
             bad{R"({"type":"string","format":"uuid","minLength":40})", "format"},
             bad{R"({"type":"string","format":"email","maxLength":4})", "format"},
         }) {
        CAPTURE(std::string(b.schema));
        auto g = compile_json_schema(b.schema);
        REQUIRE_FALSE(g);
        CHECK(g.error().message.find(b.keyword) != std::string::npos);
        CHECK((g.error().message.find("maxLength") != std::string::npos ||
               g.error().message.find("minLength") != std::string::npos));
    }
    CHECK(compile_json_schema(R"({"type":"string","pattern":"^[a-z]{5}$","maxLength":5})"));
    CHECK(compile_json_schema(R"({"type":"string","format":"date","maxLength":10})"));
}
