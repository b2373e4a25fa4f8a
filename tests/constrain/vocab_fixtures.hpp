// The two real tokenizers the constrain tests walk tokens through: the default model's 4,096-token
// byte-level BPE and Meta's Llama-3 tokenizer (tests/data/tokenizer), each loaded once.
#pragma once

#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "support/default_model_slice.hpp"
#include "support/test_data.hpp"
#include "tools/hf_tokenizer_import.hpp"

#include <doctest/doctest.h>

namespace bitnet::test {

inline const model::tokenizer& default_tokenizer() {
    static const model::tokenizer t = [] {
        auto f = model::gguf_file::open(default_model_path());
        REQUIRE(f);
        auto v = model::read_tokenizer_vocab(*f);
        REQUIRE(v);
        auto tok = model::tokenizer::create(*v);
        REQUIRE(tok);
        return *tok;
    }();
    return t;
}

inline const model::tokenizer& llama3_tokenizer() {
    static const model::tokenizer t = [] {
        auto v =
            tools::import_hf_tokenizer_file(data_path("tokenizer/llama3-tokenizer.json"),
                                            data_path("tokenizer/llama3-tokenizer_config.json"));
        REQUIRE(v);
        auto tok = model::tokenizer::create(*v);
        REQUIRE(tok);
        return *tok;
    }();
    return t;
}

} // namespace bitnet::test
