// model/constrain under the schemas an attacker or a careless client sends (issue table "one
// request crashes the process or wedges a model"): each case fails on the recursive, unbounded
// compiler and matcher this replaced (a crash, a hang, a wrong answer) and passes here. Costs are
// asserted as work counts (matcher steps, configurations, nodes), never as times.
#include "model/constrain/byte_matcher.hpp"
#include "model/constrain/json_schema.hpp"
#include "model/constrain/limits.hpp"
#include "model/constrain/mask_cache.hpp"
#include "model/constrain/token_constraint.hpp"
#include "support/utf8_encode.hpp"
#include "vocab_fixtures.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace bitnet;
using namespace bitnet::model::constrain;

namespace {

bool accepts(const grammar& g, std::string_view text) {
    auto m = byte_matcher::start(g);
    return m.feed(g, text) && m.complete(g);
}

grammar compile(const std::string& schema) {
    auto g = compile_json_schema(schema);
    REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
    return std::move(*g);
}

std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\';
        out += c;
    }
    return out + "\"";
}

/// The most configurations any prefix of `text` kept alive.
std::size_t widest(const grammar& g, std::string_view text) {
    auto m = byte_matcher::start(g);
    std::size_t w = m.width();
    for (char ch : text) {
        REQUIRE(m.feed(g, static_cast<std::uint8_t>(ch)));
        w = std::max(w, m.width());
    }
    return w;
}

} // namespace

TEST_CASE("abuse: 12,000 nested regex groups are a clean refusal naming the limit") {
    const std::string pat = std::string(12000, '(') + "a" + std::string(12000, ')');
    auto g = compile_json_schema(R"({"type":"string","pattern":)" + quoted(pat) + "}");
    REQUIRE_FALSE(g);
    CHECK(g.error().message.find("max_pattern_nesting") != std::string::npos);
    CHECK(g.error().message.size() < 400); // an excerpt, not the pattern
    // Just inside the limit it compiles and matches.
    const std::string ok = std::string(60, '(') + "a" + std::string(60, ')');
    const auto g2 = compile(R"({"type":"string","pattern":"^)" + ok + R"($"})");
    CHECK(accepts(g2, "\"a\""));
    CHECK_FALSE(accepts(g2, "\"b\""));
}

TEST_CASE("abuse: a const or enum value deeper than the matcher writes is refused at compile "
          "time naming max_value_depth") {
    // `arrays` arrays around one scalar: arrays + 1 matcher frames.
    auto nested = [](std::size_t arrays, const std::string& leaf) {
        return std::string(arrays, '[') + leaf + std::string(arrays, ']');
    };
    const std::size_t fits = limits::max_value_depth - 1;
    const auto deepest = nested(fits, "1");
    const auto g = compile(R"({"const":)" + deepest + "}");
    CHECK(accepts(g, deepest)); // what compiles can be written
    CHECK(accepts(compile(R"({"const":)" + nested(fits + 1, "") + "}"), nested(fits + 1, "")));
    for (const auto& schema : {R"({"const":)" + nested(fits + 1, "1") + "}",
                               R"({"enum":[1,)" + nested(fits + 1, R"("x")") + "]}",
                               R"({"const":{"a":)" + nested(fits, "{}") + "}}"}) {
        auto refused = compile_json_schema(schema);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().message.find("max_value_depth") != std::string::npos);
        CHECK(refused.error().message.find("nested 33 levels") != std::string::npos);
    }
}

TEST_CASE("abuse: errors quote a short excerpt of a long name, never the whole of it") {
    const std::string name(10000, 'k');
    auto g = compile_json_schema(R"({"type":"object",)" + quoted(name) + ":1}");
    REQUIRE_FALSE(g);
    CHECK(g.error().message.size() < 700);
    CHECK(g.error().param.size() < 100);
    std::string deep = R"({"not":{}})"; // refused, 30 long names deep
    for (int i = 0; i < 30; ++i)
        deep = R"({"type":"object","properties":{)" + quoted(name + std::to_string(i)) + ":" +
               deep + "}}";
    auto d = compile_json_schema(deep);
    REQUIRE_FALSE(d);
    CHECK(d.error().message.size() < 700);
}

TEST_CASE("abuse: a pattern of 300,000 stacked quantifiers is refused, not a deep tree") {
    const std::string pat = "a" + std::string(300000, '*');
    auto g = compile_json_schema(R"({"type":"string","pattern":)" + quoted(pat) + "}");
    REQUIRE_FALSE(g);
    CHECK(g.error().message.find("quantifier after a quantifier") != std::string::npos);
    CHECK(accepts(compile(R"({"type":"string","pattern":"^a*?b+?$"})"), "\"aab\""));
}

TEST_CASE("abuse: a chain of 20,000 $defs, each a $ref to the next, compiles without recursion") {
    std::string defs;
    const int n = 20000;
    for (int i = 0; i < n; ++i)
        defs +=
            "\"d" + std::to_string(i) + "\":{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) + "\"},";
    defs += "\"d" + std::to_string(n) + "\":{\"type\":\"integer\",\"maximum\":9}";
    const auto g = compile(R"({"$defs":{)" + defs + R"(},"$ref":"#/$defs/d0"})");
    CHECK(accepts(g, "7"));
    CHECK_FALSE(accepts(g, "10"));
    // Aliases collapse: the root is the integer itself, one configuration.
    CHECK(widest(g, "7") == 1);
}

TEST_CASE("abuse: a $ref cycle that writes no byte (left recursion) is a 400 at compile time") {
    auto g = compile_json_schema(R"({"anyOf":[{"$ref":"#"},{"$ref":"#"},{"$ref":"#"}]})");
    REQUIRE_FALSE(g);
    CHECK(g.error().value() == errc::invalid_argument);
    CHECK(g.error().message.find("left recursion") != std::string::npos);
    auto mutual = compile_json_schema(
        R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"},{"type":"null"}]},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})");
    REQUIRE_FALSE(mutual);
    CHECK(mutual.error().message.find("left recursion") != std::string::npos);
    // Recursion through a byte ({"next": ...}) is fine.
    const auto list = compile(R"({"anyOf":[{"type":"null"},{"type":"object","properties":
        {"next":{"$ref":"#"}},"required":["next"],"additionalProperties":false}]})");
    CHECK(accepts(list, R"({"next":{"next":null}})"));
}

TEST_CASE("abuse: 25 levels of anyOf over two refs to the next stay one alternative wide") {
    std::string defs;
    for (int i = 0; i < 25; ++i)
        defs += "\"d" + std::to_string(i) + "\":{\"anyOf\":[{\"$ref\":\"#/$defs/d" +
                std::to_string(i + 1) + "\"},{\"$ref\":\"#/$defs/d" + std::to_string(i + 1) +
                "\"}]},";
    defs += R"("d25":{"type":"array","items":{"$ref":"#/$defs/d0"},"maxItems":2})";
    const auto g = compile(R"({"$defs":{)" + defs + R"(},"$ref":"#/$defs/d0"})");
    CHECK(g.nodes.size() < 200);
    const std::string v = "[[[],[]],[[[]]]]";
    CHECK(accepts(g, v));
    CHECK(widest(g, v) == 1);
}

TEST_CASE("abuse: two identical recursive object alternatives merge into one configuration") {
    const char* alt =
        R"({"type":"object","properties":{"c":{"$ref":"#"}},"additionalProperties":false})";
    const auto g = compile(std::string(R"({"anyOf":[)") + alt + "," + alt + "]}");
    std::string v = "{}";
    for (int i = 0; i < 20; ++i)
        v = R"({"c":)" + v + "}";
    CHECK(accepts(g, v));
    CHECK(widest(g, v) == 1); // was 2^depth
}

TEST_CASE("abuse: 32 strings that differ only in maxLength are one configuration, and joined "
          "ranges keep their gaps") {
    std::string alts;
    for (int i = 0; i < 32; ++i)
        alts += (i ? "," : "") + std::string(R"({"type":"string","maxLength":)") +
                std::to_string(100000 + i) + "}";
    const auto g = compile(R"({"anyOf":[)" + alts + "]}");
    const std::string v = "\"" + std::string(200, 'x') + "\"";
    CHECK(accepts(g, v));
    CHECK(widest(g, v) == 1); // was 32 through every byte
    // The longest alternative's cap is the cap: 100,031 code points and no more.
    CHECK(accepts(g, "\"" + std::string(100031, 'y') + "\""));
    CHECK_FALSE(accepts(g, "\"" + std::string(100032, 'y') + "\""));

    // Ranges that touch join; a gap stays a gap.
    const auto touch = compile(R"({"anyOf":[{"type":"string","maxLength":3},
        {"type":"string","minLength":4,"maxLength":6}]})");
    CHECK(accepts(touch, R"("abcd")"));
    CHECK(accepts(touch, R"("")"));
    CHECK_FALSE(accepts(touch, R"("abcdefg")"));
    CHECK(widest(touch, R"("abcdef")") == 1);
    const auto gap = compile(R"({"anyOf":[{"type":"string","maxLength":3},
        {"type":"string","minLength":5,"maxLength":6}]})");
    CHECK(accepts(gap, R"("abc")"));
    CHECK_FALSE(accepts(gap, R"("abcd")"));
    CHECK(accepts(gap, R"("abcde")"));

    // The same pattern joins over its ranges; another pattern, or a format, stays apart.
    const auto same = compile(R"({"anyOf":[{"type":"string","pattern":"^a+$","maxLength":2},
        {"type":"string","pattern":"^a+$","minLength":3,"maxLength":4}]})");
    CHECK(accepts(same, R"("aaaa")"));
    CHECK_FALSE(accepts(same, R"("aaaaa")"));
    CHECK_FALSE(accepts(same, R"("ab")"));
    CHECK(widest(same, R"("aaaa")") == 1);
    const auto apart = compile(R"({"anyOf":[{"type":"string","pattern":"^a+$","maxLength":2},
        {"type":"string","pattern":"^b+$","maxLength":4}]})");
    CHECK(accepts(apart, R"("bbbb")"));
    CHECK_FALSE(accepts(apart, R"("aaa")"));
    CHECK(accepts(apart, R"("aa")"));
    CHECK(widest(apart, "\"") == 2); // two patterns: two configurations
}

TEST_CASE("abuse: a class of 140,000 ranges is sorted once and looked up by binary search") {
    // Every other code point from U+0100 on, excluded: 140,000 single-code-point ranges.
    const std::string cls = test::sparse_code_points(140000);
    const std::string schema = R"({"type":"string","pattern":"^[^)" + cls + R"(]*$"})";
    CHECK(schema.size() > 400'000);
    const auto g = compile(schema);
    REQUIRE(g.regexes.size() == 1);
    CHECK(accepts(g, "\"abc\xC4\x81\""));      // U+0101 lies between two excluded code points
    CHECK_FALSE(accepts(g, "\"ab\xC4\x80\"")); // U+0100 is excluded
    // A mask over the default vocabulary costs matcher steps, not steps × ranges.
    auto c = schema_cache::shared().get(schema, test::default_tokenizer());
    REQUIRE(c);
    token_constraint tc(*c);
    REQUIRE(tc.accept(test::default_tokenizer().encode("\"").value().at(0)));
    auto mask = tc.allowed();
    REQUIRE(mask);
}

TEST_CASE("abuse: an enum of 14,000 strings is one configuration, whatever its size") {
    std::string members;
    for (int i = 0; i < 14000; ++i)
        members += (i ? "," : "") + quoted("value-" + std::to_string(i * 7919 % 100000));
    const auto g = compile(R"({"enum":[)" + members + "]}");
    CHECK(accepts(g, "\"value-7919\""));
    CHECK_FALSE(accepts(g, "\"value-1\""));
    CHECK(widest(g, "\"value-7919\"") == 1);
    // Past the stated limit it is refused by name.
    std::string too_many(1, '[');
    for (std::size_t i = 0; i <= limits::max_enum_members; ++i)
        too_many += (i ? ",1" : "1");
    auto r = compile_json_schema(R"({"enum":)" + too_many + "]}");
    REQUIRE_FALSE(r);
    CHECK(r.error().param == "max_enum_members");
}

TEST_CASE("abuse: 1,000 tool-call alternatives mask within the budget") {
    std::string alts;
    for (int i = 0; i < 1000; ++i)
        alts +=
            std::string(i ? "," : "") + R"({"type":"object","properties":{"name":{"const":"tool_)" +
            std::to_string(i) +
            R"("},"arguments":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false})";
    const std::string schema = R"({"anyOf":[)" + alts + "]}";
    auto c = schema_cache::shared().get(schema, test::default_tokenizer());
    REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
    token_constraint tc(*c);
    const auto ids = test::default_tokenizer().encode(R"({"name":"tool_417","arguments":{"x":3}})");
    REQUIRE(ids);
    for (auto id : *ids) {
        auto m = tc.allowed();
        REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
        REQUIRE(mask_has(**m, id));
        REQUIRE(tc.accept(id));
    }
    CHECK(tc.complete());
}

TEST_CASE("abuse: 1,000 functions as the server's call union stay one configuration") {
    std::string fns;
    for (int i = 0; i < 1000; ++i)
        fns += std::string(i ? "," : "") + R"({"name":"tool_)" + std::to_string(i) +
               R"(","arguments":{"type":"object","properties":{"x":{"type":"integer","maximum":)" +
               std::to_string(i) + R"(}},"required":["x"],"additionalProperties":false}})";
    const auto g = compile(R"({"x-bitnet-tool-union":[)" + fns + "]}");
    const std::string call = R"({"name":"tool_417","arguments":{"x":400}})";
    CHECK(accepts(g, call));
    CHECK(widest(g, call) == 1);
    CHECK_FALSE(accepts(g, R"({"name":"tool_417","arguments":{"x":418}})")); // tool 417's bound
    CHECK_FALSE(accepts(g, R"({"arguments":{"x":1},"name":"tool_417"})"));   // name first
    CHECK_FALSE(accepts(g, R"({"name":"tool_1000","arguments":{"x":1}})"));
    // Arguments that admit no value make the whole call a 400, not a dead end.
    auto bad = compile_json_schema(
        R"({"x-bitnet-tool-union":[{"name":"f","arguments":{"type":"integer","minimum":2,"maximum":1}}]})");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("admits no") != std::string::npos);
}

TEST_CASE("abuse: the mask cache keeps to its byte budget and shares it fairly") {
    mask_cache cache(1 << 20);
    const token_mask m(2048, ~0ULL); // 16 KiB, a 128k vocabulary's mask
    for (int i = 0; i < 500; ++i)    // one schema with many states
        cache.put(1, "state-" + std::to_string(i), std::make_shared<const token_mask>(m));
    CHECK(cache.snapshot().bytes <= (1u << 20));
    for (int i = 0; i < 8; ++i) // a second schema with few
        cache.put(2, "s" + std::to_string(i), std::make_shared<const token_mask>(m));
    for (int i = 500; i < 1000; ++i) // the first goes on
        cache.put(1, "state-" + std::to_string(i), std::make_shared<const token_mask>(m));
    const auto f = cache.snapshot();
    CHECK(f.bytes <= (1u << 20));
    CHECK(f.evictions > 900);
    for (int i = 0; i < 8; ++i) // the small schema kept its masks: the big one paid
        CHECK(cache.find(2, "s" + std::to_string(i)) != nullptr);
    cache.forget(1);
    CHECK(cache.snapshot().schemas == 1);
}

TEST_CASE("abuse: 200 distinct-state requests through the shared cache stay under its budget") {
    auto& cache = mask_cache::shared();
    const auto before = cache.snapshot().budget_bytes;
    cache.set_budget(4u << 20);
    const auto& tok = test::llama3_tokenizer();
    for (int i = 0; i < 200; ++i) {
        const std::string schema = R"({"type":"integer","minimum":)" + std::to_string(i) +
                                   R"(,"maximum":)" + std::to_string(100000 + i * 37) + "}";
        auto c = schema_cache::shared().get(schema, tok);
        REQUIRE(c);
        token_constraint tc(*c);
        for (auto id : tok.encode(std::to_string(500 + i)).value()) {
            REQUIRE(tc.allowed());
            REQUIRE(tc.accept(id));
        }
        CHECK(cache.snapshot().bytes <= (4u << 20));
    }
    cache.set_budget(before);
}

TEST_CASE("exact: multipleOf past 32 bits, and with bounds beside it") {
    const auto g = compile(R"({"type":"integer","multipleOf":10000000000})");
    CHECK_FALSE(accepts(g, "4294967296"));
    CHECK(accepts(g, "20000000000"));
    CHECK(accepts(g, "-10000000000"));
    CHECK(accepts(g, "0"));
    const auto b = compile(R"({"type":"integer","multipleOf":7,"minimum":10,"maximum":20})");
    CHECK(accepts(b, "14"));
    CHECK_FALSE(accepts(b, "7"));
    CHECK_FALSE(accepts(b, "21"));
    auto m = byte_matcher::start(b);
    CHECK_FALSE(m.feed(b, "3")); // 3x can be no multiple of 7 in [10, 20]... 35 is out
}

TEST_CASE("exact: 64 properties with 1,100-byte names keep their values apart") {
    std::string props, req;
    auto name = [](int i) { return std::string(1100, 'k') + std::to_string(i); };
    for (int i = 0; i < 64; ++i) {
        props += (i ? "," : "") + quoted(name(i)) +
                 (i == 63 ? R"(:{"type":"integer"})" : R"(:{"type":"string"})");
    }
    const auto g = compile(R"({"type":"object","properties":{)" + props +
                           R"(},"additionalProperties":false})");
    CHECK(accepts(g, "{" + quoted(name(63)) + ":5}"));
    CHECK_FALSE(accepts(g, "{" + quoted(name(63)) + ":\"x\"}"));
    CHECK(accepts(g, "{" + quoted(name(5)) + ":\"x\"}"));
    // Open objects: other names exclude the declared ones through a trie past 65,536 nodes.
    const auto open = compile(R"({"type":"object","properties":{)" + props + "}}");
    CHECK_FALSE(accepts(open, "{" + quoted(name(63)) + ":\"x\"}"));
    CHECK(accepts(open, "{" + quoted(name(63) + "x") + ":\"x\"}"));
}

TEST_CASE("exact: integer bounds over the whole int64 range, and 19 digits at most") {
    const auto g = compile(
        R"({"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807})");
    CHECK(accepts(g, "9223372036854775807"));
    CHECK_FALSE(accepts(g, "9223372036854775808"));
    CHECK(accepts(g, "-9223372036854775808"));
    CHECK_FALSE(accepts(g, "-9223372036854775809"));
    const auto near = compile(R"({"type":"integer","minimum":9223372036854775800})");
    CHECK_FALSE(accepts(near, "9223372036854775799"));
    CHECK(accepts(near, "9223372036854775801"));
    const auto free = compile(R"({"type":"integer"})");
    CHECK(accepts(free, "9999999999999999999"));
    CHECK_FALSE(accepts(free, "10000000000000000000")); // 20 digits: past the cap
}

TEST_CASE("exact: enum and const numbers are written as the client wrote them") {
    const auto g = compile(R"({"enum":[123456789012345678901234567890,0.10000000000000000001,2]})");
    CHECK(accepts(g, "123456789012345678901234567890"));
    CHECK_FALSE(accepts(g, "1.2345678901234568e+29"));
    CHECK(accepts(g, "0.10000000000000000001"));
    CHECK(accepts(g, "2"));
    const auto i = compile(R"({"type":"integer","const":123456789012345678901234567890})");
    CHECK(accepts(i, "123456789012345678901234567890"));
    // A number and a prefix of it in one enum.
    const auto p = compile(R"({"type":"array","items":{"enum":[1,12]}})");
    CHECK(accepts(p, "[1,12,1]"));
    CHECK_FALSE(accepts(p, "[123]"));
}

TEST_CASE("exact: a $ref chain of 70 aliases compiles and writes its value") {
    std::string defs;
    for (int i = 0; i < 70; ++i)
        defs +=
            "\"a" + std::to_string(i) + "\":{\"$ref\":\"#/$defs/a" + std::to_string(i + 1) + "\"},";
    defs +=
        R"("a70":{"type":"object","properties":{"v":{"$ref":"#/$defs/a0"}},"additionalProperties":false})";
    const auto g = compile(R"({"$defs":{)" + defs + R"(},"$ref":"#/$defs/a0"})");
    CHECK(accepts(g, R"({"v":{"v":{}}})"));
}

TEST_CASE("usability: numbers end — digit caps, bounds on non-integers, no exponent when bounded") {
    const auto g = compile(R"({"type":"number"})");
    CHECK(accepts(g, "-12.5e+10"));
    CHECK(accepts(g, "1234567890123456789.123456789012345"));
    CHECK_FALSE(accepts(g, "12345678901234567890")); // 20 integer digits
    CHECK_FALSE(accepts(g, "1.1234567890123456"));   // 16 fraction digits
    CHECK_FALSE(accepts(g, "1e1234"));               // 4 exponent digits
    const auto b = compile(R"({"type":"number","minimum":-1.5,"exclusiveMaximum":2.25})");
    CHECK(accepts(b, "-1.5"));
    CHECK_FALSE(accepts(b, "-1.51"));
    CHECK(accepts(b, "2.249"));
    CHECK_FALSE(accepts(b, "2.25"));
    CHECK_FALSE(accepts(b, "1e0"));
    auto m = byte_matcher::start(b);
    CHECK_FALSE(m.feed(b, "3")); // no number starting with 3 is below 2.25
    const auto tenth = compile(R"({"type":"number","minimum":0.1,"maximum":0.3})");
    CHECK(accepts(tenth, "0.1"));
    CHECK(accepts(tenth, "0.3"));
    CHECK_FALSE(accepts(tenth, "0.30001"));
}

TEST_CASE("usability: string formats are grammars") {
    const auto dt = compile(R"({"type":"string","format":"date-time"})");
    CHECK(accepts(dt, "\"2026-11-25T19:22:26Z\""));
    CHECK(accepts(dt, "\"2026-11-25T19:22:26.123+01:00\""));
    CHECK_FALSE(accepts(dt, "\"2026-13-25T19:22:26Z\""));
    CHECK_FALSE(accepts(dt, "\"2026-11-25 19:22:26Z\""));
    const auto d = compile(R"({"type":"string","format":"date"})");
    CHECK(accepts(d, "\"2026-02-28\""));
    CHECK_FALSE(accepts(d, "\"2026-2-28\""));
    const auto t = compile(R"({"type":"string","format":"time"})");
    CHECK(accepts(t, "\"23:59:59Z\""));
    CHECK_FALSE(accepts(t, "\"23:59:60Z\"")); // a leap second: never written (documented)
    CHECK_FALSE(accepts(t, "\"24:00:00Z\""));
    const auto e = compile(R"({"type":"string","format":"email"})");
    CHECK(accepts(e, "\"a.b+c@example.org\""));
    CHECK_FALSE(accepts(e, "\"a@b\""));
    const auto u = compile(R"({"type":"string","format":"uuid"})");
    CHECK(accepts(u, "\"123e4567-e89b-12d3-a456-426614174000\""));
    CHECK_FALSE(accepts(u, "\"123e4567e89b12d3a456426614174000\""));
    const auto v4 = compile(R"({"type":"string","format":"ipv4"})");
    CHECK(accepts(v4, "\"192.168.0.255\""));
    CHECK_FALSE(accepts(v4, "\"256.1.1.1\""));
    const auto v6 = compile(R"({"type":"string","format":"ipv6"})");
    CHECK(accepts(v6, "\"2001:db8:0:0:0:0:2:1\""));
    CHECK_FALSE(accepts(v6, "\"2001:db8::2:1\"")); // compressed form: not written (documented)
    const auto uri = compile(R"({"type":"string","format":"uri"})");
    CHECK(accepts(uri, "\"https://example.org/a?b=c\""));
    CHECK_FALSE(accepts(uri, "\"not a uri\""));
    const auto h = compile(R"({"type":"string","format":"hostname"})");
    CHECK(accepts(h, "\"api.example-1.org\""));
    CHECK_FALSE(accepts(h, "\"-bad.org\""));
}
