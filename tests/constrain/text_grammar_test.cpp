// Structured output over plain text (text_grammar.hpp): guided choices and whole-reply regexes
// through the byte matcher (UTF-8, overlong forms, surrogates, the end of the text) and through
// the default model's vocabulary (masks with no dead end, EOG only where the text is whole).
#include "model/constrain/text_grammar.hpp"

#include "model/constrain/json_schema.hpp"
#include "model/constrain/token_constraint.hpp"
#include "vocab_fixtures.hpp"

#include <boost/json/parse.hpp>
#include <doctest/doctest.h>

#include <random>
#include <string>

using namespace bitnet;
using namespace bitnet::model::constrain;

namespace {

grammar compiled(const std::string& spec) {
    auto g = compile_json_schema(spec);
    REQUIRE_MESSAGE(g, g.error().message);
    return std::move(*g);
}

/// The matcher after `text`, or a dead one.
byte_matcher after(const grammar& g, std::string_view text) {
    auto m = byte_matcher::start(g);
    (void)m.feed(g, text);
    return m;
}

const std::string choice = R"({"x-bitnet-text":{"choice":["yes","no","nope","é"]}})";
const std::string regex = R"({"x-bitnet-text":{"regex":"[0-9]{3}-[a-zé]+"}})";

} // namespace

TEST_CASE("guided choice: exactly one of the strings, raw bytes, a prefix of another may end") {
    const auto g = compiled(choice);
    CHECK(after(g, "yes").complete(g));
    CHECK(after(g, "yes").finished());
    CHECK_FALSE(after(g, "ye").complete(g));
    CHECK(after(g, "yex").dead());
    CHECK(after(g, "\"yes\"").dead()); // no JSON quoting
    // "no" is whole and may go on to "nope".
    CHECK(after(g, "no").complete(g));
    CHECK_FALSE(after(g, "no").finished());
    CHECK(after(g, "nope").finished());
    CHECK(after(g, "é").finished());
    CHECK(after(g, "").dead() == false);
    CHECK_FALSE(after(g, "").complete(g));
}

TEST_CASE(
    "guided regex: the whole text matches, UTF-8 checked, the text ends when nothing follows") {
    const auto g = compiled(regex);
    CHECK(after(g, "123-ab").complete(g));
    CHECK_FALSE(after(g, "123-ab").finished()); // more letters may follow
    CHECK(after(g, "123-éa").complete(g));
    CHECK_FALSE(after(g, "123-").complete(g));
    CHECK(after(g, "12a").dead());
    CHECK(after(g, "x123-a").dead()); // anchored: no search
    CHECK(after(g, "123-a ").dead());
    CHECK(after(g, "123-\xC3").dead() == false); // half of é: only its second byte may come
    CHECK_FALSE(after(g, "123-\xC3").complete(g));
    CHECK(after(g, "123-\xC3\xA8").dead()); // è is not in the class
    CHECK(after(g, "123-\xC0\x80").dead()); // an overlong NUL

    const auto fixed = compiled(R"({"x-bitnet-text":{"regex":"^(ab|cd)$"}})");
    CHECK(after(fixed, "ab").finished());
    CHECK(after(fixed, "cd").finished());
    CHECK(after(fixed, "abc").dead());

    const auto any = compiled(R"({"x-bitnet-text":{"regex":".{1,3}"}})");
    CHECK(after(any, "\"\\\t").finished());   // quotes, backslashes and controls are plain text
    CHECK(after(any, "a\n").dead());          // `.` takes no line terminator (ECMA-262)
    CHECK(after(any, "\xED\xA0\x80").dead()); // a surrogate is not a character
    CHECK(after(any, "\xF0\x9F\x98\x80").complete(any));
}

TEST_CASE("text specs that cannot be enforced are refused with a clear message") {
    auto refused = [](const std::string& spec) {
        auto g = compile_json_schema(spec);
        REQUIRE_FALSE(g);
        return g.error().message;
    };
    CHECK(refused(R"({"x-bitnet-text":{"choice":[]}})").find("empty") != std::string::npos);
    refused(R"({"x-bitnet-text":{"choice":["a",""]}})");
    refused(R"({"x-bitnet-text":{"choice":["a",1]}})");
    refused(R"({"x-bitnet-text":{"regex":""}})");
    refused(R"({"x-bitnet-text":{"regex":"(a)\\1"}})");
    refused(R"({"x-bitnet-text":{"regex":"a","choice":["a"]}})");
    refused(R"({"x-bitnet-text":{"grammar":"root ::= x"}})");
    // Beside another keyword it is not a text spec: the schema compiler refuses the keyword.
    CHECK_FALSE(is_text_spec(boost::json::parse(R"({"x-bitnet-text":{},"type":"string"})")));
}

TEST_CASE("guided text over the default model's vocabulary: no dead end, EOG only when whole") {
    const auto& tok = test::default_tokenizer();
    for (const auto& spec : {choice, regex}) {
        CAPTURE(spec);
        auto c = schema_cache::shared().get(spec, tok);
        REQUIRE(c);
        std::mt19937_64 rng(7);
        for (int path = 0; path < 20; ++path) {
            token_constraint tc(*c);
            std::string text;
            for (int step = 0; step < 24; ++step) {
                const auto mask = (*c)->mask_by_trie(tc.state());
                REQUIRE(mask == (*c)->mask_by_scan(tc.state()));
                std::vector<std::int32_t> allowed;
                bool eog = false;
                for (std::int32_t id = 0; id < tok.n_vocab(); ++id)
                    if (mask_has(mask, id)) {
                        allowed.push_back(id);
                        eog = eog || tok.is_eog(id);
                    }
                REQUIRE_MESSAGE(!allowed.empty(), "dead end after: " << text);
                CHECK(eog == tc.complete());
                const auto id = allowed[rng() % allowed.size()];
                if (tok.is_eog(id))
                    break;
                REQUIRE(tc.accept(id));
                text += tok.token_to_piece(id, false);
            }
            CHECK(after((*c)->rules(), text).dead() == false);
        }
    }
}
