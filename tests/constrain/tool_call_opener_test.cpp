// Auto tool calls (model/constrain/tool_call_opener.hpp): the splitter finds a call's opener
// however the output is cut into pieces, holds back only what may still become the opener, and
// gives it back when the output ends; the call grammar of each template syntax compiles and takes
// the call a model of that family writes, and only calls to the request's functions.
#include "model/constrain/tool_call_opener.hpp"

#include "constrain/vocab_fixtures.hpp"
#include "model/constrain/token_constraint.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using namespace bitnet;
using model::tool_call_syntax;
using model::constrain::call_opener;
using model::constrain::call_splitter;

namespace {

struct split_result {
    std::string reply, call;
    bool opened = false;
};

/// `text` fed to a splitter in pieces cut at `cuts` (ascending offsets), then flushed.
split_result split(const call_opener& op, const std::string& text, std::vector<std::size_t> cuts) {
    call_splitter s(op);
    split_result r;
    std::size_t at = 0;
    cuts.push_back(text.size());
    for (auto c : cuts) {
        auto p = s.feed(std::string_view(text).substr(at, c - at));
        r.reply += p.reply;
        r.call += p.call;
        at = c;
    }
    auto p = s.flush();
    r.reply += p.reply;
    r.call += p.call;
    r.opened = s.opened();
    return r;
}

const call_opener hermes{"<tool_call>", false};
const call_opener llama{"{", true};

} // namespace

TEST_CASE("call splitter: the opener anywhere splits reply from call, whatever the cuts") {
    const std::string text = "Let me check.<tool_call>{\"name\":\"f\"}";
    std::mt19937 rng(7);
    for (int round = 0; round < 200; ++round) {
        std::vector<std::size_t> cuts;
        for (std::size_t i = 1; i < text.size(); ++i)
            if (rng() % 3 == 0)
                cuts.push_back(i);
        const auto r = split(hermes, text, cuts);
        CHECK(r.opened);
        CHECK(r.reply == "Let me check.");
        CHECK(r.call == "<tool_call>{\"name\":\"f\"}");
    }
}

TEST_CASE("call splitter: text that only starts like the opener is held, then given back") {
    call_splitter s(hermes);
    auto p = s.feed("a <tool");
    CHECK(p.reply == "a ");
    CHECK(p.call.empty());
    p = s.feed("box> b <");
    CHECK(p.reply == "<toolbox> b "); // no longer an opener: released
    p = s.feed("tool_c");
    CHECK(p.reply.empty());
    const auto end = s.flush(); // the output ended inside a possible opener: reply text
    CHECK(end.reply == "<tool_c");
    CHECK(!s.opened());
    // After the end nothing opens.
    CHECK(s.feed("<tool_call>").reply == "<tool_call>");
}

TEST_CASE("call splitter: an opener at the start only counts there, past whitespace") {
    auto r = split(llama, "\n {\"name\":\"f\",\"parameters\":{}}", {1, 3});
    CHECK(r.opened);
    CHECK(r.reply.empty());
    CHECK(r.call == "{\"name\":\"f\",\"parameters\":{}}");
    r = split(llama, "Sure: {\"name\":\"f\"}", {2});
    CHECK(!r.opened);
    CHECK(r.reply == "Sure: {\"name\":\"f\"}");
    r = split(llama, "  ", {1}); // only whitespace: held, then given back
    CHECK(!r.opened);
    CHECK(r.reply == "  ");
    call_splitter s(llama);
    CHECK(s.value_offset() == 0);
    CHECK(call_splitter(hermes).value_offset() == std::string("<tool_call>").size());
}

namespace {

/// Two functions as http/ sends them: one with an enum parameter (under $defs), one without.
const std::string k_union =
    R"({"calls":[{"name":"get_weather","arguments":{"$ref":"#/$defs/bitnet_tool_0"}},)"
    R"({"name":"ping","arguments":{"type":"object"}}],"parallel":true,)"
    R"("$defs":{"bitnet_tool_0":{"type":"object","properties":{"city":{"enum":["Paris","Oslo"]}},)"
    R"("required":["city"],"additionalProperties":false}}})";

/// Whether the grammar of `syntax` takes `value` whole.
bool takes(tool_call_syntax syntax, const std::string& value) {
    const auto g = model::constrain::auto_call_grammar_for(syntax, k_union, 8);
    REQUIRE(g);
    auto c = model::constrain::schema_cache::shared().get(g->schema, test::default_tokenizer());
    REQUIRE_MESSAGE(c, g->schema);
    model::constrain::token_constraint t(*c);
    return t.accept_bytes(value) && t.complete();
}

} // namespace

TEST_CASE("auto call grammar: each syntax takes its family's call to a listed function only") {
    using enum tool_call_syntax;
    CHECK(!model::constrain::auto_call_grammar_for(none, k_union, 8));
    CHECK(!model::constrain::auto_call_grammar_for(hermes, R"({"calls":[]})", 8));
    CHECK(!model::constrain::auto_call_grammar_for(hermes, "not json", 8));

    const auto h = model::constrain::auto_call_grammar_for(hermes, k_union, 8);
    REQUIRE(h);
    CHECK(h->opener.text == "<tool_call>");
    CHECK(!h->opener.at_start);
    CHECK(takes(hermes, R"({"name":"get_weather","arguments":{"city":"Oslo"}})"));
    CHECK(takes(hermes, R"({"name":"ping","arguments":{}})"));
    CHECK(!takes(hermes, R"({"name":"get_weather","arguments":{"city":"Rome"}})"));
    CHECK(!takes(hermes, R"({"name":"delete_all","arguments":{}})"));

    CHECK(takes(hermes_list, R"([{"name":"ping","arguments":{}},{"name":"ping","arguments":{}}])"));
    CHECK(!takes(hermes_list, R"([])"));

    const auto l = model::constrain::auto_call_grammar_for(llama3_json, k_union, 8);
    REQUIRE(l);
    CHECK(l->opener.text == "{");
    CHECK(l->opener.at_start);
    CHECK(takes(llama3_json, R"({"name":"get_weather","parameters":{"city":"Paris"}})"));
    CHECK(!takes(llama3_json, R"({"name":"get_weather","arguments":{"city":"Paris"}})"));
    CHECK(!takes(llama3_json, R"({"name":"nope","parameters":{}})"));
}

TEST_CASE("auto call grammar: a list syntax without parallel calls takes one call") {
    std::string one = k_union;
    one.replace(one.find("\"parallel\":true"), 15, "\"parallel\":false");
    const auto g = model::constrain::auto_call_grammar_for(tool_call_syntax::hermes_list, one, 8);
    REQUIRE(g);
    auto c = model::constrain::schema_cache::shared().get(g->schema, test::default_tokenizer());
    REQUIRE(c);
    model::constrain::token_constraint two(*c);
    CHECK(
        !(two.accept_bytes(R"([{"name":"ping","arguments":{}},{"name":"ping","arguments":{}}])") &&
          two.complete()));
    model::constrain::token_constraint single(*c);
    CHECK(single.accept_bytes(R"([{"name":"ping","arguments":{}}])"));
    CHECK(single.complete());
}
