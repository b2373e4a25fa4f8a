// tokenizer_vocab <-> GGUF: key names and types on write, the same vocabulary on read.
#include "model/gguf/gguf_reader.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace bitnet;
using namespace bitnet::model;

namespace {

tokenizer_vocab sample() {
    tokenizer_vocab v;
    v.model = "llama";
    v.pre = "default";
    v.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81hi"};
    v.scores = {0.0f, 0.0f, 0.0f, -1.25f};
    v.token_types = {2, 3, 3, 1};
    v.bos_id = 1;
    v.eos_id = 2;
    v.unk_id = 0;
    v.add_bos = true;
    v.add_eos = false;
    v.add_space_prefix = true;
    return v;
}

result<std::vector<std::uint8_t>>
to_file(const std::vector<std::pair<std::string, gguf_value>>& kvs) {
    gguf_writer w;
    for (const auto& [k, v] : kvs)
        w.add(k, v);
    return w.to_bytes({});
}

} // namespace

TEST_CASE("tokenizer_vocab_to_gguf writes the tokenizer.ggml keys with llama.cpp's types") {
    std::map<std::string, gguf_value> kv;
    for (auto& [k, v] : tokenizer_vocab_to_gguf(sample()))
        kv.emplace(k, v);
    CHECK(kv.at("tokenizer.ggml.model").type == gguf_value_type::string);
    CHECK(kv.at("tokenizer.ggml.pre").type == gguf_value_type::string);
    CHECK(kv.at("tokenizer.ggml.tokens").array_type == gguf_value_type::string);
    CHECK(kv.at("tokenizer.ggml.scores").array_type == gguf_value_type::f32);
    CHECK(kv.at("tokenizer.ggml.token_type").array_type == gguf_value_type::i32);
    CHECK(kv.at("tokenizer.ggml.bos_token_id").type == gguf_value_type::u32);
    CHECK(kv.at("tokenizer.ggml.add_bos_token").type == gguf_value_type::boolean);
    CHECK(kv.count("tokenizer.ggml.merges") == 0); // empty arrays are left out
    CHECK(kv.count("tokenizer.ggml.eot_token_id") == 0);
}

TEST_CASE("a vocabulary written to GGUF reads back identical") {
    auto bytes = to_file(tokenizer_vocab_to_gguf(sample()));
    REQUIRE(bytes);
    auto f = gguf_file::parse(*bytes);
    REQUIRE(f);
    auto v = read_tokenizer_vocab(*f);
    REQUIRE(v);
    const auto s = sample();
    CHECK(v->model == s.model);
    CHECK(v->pre == s.pre);
    CHECK(v->tokens == s.tokens);
    CHECK(v->scores == s.scores);
    CHECK(v->token_types == s.token_types);
    CHECK(v->merges.empty());
    CHECK(v->bos_id == 1);
    CHECK(v->eos_id == 2);
    CHECK(v->unk_id == 0);
    CHECK_FALSE(v->eot_id);
    CHECK(v->add_bos == true);
    CHECK(v->add_eos == false);
    CHECK(v->add_space_prefix == true);
    CHECK(tokenizer::create(std::move(*v)));
}

TEST_CASE("read_tokenizer_vocab reports missing and mistyped keys") {
    auto no_model = to_file({{"tokenizer.ggml.tokens", gguf_value::strings({"a"})}});
    REQUIRE(no_model);
    auto f = gguf_file::parse(*no_model);
    REQUIRE(f);
    auto r = read_tokenizer_vocab(*f);
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::not_found);

    auto bad_type = to_file({{"tokenizer.ggml.model", gguf_value::string("gpt2")},
                             {"tokenizer.ggml.tokens", gguf_value::strings({"a"})},
                             {"tokenizer.ggml.bos_token_id", gguf_value::string("1")}});
    REQUIRE(bad_type);
    auto g = gguf_file::parse(*bad_type);
    REQUIRE(g);
    auto s = read_tokenizer_vocab(*g);
    REQUIRE_FALSE(s);
    CHECK(s.error().value() == errc::bad_format);
}
