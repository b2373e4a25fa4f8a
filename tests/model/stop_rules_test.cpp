// Stop rules: stop strings across piece boundaries, held-back text released when a partial match
// fails, end-of-generation tokens and the token limit.
#include "model/sampling/stop_rules.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::model;

namespace {

stop_string_matcher matcher(std::vector<std::string> stops) {
    auto m = stop_string_matcher::create(std::move(stops));
    REQUIRE(m);
    return std::move(*m);
}

stop_rules rules(const stop_criteria& c) {
    auto r = stop_rules::create(c);
    REQUIRE(r);
    return std::move(*r);
}

} // namespace

TEST_CASE("stop strings: a match split across pieces is found, the stop text is not emitted") {
    auto m = matcher({"llo"});
    auto a = m.feed("Hel");
    CHECK_FALSE(a.matched);
    CHECK(a.emit == "He"); // "l" could start "llo"
    CHECK(m.held() == "l");
    auto b = m.feed("lo");
    CHECK(b.matched);
    CHECK(b.emit.empty());              // "He" already went out; nothing precedes "llo"
    CHECK(m.feed("more").emit.empty()); // ignored after a match
}

TEST_CASE("stop strings: text before the stop string in the same piece is emitted") {
    auto m = matcher({"</end>", "STOP"});
    CHECK(m.feed("abc").emit == "abc");
    auto r = m.feed("de</en");
    CHECK(r.emit == "de");
    CHECK(m.held() == "</en");
    r = m.feed("d>tail");
    CHECK(r.matched);
    CHECK(r.which == 0);
    CHECK(r.emit.empty());

    auto m2 = matcher({"</end>", "STOP"});
    r = m2.feed("xxSTOPyy</end>");
    CHECK(r.matched);
    CHECK(r.which == 1); // earliest start wins
    CHECK(r.emit == "xx");
    // The matcher remembers which one ended it (Anthropic's stop_sequence), and keeps it.
    CHECK(m2.matched_stop() == "STOP");
    CHECK(m.matched_stop() == "</end>");
    (void)m2.feed("more");
    CHECK(m2.matched_stop() == "STOP");
    CHECK(matcher({"x"}).matched_stop().empty());
}

TEST_CASE("stop strings: held text is released when the partial match fails") {
    auto m = matcher({"llo"});
    CHECK(m.feed("Hel").emit == "He");
    auto r = m.feed("p");
    CHECK_FALSE(r.matched);
    CHECK(r.emit == "lp");
    CHECK(m.held().empty());

    // A longer partial that fails, but whose tail restarts a prefix, keeps only that tail.
    auto m2 = matcher({"abab"});
    CHECK(m2.feed("xaba").emit == "x");
    r = m2.feed("a");
    CHECK(r.emit == "aba"); // "abaa": only the last "a" may still start "abab"
    CHECK(m2.held() == "a");
    CHECK(m2.flush() == "a");
    CHECK(m2.held().empty());

    // Each piece a single character, the whole stop string spread over four pieces.
    auto m3 = matcher({"stop"});
    std::string shown;
    bool matched = false;
    for (char ch : std::string("nonstop")) {
        auto f = m3.feed(std::string(1, ch));
        shown += f.emit;
        matched = f.matched;
    }
    CHECK(matched);
    CHECK(shown == "non");

    CHECK_FALSE(stop_string_matcher::create({"ok", ""}));
}

TEST_CASE("stop rules: EOG token ends without its text and releases held text") {
    auto r = rules({{2, 7}, 0, {"###"}});
    auto d = r.on_token(10, "a#");
    CHECK(d.reason == finish_reason::none);
    CHECK(d.emit == "a");
    d = r.on_token(7, "</s>");
    CHECK(d.reason == finish_reason::eog);
    CHECK(d.emit == "#");
    CHECK(r.finished() == finish_reason::eog);
    CHECK(r.on_token(11, "x").emit.empty());
    CHECK(std::string(finish_reason_name(finish_reason::eog)) == "eog");
}

TEST_CASE("stop rules: max tokens ends with 'length' and flushes, stop strings win first") {
    auto r = rules({{2}, 3, {"zz"}});
    CHECK(r.on_token(5, "a").reason == finish_reason::none);
    CHECK(r.on_token(5, "bz").emit == "b");
    auto d = r.on_token(5, "c");
    CHECK(d.reason == finish_reason::length);
    CHECK(d.emit == "zc");
    CHECK(r.n_generated() == 3);

    auto r2 = rules({{2}, 2, {"zz"}});
    CHECK(r2.on_token(5, "az").emit == "a");
    d = r2.on_token(5, "zq"); // completes the stop string on the last allowed token
    CHECK(d.reason == finish_reason::stop_string);
    CHECK(d.emit.empty());

    auto unlimited = rules({{}, 0, {}});
    for (int i = 0; i < 1000; ++i)
        REQUIRE(unlimited.on_token(1, "x").reason == finish_reason::none);
}
