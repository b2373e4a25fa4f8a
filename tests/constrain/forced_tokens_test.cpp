// model/constrain: jump-forward drafts. The bytes a schema forces, and the tokens drafted for
// them, on random reachable states of three vocabularies: the synthetic models' single bytes
// (every forced byte a certain token), the default model's byte-level BPE and Llama-3's.
#include "model/constrain/forced_tokens.hpp"

#include "model/constrain/token_constraint.hpp"
#include "tools/model_synth.hpp"
#include "vocab_fixtures.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <random>

using namespace bitnet;
using namespace bitnet::model::constrain;

namespace {

const char* keys_schema = R"({"type":"object","properties":{
    "customer_identification_number":{"type":"integer"},
    "preferred_contact_method":{"enum":["electronic_mail","telephone_call","postal_letter"]},
    "account_is_active":{"type":"boolean"},
    "nickname":{"type":"string","maxLength":8}},
    "required":["customer_identification_number","preferred_contact_method",
                "account_is_active","nickname"],"additionalProperties":false})";

/// The tokenizer of the models `bitnet-model make` writes: one token per byte, no merges.
const model::tokenizer& single_byte_tokenizer() {
    static const model::tokenizer t = [] {
        const auto synth = tools::byte_level_tokenizer(300);
        model::tokenizer_vocab v;
        v.model = "gpt2";
        v.pre = "llama-bpe";
        for (const auto& [key, value] : synth.kvs) {
            if (key == "tokenizer.ggml.tokens")
                v.tokens = value.array_strings;
            else if (key == "tokenizer.ggml.token_type")
                for (auto x : value.array_ints)
                    v.token_types.push_back(static_cast<std::int32_t>(x));
            else if (key == "tokenizer.ggml.bos_token_id")
                v.bos_id = static_cast<std::int32_t>(std::get<std::uint64_t>(value.scalar));
            else if (key == "tokenizer.ggml.eos_token_id")
                v.eos_id = static_cast<std::int32_t>(std::get<std::uint64_t>(value.scalar));
        }
        REQUIRE(v.tokens.size() == 300);
        auto tok = model::tokenizer::create(v);
        REQUIRE(tok);
        return *tok;
    }();
    return t;
}

std::size_t popcount(const token_mask& m) {
    std::size_t n = 0;
    for (auto w : m)
        n += static_cast<std::size_t>(std::popcount(w));
    return n;
}

/// The plain definition of forced bytes: one byte at a time, try all 256.
std::string forced_by_definition(const grammar& g, byte_matcher m, std::size_t max) {
    std::string out;
    while (out.size() < max && !m.complete(g)) {
        std::vector<int> ok;
        for (int b = 0; b < 256; ++b) {
            byte_matcher t = m;
            if (t.feed(g, static_cast<std::uint8_t>(b)))
                ok.push_back(b);
        }
        if (ok.size() != 1)
            break;
        out.push_back(static_cast<char>(ok[0]));
        REQUIRE(m.feed(g, static_cast<std::uint8_t>(ok[0])));
    }
    return out;
}

struct walk_counts {
    int states = 0;
    int drafted = 0;
    int certain = 0;
    int single_token_states = 0;
};

/// Random paths of allowed tokens; at every state, the drafts against their definitions.
walk_counts check_drafts(const model::tokenizer& tok, int n_paths, int max_len,
                         std::uint64_t seed) {
    auto c = schema_cache::shared().get(keys_schema, tok);
    REQUIRE(c);
    const auto& g = (*c)->rules();
    std::mt19937_64 rng(seed);
    walk_counts n;
    for (int p = 0; p < n_paths; ++p) {
        token_constraint tc(*c);
        for (int step = 0; step < max_len; ++step) {
            ++n.states;
            const auto bytes = forced_bytes(g, tc.state(), 64);
            CHECK(bytes == forced_by_definition(g, tc.state(), 64));
            std::vector<std::int32_t> draft;
            const auto certain = draft_forced_tokens(**c, tc.state(), 8, draft);
            REQUIRE(certain <= draft.size());
            CHECK(draft.size() <= 8);
            CHECK(draft.empty() == bytes.empty());
            // The drafts spell a prefix of the forced bytes, each fits where it stands, and a
            // certain one is the only token the mask allows there.
            std::string spelled;
            token_constraint walk = tc;
            for (std::size_t i = 0; i < draft.size(); ++i) {
                CAPTURE(i);
                const auto mask = (*c)->mask_by_trie(walk.state());
                REQUIRE(mask_has(mask, draft[i]));
                if (i < certain)
                    CHECK(popcount(mask) == 1);
                spelled += tok.token_to_piece(draft[i], false);
                REQUIRE(walk.accept(draft[i]));
            }
            CHECK(bytes.starts_with(spelled));
            const auto here = (*c)->mask_by_trie(tc.state());
            if (popcount(here) == 1 && !bytes.empty())
                ++n.single_token_states;
            n.drafted += static_cast<int>(draft.size());
            n.certain += static_cast<int>(certain);
            // On: a random allowed token.
            std::vector<std::int32_t> allowed;
            for (std::int32_t id = 0; id < tok.n_vocab(); ++id)
                if (mask_has(here, id))
                    allowed.push_back(id);
            REQUIRE(!allowed.empty());
            const auto id = allowed[rng() % allowed.size()];
            REQUIRE(tc.accept(id));
            if (tok.is_eog(id))
                break;
        }
    }
    return n;
}

} // namespace

TEST_CASE("forced bytes: a key's name and its colon, an enum member once its prefix is unique") {
    const auto& tok = test::default_tokenizer();
    auto c = schema_cache::shared().get(keys_schema, tok);
    REQUIRE(c);
    const auto& g = (*c)->rules();
    auto m = byte_matcher::start(g);
    // Keys may come in any order: after '{' only the quote is forced, after its first letter
    // the rest of the name.
    REQUIRE(m.feed(g, std::string_view("{")));
    CHECK(forced_bytes(g, m, 256) == "\"");
    REQUIRE(m.feed(g, std::string_view("\"c")));
    const auto key = forced_bytes(g, m, 256);
    MESSAGE("forced after '{\"c': " << key);
    CHECK(key.starts_with("ustomer_identification_number\":"));
    // Bounded by max_bytes.
    CHECK(forced_bytes(g, m, 5) == key.substr(0, 5));
    // Into the enum: after "e" the rest of the member and its closing quote are forced.
    REQUIRE(m.feed(g, std::string_view(R"(ustomer_identification_number":12,)"
                                       R"("preferred_contact_method":"e)")));
    CHECK(forced_bytes(g, m, 256).starts_with("lectronic_mail\""));
    // A free choice (a string's contents) forces nothing.
    auto free = byte_matcher::start(g);
    REQUIRE(free.feed(g, std::string_view(R"({"customer_identification_number":1,)"
                                          R"("preferred_contact_method":"telephone_call",)"
                                          R"("account_is_active":true,"nickname":")")));
    CHECK(forced_bytes(g, free, 256).empty());
}

TEST_CASE("jump-forward drafts: single-byte vocabulary, every forced byte is a certain token") {
    const auto n = check_drafts(single_byte_tokenizer(), 12, 80, 7);
    MESSAGE(n.states << " states, " << n.drafted << " drafted, " << n.certain << " certain");
    CHECK(n.drafted > 100);
    CHECK(n.certain == n.drafted);
}

TEST_CASE("jump-forward drafts: default model's and Llama-3's vocabularies spell the forced "
          "bytes with fitting tokens") {
    const auto d = check_drafts(test::default_tokenizer(), 12, 40, 11);
    MESSAGE("default: " << d.states << " states, " << d.drafted << " drafted, " << d.certain
                        << " certain, " << d.single_token_states << " with one token allowed");
    CHECK(d.drafted > 20);
    const auto l = check_drafts(test::llama3_tokenizer(), 2, 14, 13);
    MESSAGE("llama-3: " << l.states << " states, " << l.drafted << " drafted, " << l.certain
                        << " certain");
    CHECK(l.drafted > 4);
}
