// SentencePiece ("llama") tokenization: score-ordered merges, leftmost ties, byte fallback, the
// space prefix and its removal on decode; and bitnet.cpp's own tiny SPM vocabulary from GGUF.
#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace bitnet;
using namespace bitnet::model;

namespace {

using ids = std::vector<std::int32_t>;

// ids 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then the pieces below.
tokenizer_vocab spm_vocab() {
    tokenizer_vocab v;
    v.model = "llama";
    v.tokens = {"<unk>", "<s>", "</s>"};
    v.token_types = {2, 3, 3};
    v.scores = {0, 0, 0};
    char name[8];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        v.tokens.emplace_back(name);
        v.token_types.push_back(6);
        v.scores.push_back(0);
    }
    const std::pair<const char*, float> pieces[] = {{"\xE2\x96\x81", -1},
                                                    {"h", -1},
                                                    {"e", -1},
                                                    {"l", -1},
                                                    {"o", -1},
                                                    {"ll", -2},
                                                    {"he", -3},
                                                    {"el", -1.5f},
                                                    {"\xE2\x96\x81h", -4},
                                                    {"hel", -2.5f},
                                                    {"llo", -1.0f},
                                                    {"hello", -0.5f}};
    for (const auto& [text, score] : pieces) {
        v.tokens.emplace_back(text);
        v.token_types.push_back(1);
        v.scores.push_back(score);
    }
    v.bos_id = 1;
    v.eos_id = 2;
    v.unk_id = 0;
    return v;
}

tokenizer make(tokenizer_vocab v) {
    auto t = tokenizer::create(std::move(v));
    REQUIRE(t);
    return *t;
}

std::int32_t id(const tokenizer& t, std::string_view text) {
    auto i = t.find_token(text);
    REQUIRE(i);
    return *i;
}

ids enc(const tokenizer& t, std::string_view text, encode_options opt = {}) {
    auto r = t.encode(text, opt);
    REQUIRE(r);
    return *r;
}

const std::string marker = "\xE2\x96\x81"; // ▁

} // namespace

TEST_CASE("spm merges the highest-scoring pair first, not the longest token") {
    auto t = make(spm_vocab());
    // ▁ h e l l o: "el" (-1.5) beats "ll" (-2), then "hel" (-2.5) beats "▁h" (-4); "llo" and
    // "hello" are never reached because the l's were taken apart.
    CHECK(enc(t, "hello") == ids{id(t, marker), id(t, "hel"), id(t, "l"), id(t, "o")});
    CHECK(t.decode(enc(t, "hello")) == "hello");
}

TEST_CASE("spm merges the leftmost pair when scores tie") {
    auto t = make(spm_vocab());
    CHECK(enc(t, "lll") == ids{id(t, marker), id(t, "ll"), id(t, "l")});
}

TEST_CASE("spm falls back to <0xNN> byte tokens for unknown characters") {
    auto t = make(spm_vocab());
    // é = C3 A9 is no token: two byte tokens, ids 3 + byte.
    CHECK(enc(t, "h\xC3\xA9") == ids{id(t, marker + "h"), 3 + 0xC3, 3 + 0xA9});
    CHECK(t.decode(enc(t, "h\xC3\xA9")) == "h\xC3\xA9");
    CHECK(t.type_of(3 + 0xC3) == token_type::byte);
}

TEST_CASE("spm adds one leading space and decode removes exactly that one") {
    auto t = make(spm_vocab());
    CHECK(enc(t, "h") == ids{id(t, marker + "h")});
    CHECK(enc(t, " h") == ids{id(t, marker), id(t, marker + "h")});
    CHECK(t.decode(enc(t, " h")) == " h");
    CHECK(t.decode(enc(t, "h e")) == "h e");
    CHECK(t.decode(enc(t, "h"), {.strip_leading_space = false}) == " h");
    CHECK(enc(t, "") == ids{});

    auto v = spm_vocab();
    v.add_space_prefix = false;
    auto no_prefix = make(v);
    CHECK(enc(no_prefix, "h") == ids{id(no_prefix, "h")});
    CHECK(no_prefix.decode(ids{id(no_prefix, marker + "h")}) == " h");
}

TEST_CASE("spm: BOS by default flag, special tokens on request, space prefix after them") {
    auto t = make(spm_vocab());
    CHECK(t.add_bos()); // llama.cpp's default for SentencePiece
    CHECK(enc(t, "h", {.add_bos = true}) == ids{1, id(t, marker + "h")});
    CHECK(enc(t, "</s>h", {.parse_special = true}) == ids{2, id(t, marker + "h")});
    CHECK(enc(t, "<unk>", {.parse_special = true}) == ids{0});
    // Without parse_special "<s>" is text: '<', 's', '>' are bytes here.
    CHECK(enc(t, "<s>") == ids{id(t, marker), 3 + '<', 3 + 's', 3 + '>'});
    CHECK(t.decode(ids{1, id(t, marker + "h"), 2}) == "h");
    CHECK(t.decode(ids{0}) == "\xE2\x96\x85"); // llama.cpp renders <unk> as U+2585
}

TEST_CASE("spm refuses merges and bad sizes") {
    auto v = spm_vocab();
    v.merges = {"h e"};
    CHECK_FALSE(tokenizer::create(v));
    auto w = spm_vocab();
    w.scores.pop_back();
    CHECK_FALSE(tokenizer::create(w));
}

TEST_CASE("bitnet.cpp's tiny SentencePiece vocabulary reads from GGUF and round-trips text") {
    auto file = gguf_file::open(test::data_path("bitnetcpp/tl/tiny-f32.gguf"));
    REQUIRE(file);
    auto v = read_tokenizer_vocab(*file);
    REQUIRE(v);
    CHECK(v->model == "llama");
    CHECK(v->tokens.size() == 1000);
    CHECK(v->bos_id == 1);
    CHECK(v->eos_id == 2);
    CHECK(v->add_bos == true);
    auto t = make(std::move(*v));
    CHECK(t.kind() == tokenizer_kind::spm);
    CHECK(t.is_eog(2));

    CHECK(enc(t, "the License") == ids{id(t, marker + "the"), id(t, marker + "License")});
    CHECK(enc(t, "the", {.add_bos = true}) == ids{1, id(t, marker + "the")});
    const std::string texts[] = {"the License",
                                 "  two leading spaces",
                                 "Copyright (c) 2024, you and me.\nNew line",
                                 "caf\xC3\xA9 \xE2\x82\xAC 5",
                                 "\xF0\x9F\x98\x80 emoji",
                                 "tab\there",
                                 "x"};
    for (const auto& text : texts) {
        CAPTURE(text);
        const auto ids_ = enc(t, text);
        CHECK(t.decode(ids_) == text);
    }
    // é is not in this vocabulary: byte fallback.
    const auto e_acute = enc(t, "\xC3\xA9");
    REQUIRE(e_acute.size() == 3);
    CHECK(t.token_text(e_acute[1]) == "<0xC3>");
    CHECK(t.token_text(e_acute[2]) == "<0xA9>");
}
