// sched::grammar_drafter: a sequence's jump-forward drafts as its tokens arrive. It keeps what is
// left of a forced stretch from one step to the next instead of scanning it again, so along
// random paths of allowed tokens its drafts must still fit the schema and spell a prefix of the
// bytes forced from the sequence's current state.
#include "actors/batcher/spec_draft.hpp"
#include "constrain/vocab_fixtures.hpp"
#include "model/constrain/forced_tokens.hpp"
#include "model/constrain/token_constraint.hpp"

#include <doctest/doctest.h>

#include <random>

using namespace bitnet;
using namespace bitnet::model::constrain;

TEST_CASE("grammar drafter: drafts fit and spell the forced bytes, step after step") {
    const auto& tok = test::default_tokenizer();
    auto c = schema_cache::shared().get(
        R"({"type":"object","properties":{"customer_identification_number":{"type":"integer"},)"
        R"("preferred_contact_method":{"enum":["electronic_mail","telephone_call_at_night"]},)"
        R"("nickname":{"type":"string","maxLength":5}},"required":[)"
        R"("customer_identification_number","preferred_contact_method","nickname"],)"
        R"("additionalProperties":false})",
        tok);
    REQUIRE(c);
    std::mt19937_64 rng(3);
    int drafted = 0, followed = 0;
    for (int path = 0; path < 20; ++path) {
        sched::grammar_drafter drafter(*c);
        token_constraint tc(*c);
        std::vector<msg::token_id> generated;
        for (int step = 0; step < 80; ++step) {
            std::vector<msg::token_id> out;
            const std::uint32_t max = 1 + static_cast<std::uint32_t>(rng() % 8);
            const auto certain = drafter.propose(generated, max, out);
            REQUIRE(certain <= out.size());
            REQUIRE(out.size() <= max);
            const auto forced = forced_bytes((*c)->rules(), tc.state(), 4096);
            CHECK(out.empty() == forced.empty());
            std::string spelled;
            token_constraint walk = tc;
            for (auto id : out) {
                REQUIRE(walk.accept(id));
                spelled += tok.token_to_piece(id, false);
            }
            CHECK(forced.starts_with(spelled));
            drafted += static_cast<int>(out.size());
            // On: half the time the first draft (a model that agrees), else a random allowed one.
            const auto mask = (*c)->mask_by_trie(tc.state());
            std::vector<msg::token_id> allowed;
            for (std::int32_t id = 0; id < tok.n_vocab(); ++id)
                if (mask_has(mask, id))
                    allowed.push_back(id);
            REQUIRE(!allowed.empty());
            msg::token_id next = allowed[rng() % allowed.size()];
            if (!out.empty() && rng() % 2 == 0) {
                next = out.front();
                ++followed;
            }
            if (tok.is_eog(next))
                break;
            REQUIRE(tc.accept(next));
            generated.push_back(next);
        }
    }
    MESSAGE(drafted << " tokens drafted, " << followed << " steps took the first draft");
    CHECK(drafted > 200);
    CHECK(followed > 20);
}
