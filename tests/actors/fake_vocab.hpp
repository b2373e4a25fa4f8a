// A real model::tokenizer over the fake engine's 32 ids (tests/actors/fake_engine.hpp), so the
// actors' text path (token_stream, stop strings) runs for real. Id i decodes to "<i>", except
// ids 20 and 21, the two bytes of "é" (0xC3 0xA9: a character split across two tokens), and id 31,
// the control token <|eot_id|> (the end-of-generation id).
#pragma once

#include "model/tokenizer/tokenizer.hpp"

#include <memory>
#include <string>

namespace bitnet::test {

inline constexpr std::int32_t fake_eot = 31;

inline std::shared_ptr<const model::tokenizer> fake_tokenizer() {
    model::tokenizer_vocab v;
    v.model = "gpt2";
    for (int i = 0; i < 32; ++i) {
        // GPT-2's byte-to-unicode form: printable ASCII stands for itself; bytes 0xC3 and 0xA9
        // are the code points U+00C3 and U+00A9.
        std::string text = "<" + std::to_string(i) + ">";
        if (i == 20)
            text = "\xC3\x83";
        if (i == 21)
            text = "\xC2\xA9";
        if (i == fake_eot)
            text = "<|eot_id|>";
        v.tokens.push_back(text);
        v.token_types.push_back(static_cast<std::int32_t>(
            i == fake_eot ? model::token_type::control : model::token_type::normal));
    }
    v.eot_id = fake_eot;
    v.add_bos = false;
    return std::make_shared<const model::tokenizer>(model::tokenizer::create(std::move(v)).value());
}

} // namespace bitnet::test
