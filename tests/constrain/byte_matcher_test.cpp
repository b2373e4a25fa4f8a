// model/constrain: the schema compiler and the byte matcher on hand-written cases, each chosen to
// fail if one rule of the canonical layout or one keyword were enforced wrongly.
#include "model/constrain/byte_matcher.hpp"

#include "model/constrain/json_schema.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace bitnet::model::constrain;

namespace {

bool accepts(const grammar& g, std::string_view text) {
    auto m = byte_matcher::start(g);
    return m.feed(g, text) && m.complete(g);
}

grammar compile(std::string_view schema) {
    auto g = compile_json_schema(schema);
    REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
    return std::move(*g);
}

} // namespace

TEST_CASE("constrain: objects take declared names in any order, required ones, no others") {
    const auto g = compile(R"({"type":"object","properties":{"a":{"type":"integer"},
        "b":{"type":"string"}},"required":["a"],"additionalProperties":false})");
    CHECK(accepts(g, R"({"a":1})"));
    CHECK(accepts(g, R"({"b":"x","a":-12})"));
    CHECK_FALSE(accepts(g, R"({"b":"x"})"));     // a is required
    CHECK_FALSE(accepts(g, R"({"a":1,"c":2})")); // no other names
    CHECK_FALSE(accepts(g, R"({"a":1,"a":2})")); // no name twice
    CHECK_FALSE(accepts(g, R"({ "a":1})"));      // compact layout only
    CHECK_FALSE(accepts(g, R"({"a":1.5})"));     // an integer
    CHECK_FALSE(accepts(g, R"({"a":01})"));
    CHECK_FALSE(accepts(g, R"({"a":1})"
                           "x")); // nothing after the value
}

TEST_CASE("constrain: open objects take other names with any value, but not the declared ones") {
    const auto g = compile(R"({"properties":{"ab":{"type":"boolean"}}})");
    CHECK(accepts(g, R"({"a":[1,{"x":null}],"abc":"s","ab":true})"));
    CHECK_FALSE(accepts(g, R"({"ab":1})"));
    CHECK(accepts(g, "12")); // not an object: the object keywords do not apply
}

TEST_CASE("constrain: strings count code points, escape canonically, follow patterns") {
    const auto g = compile(R"({"type":"string","minLength":2,"maxLength":3})");
    CHECK(accepts(g, "\"ab\""));
    CHECK(accepts(g, "\"\xC3\xA9\xC3\xA9\""));       // two code points, four bytes
    CHECK_FALSE(accepts(g, "\"\xF0\x9F\x92\xA9\"")); // one code point
    CHECK_FALSE(accepts(g, "\"abcd\""));
    CHECK(accepts(g, R"("a\n")"));
    CHECK_FALSE(accepts(g, R"("a\u000a")")); // \n has a short escape
    CHECK(accepts(g, R"("a\u0001")"));
    CHECK_FALSE(accepts(g, R"("a\/")"));
    CHECK_FALSE(accepts(g, "\"a\xC0\xAF\"")); // overlong UTF-8
    const auto p = compile(R"({"type":"string","pattern":"^[a-c]+\\d{2}$"})");
    CHECK(accepts(p, "\"abc12\""));
    CHECK_FALSE(accepts(p, "\"abc1\""));
    CHECK_FALSE(accepts(p, "\"abd12\""));
    const auto q = compile(R"({"type":"string","pattern":"x+"})"); // a search
    CHECK(accepts(q, "\"aaxbb\""));
    CHECK_FALSE(accepts(q, "\"aabb\""));
}

TEST_CASE("constrain: integer bounds and multipleOf are enforced digit by digit") {
    const auto g = compile(R"({"type":"integer","minimum":-5,"exclusiveMaximum":120})");
    for (int v = -30; v <= 300; ++v)
        CHECK_MESSAGE(accepts(g, std::to_string(v)) == (v >= -5 && v < 120), v);
    auto m = byte_matcher::start(g);
    CHECK_FALSE(m.feed(g, "2000")); // no prefix of an out-of-range number survives
    const auto k = compile(R"({"type":"integer","multipleOf":7})");
    for (int v = -50; v <= 50; ++v)
        CHECK(accepts(k, std::to_string(v)) == (v % 7 == 0));
}

TEST_CASE("constrain: enum, const, anyOf, arrays, $ref recursion") {
    const auto e = compile(R"({"enum":["red",1,null,{"a":[true]}]})");
    CHECK(accepts(e, R"("red")"));
    CHECK(accepts(e, "1"));
    CHECK(accepts(e, "null"));
    CHECK(accepts(e, R"({"a":[true]})"));
    CHECK_FALSE(accepts(e, "12"));
    CHECK_FALSE(accepts(e, R"({"a":[true,true]})"));
    const auto a = compile(R"({"type":"array","prefixItems":[{"type":"string"}],
        "items":{"type":"integer"},"minItems":2,"maxItems":3})");
    CHECK(accepts(a, R"(["x",1])"));
    CHECK(accepts(a, R"(["x",1,2])"));
    CHECK_FALSE(accepts(a, R"(["x"])"));
    CHECK_FALSE(accepts(a, R"(["x",1,2,3])"));
    CHECK_FALSE(accepts(a, R"([1,1])"));
    const auto r = compile(R"({"$defs":{"t":{"type":"object","properties":{"c":{"type":"array",
        "items":{"$ref":"#/$defs/t"}}},"additionalProperties":false}},"$ref":"#/$defs/t"})");
    CHECK(accepts(r, R"({"c":[{"c":[{}]},{}]})"));
    CHECK_FALSE(accepts(r, R"({"c":[{"d":1}]})"));
    const auto u = compile(R"({"anyOf":[{"type":"integer","maximum":3},{"type":"string"}]})");
    CHECK(accepts(u, "3"));
    CHECK_FALSE(accepts(u, "4"));
    CHECK(accepts(u, R"("4")"));
}

TEST_CASE("constrain: numbers may grow, so a complete number is not finished") {
    const auto g = compile(R"({"type":"number"})");
    auto m = byte_matcher::start(g);
    REQUIRE(m.feed(g, "-1.5e"));
    CHECK_FALSE(m.complete(g));
    REQUIRE(m.feed(g, "3"));
    CHECK(m.complete(g));
    CHECK_FALSE(m.finished());
    const auto o = compile(R"({"type":"boolean"})");
    auto b = byte_matcher::start(o);
    REQUIRE(b.feed(o, "true"));
    CHECK(b.finished());
}

TEST_CASE("constrain: unsupported keywords are refused by name, never ignored") {
    for (const char* kw : {"allOf", "oneOf", "not", "uniqueItems", "patternProperties", "if",
                           "contains", "dependentRequired"}) {
        auto g = compile_json_schema(std::string(R"({"type":"object",")") + kw + R"(":{}})");
        REQUIRE_FALSE(g);
        CHECK(g.error().value() == bitnet::errc::unsupported);
        CHECK(g.error().param == kw);
        CHECK(g.error().message.find(kw) != std::string::npos);
    }
    auto n = compile_json_schema(R"({"type":"number","multipleOf":0.5})");
    REQUIRE_FALSE(n);
    CHECK(n.error().param == "multipleOf");
    auto f = compile_json_schema(R"({"type":"string","format":"color"})");
    REQUIRE_FALSE(f);
    CHECK(f.error().param == "format");
    CHECK(f.error().message.find("color") != std::string::npos);
    auto bad = compile_json_schema(R"({"type":"thing"})");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().value() == bitnet::errc::invalid_argument);
    auto ref = compile_json_schema(R"({"$ref":"#/$defs/missing"})");
    REQUIRE_FALSE(ref);
    CHECK(ref.error().value() == bitnet::errc::invalid_argument);
}

TEST_CASE("constrain: a frame stack keeps its first frames in place and orders like a vector") {
    // The matcher's configurations hold frame_stack::in_place frames in the object and spill the
    // rest to the heap; across that line (pushes past it, pops back below it, copies and moves
    // of either form) every stack must hold, compare and order as std::vector<frame> does.
    std::mt19937_64 rng(3);
    auto random_frame = [&] {
        frame f;
        f.node = static_cast<std::uint32_t>(rng() % 3);
        f.x = static_cast<std::uint32_t>(rng() % 2);
        return f;
    };
    std::vector<frame_stack> stacks;
    std::vector<std::vector<frame>> reference;
    for (int i = 0; i < 300; ++i) {
        frame_stack s;
        std::vector<frame> r;
        const int ops = static_cast<int>(rng() % 24);
        for (int k = 0; k < ops; ++k) {
            if (!r.empty() && rng() % 3 == 0) {
                s.pop_back();
                r.pop_back();
            } else {
                const auto f = random_frame();
                s.push_back(f);
                r.push_back(f);
            }
            REQUIRE(s.size() == r.size());
            if (!r.empty())
                CHECK(s.back() == r.back());
        }
        frame_stack copy = s; // a copy of either form
        frame_stack moved = std::move(copy);
        CHECK(copy.empty()); // NOLINT(bugprone-use-after-move): moved-from is empty, by contract
        CHECK(std::equal(moved.begin(), moved.end(), r.begin(), r.end()));
        stacks.push_back(std::move(moved));
        reference.push_back(std::move(r));
    }
    for (std::size_t a = 0; a < stacks.size(); a += 7)
        for (std::size_t b = 0; b < stacks.size(); ++b) {
            CHECK((stacks[a] == stacks[b]) == (reference[a] == reference[b]));
            CHECK((stacks[a] <=> stacks[b]) == (reference[a] <=> reference[b]));
        }
    // Sorting and de-duplicating (what feed does with a byte's configurations) agree too.
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    std::sort(reference.begin(), reference.end());
    reference.erase(std::unique(reference.begin(), reference.end()), reference.end());
    REQUIRE(stacks.size() == reference.size());
    for (std::size_t i = 0; i < stacks.size(); ++i)
        CHECK(std::equal(stacks[i].begin(), stacks[i].end(), reference[i].begin(),
                         reference[i].end()));
}
