// tools/hf_tokenizer_import: the real Llama-3 tokenizer.json against Hugging Face's own ids
// (tests/data/tokenizer/llama3-reference.jsonl), plus the converter's error paths.
#include "tools/hf_tokenizer_import.hpp"

#include "model/gguf/gguf_reader.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "support/test_data.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

using namespace bitnet;
using model::token_type;

namespace {

struct reference_line {
    std::string text;
    std::vector<std::int32_t> ids;
};

std::vector<reference_line> load_reference() {
    std::ifstream in(test::data_path("tokenizer/llama3-reference.jsonl"));
    std::vector<reference_line> lines;
    std::string line;
    while (std::getline(in, line)) {
        const boost::json::object o = boost::json::parse(line).as_object();
        reference_line r;
        r.text = std::string(o.at("text").as_string());
        for (const auto& id : o.at("ids").as_array())
            r.ids.push_back(static_cast<std::int32_t>(id.as_int64()));
        lines.push_back(std::move(r));
    }
    return lines;
}

// Converting the 9 MB file takes a moment; do it once for all tests of this file.
const model::tokenizer_vocab& llama3_vocab() {
    static const model::tokenizer_vocab v = [] {
        auto r = tools::import_hf_tokenizer_file(
            test::data_path("tokenizer/llama3-tokenizer.json"),
            test::data_path("tokenizer/llama3-tokenizer_config.json"));
        REQUIRE(r);
        return *r;
    }();
    return v;
}

const model::tokenizer& llama3() {
    static const model::tokenizer t = [] {
        auto r = model::tokenizer::create(llama3_vocab());
        REQUIRE(r);
        return *r;
    }();
    return t;
}

} // namespace

TEST_CASE("the Llama-3 tokenizer.json converts to a 128256-token gpt2 vocabulary") {
    const auto& v = llama3_vocab();
    CHECK(v.model == "gpt2");
    REQUIRE(v.pre);
    CHECK(*v.pre == "llama-bpe");
    CHECK(v.tokens.size() == 128256);
    CHECK(v.merges.size() == 280147);
    CHECK(v.tokens[220] == "\xC4\xA0"); // "Ġ", a space
    CHECK(v.tokens[128000] == "<|begin_of_text|>");
    CHECK(v.token_types[128000] == static_cast<std::int32_t>(token_type::control));
    CHECK(v.token_types[100] == static_cast<std::int32_t>(token_type::normal));
    CHECK(v.bos_id == 128000);
    CHECK(v.eos_id == 128001);
    CHECK_FALSE(v.add_bos); // the config does not say; the tokenizer's default applies

    const auto& tok = llama3();
    CHECK(tok.n_vocab() == 128256);
    CHECK(tok.add_bos());
    CHECK(tok.eot() == 128009);
    CHECK(tok.is_eog(128001));
    CHECK(tok.is_eog(128009));
    CHECK(tok.eog_ids().size() == 2); // Llama 3.0 has no <|eom_id|>
    CHECK_FALSE(tok.is_eog(128008));  // <|reserved_special_token_3|>
    CHECK_FALSE(tok.is_eog(128000));
    CHECK_FALSE(tok.is_eog(15339));
}

TEST_CASE("all 276 Llama-3 reference texts encode to Hugging Face's ids and decode back") {
    const auto lines = load_reference();
    REQUIRE(lines.size() == 276);
    const auto& tok = llama3();
    int n_exact = 0;
    for (const auto& line : lines) {
        CAPTURE(line.text);
        auto ids = tok.encode(line.text);
        REQUIRE(ids);
        CHECK(*ids == line.ids);
        CHECK(tok.decode(line.ids) == line.text);
        n_exact += *ids == line.ids && tok.decode(*ids) == line.text;
    }
    CHECK(n_exact == 276);
}

TEST_CASE("Llama-3 special tokens are parsed only on request and BOS only when asked") {
    const auto& tok = llama3();
    const std::string text = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
    auto parsed = tok.encode(text, {.add_bos = true, .parse_special = true});
    REQUIRE(parsed);
    CHECK(*parsed == std::vector<std::int32_t>{128000, 128006, 882, 128007, 271, 13347, 128009});
    auto plain = tok.encode(text);
    REQUIRE(plain);
    CHECK(plain->size() > 7);
    CHECK(std::find(plain->begin(), plain->end(), 128009) == plain->end());
    CHECK(tok.decode(*plain) == text);
    // Control tokens vanish from decoded text unless rendered.
    CHECK(tok.decode(*parsed) == "user\n\nHi");
    CHECK(tok.decode(*parsed, {.render_special = true}) == "<|begin_of_text|>" + text);
}

TEST_CASE("the converted vocabulary survives a GGUF round trip and tokenizes the same") {
    model::gguf_writer w;
    for (auto& [k, val] : model::tokenizer_vocab_to_gguf(llama3_vocab()))
        w.add(k, std::move(val));
    auto bytes = w.to_bytes({});
    REQUIRE(bytes);
    auto file = model::gguf_file::parse(*bytes);
    REQUIRE(file);
    auto v = model::read_tokenizer_vocab(*file);
    REQUIRE(v);
    CHECK(v->tokens == llama3_vocab().tokens);
    CHECK(v->merges == llama3_vocab().merges);
    CHECK(v->token_types == llama3_vocab().token_types);
    CHECK(v->pre == llama3_vocab().pre);
    CHECK(v->bos_id == 128000);
    CHECK(v->eos_id == 128001);
    auto tok = model::tokenizer::create(std::move(*v));
    REQUIRE(tok);
    auto ids = tok->encode("Hello world, it's 2024!");
    REQUIRE(ids);
    CHECK(*ids == *llama3().encode("Hello world, it's 2024!"));
}

TEST_CASE("hf import: merges as pairs, holes, added tokens and config names") {
    const std::string json = R"({
      "normalizer": null,
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
      "added_tokens": [
        {"id": 6, "content": "<s>", "special": true},
        {"id": 7, "content": "<tool>", "special": false}
      ],
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 4},
                "merges": [["a", "b"]]}
    })";
    const std::string cfg = R"({"bos_token": {"content": "<s>"}, "add_bos_token": true})";
    auto v = tools::import_hf_tokenizer(json, std::string_view(cfg));
    REQUIRE(v);
    CHECK(v->pre == "gpt2");
    CHECK(v->merges == std::vector<std::string>{"a b"});
    REQUIRE(v->tokens.size() == 8);
    CHECK(v->tokens[3] == "[PAD3]");
    CHECK(v->token_types[3] == static_cast<std::int32_t>(token_type::unused));
    CHECK(v->token_types[6] == static_cast<std::int32_t>(token_type::control));
    CHECK(v->token_types[7] == static_cast<std::int32_t>(token_type::user_defined));
    CHECK(v->bos_id == 6);
    CHECK(v->add_bos == true);

    auto over = tools::import_hf_tokenizer(json, std::nullopt, {.pre_override = "llama-bpe"});
    REQUIRE(over);
    CHECK(over->pre == "llama-bpe");
}

TEST_CASE("hf import: a Unigram model becomes a SentencePiece vocabulary") {
    const std::string json = R"({
      "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
      "added_tokens": [{"id": 1, "content": "</s>", "special": true}],
      "model": {"type": "Unigram", "unk_id": 0,
                "vocab": [["<unk>", 0.0], ["</s>", 0.0], ["\u2581hi", -1.5], ["<0x41>", 0.0]]}
    })";
    auto v = tools::import_hf_tokenizer(json, std::nullopt);
    REQUIRE(v);
    CHECK(v->model == "llama");
    CHECK(v->unk_id == 0);
    CHECK(v->add_space_prefix == true);
    CHECK(v->scores == std::vector<float>{0.0f, 0.0f, -1.5f, 0.0f});
    CHECK(v->token_types == std::vector<std::int32_t>{2, 3, 1, 6});
}

TEST_CASE("hf import: what cannot be reproduced is refused with a reason") {
    auto not_json = tools::import_hf_tokenizer("{", std::nullopt);
    REQUIRE_FALSE(not_json);
    CHECK(not_json.error().value() == errc::bad_format);

    auto wordpiece = tools::import_hf_tokenizer(R"({"model": {"type": "WordPiece", "vocab": {}}})",
                                                std::nullopt);
    REQUIRE_FALSE(wordpiece);
    CHECK(wordpiece.error().value() == errc::unsupported);
    CHECK(wordpiece.error().message.find("WordPiece") != std::string::npos);

    auto odd_regex = tools::import_hf_tokenizer(
        R"({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
              {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Isolated"}]},
            "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})",
        std::nullopt);
    REQUIRE_FALSE(odd_regex);
    CHECK(odd_regex.error().message.find("\\d+") != std::string::npos);

    auto missing_bos = tools::import_hf_tokenizer(
        R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0}}})",
        std::string_view(R"({"bos_token": "<s>"})"));
    REQUIRE_FALSE(missing_bos);
    CHECK(missing_bos.error().value() == errc::tokenizer_error);

    auto missing_file = tools::import_hf_tokenizer_file("/nonexistent/tokenizer.json");
    REQUIRE_FALSE(missing_file);
    CHECK(missing_file.error().value() == errc::io_error);
}
